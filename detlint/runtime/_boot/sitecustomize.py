"""Loaded at interpreter start by programs that ``detlint run`` launches: calls detlint.apply()
before the user's code runs, then hands over to any sitecustomize this one shadows."""
import contextlib
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


@contextlib.contextmanager
def _detlint_importable():
    """detlint as this interpreter has it; else, for the time apply() runs, from the folders the
    launcher named (DETLINT_HOME), at the end of sys.path so that the program's own packages win."""
    added = []
    try:
        import detlint  # noqa: F401
    except ImportError:
        for folder in os.environ.get("DETLINT_HOME", "").split(os.pathsep):
            if folder and folder not in sys.path:
                sys.path.append(folder)
                added.append(folder)
    try:
        yield
    finally:
        for folder in added:
            if folder in sys.path:
                sys.path.remove(folder)


def _apply():
    seed = os.environ.get("DETLINT_APPLY_SEED")
    if seed is None:
        return None
    try:
        import detlint

        return detlint.apply(seed=int(seed))
    except Exception as exc:  # the user's program must still run
        sys.stderr.write(f"detlint: apply() failed: {type(exc).__name__}: {exc}\n")
        return None


def _report_at_exit(report) -> None:
    """`detlint run` asks this process, and not the Python processes it starts, for a report at
    its exit: the variable that asks is removed here."""
    payload = os.environ.pop("DETLINT_RUN_REPORT", None)
    if payload is None:
        return
    try:
        from detlint.runtime import exit_report

        exit_report.install(report, payload, verbose=bool(os.environ.get("DETLINT_VERBOSE")))
    except Exception as exc:
        sys.stderr.write(f"detlint: the report at exit failed to start: {type(exc).__name__}: {exc}\n")


def _record() -> None:
    if not os.environ.get("DETLINT_DIVERGE_DUMP"):
        return
    try:
        from detlint.divergence import recorder

        recorder.start()
    except Exception as exc:
        sys.stderr.write(f"detlint: recording failed to start: {type(exc).__name__}: {exc}\n")


_chain_original()
with _detlint_importable():
    _report_at_exit(_apply())
    _record()
