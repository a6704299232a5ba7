"""Loaded at interpreter start by programs that ``detlint run`` launches: calls detlint.apply()
before the user's code runs, then hands over to any sitecustomize this one shadows."""
import os
import sys


def _chain_original() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    saved = list(sys.path)
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    module = sys.modules.pop("sitecustomize", None)
    try:
        import sitecustomize  # noqa: F401  the site's own, if there is one
    except ImportError:
        pass
    finally:
        sys.path[:] = saved
        if module is not None and "sitecustomize" not in sys.modules:
            sys.modules["sitecustomize"] = module


def _apply() -> None:
    seed = os.environ.get("DETLINT_APPLY_SEED")
    if seed is None:
        return
    try:
        import detlint

        report = detlint.apply(seed=int(seed))
        if os.environ.get("DETLINT_VERBOSE"):
            sys.stderr.write(f"{report}\n")
    except Exception as exc:  # the user's program must still run
        sys.stderr.write(f"detlint: apply() failed: {type(exc).__name__}: {exc}\n")


def _record() -> None:
    if not os.environ.get("DETLINT_DIVERGE_DUMP"):
        return
    try:
        from detlint import recorder

        recorder.start()
    except Exception as exc:
        sys.stderr.write(f"detlint: recording failed to start: {type(exc).__name__}: {exc}\n")


_chain_original()
_apply()
_record()
