"""Paths, project roots and the command line (issue 27, items 2, 3, 13, 23 and 24): reports never
written through a symlink out of the project, --fix never through a named one, file names that are
not UTF-8, files from unrelated folders each with their own project, and ``python -m detlint`` never
importing the checked folder's modules. Real symlinks, a real git repository, real subprocesses."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

UNSEEDED = "import tensorflow as tf\nmodel = tf.keras.Sequential([tf.keras.layers.Conv2D(4, 3)])\nmodel.fit(x, y)\n"
FIXABLE = "import os\nos.environ['PYTHONHASHSEED'] = '0'\nprint(os.sep)\n"
FIXED = "import os\nprint(os.sep)\n"

posix_only = pytest.mark.skipif(os.name != "posix", reason="symlinks and byte file names are POSIX")


def detlint(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    """``python -m detlint`` as a user runs it; the output as bytes (what a UTF-8 reader gets)."""
    full_env = {**os.environ, "NO_COLOR": "1", "TMPDIR": str(cwd), **(env or {})}
    return subprocess.run([sys.executable, "-m", "detlint", *args], cwd=cwd, capture_output=True,
                          env=full_env, timeout=300)


# ---- item 24: `python -m detlint` never imports the modules of the folder it runs in -----------------------

def test_python_m_detlint_does_not_import_the_working_folders_modules(tmp_path: Path) -> None:
    # json and pickle are imported by detlint's own modules, typing by the package's __init__
    for name in ("json", "pickle", "typing"):
        marker = f"os.path.join(os.path.dirname(os.path.abspath(__file__)), 'IMPORTED_{name}')"
        (tmp_path / f"{name}.py").write_text(f"import os\nopen({marker}, 'w').close()\n")
    (tmp_path / "train.py").write_text(UNSEEDED)
    proc = detlint(".", "--tf-version", "2.15", cwd=tmp_path)
    assert sorted(p.name for p in tmp_path.glob("IMPORTED_*")) == []
    out = proc.stdout.decode()
    assert proc.returncode == 1 and "train.py:2:30: DET101" in out and "Found 2 errors." in out, proc.stderr


# ---- item 13: file names that are not UTF-8 --------------------------------------------------------------

def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args], cwd=root, check=True,
                   capture_output=True, timeout=60)


@pytest.fixture
def latin1_repo(tmp_path: Path) -> Path:
    """A git repository with a program named b'caf\\xe9.py' (Latin-1, not UTF-8), committed."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q", ".")
    with open(os.path.join(os.fsencode(root), b"caf\xe9.py"), "wb") as handle:
        handle.write(UNSEEDED.encode())
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "a file name from another system")
    return root


STRICT_UTF8 = {"PYTHONIOENCODING": "utf-8"}  # what a UTF-8 locale gives: surrogates are an error


@posix_only
@pytest.mark.parametrize("fmt", ["concise", "full", "github"])
def test_a_name_that_is_not_utf8_is_shown_escaped_in_text_formats(latin1_repo: Path, fmt: str) -> None:
    proc = detlint(".", "--tf-version", "2.15", "--output-format", fmt, cwd=latin1_repo, env=STRICT_UTF8)
    assert proc.returncode == 1, proc.stderr
    out = proc.stdout.decode("utf-8")  # valid UTF-8
    assert "caf\\xe9.py:2:30: DET101" in out and "caf\\xe9.py:2:30: DET201" in out
    if fmt == "github":
        assert "file=caf\\xe9.py,line=2" in out


@posix_only
@pytest.mark.parametrize("fmt", ["json", "sarif"])
def test_a_name_that_is_not_utf8_keeps_json_and_sarif_valid(latin1_repo: Path, fmt: str) -> None:
    for to_file in (False, True):
        args = ["-o", "report.out"] if to_file else []
        proc = detlint(".", "--tf-version", "2.15", "--output-format", fmt, *args, cwd=latin1_repo, env=STRICT_UTF8)
        assert proc.returncode == 1, proc.stderr
        data = (latin1_repo / "report.out").read_bytes() if to_file else proc.stdout
        report = json.loads(data.decode("utf-8"))  # strict: a lone surrogate escape would not be UTF-8 text
        assert "\\ud" not in data.decode("utf-8").lower()
        if fmt == "json":
            assert {r["filename"] for r in report} == {str(latin1_repo / "caf\\xe9.py")}
        else:
            uris = {loc["physicalLocation"]["artifactLocation"]["uri"]
                    for result in report["runs"][0]["results"] for loc in result["locations"]}
            assert uris == {"caf%E9.py"}  # the name's bytes, percent-encoded as a URI's are


@posix_only
def test_a_name_that_is_not_utf8_is_listed_diffed_and_fixed(latin1_repo: Path) -> None:
    shown = detlint("--show-files", ".", cwd=latin1_repo, env=STRICT_UTF8)
    assert shown.returncode == 0 and shown.stdout.decode("utf-8") == "caf\\xe9.py\n", shown.stderr
    diff = detlint(".", "--tf-version", "2.15", "--diff", "--unsafe-fixes", cwd=latin1_repo, env=STRICT_UTF8)
    assert diff.returncode == 1 and diff.stdout.decode("utf-8").startswith("--- a/caf\\xe9.py\n+++ b/caf\\xe9.py\n")
    fixed = detlint(".", "--tf-version", "2.15", "--fix", "--unsafe-fixes", cwd=latin1_repo, env=STRICT_UTF8)
    assert fixed.returncode == 0 and b"2 fixed, 0 remaining" in fixed.stdout, fixed.stderr
    assert b"set_random_seed(42)" in (latin1_repo / os.fsdecode(b"caf\xe9.py")).read_bytes()


# ---- item 2: the -o report never goes through a symlink out of the project ---------------------------------

@pytest.fixture
def linked(tmp_path: Path) -> tuple[Path, Path]:
    """A project with a program, and a file outside it (a shell start-up file, say)."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (project / "train.py").write_text(UNSEEDED)
    outside = tmp_path / "home" / ".bashrc"
    outside.parent.mkdir()
    outside.write_text("export PATH=$HOME/bin:$PATH\n")
    return project, outside


@posix_only
@pytest.mark.parametrize("how", ["relative", "absolute", "through a folder"])
def test_report_is_not_written_through_a_symlink_out_of_the_project(linked: tuple[Path, Path], how: str) -> None:
    project, outside = linked
    if how == "relative":
        (project / "detlint-report.txt").symlink_to(os.path.relpath(outside, project))
        name = "detlint-report.txt"
    elif how == "absolute":
        (project / "detlint-report.txt").symlink_to(outside)
        name = "detlint-report.txt"
    else:
        (project / "reports").symlink_to(outside.parent)
        name = "reports/.bashrc"
    proc = detlint(".", "--tf-version", "2.15", "-o", name, cwd=project)
    assert proc.returncode == 2 and b"Traceback" not in proc.stderr
    assert f"-o {name}: is a symlink to {outside}, outside the project".encode() in proc.stderr, proc.stderr
    assert outside.read_text() == "export PATH=$HOME/bin:$PATH\n"
    assert sorted(p.name for p in outside.parent.iterdir()) == [".bashrc"]


@posix_only
def test_report_goes_where_the_user_names_it(linked: tuple[Path, Path]) -> None:
    project, outside = linked
    # named outside the project by the user: written there (through a link of the user's own too)
    (outside.parent / "latest.txt").symlink_to(outside)
    proc = detlint(".", "--tf-version", "2.15", "-o", str(outside.parent / "latest.txt"), cwd=project)
    assert proc.returncode == 1 and "train.py:2:30: DET101" in outside.read_text(), proc.stderr
    assert (outside.parent / "latest.txt").is_symlink()
    # a link inside the project to a file inside it: the file is replaced, the link stays
    (project / "reports").mkdir()
    (project / "report.txt").symlink_to("reports/latest.txt")
    proc = detlint(".", "--tf-version", "2.15", "-o", "report.txt", cwd=project)
    assert proc.returncode == 1 and "train.py:2:30: DET101" in (project / "reports" / "latest.txt").read_text()
    assert (project / "report.txt").is_symlink()


@posix_only
def test_report_replaces_a_hard_linked_file_instead_of_writing_through_it(linked: tuple[Path, Path]) -> None:
    project, outside = linked
    os.link(outside, project / "report.txt")
    outside.chmod(0o640)
    proc = detlint(".", "--tf-version", "2.15", "-o", "report.txt", cwd=project)
    assert proc.returncode == 1, proc.stderr
    assert outside.read_text() == "export PATH=$HOME/bin:$PATH\n"
    assert "train.py:2:30: DET101" in (project / "report.txt").read_text()
    assert (project / "report.txt").stat().st_mode & 0o777 == 0o640  # the file it replaces keeps its mode
    assert sorted(p.name for p in project.iterdir()) == [".detlint_cache", "pyproject.toml", "report.txt", "train.py"]


@posix_only
def test_a_report_that_cannot_be_written_whole_leaves_the_old_one(linked: tuple[Path, Path]) -> None:
    """A real failing write: the file size limit (RLIMIT_FSIZE) is below the report's size."""
    resource = pytest.importorskip("resource")
    import signal

    project, _ = linked
    (project / "report.json").write_text("[]\n")

    def small_files() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails with EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (200, 200))

    env = {**os.environ, "NO_COLOR": "1", "TMPDIR": str(project)}
    proc = subprocess.run([sys.executable, "-m", "detlint", ".", "--no-cache", "--tf-version", "2.15",
                           "--output-format", "json", "-o", "report.json"], cwd=project, capture_output=True,
                          env=env, timeout=300, preexec_fn=small_files)
    assert proc.returncode == 2 and b"-o report.json: cannot write: File too large" in proc.stderr, proc.stderr
    assert (project / "report.json").read_text() == "[]\n"
    assert sorted(p.name for p in project.iterdir()) == ["pyproject.toml", "report.json", "train.py"]


# ---- item 3: --fix never writes through a named symlink out of the project -------------------------------

@posix_only
@pytest.mark.parametrize("markers", ["none", "both have pyproject.toml", "only the outside has one", "git"])
def test_fix_through_a_named_symlink_leaves_the_outside_file(tmp_path: Path, markers: str) -> None:
    project, outside = tmp_path / "proj", tmp_path / "outside"
    project.mkdir()
    outside.mkdir()
    (outside / "victim.py").write_text(FIXABLE)
    (project / "lnk.py").symlink_to("../outside/victim.py")
    if markers in ("both have pyproject.toml", "only the outside has one"):
        (outside / "pyproject.toml").write_text("")
    if markers == "both have pyproject.toml":
        (project / "pyproject.toml").write_text("")
    if markers == "git":
        (project / ".git").mkdir()
    proc = detlint("--fix", "--unsafe-fixes", "--no-cache", "proj/lnk.py", cwd=tmp_path)
    assert (outside / "victim.py").read_text() == FIXABLE
    assert (project / "lnk.py").is_symlink()
    assert b"proj/lnk.py: is a symlink to " + str(outside / "victim.py").encode() + \
        b", outside the project; not written" in proc.stderr, proc.stderr
    # checking it is fine: the finding stays reported
    assert proc.returncode == 1 and b"proj/lnk.py:2:1: DET105" in proc.stdout and b"0 fixed, 1 remaining" in proc.stdout


@posix_only
def test_fix_treats_a_named_symlink_as_a_walk_does(tmp_path: Path) -> None:
    """The same link found in its folder is not even read; a link to a file of the project is fixed
    through (the file changes, the link stays)."""
    project, outside = tmp_path / "proj", tmp_path / "outside"
    project.mkdir()
    outside.mkdir()
    (outside / "victim.py").write_text(FIXABLE)
    (project / "lnk.py").symlink_to("../outside/victim.py")
    (project / "inner.py").write_text(FIXABLE)
    (project / "inner_link.py").symlink_to("inner.py")
    walked = detlint("--fix", "--unsafe-fixes", "--no-cache", "proj", cwd=tmp_path)
    assert walked.returncode == 0 and b"1 fixed, 0 remaining" in walked.stdout, walked.stderr
    assert (outside / "victim.py").read_text() == FIXABLE and (project / "inner.py").read_text() == FIXED
    (project / "inner.py").write_text(FIXABLE)
    named = detlint("--fix", "--unsafe-fixes", "--no-cache", "proj/inner_link.py", cwd=tmp_path)
    assert named.returncode == 0 and (project / "inner.py").read_text() == FIXED, named.stderr
    assert (project / "inner_link.py").is_symlink()


# ---- item 23: files named together from unrelated folders each keep their own project -------------------

GRAPH_CODE = ("import tensorflow as tf\nx = tf.placeholder(tf.float32, [None, 4])\n"
              "with tf.Session() as sess:\n    sess.run(x, feed_dict={x: [[1, 2, 3, 4]]})\n")


def _findings(output: bytes) -> set[str]:
    """``path:line:col: CODE message`` lines, without the fixable mark only detlint prints."""
    return {line.replace(" [*]", "", 1) for line in output.decode().splitlines() if ": DET" in line}


@pytest.mark.parametrize("evidence", ["pins", "code"])
def test_files_from_unrelated_folders_each_get_their_own_project(tmp_path: Path, evidence: str) -> None:
    """a/ is TF 1.15 code, b/ TF 2; neither has a pyproject.toml or a repository. Named together,
    each file is checked as when it is named alone, and as flake8 checks it."""
    for folder, name in (("a", "x.py"), ("b", "y.py")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / name).write_text(UNSEEDED)
    if evidence == "pins":  # a requirements file in each folder (read for the pin of tensorflow)
        (tmp_path / "a" / "requirements.txt").write_text("tensorflow==1.15\n")
        (tmp_path / "b" / "requirements.txt").write_text("tensorflow==2.15\n")
    else:  # nothing pins TensorFlow: a/'s graph code says it is 1.15
        (tmp_path / "a" / "graph.py").write_text(GRAPH_CODE)
    together = detlint("--no-cache", "-q", "a/x.py", "b/y.py", cwd=tmp_path)
    alone = [detlint("--no-cache", "-q", name, cwd=tmp_path) for name in ("a/x.py", "b/y.py")]
    reversed_order = detlint("--no-cache", "-q", "b/y.py", "a/x.py", cwd=tmp_path)
    flake8 = subprocess.run([sys.executable, "-m", "flake8", "--select", "DET", "a/x.py", "b/y.py"], cwd=tmp_path,
                            capture_output=True, timeout=300, env={**os.environ, "TMPDIR": str(tmp_path)})
    expected = _findings(alone[0].stdout) | _findings(alone[1].stdout)
    assert any("a/x.py:2:30: DET201" in f and "in TF 1.15" in f for f in expected), expected
    assert any("b/y.py:2:30: DET201" in f and "in TF 1.15" not in f for f in expected), expected
    assert _findings(together.stdout) == expected, together.stderr
    assert _findings(reversed_order.stdout) == expected
    assert _findings(flake8.stdout) == expected, flake8.stderr


def test_a_file_named_after_one_in_a_pinned_subfolder_keeps_its_projects_pins(tmp_path: Path) -> None:
    """The project pins TF 2.15, its sub/ folder 1.15: top.py named after sub/x.py is still 2.15."""
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "requirements.txt").write_text("tensorflow==2.15\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "requirements.txt").write_text("tensorflow==1.15\n")
    (tmp_path / "sub" / "x.py").write_text(UNSEEDED)
    (tmp_path / "top.py").write_text(UNSEEDED)
    expected = set()
    for name in ("sub/x.py", "top.py"):
        expected |= _findings(detlint("--no-cache", "-q", name, cwd=tmp_path).stdout)
    assert {f.split(": ")[0] + (" 1.15" if "in TF 1.15" in f else "") for f in expected if "DET201" in f} == \
        {"sub/x.py:2:30 1.15", "top.py:2:30"}
    for order in (("sub/x.py", "top.py"), ("top.py", "sub/x.py")):
        assert _findings(detlint("--no-cache", "-q", *order, cwd=tmp_path).stdout) == expected, order
    flake8 = subprocess.run([sys.executable, "-m", "flake8", "--select", "DET", "sub/x.py", "top.py"], cwd=tmp_path,
                            capture_output=True, timeout=300, env={**os.environ, "TMPDIR": str(tmp_path)})
    assert _findings(flake8.stdout) == expected, flake8.stderr
