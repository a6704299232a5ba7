"""Notebooks: cells as one program, cell locations, fixes written back into the right cells."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES, make_linter

NOTEBOOKS = FIXTURES / "notebooks"


def write_notebook(path: Path, cells: list[str]) -> Path:
    data = {"cells": [{"cell_type": "code", "execution_count": None, "id": f"c{i}", "metadata": {}, "outputs": [],
                       "source": src.splitlines(keepends=True)} for i, src in enumerate(cells)],
            "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(data, indent=1) + "\n")
    return path


def findings(paths: list[Path], version: str, **overrides: str) -> list[tuple[str, object, int, str]]:
    diags = make_linter(version, root=NOTEBOOKS, **overrides).run(paths).diagnostics
    return sorted((Path(d.path).name, d.cell, d.line, d.code) for d in diags)


def test_background_notebook_findings_per_cell() -> None:
    nb = NOTEBOOKS / "mnist_background.ipynb"
    assert findings([nb], "2.21") == [
        ("mnist_background.ipynb", 3, 2, "DET102"),  # tf.random.set_seed(123) only, under Keras 3
        ("mnist_background.ipynb", 6, 5, "DET201"),  # Conv2D, no op determinism
        ("mnist_background.ipynb", 7, 1, "DET105"),  # %env PYTHONHASHSEED=0
    ]
    assert findings([nb], "2.12") == [("mnist_background.ipynb", 6, 5, "DET201"),
                                      ("mnist_background.ipynb", 7, 1, "DET105")]


def test_seed_in_a_later_cell_does_not_count() -> None:
    diags = make_linter("2.21", root=NOTEBOOKS).run([NOTEBOOKS / "seed_too_late.ipynb"]).diagnostics
    (det101,) = [d for d in diags if d.code == "DET101"]
    assert (det101.cell, det101.line) == (1, 2)
    assert "seed_too_late.ipynb:cell 2:1" in det101.message


def test_a_layer_tried_out_before_the_seed_cell_does_not_make_the_seed_late() -> None:
    assert findings([NOTEBOOKS / "throwaway_layer.ipynb"], "2.21") == []


def test_a_model_built_before_the_seed_and_trained_after_it_makes_the_seed_late() -> None:
    assert findings([NOTEBOOKS / "trained_before_seed.ipynb"], "2.21") == [("trained_before_seed.ipynb", 2, 1, "DET101")]


def test_clear_session_then_seed_then_rebuild_starts_afresh() -> None:
    assert findings([NOTEBOOKS / "clear_session_reseed.ipynb"], "2.21") == []


def test_clear_session_does_not_take_back_numbers_drawn_before_it(tmp_path: Path) -> None:
    cells = ["import numpy as np\nimport tensorflow as tf\nx = np.ones((8, 4))\nnp.random.shuffle(x)",
             "tf.keras.backend.clear_session()\ntf.keras.utils.set_random_seed(1)",
             "model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\nmodel.fit(x, np.ones((8, 1)))"]
    assert findings([write_notebook(tmp_path / "drawn.ipynb", cells)], "2.21") == [("drawn.ipynb", 1, 4, "DET103")]


def test_rebuilding_a_model_after_the_seed_discards_the_one_built_before(tmp_path: Path) -> None:
    cells = ["import numpy as np\nimport tensorflow as tf\nmodel = tf.keras.Sequential([tf.keras.layers.Dense(1)])",
             "tf.keras.utils.set_random_seed(1)\ntf.config.experimental.enable_op_determinism()",
             "model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\nmodel.fit(np.ones((8, 4)), np.ones((8, 1)))"]
    assert findings([write_notebook(tmp_path / "rebuilt.ipynb", cells)], "2.21") == []
    cells[2] = "model.fit(np.ones((8, 4)), np.ones((8, 1)))"  # the model from before the seed is trained
    assert findings([write_notebook(tmp_path / "kept.ipynb", cells)], "2.21") == [("kept.ipynb", 1, 3, "DET101")]


def test_seed_in_an_earlier_cell_covers_later_cells(tmp_path: Path) -> None:
    nb = write_notebook(tmp_path / "ok.ipynb", [
        "import tensorflow as tf\ntf.keras.utils.set_random_seed(1)\ntf.config.experimental.enable_op_determinism()",
        "%%time\nmodel = tf.keras.Sequential([tf.keras.layers.Conv2D(2, 3)])",
        "!nvidia-smi\nfor epoch in range(2):\n    !echo epoch\n    model.fit(x, y)",
    ])
    assert findings([nb], "2.12") == []


# bicubic upsampling backward raises under the switch before PyTorch 2.15
BICUBIC_RAISES = {"torch-version": "2.14"}


def test_logits_resized_for_an_argmax_in_a_later_cell_are_never_differentiated(tmp_path: Path) -> None:
    """Nothing imports a notebook: a name only its later cells read is followed like a local one.
    Logits resized only to take an argmax have no backward; resized for a loss they do. The same
    lines in a module are kept (an importer may read the resized value)."""
    cells = [
        "import torch\nimport torch.nn.functional as F\ntorch.manual_seed(0)\ntorch.use_deterministic_algorithms(True)",
        "model = torch.nn.Conv2d(3, 4, 3).cuda()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for x, y in loader:\n    F.cross_entropy(model(x), y).backward()\n    opt.step()",
        "def metrics(prediction):\n    logits, labels = prediction  # its own names, not the cell's\n    return logits.mean()",
        "logits = model(image)\nlarge = F.interpolate(logits, size=(64, 64), mode='bicubic')\n"
        "prediction = large.argmax(dim=1)[0]",
    ]
    nb = write_notebook(tmp_path / "predict.ipynb", cells)
    assert findings([nb], "2.21", **BICUBIC_RAISES) == []
    trained = write_notebook(tmp_path / "tune.ipynb", cells[:3] + [cells[3] + "\nF.cross_entropy(large, y).backward()"])
    assert findings([trained], "2.21", **BICUBIC_RAISES) == [("tune.ipynb", 4, 2, "DET603")]
    script = tmp_path / "predict.py"
    script.write_text("\n".join(cells) + "\n")
    assert findings([script], "2.21", **BICUBIC_RAISES) == [("predict.py", None, 14, "DET603")]


@pytest.mark.parametrize("backend_cell", ["%env KERAS_BACKEND=jax", "import os\nos.environ['KERAS_BACKEND'] = 'jax'"])
def test_an_unseeded_keras_notebook_on_jax_gets_the_seed_finding_and_its_fix(tmp_path: Path, backend_cell: str) -> None:
    """Keras 3 on JAX still draws layer seeds: DET101 names keras.utils.set_random_seed; the
    TensorFlow op rules (a Conv2D's DET201) stay silent off TensorFlow, and determinism is JAX's
    XLA flag (DET701)."""
    cells = [backend_cell, "import keras\nfrom keras import layers",
             "model = keras.Sequential([keras.Input((28, 28, 1)), layers.Conv2D(8, 3), layers.Flatten(),\n"
             "                          layers.Dense(10)])\nmodel.compile(optimizer='adam', loss='mse')\n"
             "model.fit(x_train, y_train, epochs=2)"]
    nb = write_notebook(tmp_path / "convnet.ipynb", cells)
    diags = make_linter("2.21", root=NOTEBOOKS).run([nb]).diagnostics
    assert [(d.cell, d.line, d.code) for d in diags] == [(3, 1, "DET101"), (3, 4, "DET701")]
    assert "keras.utils.set_random_seed(42)" in diags[0].message
    assert "Keras 3 model on the JAX backend" in diags[1].message and "--xla_gpu_deterministic_ops=true" in diags[1].message


def test_a_jax_notebook_takes_the_flag_from_env_magic_and_the_fix_puts_it_above_import_jax(tmp_path: Path) -> None:
    train = ["import jax\nimport optax", "print(jax.devices())",
             "grads = jax.grad(loss)(params, batch)\nparams = optax.apply_updates(params, grads)"]
    flagged = write_notebook(tmp_path / "flagged.ipynb", ["%env XLA_FLAGS=--xla_gpu_deterministic_ops=true", *train])
    plain = write_notebook(tmp_path / "plain.ipynb", train)
    assert findings([flagged, plain], "2.21") == [("plain.ipynb", 3, 1, "DET701")]
    subprocess.run([sys.executable, "-m", "detlint", "--isolated", "--no-cache", "--fix", "--unsafe-fixes",
                    "plain.ipynb"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    first = "".join(json.loads(plain.read_text())["cells"][0]["source"])
    assert first.index("XLA_FLAGS") < first.index("import jax"), first
    assert findings([plain], "2.21") == []


def test_a_notebook_saved_with_colabs_tpu_runtime_gets_no_gpu_findings(tmp_path: Path) -> None:
    """Colab records the runtime a notebook was saved with (metadata.accelerator): one written
    for a TPU gets no finding about GPU kernels (as one that sets the TPU up in code); a GPU
    runtime, or none, changes nothing."""
    train = ["import jax\nimport optax",
             "grads = jax.grad(loss)(params, batch)\nparams = optax.apply_updates(params, grads)"]
    made = {}
    for runtime in ("TPU", "GPU", None):
        path = write_notebook(tmp_path / f"{runtime or 'none'}.ipynb", train)
        if runtime:
            data = json.loads(path.read_text())
            data["metadata"] = {"accelerator": runtime, "colab": {"provenance": []}}
            path.write_text(json.dumps(data, indent=1) + "\n")
        made[runtime] = path
    assert findings(list(made.values()), "2.21") == [("GPU.ipynb", 2, 1, "DET701"), ("none.ipynb", 2, 1, "DET701")]


def test_a_tpu_notebook_that_moves_its_model_to_a_gpu_is_checked_as_a_gpu_program(tmp_path: Path) -> None:
    """Metadata copied with a notebook can be stale: code that moves the model to CUDA outweighs it."""
    cells = ["import torch\ntorch.manual_seed(0)",
             "model = torch.nn.Conv2d(3, 8, 3).to(torch.device('cuda'))\n"
             "opt = torch.optim.SGD(model.parameters(), lr=0.1)",
             "model(torch.ones(1, 3, 8, 8, device='cuda')).sum().backward()\nopt.step()"]
    path = write_notebook(tmp_path / "tpu_gpu.ipynb", cells)
    data = json.loads(path.read_text())
    data["metadata"] = {"accelerator": "TPU"}
    path.write_text(json.dumps(data, indent=1) + "\n")
    assert [f[3] for f in findings([path], "2.21", **{"torch-version": "2.4"})] == ["DET602"]


def test_magics_env_and_noqa_inside_cells(tmp_path: Path) -> None:
    nb = write_notebook(tmp_path / "env.ipynb", [
        "%env TF_USE_CUDNN_AUTOTUNE=0\nimport os",
        "os.environ['PYTHONHASHSEED'] = '0'  # noqa: DET105\n%env PYTHONHASHSEED 0\nx = !ls\nprint?",
    ])
    assert findings([nb], "2.21") == [("env.ipynb", 1, 1, "DET203"), ("env.ipynb", 2, 2, "DET105")]


@pytest.mark.parametrize("name, reason", [("broken.ipynb", "not valid notebook JSON"),
                                          ("old_format.ipynb", "nbformat 3 is not supported")])
def test_bad_notebooks_are_det001(name: str, reason: str) -> None:
    (diag,) = make_linter("2.21", root=NOTEBOOKS).run([NOTEBOOKS / name]).diagnostics
    assert diag.code == "DET001" and reason in diag.message


def test_cli_formats_carry_the_cell(tmp_path: Path) -> None:
    shutil.copy(NOTEBOOKS / "mnist_background.ipynb", tmp_path)
    env = {**os.environ, "NO_COLOR": "1"}
    concise = subprocess.run([sys.executable, "-m", "detlint", "mnist_background.ipynb", "--isolated"],
                             cwd=tmp_path, capture_output=True, text=True, env=env).stdout
    assert "mnist_background.ipynb:cell 6:5:5: DET201" in concise
    records = json.loads(subprocess.run([sys.executable, "-m", "detlint", "mnist_background.ipynb", "--isolated",
                                         "--output-format", "json"], cwd=tmp_path, capture_output=True,
                                        text=True, env=env).stdout)
    det201 = next(r for r in records if r["code"] == "DET201")
    assert det201["cell"] == 6 and det201["location"] == {"row": 5, "column": 5}
    sarif = json.loads(subprocess.run([sys.executable, "-m", "detlint", "mnist_background.ipynb", "--isolated",
                                       "--output-format", "sarif"], cwd=tmp_path, capture_output=True,
                                      text=True, env=env).stdout)
    result = next(r for r in sarif["runs"][0]["results"] if r["ruleId"] == "DET201")
    assert result["properties"]["cell"] == 6
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == 5


def test_fix_writes_back_into_cells_keeping_layout(tmp_path: Path) -> None:
    target = tmp_path / "mnist_background.ipynb"
    shutil.copy(NOTEBOOKS / "mnist_background.ipynb", target)
    cmd = [sys.executable, "-m", "detlint", "mnist_background.ipynb", "--isolated", "--fix", "--unsafe-fixes"]
    first = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True)
    assert first.stdout.rstrip().endswith("3 fixed, 0 remaining"), first.stdout + first.stderr
    expected = (NOTEBOOKS / "mnist_background.fixed.ipynb").read_text()
    assert target.read_text() == expected
    before = (NOTEBOOKS / "mnist_background.ipynb").read_text().splitlines()
    changed = [line for line in expected.splitlines() if line not in before]
    assert changed and all(line.startswith('    "') for line in changed), changed  # only source lines
    second = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True)
    assert second.stdout.rstrip().endswith("0 fixed, 0 remaining")
    assert target.read_text() == expected


def test_flake8_does_not_read_notebooks(tmp_path: Path) -> None:
    shutil.copy(NOTEBOOKS / "mnist_background.ipynb", tmp_path)
    proc = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "--select", "DET", str(tmp_path)],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout == ""


TRAIN_CELLS = [
    "%matplotlib inline\nimport hashlib\nimport numpy as np\nimport tensorflow as tf",
    "x = np.linspace(0, 1, 16 * 8 * 8).reshape(16, 8, 8, 1).astype('float32')\ny = np.arange(16) % 2",
    "model = tf.keras.Sequential([tf.keras.Input((8, 8, 1)), tf.keras.layers.Conv2D(2, 3),\n"
    "    tf.keras.layers.MaxPooling2D(), tf.keras.layers.Dropout(0.3), tf.keras.layers.Flatten(),\n"
    "    tf.keras.layers.Dense(2)])\n"
    "model.compile(optimizer='sgd', loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))",
    "%%time\nmodel.fit(x, y, epochs=2, batch_size=4, verbose=0)",
    "print('WEIGHTS', hashlib.sha256(b''.join(w.tobytes() for w in model.get_weights())).hexdigest())",
]


def run_notebook(path: Path) -> str:
    """Run the code cells top to bottom in a fresh process, as a kernel would (magics dropped)."""
    cells = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
    code = "\n".join(line for c in cells for line in "".join(c["source"]).splitlines()
                     if not line.lstrip().startswith(("%", "!")))
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "TF_CPP_MIN_LOG_LEVEL": "3"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return re.search(r"WEIGHTS (\w+)", proc.stdout).group(1)  # type: ignore[union-attr]


def test_fixed_notebook_trains_identically(tmp_path: Path) -> None:
    pytest.importorskip("tensorflow")
    nb = write_notebook(tmp_path / "train.ipynb", TRAIN_CELLS)
    assert len({run_notebook(nb), run_notebook(nb)}) == 2, "the unfixed notebook should not be reproducible"
    subprocess.run([sys.executable, "-m", "detlint", "train.ipynb", "--isolated", "--fix", "--unsafe-fixes"],
                   cwd=tmp_path, check=False, capture_output=True)
    source = "".join("".join(c["source"]) for c in json.loads(nb.read_text())["cells"])
    assert "set_random_seed(42)" in source and "enable_op_determinism()" in source
    assert len({run_notebook(nb), run_notebook(nb)}) == 1


def test_ipython_syntax_that_used_to_lose_the_notebook(tmp_path: Path) -> None:
    nb = write_notebook(tmp_path / "ipy.ipynb", [
        "!wget --no-check-certificate \\\n    https://example.com/x.csv \\\n    -O /tmp/x.csv\nimport tensorflow as tf",
        " x = 1\n y = tf.random.normal([2])",
        "print('%d%% done' \\\n      % 5)\nvals = (1\n% 2)",
        "def broken(:\n    return tf.random.normal([2])",
        "model = tf.keras.Sequential([tf.keras.layers.Conv2D(2, 3)])\nmodel.fit(a, b)",
    ])
    diags = make_linter("2.21", root=tmp_path).run([nb]).diagnostics
    found = [(d.cell, d.line, d.col + 1, d.code) for d in diags]
    assert found == [(2, 2, 6, "DET101"), (4, 1, 1, "DET001"), (5, 1, 30, "DET201")]
    assert "the other cells were" in diags[1].message


def test_fix_never_rewrites_unreadable_or_indented_cells_wrongly(tmp_path: Path) -> None:
    cells = ["import tensorflow as tf", " x = 1\n y = tf.random.normal([2])", "ls ./data/train/",
             "tf.keras.optimizers.SGD().apply_gradients([])"]
    nb = write_notebook(tmp_path / "f.ipynb", cells)
    subprocess.run([sys.executable, "-m", "detlint", "f.ipynb", "--isolated", "--tf-version", "2.21", "--fix",
                    "--unsafe-fixes"], cwd=tmp_path, capture_output=True)
    after = ["".join(c["source"]) for c in json.loads(nb.read_text())["cells"]]
    assert after[0].startswith("import tensorflow as tf\nimport keras\n")
    assert after[1:] == cells[1:]


def test_text_that_looks_like_detlint_markers_stays_in_its_cell(tmp_path: Path) -> None:
    """Cells whose text imitates the markers detlint joins cells with must keep their own code."""
    cells = ["import tensorflow as tf\n# __detlint_cell_2__\nx = 1  # __detlint_magic_0__",
             "%matplotlib inline\ny = 2",
             "model = tf.keras.Sequential([tf.keras.layers.Conv2D(4, 3)])\nmodel.compile('sgd', 'mse')\n"
             "model.fit(tf.zeros((2, 8, 8, 1)), tf.zeros((2, 6, 6, 4)))"]
    path = write_notebook(tmp_path / "nb.ipynb", cells)
    subprocess.run([sys.executable, "-m", "detlint", "nb.ipynb", "--isolated", "--fix", "--unsafe-fixes"],
                   cwd=tmp_path, capture_output=True, text=True, check=False)
    after = ["".join(cell["source"]) for cell in json.loads(path.read_text())["cells"]]
    assert "# __detlint_cell_2__\nx = 1  # __detlint_magic_0__" in after[0]
    assert "enable_op_determinism()" in after[0]  # the fix did run
    assert after[1] == cells[1]
    assert after[2] == cells[2]


@pytest.mark.parametrize("layout", [{"separators": (",", ":")}, {}, {"ensure_ascii": False}],
                         ids=["compact", "one-line", "unicode"])
def test_one_line_notebooks_keep_their_layout(tmp_path: Path, layout: dict) -> None:
    cells = ["import os\nimport tensorflow as tf\nos.environ['TF_USE_CUDNN_AUTOTUNE'] = '0'\nprint('é')\n"]
    data = {"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                       "source": cells[0].splitlines(keepends=True)}],
            "metadata": {"kernelspec": {"name": "python3"}}, "nbformat": 4, "nbformat_minor": 5}
    raw = json.dumps(data, **layout)
    path = tmp_path / "nb.ipynb"
    path.write_text(raw, encoding="utf-8")
    subprocess.run([sys.executable, "-m", "detlint", "nb.ipynb", "--isolated", "--fix"], cwd=tmp_path,
                   capture_output=True, text=True, check=False)
    data["cells"][0]["source"].remove("os.environ['TF_USE_CUDNN_AUTOTUNE'] = '0'\n")
    data["cells"][0]["source"].remove("import os\n")  # the fix left it unused
    assert path.read_text(encoding="utf-8") == json.dumps(data, **layout)


def test_automagics_and_a_cell_indented_from_its_first_line_are_python_to_ipython(tmp_path: Path) -> None:
    """`ls ./data` runs in IPython without `!`; a cell whose first line is indented has that
    indentation removed from every line (IPython's leading_indent). Neither is a DET001."""
    cells = ["import tensorflow as tf", "ls ./data/train/\ncd models", "  x = tf.zeros([2])\n  y = x + 1\nz = 3",
             "ls = [\n    1,\n]\nprint(ls)", "tf.keras.Sequential([tf.keras.layers.Dense(1)]).fit(x, y)"]
    nb = write_notebook(tmp_path / "magic.ipynb", cells)
    diags = make_linter("2.21", root=tmp_path).run([nb]).diagnostics
    assert not [d for d in diags if d.code == "DET001"], [d.message for d in diags]
    assert {d.code for d in diags} == {"DET101"}
    broken = write_notebook(tmp_path / "broken.ipynb", ["import tensorflow as tf", "ls = [tf.zeros(1),"])
    assert [d.code for d in make_linter("2.21", root=tmp_path).run([broken]).diagnostics] == ["DET001"]


def test_a_python2_notebook_is_checked_as_its_python3_equivalent_and_never_fixed(tmp_path: Path) -> None:
    """Cells of a Python 2 kernel (`print "step", i`) are read as Python 3 (lint/python2.py): their
    seeds and ops count; one DET001 says so at the first such construct, and no fix is written."""
    cells = ["import numpy as np\nimport tensorflow as tf\nprint \"TF\", tf.__version__",
             "x = tf.placeholder(tf.float32, [None, 4])\nw = tf.Variable(tf.random_normal([4, 2]))\n"
             "loss = tf.reduce_mean(tf.matmul(x, w))\nopt = tf.train.AdamOptimizer().minimize(loss)",
             "sess = tf.Session()\nfor i in range(3):\n    batch = np.random.rand(8, 4)\n"
             "    sess.run(opt, {x: batch})\n    print \"step %d\" % i"]
    nb = write_notebook(tmp_path / "py2.ipynb", cells)
    diags = make_linter("1.15", root=tmp_path).run([nb]).diagnostics
    found = sorted((d.cell, d.line, d.code) for d in diags)
    assert found == [(2, 2, "DET101"), (3, 3, "DET103")], [d.message for d in diags]
    diags = make_linter("1.15", root=tmp_path, **{"min-confidence": "possible"}).run([nb]).diagnostics
    notice = [d for d in diags if d.code == "DET001"]
    assert [(d.cell, d.line, d.confidence) for d in notice] == [(1, 3, "possible")], [d.message for d in diags]
    assert "written for Python 2 (a print statement)" in notice[0].message
    before = nb.read_text()
    done = subprocess.run([sys.executable, "-m", "detlint", "py2.ipynb", "--isolated", "--tf-version", "1.15",
                           "--fix", "--unsafe-fixes"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr  # findings remain, no crash
    assert nb.read_text() == before


def test_a_bracket_inside_a_docstring_does_not_hide_the_magics_after_it(tmp_path: Path) -> None:
    """An unclosed bracket in a cell's docstring (`@author (mail`) is text: the `%matplotlib` line
    after it is still a magic, and the cell is checked."""
    cells = ['"""\n A tutorial\n @author (someone@example.com\n"""\nimport tensorflow as tf\n%matplotlib inline  \n'
             'y = tf.random.normal([2])',
             "tf.keras.Sequential([tf.keras.layers.Dense(1)]).fit(x, y)"]
    nb = write_notebook(tmp_path / "doc.ipynb", cells)
    diags = make_linter("2.21", root=tmp_path).run([nb]).diagnostics
    assert [(d.cell, d.line, d.code) for d in diags] == [(1, 7, "DET101")], [d.message for d in diags]


def test_an_unparsable_cell_that_names_nothing_checked_is_possible(tmp_path: Path) -> None:
    """A shell command typed without `!` or pasted training output cannot hide a finding: its
    DET001 is `possible`; an unparsable cell that uses torch stays `certain`."""
    cells = ["import torch\nmodel = torch.nn.Linear(4, 1)",
             "python -u run.py \\\n  --task_name long_term_forecast \\\n  --model TimesNet",
             "Epoch: 1, Steps: 264 | Train Loss: 0.4964185 Vali Loss: 0.8412074\nmse:0.389, mae:0.412",
             "with torch.cuda.amp.autocast():\n\n...\nscaler.scale(loss).backward()"]
    nb = write_notebook(tmp_path / "tutorial.ipynb", cells)
    diags = make_linter("2.21", root=tmp_path, **{"min-confidence": "possible"}).run([nb]).diagnostics
    found = sorted((d.cell, d.confidence) for d in diags if d.code == "DET001")
    assert found == [(2, "possible"), (3, "possible"), (4, "certain")], [(d.cell, d.message) for d in diags]
    # a broken first cell that imports the framework itself may hide the seed: certain
    first = write_notebook(tmp_path / "first.ipynb", ["import tensorflow as tf\ntf.random.set_seed(42)\nx = [1,",
                                                     "tf.keras.Sequential([tf.keras.layers.Dense(1)]).fit(x, x)"])
    diags = make_linter("2.21", root=tmp_path).run([first]).diagnostics
    assert [(d.cell, d.code, d.confidence) for d in diags if d.code == "DET001"] == [(1, "DET001", "certain")]
