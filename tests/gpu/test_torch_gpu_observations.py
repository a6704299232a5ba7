"""What the installed PyTorch does on this GPU, op by op (skipped without CUDA).

test_torch_gpu_claims.py checks the knowledge base's claims at the installed version; this file
records the facts those claims are made of, for the ops the knowledge base has and the ones the
audit (shared kb-audit-2026-11) says are missing or mis-dated: how many distinct results REPEATS
runs give without deterministic algorithms, and with them on (strict and warn_only), or the error
they raise. The table goes into the report `tests/gpu/run_evidence.sh` keeps, and as JSON into
``$DETLINT_EVIDENCE_DIR/torch-observations.json`` when that is set.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Callable, Optional

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # read when cuBLAS starts: before any GPU work

from tests.gpu import test_torch_gpu_claims as claims  # noqa: E402  (its workloads, same inputs)

F = torch.nn.functional
CUDA = claims.CUDA
REPEATS = 6
G = claims._inputs


def _interp(shape: tuple[int, ...], mode: str, **kw: object) -> Callable[[], torch.Tensor]:
    def run() -> torch.Tensor:
        x = torch.randn(*shape, device=CUDA, generator=G()).requires_grad_()
        return claims._grad(x, F.interpolate(x, scale_factor=2, mode=mode, **kw))
    return run


def _replication(shape: tuple[int, ...], pad: tuple[int, ...]) -> Callable[[], torch.Tensor]:
    def run() -> torch.Tensor:
        x = torch.randn(*shape, device=CUDA, generator=G()).requires_grad_()
        return claims._grad(x, F.pad(x, pad, mode="replicate"))
    return run


def nll_loss_2d() -> torch.Tensor:
    g = G()
    logits = torch.randn(8, 10, 64, 64, device=CUDA, generator=g).requires_grad_()
    target = torch.randint(0, 10, (8, 64, 64), device=CUDA, generator=g)
    return claims._grad(logits, F.cross_entropy(logits, target))


def _segmentation_loss(how: str) -> Callable[[], torch.Tensor]:
    """The workarounds for nll_loss2d: logits flattened to (N*H*W, C), or an unreduced loss."""
    def run() -> torch.Tensor:
        g = G()
        logits = torch.randn(8, 10, 64, 64, device=CUDA, generator=g).requires_grad_()
        target = torch.randint(0, 10, (8, 64, 64), device=CUDA, generator=g)
        if how == "flattened":
            loss = F.cross_entropy(logits.permute(0, 2, 3, 1).reshape(-1, 10), target.reshape(-1))
        else:
            loss = F.cross_entropy(logits, target, reduction="none").mean()
        return claims._grad(logits, loss)
    return run


def _conv(transposed: bool, dtype: torch.dtype) -> Callable[[], torch.Tensor]:
    """Other convolutions than the claims' one, to see whether this GPU's cuDNN picks a
    nondeterministic weight-gradient algorithm anywhere (benchmark mode, as many programs run)."""
    def run() -> torch.Tensor:
        torch.backends.cudnn.benchmark = True
        g = G()
        layer = (torch.nn.ConvTranspose2d if transposed else torch.nn.Conv2d)(32, 32, 3, padding=1)
        layer = layer.to(CUDA, dtype)
        with torch.no_grad():
            layer.weight.copy_(torch.randn(layer.weight.shape, device=CUDA, generator=g).to(dtype))
        out = layer(torch.randn(8, 32, 128, 128, device=CUDA, generator=g).to(dtype))
        out.backward(torch.ones_like(out))
        return layer.weight.grad
    return run


def embedding_backward() -> torch.Tensor:
    g = G()
    table = torch.randn(64, 32, device=CUDA, generator=g).requires_grad_()
    ids = torch.randint(0, 64, (1 << 18,), device=CUDA, generator=g)
    return claims._grad(table, F.embedding(ids, table))


def _embedding_bag(mode: str) -> Callable[[], torch.Tensor]:
    def run() -> torch.Tensor:
        g = G()
        table = torch.randn(64, 16, device=CUDA, generator=g).requires_grad_()
        ids = torch.randint(0, 64, (1 << 14, 16), device=CUDA, generator=g)
        return claims._grad(table, F.embedding_bag(ids, table, mode=mode))
    return run


def _duplicates(n: int = 1 << 16) -> tuple[torch.Tensor, torch.Tensor]:
    g = G()
    return (torch.randint(0, 64, (n,), device=CUDA, generator=g), torch.randn(n, device=CUDA, generator=g))


def scatter_src() -> torch.Tensor:
    idx, src = _duplicates()
    return torch.zeros(64, device=CUDA).scatter_(0, idx, src)


def _scatter_reduce(reduce: str) -> Callable[[], torch.Tensor]:
    def run() -> torch.Tensor:
        idx, src = _duplicates()
        if reduce == "prod":
            src = 1 + src * 1e-3
        return torch.ones(64, device=CUDA).scatter_reduce(0, idx, src, reduce, include_self=True)
    return run


def index_copy() -> torch.Tensor:
    idx, src = _duplicates()
    return torch.zeros(64, device=CUDA).index_copy_(0, idx, src)


def index_put_accumulate() -> torch.Tensor:
    idx, src = _duplicates(1 << 20)
    return torch.zeros(64, device=CUDA).index_put_((idx,), src, accumulate=True)


def max_unpool2d() -> torch.Tensor:
    x = torch.randn(8, 16, 32, 32, device=CUDA, generator=G())
    out, ind = F.max_pool2d(x, 2, return_indices=True)
    return F.max_unpool2d(out, ind, 2)


def _sdpa(backend: Optional[str]) -> Callable[[], torch.Tensor]:
    def run() -> torch.Tensor:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        g = G()
        q = torch.randn(8, 8, 1024, 64, device=CUDA, dtype=torch.float16, generator=g).requires_grad_()
        k = torch.randn(8, 8, 1024, 64, device=CUDA, dtype=torch.float16, generator=g)
        if backend is None:
            return claims._grad(q, F.scaled_dot_product_attention(q, k, k))
        with sdpa_kernel([getattr(SDPBackend, backend)]):
            return claims._grad(q, F.scaled_dot_product_attention(q, k, k))
    return run


def lstm_backward() -> torch.Tensor:
    g = G()
    lstm = torch.nn.LSTM(64, 128, num_layers=2).to(CUDA)
    with torch.no_grad():
        for p in lstm.parameters():
            p.copy_(torch.randn(p.shape, device=CUDA, generator=g) * 0.1)
    out, _ = lstm(torch.randn(50, 32, 64, device=CUDA, generator=g))
    out.backward(torch.ones_like(out))
    return torch.cat([p.grad.flatten() for p in lstm.parameters()])


def uninitialized_memory() -> torch.Tensor:
    """torch.empty under deterministic algorithms: filled (NaN) from 2.1, unless the 2.2+ opt-out is off."""
    return torch.isnan(torch.empty(1 << 16, device=CUDA)).all().reshape(1).float()


WORKLOADS: dict[str, Callable[[], torch.Tensor]] = {
    **{f"claims:{k}": v for k, v in claims.WORKLOADS.items() if k != "PT-HF-SEGMENTATION-UPSAMPLING"},
    "interpolate-linear-1d-backward": _interp((8, 16, 256), "linear"),
    "interpolate-bilinear-backward": _interp((8, 16, 32, 32), "bilinear"),
    "interpolate-bilinear-antialias-backward": _interp((8, 16, 32, 32), "bilinear", antialias=True),
    "interpolate-bicubic-backward": _interp((8, 16, 32, 32), "bicubic"),
    "interpolate-trilinear-backward": _interp((2, 4, 16, 16, 16), "trilinear"),
    "replication-pad-1d-backward": _replication((8, 16, 256), (3, 3)),
    "replication-pad-2d-backward": _replication((8, 16, 32, 32), (3, 3, 3, 3)),
    "replication-pad-3d-backward": _replication((2, 4, 16, 16, 16), (2, 2, 2, 2, 2, 2)),
    "nll-loss-2d (cross_entropy on N,C,H,W)": nll_loss_2d,
    "cross_entropy on logits flattened to (N*H*W, C)": _segmentation_loss("flattened"),
    "cross_entropy on N,C,H,W with reduction='none', then mean": _segmentation_loss("unreduced"),
    "conv2d-backward fp16 (benchmark)": _conv(False, torch.float16),
    "conv2d-backward bf16 (benchmark)": _conv(False, torch.bfloat16),
    "conv-transpose2d-backward fp32 (benchmark)": _conv(True, torch.float32),
    "reflection-pad-1d-backward": lambda: claims._reflection_pad((8, 16, 256), (3, 3))(),
    "reflection-pad-3d-backward": lambda: claims._reflection_pad((2, 4, 16, 16, 16), (2, 2, 2, 2, 2, 2))(),
    "embedding-backward": embedding_backward,
    "embedding-bag-sum-backward": _embedding_bag("sum"),
    "embedding-bag-mean-backward": _embedding_bag("mean"),
    "scatter-src (duplicates)": scatter_src,
    "scatter-reduce-sum": _scatter_reduce("sum"),
    "scatter-reduce-mean": _scatter_reduce("mean"),
    "scatter-reduce-prod": _scatter_reduce("prod"),
    "scatter-reduce-amax": _scatter_reduce("amax"),
    "index-copy (duplicates)": index_copy,
    "index-put-accumulate": index_put_accumulate,
    "max-unpool2d": max_unpool2d,
    "sdpa-backward-flash": _sdpa("FLASH_ATTENTION"),
    "sdpa-backward-efficient": _sdpa("EFFICIENT_ATTENTION"),
    "sdpa-backward-cudnn": _sdpa("CUDNN_ATTENTION"),
    "lstm-backward (cuDNN RNN)": lstm_backward,
    "empty-is-nan (uninitialized memory filled)": uninitialized_memory,
}


def observe(run: Callable[[], torch.Tensor], mode: str) -> str:
    """'N distinct' over REPEATS runs, or 'raises: <first line>'; mode is off, strict or warn_only."""
    torch.use_deterministic_algorithms(mode != "off", warn_only=mode == "warn_only")
    try:
        seen = set()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for _ in range(REPEATS):
                value = run()
                torch.cuda.synchronize()
                seen.add(value.detach().float().cpu().numpy().tobytes())
        warned = any("determinis" in str(w.message) for w in caught)
        shown = f" (value {value.item()})" if value.numel() == 1 else ""
        return f"{len(seen)} distinct{shown}" + (" (warned)" if warned else "")
    except RuntimeError as err:
        return "raises: " + str(err).strip().splitlines()[0][:160]
    finally:
        torch.use_deterministic_algorithms(False)
        torch.backends.cudnn.benchmark = False


CUBLAS_PROBE = """
import torch
torch.use_deterministic_algorithms(True)
a = torch.randn(256, 256, device="cuda")
try:
    (a @ a).sum().item()
    print("no error")
except RuntimeError as err:
    print("raises:", str(err).splitlines()[0][:160])
"""


def test_record_what_every_workload_does_on_this_gpu() -> None:
    table: dict[str, dict[str, str]] = {}
    for name, run in WORKLOADS.items():
        table[name] = {mode: observe(run, mode) for mode in ("off", "strict", "warn_only")}
    env = {k: v for k, v in os.environ.items() if k != "CUBLAS_WORKSPACE_CONFIG"}
    probe = subprocess.run([sys.executable, "-c", CUBLAS_PROBE], capture_output=True, text=True,
                           timeout=300, env=env)
    table["cublas matmul without CUBLAS_WORKSPACE_CONFIG"] = {
        "strict": probe.stdout.strip() or f"probe failed: {probe.stderr.strip()[-300:]}"}
    header = (f"torch {torch.__version__} cuda {torch.version.cuda} cudnn {torch.backends.cudnn.version()} "
              f"on {torch.cuda.get_device_name(0)}; {REPEATS} runs each")
    print("\n" + header)
    for name, row in table.items():
        print(f"  {name:48s} " + " | ".join(f"{m}: {r}" for m, r in row.items()))
    folder = os.environ.get("DETLINT_EVIDENCE_DIR")
    if folder:
        Path(folder, "torch-observations.json").write_text(
            json.dumps({"environment": header, "observations": table}, indent=1) + "\n")
    # every workload was observed in every mode: a result count or the error it raised
    assert all(len(row) == 3 for name, row in table.items() if name in WORKLOADS)
    assert all(" distinct" in r or r.startswith("raises:")
               for name, row in table.items() if name in WORKLOADS for r in row.values())
    # the knowledge base's own workloads run without the switch: an error there is a broken
    # workload, not evidence (an SDPA backend this GPU lacks is recorded, not failed)
    assert not [n for n in WORKLOADS if n.startswith("claims:") and table[n]["off"].startswith("raises")]
