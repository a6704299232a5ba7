"""What the PyTorch rules claim, shown with the real PyTorch on the CPU: unseeded programs differ
between processes and match once fixed, the ops the knowledge base lists as raising raise where
the CPU raises too, shuffling loaders follow the global generator, and every API name the
knowledge base matches exists in the installed PyTorch. GPU claims: tests/gpu/."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import kb_api_names, resolve_api, run_weights
from detlint.knowledge import kb as kb_module
from detlint.knowledge.frameworks import FRAMEWORKS
from detlint.knowledge.versions import Version

torch = pytest.importorskip("torch")
TORCH_VERSION = Version.parse(torch.__version__)
KB = kb_module.load()
NOT_INSTALLED_HERE = ("torchvision", "torchaudio", "lightning", "pytorch_lightning", "transformers", "accelerate", "kornia",
                      "timm", "fastai", "keras", "peft", "trl", "ignite",
                      # OpenMMLab (rules/torch/openmmlab.yaml names its sources)
                      "mmcv", "mmengine", "mmdet", "mmseg", "mmcls", "mmpretrain", "mmdet3d", "mmpose", "mmaction")
# a training script with every kind of draw DET601 and DET602 are about: layer initialisation,
# dropout, a shuffling loader, a convolution's backward
TRAINING = '''\
import hashlib
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

data = torch.Generator().manual_seed(123)  # the data itself is fixed
x = torch.rand(64, 1, 8, 8, generator=data)
y = torch.randint(0, 3, (64,), generator=data)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.Flatten(), nn.Dropout(0.2), nn.Linear(4 * 6 * 6, 3)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True)
for epoch in range(2):
    for xb, yb in loader:
        loss = nn.functional.cross_entropy(model(xb.to(device)), yb.to(device))
        opt.zero_grad()
        loss.backward()
        opt.step()
digest = hashlib.sha256(b"".join(p.detach().cpu().numpy().tobytes() for p in model.parameters())).hexdigest()
print("WEIGHTS", digest)
'''


def run_python(path: Path) -> str:
    return run_weights(path, unset=("CUBLAS_WORKSPACE_CONFIG",))


def detlint(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "detlint", "--no-cache", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=300)


def test_unseeded_training_differs_between_processes_and_matches_after_the_fix(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    script = tmp_path / "train.py"
    script.write_text(TRAINING)
    found = detlint("train.py", cwd=tmp_path).stdout
    assert "DET601" in found and "DET602" in found, found
    assert run_python(script) != run_python(script)  # weights differ from run to run
    fixed = detlint("--fix", "--unsafe-fixes", "train.py", cwd=tmp_path)
    text = script.read_text()
    assert "torch.manual_seed(42)" in text and "torch.use_deterministic_algorithms(True)" in text, fixed.stdout
    assert detlint("train.py", cwd=tmp_path).returncode == 0
    first, second = run_python(script), run_python(script)
    assert first == second  # bit for bit


def test_ops_the_knowledge_base_lists_as_raising_raise_where_the_cpu_raises_too() -> None:
    """put_ without accumulation has no deterministic kernel on any device: the knowledge base's
    status for the installed version must say it raises, and it does."""
    status = KB.ops["PT-PUT"].status_at(TORCH_VERSION)
    assert status is not None and status.status == "raises"
    code = textwrap.dedent("""
        import torch
        x = torch.zeros(5)
        x.put_(torch.tensor([0, 0]), torch.tensor([1.0, 2.0]))
        print("PLAIN OK")
        torch.use_deterministic_algorithms(True)
        try:
            x.put_(torch.tensor([0, 0]), torch.tensor([1.0, 2.0]))
        except RuntimeError as exc:
            print("RAISED", "does not have a deterministic implementation" in str(exc))
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert "PLAIN OK" in proc.stdout and "RAISED True" in proc.stdout, proc.stderr[-2000:]


def test_warn_only_warns_and_runs_the_op() -> None:
    """Under warn_only an op without a deterministic kernel (DET603's, put_ here) warns and runs."""
    code = textwrap.dedent("""
        import warnings, torch
        torch.use_deterministic_algorithms(True, warn_only=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            torch.zeros(5).put_(torch.tensor([0, 0]), torch.tensor([1.0, 2.0]))
        print("RAN", any("deterministic" in str(w.message) for w in caught))
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert "RAN True" in proc.stdout, proc.stderr[-2000:]


def test_shuffling_loaders_and_random_split_follow_the_global_generator(tmp_path: Path) -> None:
    """DET601 counts DataLoader(shuffle=True) and random_split without generator=: their order
    changes between processes unless torch is seeded or they get a generator of their own."""
    code = textwrap.dedent("""
        import sys, torch
        from torch.utils.data import DataLoader, random_split
        mode = sys.argv[1]
        if mode == "seeded":
            torch.manual_seed(0)
        gen = torch.Generator().manual_seed(0) if mode == "generator" else None
        loader = DataLoader(list(range(50)), batch_size=50, shuffle=True, generator=gen)
        split = random_split(list(range(50)), [25, 25], generator=gen or torch.default_generator)
        print("ORDER", next(iter(loader)).tolist(), list(split[0].indices))
    """)
    script = tmp_path / "order.py"
    script.write_text(code)

    def order(mode: str) -> str:
        proc = subprocess.run([sys.executable, str(script), mode], capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
        return proc.stdout

    assert order("unseeded") != order("unseeded")
    assert order("seeded") == order("seeded")
    assert order("generator") == order("generator")


def test_a_dataset_draws_in_the_main_process_without_workers_and_is_reseeded_in_workers(tmp_path: Path) -> None:
    """torch-main-process-loaders and the numpy group's outside-methods: without workers the
    dataset's NumPy and random draws are the main process's (np.random.seed and random.seed fix
    them, torch.manual_seed does not); with workers (PyTorch >= 1.9) torch.manual_seed fixes them
    and np.random.seed in the main process does not."""
    if TORCH_VERSION < Version.parse("1.9"):
        pytest.skip("workers reseed NumPy from PyTorch 1.9")
    code = textwrap.dedent("""
        import random, sys
        import numpy as np
        import torch
        from torch.utils.data import DataLoader, Dataset

        class Draws(Dataset):
            def __len__(self):
                return 4
            def __getitem__(self, i):
                return torch.tensor([np.random.rand(), random.random()])

        workers, seed = int(sys.argv[1]), sys.argv[2]
        if seed == "numpy+random":
            np.random.seed(0)
            random.seed(0)
        elif seed == "torch":
            torch.manual_seed(0)
        loader = DataLoader(Draws(), batch_size=4, num_workers=workers)
        print("DRAWS", next(iter(loader)).tolist())
    """)
    script = tmp_path / "draws.py"
    script.write_text(code)

    def draws(workers: int, seed: str) -> str:
        proc = subprocess.run([sys.executable, str(script), str(workers), seed], capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
        return proc.stdout

    assert draws(0, "numpy+random") == draws(0, "numpy+random")
    assert draws(0, "torch") != draws(0, "torch")
    assert draws(2, "torch") == draws(2, "torch")
    assert draws(2, "numpy+random") != draws(2, "numpy+random")


def test_the_installed_torch_is_read_from_metadata_not_imported(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "train.py").write_text("import torch\n")
    probe = ("import json, sys; from detlint.settings.config import load_settings; "
             "s = load_settings([__import__('pathlib').Path('train.py')]); "
             "print(json.dumps([str(s.targets['torch'].version), s.targets['torch'].source, 'torch' in sys.modules]))")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    version, source, imported = json.loads(proc.stdout)
    assert version == str(TORCH_VERSION) and source.startswith("installed torch ") and not imported


# ---- every API name the knowledge base matches exists in the installed PyTorch ---------------------
def test_every_torch_api_name_exists_in_the_installed_torch() -> None:
    checked, missing = 0, []
    for owner, name in kb_api_names(KB, "torch", TORCH_VERSION):
        if name.split(".")[0] in NOT_INSTALLED_HERE:
            continue
        try:
            resolve_api(name)
            checked += 1
        except (AttributeError, ImportError):
            missing.append(f"{owner}: {name}")
    assert not missing, f"names the knowledge base claims exist in PyTorch {TORCH_VERSION}:\n" + "\n".join(missing)
    assert checked > 60


def test_apply_makes_an_unseeded_torch_program_repeatable(tmp_path: Path) -> None:
    """detlint.apply() before torch is imported seeds it and turns deterministic algorithms on,
    as --fix would write for the installed version."""
    script = tmp_path / "train.py"
    script.write_text("import detlint\nreport = detlint.apply(seed=3)\n" + TRAINING
                      + "import torch\nprint('DETERMINISTIC', torch.are_deterministic_algorithms_enabled())\n"
                      + "print('REPORT', [str(a) for a in report.by_code('DET601') + report.by_code('DET602')])\n")
    first, second = run_python(script), run_python(script)
    assert first == second
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert "DETERMINISTIC True" in proc.stdout and "torch.manual_seed(3)" in proc.stdout, proc.stdout


def test_the_launcher_sets_the_cublas_workspace_only_where_the_torch_version_needs_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from detlint.runtime import shim

    for version, expected in (("2.4", ":4096:8"), ("1.8", ":4096:8"), ("2.10", None), (str(TORCH_VERSION), None)):
        monkeypatch.setattr(shim, "installed_versions",
                            lambda v=version: {**{key: None for key in FRAMEWORKS}, "torch": Version.parse(v)})
        assert shim.environment_for(None, 1).get("CUBLAS_WORKSPACE_CONFIG") == expected, version
        planned = dict(shim.plan(None, 1))
        assert planned["DET601"] == ["{torch}.manual_seed(1)"]
        assert ("DET605" in planned) == (expected is not None), version
