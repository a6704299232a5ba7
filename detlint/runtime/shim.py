"""``detlint.apply()``: the knowledge base's fixes, applied inside the running process.

Every action comes from a rule's ``runtime`` entry; ``run-fix`` runs exactly the lines that
``detlint --fix`` would insert for the installed version of each framework, so the static and runtime
answers cannot disagree. Frameworks the program has not imported are not imported: their
actions wait for the import (see ``imports_hook``).
"""
from __future__ import annotations

import gc
import importlib
import importlib.util
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Callable, Optional

from detlint.knowledge import kb as kb_module
from detlint.runtime.imports_hook import when_imported
from detlint.knowledge.frameworks import FRAMEWORKS, framework
from detlint.knowledge.versions import Version, newest_known

DONE, PENDING, ALREADY, NOT_NEEDED, ABSENT, UNFIXABLE, FAILED = (
    "done", "pending", "already done", "not needed", "absent", "unfixable", "failed")
# os.environ["NAME"] = "value", or appended to what is there: = os.environ.get("NAME", "") + " value"
ENV_LINE = re.compile(r"""environ\[["'](?P<name>\w+)["']\]\s*=\s*(?P<append>[\w{}]+\.environ\.get\(["']\w+["'],\s*["']["']\)\s*\+\s*)?"""
                      r"""["'](?P<value>[^"']*)["']""")
STDLIB = {"os", "random"}


@dataclass
class Action:
    code: str
    what: str
    status: str
    detail: str = ""
    # the module it waited for ("torch"): pending until then, done when it was imported
    waits_for: str = ""

    def __str__(self) -> str:
        return f"{self.code}  {self.status:<12} {self.what}" + (f" ({self.detail})" if self.detail else "")


@dataclass
class Report:
    """What ``apply()`` did and could not do; actions marked pending finish when their
    framework is imported, and this report is updated then."""

    tf_version: Optional[str]
    seed: int
    actions: list[Action] = field(default_factory=list)
    # every framework's installed version ("torch": "2.13"), None where it is not installed
    versions: dict[str, Optional[str]] = field(default_factory=dict)

    @property
    def unfixable(self) -> list[Action]:
        return [a for a in self.actions if a.status in (UNFIXABLE, FAILED)]

    def by_code(self, code: str) -> list[Action]:
        return [a for a in self.actions if a.code == code]

    def __str__(self) -> str:
        found = self.versions or {"tensorflow": self.tf_version}
        head = f"detlint.apply(seed={self.seed}) for " + ", ".join(
            f"{framework(key).title} {version or 'not installed'}" for key, version in found.items())
        return "\n".join([head, *(f"  {a}" for a in self.actions)])


class DeterminismError(RuntimeError):
    """Raised by ``apply(strict=True)`` when something cannot be fixed in this process."""

    def __init__(self, report: Report, actions: Optional[list[Action]] = None) -> None:
        self.report = report
        self.actions = report.unfixable if actions is None else actions
        items = "; ".join(f"{a.code}: {a.what} ({a.detail})" for a in self.actions)
        super().__init__(f"cannot make this process deterministic: {items}")


_applied: dict[int, Report] = {}


def installed(name: str) -> bool:
    if name in sys.modules:
        return True
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def tf_version() -> Optional[Version]:
    return installed_versions()["tensorflow"]


def installed_versions() -> dict[str, Optional[Version]]:
    """Each framework's installed version, read from package metadata (nothing is imported)."""
    from detlint.settings.pins import installed_version

    found = {key: installed_version(key) for key in FRAMEWORKS}
    return {key: value[0] if value else None for key, value in found.items()}


def target_versions(tf: Optional[Version] = None) -> dict[str, Version]:
    """The version each framework's fixes are taken for: ``tf`` for TensorFlow if given, else the
    installed version, else the newest known."""
    installed = installed_versions()
    if tf is not None:
        installed["tensorflow"] = tf
    return {key: installed.get(key) or newest_known(key) for key in FRAMEWORKS}


def keras_major(version: Optional[Version]) -> int:
    legacy = os.environ.get("TF_USE_LEGACY_KERAS", "").lower() in ("1", "true")
    return 3 if version is not None and version >= Version(2, 16) and not legacy else 2


# ---- actions ---------------------------------------------------------------------------------------
class _Runner:
    def __init__(self, report: Report, kb: kb_module.KnowledgeBase, versions: dict[str, Version],
                 present: set[str]) -> None:
        self.report = report
        self.kb = kb
        self.versions = versions  # framework -> the version whose fixes run
        self.version = versions["tensorflow"]  # for the TensorFlow-only actions
        self.tf_present = "tensorflow" in present

    def add(self, code: str, what: str, status: str, detail: str = "") -> Action:
        action = Action(code, what, status, detail)
        self.report.actions.append(action)
        return action

    def later(self, module: str, action: Action, work: Callable[[ModuleType], None]) -> None:
        """Run ``work`` now if ``module`` is imported, else when it is; record the outcome."""
        detail = action.detail

        def run(mod: ModuleType) -> None:
            try:
                work(mod)
                if action.status == PENDING:
                    action.status, action.detail = DONE, detail
            except Exception as exc:  # reported, never raised into the user's import
                action.status, action.detail = FAILED, f"{type(exc).__name__}: {exc}"

        if not when_imported(module, run):
            action.status, action.detail, action.waits_for = PENDING, f"runs when {module} is imported", module

    # run-fix: execute the lines --fix would insert for this version
    def run_fix(self, rule: kb_module.Rule, spec: dict[str, Any]) -> None:
        version = self.versions[rule.framework]
        title = framework(rule.framework).title
        fix = rule.fix_for(version)
        if not rule.versions.contains(version):
            self.add(rule.code, rule.summary, NOT_NEEDED, f"not needed in {title} {version}")
            return
        if fix is None or fix.data.get("action") != "insert":
            self.add(rule.code, rule.summary, NOT_NEEDED, f"no run-time fix for {title} {version}")
            return
        needed_pkg = spec.get("when-installed")
        if needed_pkg and not installed(needed_pkg):
            self.add(rule.code, _describe(fix.data["code"]), ABSENT, f"{needed_pkg} is not installed")
            return
        before = spec.get("before-init")
        if before and _horovod_initialised():
            self.add(rule.code, _describe(fix.data["code"]), UNFIXABLE, "Horovod is already initialised")
            return
        imports: dict[str, str] = dict(fix.data.get("imports", {}))
        lines = [line.replace("{seed}", str(self.report.seed)) for line in fix.data["code"]]
        modules = [m for m in imports.values() if m not in STDLIB]
        if any(not installed(m) for m in modules):
            missing = [m for m in modules if not installed(m)]
            self.add(rule.code, _describe(lines), ABSENT, f"{', '.join(missing)} not installed")
            return
        if _already_set(lines):
            self.add(rule.code, _describe(lines), ALREADY)
            return
        action = self.add(rule.code, _describe(lines), DONE)
        started = STARTED.get(spec.get("before-start", ""))
        if started is not None and started[0]():
            action.status, action.detail = UNFIXABLE, started[1]
            return  # what it would set is read no more: leave the environment as it was

        def work(_: ModuleType) -> None:
            namespace = {placeholder: importlib.import_module(mod) for placeholder, mod in imports.items()}
            for line in lines:
                exec(line.format(**{p: p for p in imports}), namespace)  # noqa: S102 - KB code
            self._after_env(rule, action, lines)
            for op_id in fix.data.get("rewrite-ops", []):
                _patch_rewrite(self.kb.ops[op_id].rewrite or {})

        if modules:
            self.later(modules[-1], action, work)
        else:
            try:
                work(os)
            except Exception as exc:
                action.status, action.detail = FAILED, f"{type(exc).__name__}: {exc}"

    def _after_env(self, rule: kb_module.Rule, action: Action, lines: list[str]) -> None:
        """Environment switches are read once by TensorFlow: say so when it may be too late."""
        if not any(ENV_LINE.search(line) for line in lines) or "tensorflow" not in sys.modules:
            return
        probe = _determinism_enabled()
        if probe is False and any("DETERMINISTIC" in line for line in lines):
            action.status = UNFIXABLE
            action.detail = "TensorFlow already read its determinism switch; set it before TensorFlow runs an op"
        elif probe is None:
            action.detail = "takes effect only if TensorFlow has not run an op yet"

    def unset_env(self, rule: kb_module.Rule, spec: dict[str, Any]) -> None:
        for name, values in spec["env"].items():
            value = os.environ.get(name)
            if value is None:
                continue
            if values == "any" or value.strip().lower() in values:
                del os.environ[name]
                self.add(rule.code, f"removed {name}={value}", DONE)
                return
        self.add(rule.code, "cuDNN autotuning left enabled", NOT_NEEDED)

    def check_hashseed(self, rule: kb_module.Rule, spec: dict[str, Any]) -> None:
        if hashseed_fixed_at_start():
            self.add(rule.code, "PYTHONHASHSEED was set when the interpreter started", NOT_NEEDED)
        else:
            self.add(rule.code, "string hashing is randomised for this process", UNFIXABLE,
                     "PYTHONHASHSEED was not set at interpreter start; launch with PYTHONHASHSEED=0 or `detlint run`")

    def data_deterministic(self, rule: kb_module.Rule, spec: dict[str, Any]) -> None:
        covered = Version.parse(str(spec.get("covered-from", "2.7")))
        if not self.tf_present:
            self.add(rule.code, "tf.data order", ABSENT, "TensorFlow is not installed")
        elif self.version >= covered:
            action = self.add(rule.code, "tf.data keeps element order", DONE,
                              f"op determinism ({spec.get('covered-by', 'DET201')}) forces deterministic=True "
                              f"in TF {self.version}")
            self.later("tensorflow", action, lambda _: None)  # done when that switch is, not before
        else:
            action = self.add(rule.code, "force deterministic=True on tf.data parallel stages", DONE)
            self.later("tensorflow", action, _patch_tf_data)

    def xla_off(self, rule: kb_module.Rule, spec: dict[str, Any]) -> None:
        flags = os.environ.get("TF_XLA_FLAGS", "")
        pattern = spec.get("env-flag", "--tf_xla_auto_jit=\\S+")
        if re.search(pattern, flags):
            os.environ["TF_XLA_FLAGS"] = " ".join(re.sub(pattern, "", flags).split())
            self.add(rule.code, "removed XLA auto-clustering from TF_XLA_FLAGS", DONE)
        if not self.tf_present:
            return
        action = self.add(rule.code, "tf.config.optimizer.set_jit(False)", DONE)
        self.later("tensorflow", action, lambda tf: tf.config.optimizer.set_jit(False))
        compiled = _models_compiled_with_xla()
        if compiled:
            self.add(rule.code, f"{compiled} Keras model(s) already compiled with jit_compile=True", UNFIXABLE,
                     "recompile them with jit_compile=False after apply()")


def _appended(current: str, value: str) -> str:
    """``value`` (flags) added to ``current`` unless it is there already."""
    words = current.split()
    return " ".join(words + [w for w in value.split() if w not in words])


def _already_set(lines: list[str]) -> bool:
    """Are ``lines`` all environment settings the environment already holds?"""
    matches = [ENV_LINE.search(line) for line in lines]
    if not lines or not all(matches):
        return False
    return all(set(m.group("value").split()) <= set(os.environ.get(m.group("name"), "").split())
               if m.group("append") else os.environ.get(m.group("name")) == m.group("value")
               for m in matches if m is not None)


def _describe(lines: list[str]) -> str:
    return "; ".join(line.replace("{", "").replace("}", "") for line in lines)


def _determinism_enabled() -> Optional[bool]:
    try:
        from tensorflow.python.framework import config  # type: ignore[import-not-found]
    except ImportError:
        return None
    probe = getattr(config, "is_op_determinism_enabled", None)
    return bool(probe()) if probe else None


def _horovod_initialised() -> bool:
    for name in ("horovod.tensorflow", "horovod.torch", "horovod.keras", "horovod.tensorflow.keras"):
        module = sys.modules.get(name)
        check = getattr(module, "is_initialized", None) if module else None
        if check is not None:
            try:
                if check():
                    return True
            except Exception:
                continue
    return False


def _models_compiled_with_xla() -> int:
    keras = sys.modules.get("keras")
    model_type = getattr(keras, "Model", None) if keras else None
    if model_type is None:
        return 0
    count = 0
    for obj in gc.get_objects():
        try:
            if isinstance(obj, model_type) and getattr(obj, "compiled", getattr(obj, "_is_compiled", False)) \
                    and getattr(obj, "jit_compile", False) is True:
                count += 1
        except Exception:
            continue
    return count


def _patch_rewrite(rewrite: dict[str, Any]) -> None:
    """bias_add(x, b) -> x + b at every binding Keras uses (what tfdeterminism.patch() did)."""
    for binding in rewrite.get("patch-bindings", []):
        module_name, _, attr = binding.rpartition(".")
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        original = getattr(module, attr, None)
        if original is None or getattr(original, "__detlint_patched__", False):
            continue

        def replacement(value: Any, bias: Any, data_format: Any = None, name: Any = None,
                        _original: Any = original) -> Any:
            if data_format not in (None, "NHWC", "N...C"):
                return _original(value, bias, data_format=data_format, name=name)
            return value + bias

        replacement.__detlint_patched__ = True  # type: ignore[attr-defined]
        setattr(module, attr, replacement)


def _patch_tf_data(tf: ModuleType) -> None:
    dataset = tf.data.Dataset
    for name in ("map", "interleave", "batch", "padded_batch"):
        original = getattr(dataset, name, None)
        if original is None or getattr(original, "__detlint_patched__", False):
            continue

        def forced(self: Any, *args: Any, _original: Any = original, **kwargs: Any) -> Any:
            if kwargs.get("deterministic") is False:
                kwargs["deterministic"] = True
            return _original(self, *args, **kwargs)

        forced.__detlint_patched__ = True  # type: ignore[attr-defined]
        setattr(dataset, name, forced)


def hashseed_fixed_at_start() -> bool:
    """Was string hashing fixed when this interpreter started? (Setting the variable later
    changes nothing here, so compare with a child started with the current value.)"""
    if not sys.flags.hash_randomization:
        return True
    value = os.environ.get("PYTHONHASHSEED")
    if value is None or value == "random":
        return False
    try:
        child = subprocess.run([sys.executable, "-c", "print(hash('detlint'))"], capture_output=True,
                               text=True, env={**os.environ, "PYTHONHASHSEED": value}, timeout=30)
        return child.stdout.strip() == str(hash("detlint"))
    except (OSError, subprocess.SubprocessError):
        return False


ACTIONS = {"run-fix": _Runner.run_fix, "unset-env": _Runner.unset_env, "check-hashseed": _Runner.check_hashseed,
           "data-deterministic": _Runner.data_deterministic, "xla-off": _Runner.xla_off}
# env switches before everything that may import a framework; seeds before determinism
ORDER = {"check-hashseed": 0, "unset-env": 1, "xla-off": 2, "run-fix": 3, "data-deterministic": 4}


def _torch_cuda_started() -> bool:
    torch = sys.modules.get("torch")
    try:
        return bool(torch is not None and torch.cuda.is_initialized())
    except Exception:  # an odd torch build: say nothing rather than guess
        return False


def _jax_backend_started() -> bool:
    """Has JAX made its backends (and so read XLA_FLAGS)? Only looked at, never started."""
    bridge = sys.modules.get("jax._src.xla_bridge")
    try:
        return bool(bridge is not None and getattr(bridge, "_backends", None))
    except Exception:
        return False


# runtime ``before-start``: what a setting must come before -> (has it started?, what to say)
STARTED: dict[str, tuple[Callable[[], bool], str]] = {
    "torch-cuda": (_torch_cuda_started, "CUDA is already initialised; set it before torch starts CUDA (detlint run)"),
    "jax-backend": (_jax_backend_started, "JAX already started its backend, which read XLA_FLAGS then; set it "
                                          "before the first JAX computation (detlint run does)"),
}


def runtime_rules(kb: kb_module.KnowledgeBase) -> list[kb_module.Rule]:
    rules = [r for r in kb.rules.values() if r.runtime]
    return sorted(rules, key=lambda r: (ORDER.get(r.runtime["action"], 9), r.code))


def apply(seed: int = 42, *, strict: bool = False, require_hashseed: bool = False) -> Report:
    """Make this process as deterministic as the installed TensorFlow allows; see ``Report``.

    Safe to call twice (the second call returns the first report), never raises because a
    framework is missing, and needs no GPU. ``seed`` must be in 0 <= seed < 2**32 (ValueError).

    ``strict=True`` raises ``DeterminismError`` when something apply() is for cannot be done in
    this process. String hashing (DET105) is the exception: no code inside a running interpreter
    can fix it, so it stays a report entry unless ``require_hashseed=True`` (then start the
    program with ``detlint run`` or ``PYTHONHASHSEED=0``).
    """
    from detlint.settings.config import check_seed

    check_seed(seed)
    if seed in _applied:
        report = _applied[seed]
    else:
        kb = kb_module.load()
        installed_now = installed_versions()
        version = installed_now["tensorflow"]
        report = Report(tf_version=str(version) if version else None, seed=seed,
                        versions={key: str(v) if v else None for key, v in installed_now.items()})
        runner = _Runner(report, kb, target_versions(), {key for key, v in installed_now.items() if v})
        for rule in runtime_rules(kb):
            ACTIONS[rule.runtime["action"]](runner, rule, rule.runtime)
        if version is None:
            report.actions.append(Action("DET201", "TensorFlow determinism", ABSENT, "TensorFlow is not installed"))
        _applied[seed] = report
    if strict:
        # string hashing (the check-hashseed rule, DET105) is fixable only before the interpreter starts
        hashing = {r.code for r in kb_module.load().rules.values()
                   if (r.runtime or {}).get("action") == "check-hashseed"}
        blocking = [a for a in report.unfixable if require_hashseed or a.code not in hashing]
        if blocking:
            raise DeterminismError(report, blocking)
    return report


def plan(version: Optional[Version], seed: int) -> list[tuple[str, list[str]]]:
    """The code lines ``apply()`` runs for TensorFlow ``version`` (and the installed versions of
    the other frameworks): its run-fix actions, without running them."""
    kb = kb_module.load()
    versions = target_versions(version)
    out = []
    for rule in runtime_rules(kb):
        if (rule.runtime or {}).get("action") != "run-fix" or not rule.versions.contains(versions[rule.framework]):
            continue
        fix = rule.fix_for(versions[rule.framework])
        if fix is not None and fix.data.get("action") == "insert":
            out.append((rule.code, [line.replace("{seed}", str(seed)) for line in fix.data["code"]]))
    return out


def environment_for(version: Optional[Version], seed: int, base: Optional[dict[str, str]] = None) -> dict[str, str]:
    """Variables a launcher sets before the interpreter starts: PYTHONHASHSEED and the
    environment lines of the run-time fixes for this TensorFlow version and the installed
    versions of the other frameworks (CUBLAS_WORKSPACE_CONFIG for PyTorch 1.7-2.9)."""
    kb = kb_module.load()
    versions = target_versions(version)
    env = {"PYTHONHASHSEED": "0"}
    for rule in runtime_rules(kb):
        spec = rule.runtime or {}
        if spec.get("action") != "run-fix" or (spec.get("when-installed") and not installed(spec["when-installed"])):
            continue
        if not rule.versions.contains(versions[rule.framework]):
            continue
        fix = rule.fix_for(versions[rule.framework])
        for line in (fix.data.get("code", []) if fix else []):
            match = ENV_LINE.search(line)
            if match:
                name, value = match.group("name"), match.group("value")
                if match.group("append"):  # added to what the caller's environment holds
                    value = _appended((os.environ if base is None else base).get(name, ""), value)
                env[name] = value
    return env
