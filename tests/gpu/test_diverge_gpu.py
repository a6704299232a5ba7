"""detlint diverge on a GPU (skipped without CUDA): a scatter_add_ with duplicate indices in a
seeded PyTorch training step is the first differing op, with its line and DET602."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

PROGRAM = '''\
import torch

torch.manual_seed(0)
cuda = torch.device("cuda")
weights = torch.nn.Parameter(torch.randn(64, device=cuda))
index = torch.randint(0, 64, (1 << 20,), device=cuda)
values = torch.randn(1 << 20, device=cuda)
opt = torch.optim.SGD([weights], lr=0.01)
for step in range(3):
    opt.zero_grad()
    summed = torch.zeros(64, device=cuda).scatter_add_(0, index, values * weights.mean())
    (summed * weights).sum().backward()
    opt.step()
'''


def test_scatter_add_is_the_first_differing_op(tmp_path: Path) -> None:
    (tmp_path / "scatter.py").write_text(PROGRAM)
    proc = subprocess.run([sys.executable, "-m", "detlint", "diverge", "--seed", "0", "--runs", "3",
                           "--output-format", "json", "--", sys.executable, "scatter.py"],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path, env=dict(os.environ))
    report = json.loads(proc.stdout)
    first = report["first"]
    print(json.dumps(first, indent=1))
    assert proc.returncode == 1 and first is not None
    assert first["op_type"].startswith("aten.scatter_add")
    assert first["location"].startswith("scatter.py:11")
    assert first["rule"] == "DET602"
