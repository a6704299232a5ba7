"""detlint.apply() and detlint run, with the real tensorflow-cpu, each run in a fresh process."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import venv
from pathlib import Path

import pytest

from conftest import REORDERING_PIPELINE, ROOT
from detlint.knowledge import kb as kb_module
from detlint.runtime import shim as runtime
from detlint.runtime.launcher import detlint_home
from detlint.knowledge.versions import Version

CNN = ROOT / "tests" / "realtf" / "keras_cnn.py"
KB = kb_module.load()


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DETLINT_", "TF_DETERMINISTIC"))}
    env.pop("PYTHONHASHSEED", None)
    env.update({"CUDA_VISIBLE_DEVICES": "", "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": str(ROOT)}, **extra)
    return env


def run_python(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(args, capture_output=True, text=True, cwd=cwd, env=clean_env(**env), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def weights(proc: subprocess.CompletedProcess[str]) -> str:
    return re.search(r"WEIGHTS (\w+)", proc.stdout).group(1)  # type: ignore[union-attr]


def script(tmp_path: Path, hook: str) -> Path:
    path = tmp_path / "train.py"
    path.write_text(CNN.read_text().replace("# DETLINT-HOOK", hook))
    return path


@pytest.mark.skipif(shutil.which("true") is None, reason="POSIX only")
def test_cnn_weights_differ_without_detlint_and_match_with_apply_or_run(tmp_path: Path) -> None:
    pytest.importorskip("tensorflow")
    plain = script(tmp_path, "")
    runs = {weights(run_python([sys.executable, str(plain)], tmp_path)) for _ in range(2)}
    assert len(runs) == 2, "two plain runs trained identically; the test would prove nothing"

    applied = script(tmp_path, "import detlint\ndetlint.apply(seed=7)")
    runs = {weights(run_python([sys.executable, str(applied)], tmp_path)) for _ in range(2)}
    assert len(runs) == 1

    launched = {weights(run_python([sys.executable, "-m", "detlint", "run", "--seed", "7", "--", sys.executable,
                                    str(plain)], tmp_path)) for _ in range(2)}
    assert len(launched) == 1





def test_tf_data_order_fixed_under_apply(tmp_path: Path) -> None:
    pytest.importorskip("tensorflow")
    plain = tmp_path / "p.py"
    plain.write_text(REORDERING_PIPELINE.format(before="", after="", n=40, passes=1))
    orders = {run_python([sys.executable, str(plain)], tmp_path).stdout for _ in range(3)}
    assert len(orders) > 1, "deterministic=False gave the same order three times"
    fixed = tmp_path / "f.py"
    fixed.write_text(REORDERING_PIPELINE.format(before="import detlint; detlint.apply(seed=3)", after="", n=40,
                                                passes=1))
    orders = {run_python([sys.executable, str(fixed)], tmp_path).stdout for _ in range(3)}
    assert orders == {"ORDER " + ",".join(map(str, range(40))) + "\n"}


def test_hash_seed_only_fixed_by_the_launcher(tmp_path: Path) -> None:
    prog = tmp_path / "h.py"
    prog.write_text("import detlint\nr = detlint.apply(seed=1)\nprint(hash('detlint'))\n"
                    "print([a.status for a in r.by_code('DET105')])\n")
    plain = [run_python([sys.executable, str(prog)], tmp_path).stdout.splitlines() for _ in range(2)]
    assert plain[0][0] != plain[1][0]
    assert plain[0][1] == "['unfixable']"
    launched = [run_python([sys.executable, "-m", "detlint", "run", "--", sys.executable, str(prog)],
                           tmp_path).stdout.splitlines() for _ in range(2)]
    assert launched[0][0] == launched[1][0]
    assert launched[0][1] == "['not needed']"


def test_launcher_passes_arguments_stdin_and_exit_code(tmp_path: Path) -> None:
    prog = tmp_path / "echo.py"
    prog.write_text("import sys\nsys.stdout.write(sys.stdin.read() + ' ' + ' '.join(sys.argv[1:]))\nsys.exit(5)\n")
    proc = subprocess.run([sys.executable, "-m", "detlint", "run", "--", sys.executable, str(prog), "a", "--b"],
                          input="in", capture_output=True, text=True, env=clean_env(), timeout=120)
    assert proc.returncode == 5 and proc.stdout == "in a --b"


def test_report_strict_and_idempotence(tmp_path: Path) -> None:
    prog = tmp_path / "s.py"
    prog.write_text(textwrap.dedent("""
        import sys
        import detlint
        report = detlint.apply(seed=2)
        assert detlint.apply(seed=2) is report
        print(sorted({a.code for a in report.actions}))
        print(str(report).splitlines()[0])
        print("STRICT PASSED", detlint.apply(seed=2, strict=True) is report)
        try:
            detlint.apply(seed=2, strict=True, require_hashseed=True)
        except detlint.DeterminismError as exc:
            print("STRICT", exc)
    """))
    out = run_python([sys.executable, str(prog)], tmp_path).stdout.splitlines()
    codes = eval(out[0])
    assert {"DET101", "DET103", "DET104", "DET105", "DET201"} <= set(codes)
    assert out[1].startswith("detlint.apply(seed=2) for TensorFlow 2.")
    assert out[2] == "STRICT PASSED True"  # string hashing alone does not fail strict mode
    assert out[3].startswith("STRICT cannot make this process deterministic: DET105")


def readme_apply_example() -> str:
    """The example of docs/runtime.md (the README's "At run time" section moved there)."""
    readme = (ROOT / "docs" / "runtime.md").read_text()
    blocks = [b for b in re.findall(r"```python\n(.*?)```", readme, re.S) if "detlint.apply(" in b]
    assert len(blocks) == 1
    return blocks[0]


def test_readme_apply_example_runs_as_written(tmp_path: Path) -> None:
    example = tmp_path / "example.py"
    example.write_text(readme_apply_example())
    assert "strict=True" in example.read_text()
    plain = run_python([sys.executable, str(example)], tmp_path)  # no PYTHONHASHSEED: a plain `python`
    assert plain.stdout.startswith("detlint.apply(seed=42) for TensorFlow")
    assert re.search(r"DET105\s+unfixable", plain.stdout)
    launched = run_python([sys.executable, "-m", "detlint", "run", "--seed", "42", "--", sys.executable,
                           str(example)], tmp_path)
    assert re.search(r"DET105\s+not needed", launched.stdout)
    # asking for the hash seed too: an error in a plain run, fine under the launcher
    strict = tmp_path / "strict.py"
    strict.write_text("import detlint\ndetlint.apply(seed=42, strict=True, require_hashseed=True)\n")
    failed = subprocess.run([sys.executable, str(strict)], capture_output=True, text=True, cwd=tmp_path,
                            env=clean_env(), timeout=120)
    assert failed.returncode == 1 and "DeterminismError" in failed.stderr and "DET105" in failed.stderr
    run_python([sys.executable, "-m", "detlint", "run", "--", sys.executable, str(strict)], tmp_path)


@pytest.mark.parametrize("seed", [-1, 2**32, True, 1.5])
def test_apply_refuses_seeds_generators_reject(seed: object) -> None:
    with pytest.raises(ValueError, match="0 to 4294967295"):
        runtime.apply(seed=seed)  # type: ignore[arg-type]
    assert seed not in runtime._applied


@pytest.mark.parametrize("command", [["run", "--seed", "-1", "--", "python", "-c", "pass"],
                                     ["run", "--seed", "4294967296", "--", "python", "-c", "pass"],
                                     ["diverge", "--seed", "-1", "--", "python", "-c", "pass"]])
def test_launchers_refuse_bad_seeds(tmp_path: Path, command: list[str]) -> None:
    proc = subprocess.run([sys.executable, "-m", "detlint", *command], capture_output=True, text=True,
                          cwd=tmp_path, env=clean_env(), timeout=120)
    assert proc.returncode == 2 and "argument --seed" in proc.stderr and "0 to 4294967295" in proc.stderr


def test_child_pythonpath_holds_only_the_boot_folder() -> None:
    from detlint.divergence.finder import _child_env
    from detlint.runtime.launcher import BOOT, child_environment

    site_packages = str(Path(runtime.__file__).resolve().parent.parent)
    for env in (child_environment(3, False, base={"PYTHONPATH": "/the/users/own"}),
                _child_env("/tmp/dump", None, False, 2, 10.0, 8.0)):
        paths = env["PYTHONPATH"].split(os.pathsep)
        assert paths[0] == str(BOOT)
        assert site_packages not in paths
    assert child_environment(3, False, base={"PYTHONPATH": "/the/users/own"})["PYTHONPATH"] == \
        os.pathsep.join([str(BOOT), "/the/users/own"])


def test_run_with_an_interpreter_that_has_no_detlint(tmp_path: Path) -> None:
    """The program's interpreter is another environment: detlint is borrowed for apply() only,
    behind the program's own packages, and is off sys.path when the program runs."""
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    prog = tmp_path / "prog.py"
    prog.write_text("import json, random, sys\n"
                    "print(random.random() == random.Random(5).random())\n"
                    "print(json.dumps(sys.path))\n")
    proc = run_python([sys.executable, "-m", "detlint", "run", "--seed", "5", "--", str(python), str(prog)],
                      tmp_path, XDG_CACHE_HOME=str(tmp_path / "cache"), PYTHONPATH="")
    assert "apply() failed" not in proc.stderr
    seeded, path = proc.stdout.splitlines()
    assert seeded == "True", proc.stderr  # apply() ran in the other interpreter
    home = detlint_home()
    assert len(home) >= 2  # detlint's folder and PyYAML's
    assert not set(home) & set(json.loads(path)), "detlint's folders stayed on the program's sys.path"
    no_detlint = subprocess.run([str(python), "-c", "import detlint"], capture_output=True, cwd=tmp_path,
                                env=clean_env(PYTHONPATH=""))
    assert no_detlint.returncode == 1  # the test would prove nothing if that interpreter had detlint


def test_import_detlint_has_no_side_effects(tmp_path: Path) -> None:
    proc = run_python([sys.executable, "-c", "import sys, os; before = dict(os.environ); import detlint; "
                       "print(sorted(m for m in sys.modules if m.split('.')[0] in "
                       "{'tensorflow','numpy','keras','yaml','libcst'})); print(before == dict(os.environ))"],
                      tmp_path)
    assert proc.stdout.split() == ["[]", "True"]


def test_apply_without_tensorflow_seeds_random_and_numpy(tmp_path: Path) -> None:
    """A real environment without TensorFlow: a fresh venv that sees only PyYAML and NumPy."""
    np = pytest.importorskip("numpy")
    yaml = pytest.importorskip("yaml")
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=False)
    site = next(env_dir.glob("lib/python*/site-packages"))
    for module in (np, yaml):
        src = Path(module.__file__).parent
        for item in list(src.parent.glob(src.name + "*")) + list(src.parent.glob("_yaml")) + \
                list(src.parent.glob("numpy.libs")):
            if not (site / item.name).exists():
                (site / item.name).symlink_to(item)
    python = env_dir / "bin" / "python"
    code = ("import detlint, random, numpy\nr = detlint.apply(seed=5)\n"
            "print([(a.code, a.status) for a in r.actions if a.code in ('DET103', 'DET104', 'DET201')])\n"
            "print(r.tf_version, random.random() == __import__('random').Random(5).random())\n")
    proc = run_python([str(python), "-c", code], tmp_path)
    lines = proc.stdout.splitlines()
    assert "('DET103', 'done')" in lines[0] and "('DET104', 'done')" in lines[0]
    assert "('DET201', 'absent')" in lines[0]
    assert lines[1] == "None True"


VERSIONS = ["1.15", "2.0", "2.4", "2.5", "2.7", "2.8", "2.15", "2.16", "2.21"]


@pytest.mark.parametrize("version", VERSIONS)
def test_runtime_runs_exactly_what_fix_writes(version: str) -> None:
    """For every rule with a static fix and a run-time action, both come from the same KB fix
    entry, and per version range the run-time code is the code --fix inserts."""
    v = Version.parse(version)
    planned = dict(runtime.plan(v, seed=42))
    for rule in KB.rules.values():
        fix = rule.fix_for(v)
        if not rule.runtime or rule.runtime.get("action") != "run-fix" or fix is None or rule.framework != "tensorflow":
            continue  # PyTorch's: test_real_torch_claims
        assert planned[rule.code] == [line.replace("{seed}", "42") for line in fix.data["code"]]
    env = runtime.environment_for(v, 42)
    if Version(2, 1) <= v < Version(2, 8):
        assert env.get("TF_DETERMINISTIC_OPS") == "1"
    if Version(1, 14) <= v < Version(2, 1):
        assert env.get("TF_CUDNN_DETERMINISTIC") == "1"
    if v >= Version(2, 8):
        assert "TF_DETERMINISTIC_OPS" not in env
        assert planned["DET201"] == ["{tf}.config.experimental.enable_op_determinism()"]
