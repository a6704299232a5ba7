"""One program, checked at the versions where the knowledge base changes its answer."""
from __future__ import annotations

import pytest

from conftest import FIXTURES, lint_paths

PROGRAM = FIXTURES / "versions" / "train_any_version.py"

# line -> code, for each target version
EXPECTED = {
    "1.15": {(5, "DET204"), (10, "DET202"), (11, "DET202"), (15, "DET202")},
    "2.4": {(10, "DET202"), (15, "DET202")},
    "2.7": {(10, "DET202")},
    "2.12": {(5, "DET204")},
    "2.21": {(5, "DET204"), (7, "DET102")},
}
MESSAGE_PARTS = {
    "1.15": ["not read by stock TensorFlow 1.15", 'TF_CUDNN_DETERMINISTIC'],
    "2.4": ["segment reductions (CUDA atomics) stays nondeterministic on GPU in TF 2.4"],
    "2.7": ["raises UnimplementedError in TF 2.7"],
    "2.12": ["deprecated since TF 2.8", "enable_op_determinism()"],
    "2.21": ["Keras 3 (TF 2.21)", "keras.utils.set_random_seed"],
}


@pytest.mark.parametrize("version", sorted(EXPECTED))
def test_findings_and_fixes_follow_the_version(version: str) -> None:
    diags = lint_paths([PROGRAM], version)
    assert {(d.line, d.code) for d in diags} == EXPECTED[version]
    text = "\n".join(d.message for d in diags)
    for part in MESSAGE_PARTS[version]:
        assert part in text


@pytest.mark.parametrize("version, fix", [
    ("1.15", 'TF_CUDNN_DETERMINISTIC'), ("2.4", 'os.environ["TF_DETERMINISTIC_OPS"] = "1"'),
    ("2.7", 'TF_CUDNN_USE_FRONTEND'), ("2.12", "enable_op_determinism()"), ("2.21", "enable_op_determinism()"),
])
def test_det201_fix_follows_the_version(tmp_path, version: str, fix: str) -> None:
    path = tmp_path / "train.py"
    path.write_text("import tensorflow as tf\nmodel = tf.keras.Sequential([tf.keras.layers.Conv2D(3, 3)])\n"
                    "model.fit(x, y)\n")
    (det201,) = [d for d in lint_paths([path], version) if d.code == "DET201"]
    assert fix in det201.message and f"TF {version}" in det201.message
