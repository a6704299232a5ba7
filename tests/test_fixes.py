"""--fix, --diff and --unsafe-fixes: before/after pairs, lossless writes, idempotence."""
from __future__ import annotations

import io
import json
import os
import re
import shutil
import stat
from pathlib import Path

import libcst as cst
import pytest

from conftest import FIXTURES, ROOT, fixture_units, fixture_version, make_linter
from kept import lost_in_fix
from detlint import cli
from detlint.fix import autofix
from detlint.fix.fixes import FixPlan, is_applicable
from detlint.lint.stand_ins import parse_module

PAIRS = sorted((FIXTURES / "fixes").glob("*.in.py"))


def run_cli(args: list[str], cwd: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[int, str]:
    monkeypatch.chdir(cwd)
    out = io.StringIO()
    code = cli.main(args, out=out)
    return code, out.getvalue()


def options_for(text: str) -> list[str]:
    version = fixture_version_from_text(text)
    first = text.splitlines()[0]
    opt_in = first.split("extend-select=")[1].split()[0] if "extend-select=" in first else None
    torch = first.split("torch-version=")[1].split()[0] if "torch-version=" in first else "2.15"
    backend = ["--keras-backend", first.split("keras-backend=")[1].split()[0]] if "keras-backend=" in first else []
    return ["--tf-version", version, "--torch-version", torch, "--jax-version", "0.10", *backend, "--isolated", "--fix"] \
        + ([] if "safe-only" in first else ["--unsafe-fixes"]) + (["--extend-select", opt_in] if opt_in else [])


def fixture_version_from_text(text: str) -> str:
    first = text.splitlines()[0] if text else ""
    return first.split("tf-version=")[1].split()[0] if "tf-version=" in first else "2.21"


@pytest.mark.parametrize("pair", PAIRS, ids=[p.name[:-6] for p in PAIRS])
def test_before_after(pair: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    name = pair.name.replace(".in.py", ".py")
    target = tmp_path / name
    shutil.copy(pair, target)
    text = pair.read_text()
    run_cli([name, *options_for(text)], tmp_path, monkeypatch)
    expected = pair.with_name(pair.name.replace(".in.py", ".out.py")).read_text()
    assert target.read_text() == expected
    code, out = run_cli([name, *options_for(text)], tmp_path, monkeypatch)
    assert target.read_text() == expected, "a second --fix changed the file"
    assert re.search(r"\n0 fixed, \d+ remaining$", out.rstrip()), out  # nothing left to fix


def test_fix_reports_counts_and_exit_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "t.py").write_text("import os\nos.environ['TF_USE_CUDNN_AUTOTUNE'] = '0'\nos.environ['TF_CUDNN_USE_AUTOTUNE'] = '0'\n")
    code, out = run_cli(["t.py", "--fix"], tmp_path, monkeypatch)
    assert out.rstrip().endswith("1 fixed, 1 remaining") and code == 1
    assert "[*]" not in out  # the remaining one has only an unsafe fix
    code, out = run_cli(["t.py", "--fix", "--unsafe-fixes"], tmp_path, monkeypatch)
    assert out.rstrip().endswith("1 fixed, 0 remaining") and code == 0
    assert (tmp_path / "t.py").read_text() == "\n"  # `import os` served only the removed lines


def test_safe_fixes_are_marked_in_normal_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "t.py").write_text("import os\nos.environ['TF_USE_CUDNN_AUTOTUNE'] = '0'\n")
    code, out = run_cli(["t.py"], tmp_path, monkeypatch)
    assert "t.py:2:1: DET203 [*] " in out
    assert "[*] 1 fixable with the `--fix` option." in out


def test_diff_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    source = "import os\nos.environ['TF_USE_CUDNN_AUTOTUNE'] = '0'\nprint(1)\n"
    (tmp_path / "t.py").write_text(source)
    code, out = run_cli(["t.py", "--diff"], tmp_path, monkeypatch)
    assert code == 1
    assert "--- a/t.py" in out and "-os.environ['TF_USE_CUDNN_AUTOTUNE'] = '0'" in out
    assert (tmp_path / "t.py").read_text() == source
    (tmp_path / "clean.py").write_text("print(1)\n")
    code, out = run_cli(["clean.py", "--diff"], tmp_path, monkeypatch)
    assert code == 0 and out == ""


@pytest.mark.parametrize("encoding_case", ["crlf", "bom", "latin1", "tabs_no_final_newline"])
def test_writes_are_lossless(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, encoding_case: str) -> None:
    body = ("import os\n\nos.environ['TF_USE_CUDNN_AUTOTUNE'] = '0'\nif True:\n\tname = os.sep + 'x'\n"
            "model = tf.keras.Sequential()\n")
    if encoding_case == "crlf":
        data = body.replace("\n", "\r\n").encode()
    elif encoding_case == "bom":
        data = b"\xef\xbb\xbf" + body.encode()
    elif encoding_case == "latin1":
        data = ("# -*- coding: latin-1 -*-\n" + body.replace("'x'", "'caf\xe9'")).encode("latin-1")
    else:
        data = body.rstrip("\n").encode()
    path = tmp_path / "t.py"
    path.write_bytes(data)
    os.chmod(path, 0o754)
    run_cli(["t.py", "--fix"], tmp_path, monkeypatch)
    after = path.read_bytes()
    removed = b"os.environ['TF_USE_CUDNN_AUTOTUNE'] = '0'"
    assert removed not in after
    newline = b"\r\n" if encoding_case == "crlf" else b"\n"
    expected = data.replace(removed + newline, b"")
    assert after == expected
    assert stat.S_IMODE(path.stat().st_mode) == 0o754
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".detlint-tmp")]


def test_unparsable_result_is_not_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = "import os\nos.environ['TF_USE_CUDNN_AUTOTUNE'] = '0'\n"
    path = tmp_path / "t.py"
    path.write_text(source)

    def broken_plan(diags, seed, sites=(), beside=None):
        plan = FixPlan()
        plan.inserts.append(("after-imports", ["x = ("], {}))
        return plan, list(diags)

    monkeypatch.setattr(autofix, "plan_for", broken_plan)
    linter = make_linter("2.21", root=tmp_path)
    (result,) = autofix.fix_files(linter, [path], unsafe=True, write=True)
    assert result.error and "left unchanged" in result.error
    assert path.read_text() == source


def test_a_file_the_parser_gives_up_on_mid_fix_is_reported_not_passed(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A parser worker that dies or runs out of time during a fix pass leaves no findings to fix:
    the file must come back with an error, not as fixed (or silently half fixed)."""
    from detlint.lint.ftypes import FileFacts

    source = "import os\nos.environ['PYTHONHASHSEED'] = '0'\n"
    path = tmp_path / "t.py"
    path.write_text(source)
    linter = make_linter("2.21", root=tmp_path)
    calls = []
    real_facts_of = linter.facts_of

    def facts_of(p: Path):  # type: ignore[no-untyped-def]
        calls.append(p)
        if len(calls) > 2:  # the run, then the fixer's first look; its fix pass finds the worker gone
            return FileFacts(path=str(p), error="too slow to check: gave up after 60 s (the file-timeout setting)")
        return real_facts_of(p)

    monkeypatch.setattr(linter, "facts_of", facts_of)
    (result,) = autofix.fix_files(linter, [path], unsafe=True, write=True)
    assert result.error == "not fixed: too slow to check: gave up after 60 s (the file-timeout setting)"
    assert path.read_text() == source


def copy_tree(tmp_path: Path) -> tuple[Path, list[tuple[list[Path], str]]]:
    """Every fixture unit and every example, copied, with the version each is checked at."""
    base = tmp_path / "copy"
    shutil.copytree(FIXTURES, base / "fixtures", ignore=shutil.ignore_patterns("*.out.py"))
    shutil.copytree(ROOT / "examples", base / "examples")
    units = []
    for _, folder, files in fixture_units():
        copied = [base / "fixtures" / f.relative_to(FIXTURES) for f in files]
        units.append((copied, fixture_version(files)))
    for pair in sorted((base / "fixtures" / "fixes").glob("*.in.py")):
        units.append(([pair], fixture_version([pair])))
    units.append((sorted((base / "examples").glob("*.py")), "2.21"))
    units.append((sorted((base / "examples" / "tf1_project").rglob("*.py")), "1.15"))
    return base, units


def test_fix_everything_property(tmp_path: Path) -> None:
    """After --fix --unsafe-fixes every file parses, every statement no fix names is still there
    byte for byte, a second run changes nothing, and nothing fixable is left."""
    _, units = copy_tree(tmp_path)
    fixed_files = 0
    for files, version in units:
        linter = make_linter(version, root=tmp_path)
        results = autofix.fix_files(linter, files, unsafe=True, write=True)
        assert all(r.error is None for r in results), [r.error for r in results]
        for result in results:
            lost = lost_in_fix(result)
            assert not lost, f"{result.path} lost {lost}"
        fixed_files += sum(r.changed for r in results)
        for path in files:
            parse_module(path.read_text(encoding="utf-8", errors="surrogateescape"))  # Python accepts it
        again = autofix.fix_files(make_linter(version, root=tmp_path), files, unsafe=True, write=False)
        changed = [r for r in again if r.changed]
        assert not changed, f"not idempotent on TF {version}: " + "".join(
            autofix.unified_diff(r, str(r.path)) + f"{[(d.line, d.code) for d in r.applied]}" for r in changed)
        library = {r.path.resolve() for r in results if autofix.LIBRARY_NOTE in r.notes}
        left = [d for d in make_linter(version, root=tmp_path).run(files).diagnostics if is_applicable(d, True)
                and not (d.fix_safety == "unsafe" and Path(d.path).resolve() in library)]
        assert not left, [(d.path, d.line, d.code) for d in left]
    assert fixed_files >= 20


def test_removal_never_takes_an_unrelated_statement(tmp_path: Path) -> None:
    """A removed statement was once remembered by the id() of a transient node; CPython reuses
    addresses, so a later statement could be dropped too. Repeat to give reuse its chance."""
    source = ('import os\ndef f(seed):\n    os.environ["PYTHONHASHSEED"] = str(seed)\n'
              "x = 1\ny = 2\nseed_everything(1)\nif __name__ == '__main__':\n    f(1)\n")
    path = tmp_path / "mini.py"
    for _ in range(40):
        path.write_text(source)
        (result,) = autofix.fix_files(make_linter("2.21", root=tmp_path), [path], unsafe=True, write=True)
        assert result.applied and result.error is None
        assert not lost_in_fix(result) and result.fixed == path.read_text()
        assert "x = 1\ny = 2\nseed_everything(1)\n" in path.read_text()


FIXABLE = "import os\nos.environ['PYTHONHASHSEED'] = '0'\nprint(os.sep)\n"


def test_fix_does_not_write_through_a_symlink_out_of_the_project(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    outside = tmp_path / "outside" / "shared.py"
    outside.parent.mkdir()
    outside.write_text(FIXABLE)
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text("")
    (project / "link.py").symlink_to(outside)
    (project / "inner.py").write_text(FIXABLE)
    (project / "inner_link.py").symlink_to(project / "inner.py")
    code, out = run_cli(["link.py", "inner_link.py", "--fix", "--unsafe-fixes"], project, monkeypatch)
    assert outside.read_text() == FIXABLE
    assert (project / "link.py").is_symlink()
    assert (project / "inner.py").read_text() == "import os\nprint(os.sep)\n"  # a link inside the project is fine
    assert (project / "inner_link.py").is_symlink()
    assert code == 1 and "1 remaining" in out


def test_fix_respects_read_only_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "ro.py"
    path.write_text(FIXABLE)
    path.chmod(0o444)
    (tmp_path / "rw.py").write_text(FIXABLE)
    code, out = run_cli(["ro.py", "rw.py", "--fix", "--unsafe-fixes"], tmp_path, monkeypatch)
    assert path.read_text() == FIXABLE and stat.S_IMODE(path.stat().st_mode) == 0o444
    assert (tmp_path / "rw.py").read_text() == "import os\nprint(os.sep)\n"
    assert "ro.py: is read-only" in capsys.readouterr().err
    assert code == 1 and out.rstrip().endswith("1 fixed, 1 remaining")


def test_fix_keeps_hard_links(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t.py"
    path.write_text(FIXABLE)
    os.link(path, tmp_path / "other_name.py")
    run_cli(["t.py", "--fix", "--unsafe-fixes"], tmp_path, monkeypatch)
    assert path.read_text() == "import os\nprint(os.sep)\n"
    assert (tmp_path / "other_name.py").read_text() == "import os\nprint(os.sep)\n"
    assert path.stat().st_ino == (tmp_path / "other_name.py").stat().st_ino


@pytest.fixture
def read_only_folder(tmp_path: Path):
    """A folder no file can be created in, for real: permissions for an ordinary user, a read-only
    bind mount for root (which ignores permissions)."""
    import subprocess

    source = tmp_path / "src"
    source.mkdir()
    (source / "t.py").write_text(FIXABLE)
    if os.geteuid() != 0:
        source.chmod(0o555)
        yield source
        source.chmod(0o755)
        return
    mounted = tmp_path / "locked"
    mounted.mkdir()
    ok = subprocess.run(["mount", "--bind", str(source), str(mounted)], capture_output=True).returncode == 0
    if not ok or subprocess.run(["mount", "-o", "remount,ro,bind", str(mounted)], capture_output=True).returncode:
        if ok:
            subprocess.run(["umount", str(mounted)], capture_output=True)
        pytest.skip("root without the right to make a read-only bind mount")
    try:
        yield mounted
    finally:
        subprocess.run(["umount", str(mounted)], capture_output=True)


def test_fix_in_a_folder_it_cannot_write_reports_and_goes_on(tmp_path: Path, read_only_folder: Path,
                                                             monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture) -> None:
    free = tmp_path / "free"
    free.mkdir()
    (free / "t.py").write_text(FIXABLE)
    locked = read_only_folder.relative_to(tmp_path) / "t.py"
    code, out = run_cli([str(locked), "free/t.py", "--isolated", "--no-cache", "--fix", "--unsafe-fixes"],
                        tmp_path, monkeypatch)
    err = capsys.readouterr().err
    assert f"{locked}: not written (" in err or f"{locked}: cannot be written" in err, err
    assert (read_only_folder / "t.py").read_text() == FIXABLE
    assert (free / "t.py").read_text() == "import os\nprint(os.sep)\n"
    assert code == 1 and out.rstrip().endswith("1 fixed, 1 remaining"), out


def test_hashseed_removal_is_unsafe_because_children_see_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = "import os\nimport subprocess\nos.environ['PYTHONHASHSEED'] = '0'\nsubprocess.run(['python', 'w.py'])\n"
    (tmp_path / "t.py").write_text(source)
    code, out = run_cli(["t.py", "--fix"], tmp_path, monkeypatch)
    assert (tmp_path / "t.py").read_text() == source
    assert "1 hidden fix can be enabled with the `--unsafe-fixes` option (it changes what the program computes" in out
    code, out = run_cli(["rule", "DET105"], tmp_path, monkeypatch)
    assert "Unsafe: the assignment does not affect the running interpreter, but it does reach" in out


def apply_edits(text: str, edits: list[dict]) -> str:
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(loc: dict) -> int:
        return starts[loc["row"] - 1] + loc["column"] - 1

    for edit in sorted(edits, key=lambda e: offset(e["location"]), reverse=True):
        text = text[:offset(edit["location"])] + edit["content"] + text[offset(edit["end_location"]):]
    return text


def test_json_edits_are_minimal_and_never_overlap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = ("import numpy as np\nimport tensorflow as tf\n\n"
              "ds = tf.data.Dataset.range(10).map(lambda x: x, num_parallel_calls=4, deterministic=False)\n"
              "model = tf.keras.Sequential([tf.keras.layers.Conv2D(4, 3)])\n"
              "model.compile(optimizer='adam', jit_compile=True)\n"
              "model.fit(np.zeros((2, 8, 8, 1)), np.zeros((2, 6, 6, 4)), workers=4, use_multiprocessing=True)\n")
    (tmp_path / "t.py").write_text(source)
    outputs = {run_cli(["t.py", "--tf-version", "2.12", "--output-format", "json"], tmp_path, monkeypatch)[1]
               for _ in range(3)}
    assert len(outputs) == 1  # the same edits every run
    records = json.loads(outputs.pop())
    edits = [e for r in records if r["fix"] for e in r["fix"]["edits"]]
    assert {(e["content"], e["location"]["row"]) for e in edits} >= {("True", 4), ("False", 6), ("1", 7), ("False", 7)}
    for edit in edits:  # exact ranges: a replaced literal, not its line
        if edit["location"] != edit["end_location"]:
            assert edit["location"]["row"] == edit["end_location"]["row"]
            assert edit["end_location"]["column"] - edit["location"]["column"] <= len("False")
    combined = apply_edits(source, edits)  # every emitted edit at once
    compile(combined, "t.py", "exec")
    assert "deterministic=True" in combined and "workers=1, use_multiprocessing=False" in combined
    assert "jit_compile=False" in combined and "set_random_seed(42)" in combined


def test_seed_fix_never_shadows_keras_taken_from_a_project_shim(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "shim.py").write_text("import tensorflow as tf\nkeras = tf.keras\n")
    (tmp_path / "train.py").write_text("from shim import keras\n\n"
                                       "model = keras.Sequential([keras.layers.Dense(2)])\nmodel.fit(x, y)\n")
    run_cli(["train.py", "--isolated", "--fix", "--unsafe-fixes"], tmp_path, monkeypatch)
    fixed = (tmp_path / "train.py").read_text()
    assert "import keras as keras_lib\n" in fixed and "keras_lib.utils.set_random_seed(42)" in fixed
    assert "\nimport keras\n" not in fixed and "model = keras.Sequential" in fixed


RAISING = """import torch
from torch import nn

model = nn.Sequential(nn.Conv2d(1, 8, 3), nn.AdaptiveAvgPool2d({size}), nn.Flatten()).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loss = model(torch.ones(2, 1, 28, 28).cuda()).sum()
loss.backward()
opt.step()
"""


@pytest.mark.parametrize("size, torch_version, switch, said", [
    (7, "2.13", "torch.use_deterministic_algorithms(True, warn_only=True)", "raise under the strict switch"),
    (1, "2.13", "torch.use_deterministic_algorithms(True)\n", None),
    (7, "1.9", None, "DET602 not fixed: the ops at t.py:4 (DET603) raise under the strict switch, and this PyTorch"),
])
def test_a_switch_fix_never_makes_the_program_raise(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys,
                                                    size: int, torch_version: str, switch: str | None,
                                                    said: str | None) -> None:
    """Turning on deterministic algorithms makes the adaptive pooling backward raise on CUDA
    (DET603): --fix writes the warn-only switch where the version has it, and nothing where it
    has not, and says which ops; a pooling to one value per channel does not raise."""
    (tmp_path / "t.py").write_text(RAISING.format(size=size))
    run_cli(["t.py", "--isolated", "--no-cache", "--torch-version", torch_version, "--fix", "--unsafe-fixes"],
            tmp_path, monkeypatch)
    fixed = (tmp_path / "t.py").read_text()
    err = capsys.readouterr().err
    if switch:
        assert switch in fixed and fixed.count("use_deterministic_algorithms") == 1, fixed
    else:
        assert "use_deterministic_algorithms" not in fixed and "set_deterministic" not in fixed, fixed
    assert (said in err) if said else "raise under" not in err, err
    again = fixed
    run_cli(["t.py", "--isolated", "--no-cache", "--torch-version", torch_version, "--fix", "--unsafe-fixes"],
            tmp_path, monkeypatch)
    assert (tmp_path / "t.py").read_text() == again


def test_an_argument_added_to_a_call_keeps_the_calls_layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """generator= goes on a line of its own where the call has one argument per line, and the
    closing bracket and a trailing comma stay where they were; a one-line call stays one line. (The
    model is loaded whole: the loaders are the program's only draws, so each is its own DET606.)"""
    source = ("import torch\nfrom torch.utils.data import DataLoader\n\n"
              "a = DataLoader(\n    data,\n    batch_size=32,\n    shuffle=True\n)\n"
              "b = DataLoader(data,\n               batch_size=32,\n               shuffle=True)\n"
              "c = DataLoader(\n    data,\n    shuffle=True,\n)\n"
              "d = DataLoader(data, shuffle=True)\n"
              "model = torch.load('model.pt')\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
              "for x in a:\n    model(x).sum().backward()\n    opt.step()\n")
    (tmp_path / "t.py").write_text(source)
    run_cli(["t.py", "--isolated", "--no-cache", "--fix", "--unsafe-fixes"], tmp_path, monkeypatch)
    fixed = (tmp_path / "t.py").read_text()
    gen = "generator=torch.Generator().manual_seed(42)"
    assert f"    shuffle=True,\n    {gen}\n)\n" in fixed
    assert f"               shuffle=True,\n               {gen})\n" in fixed
    assert f"    shuffle=True,\n    {gen},\n)\n" in fixed
    assert f"d = DataLoader(data, shuffle=True, {gen})\n" in fixed


def test_an_added_argument_leaves_the_calls_comments_where_they_were() -> None:
    """A comment after an argument stays on that argument's line and is not copied."""
    import libcst as cst

    from detlint.fix.fixes import _set_args

    def added(src: str) -> str:
        module = cst.parse_module(src)
        return module.code_for_node(_set_args(module.body[0].body[0].value, {"gen": "g"}, {}))

    assert added("f(\n    a,  # first\n    b\n)") == "f(\n    a,  # first\n    b,\n    gen=g\n)"
    assert added("f(\n    a,\n    b,  # last\n)") == "f(\n    a,\n    b,  # last\n    gen=g,\n)"
    assert added("f(\n    a,\n    b  # last\n)") == "f(\n    a,\n    b  # last\n    gen=g\n)".replace(
        "b  # last\n", "b,  # last\n")
    assert added("f()") == "f(gen=g)" and added("f(a, b)") == "f(a, b, gen=g)"


def test_a_suppressed_raising_op_still_keeps_the_strict_switch_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys) -> None:
    """`# noqa: DET603` hides the finding, not the RuntimeError: the fix still writes warn_only; and
    without --unsafe-fixes no note claims a switch that was not written."""
    (tmp_path / "t.py").write_text(RAISING.format(size=7).replace("nn.AdaptiveAvgPool2d(7),",
                                                                  "nn.AdaptiveAvgPool2d(7),  # noqa: DET603\n   "))
    run_cli(["t.py", "--isolated", "--no-cache", "--torch-version", "2.13", "--diff"], tmp_path, monkeypatch)
    assert "raise under the strict switch" not in capsys.readouterr().err
    run_cli(["t.py", "--isolated", "--no-cache", "--torch-version", "2.13", "--fix", "--unsafe-fixes"],
            tmp_path, monkeypatch)
    fixed = (tmp_path / "t.py").read_text()
    assert "use_deterministic_algorithms(True, warn_only=True)" in fixed, fixed
