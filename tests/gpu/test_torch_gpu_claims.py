"""The PyTorch knowledge base's GPU claims, shown on a real CUDA device (skipped without one).

For the installed PyTorch, every op the knowledge base marks `determinism` gives different
results in repeated runs with deterministic algorithms off, and bit-identical ones with them on;
every op it marks `raises` raises under deterministic algorithms. Where a GPU disagrees, the
knowledge base is what to correct. `tests/gpu/run_evidence.sh` runs this file and writes the
report kept under docs/gpu-evidence/.
"""
from __future__ import annotations

import os
from typing import Callable

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # read when cuBLAS starts: before any GPU work

from detlint.knowledge import kb as kb_module  # noqa: E402
from detlint.knowledge.versions import Version  # noqa: E402

KB = kb_module.load()
VERSION = Version.parse(torch.__version__)
CUDA = torch.device("cuda")
REPEATS = 6


def _inputs(seed: int = 0) -> torch.Generator:
    return torch.Generator(device=CUDA).manual_seed(seed)


def _grad(x: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    out.backward(torch.ones_like(out))
    return x.grad


def scatter_add() -> torch.Tensor:
    g = _inputs()
    idx = torch.randint(0, 64, (1 << 20,), device=CUDA, generator=g)
    return torch.zeros(64, device=CUDA).scatter_add_(0, idx, torch.randn(1 << 20, device=CUDA, generator=g))


def scatter_reduce_sum() -> torch.Tensor:
    g = _inputs()
    idx = torch.randint(0, 64, (1 << 20,), device=CUDA, generator=g)
    return torch.zeros(64, device=CUDA).scatter_reduce_(0, idx, torch.randn(1 << 20, device=CUDA, generator=g), "sum")


def scatter_src() -> torch.Tensor:
    """Repeated indices: which source value lands in a slot is up to the threads' order."""
    g = _inputs()
    idx = torch.randint(0, 64, (1 << 20,), device=CUDA, generator=g)
    return torch.zeros(64, device=CUDA).scatter_(0, idx, torch.randn(1 << 20, device=CUDA, generator=g))


def index_copy() -> torch.Tensor:
    g = _inputs()
    idx = torch.randint(0, 64, (1 << 16,), device=CUDA, generator=g)
    return torch.zeros(64, 8, device=CUDA).index_copy_(0, idx, torch.randn(1 << 16, 8, device=CUDA, generator=g))


def index_add() -> torch.Tensor:
    g = _inputs()
    idx = torch.randint(0, 64, (1 << 18,), device=CUDA, generator=g)
    return torch.zeros(64, 8, device=CUDA).index_add_(0, idx, torch.randn(1 << 18, 8, device=CUDA, generator=g))


def gather_backward() -> torch.Tensor:
    g = _inputs()
    x = torch.randn(64, 8, device=CUDA, generator=g).requires_grad_()
    idx = torch.randint(0, 64, (1 << 18, 8), device=CUDA, generator=g)
    return _grad(x, torch.gather(x, 0, idx))


def index_select_backward() -> torch.Tensor:
    g = _inputs()
    x = torch.randn(64, 8, device=CUDA, generator=g).requires_grad_()
    return _grad(x, x.index_select(0, torch.randint(0, 64, (1 << 18,), device=CUDA, generator=g)))


def conv_backward() -> torch.Tensor:
    torch.backends.cudnn.benchmark = True
    g = _inputs()
    conv = torch.nn.Conv2d(64, 64, 3, padding=1).to(CUDA)
    with torch.no_grad():
        conv.weight.copy_(torch.randn(conv.weight.shape, device=CUDA, generator=g))
    out = conv(torch.randn(32, 64, 56, 56, device=CUDA, generator=g))
    out.backward(torch.ones_like(out))
    return conv.weight.grad


def max_pool3d_backward() -> torch.Tensor:
    g = _inputs()
    x = torch.randn(4, 8, 16, 32, 32, device=CUDA, generator=g).requires_grad_()
    return _grad(x, torch.nn.functional.max_pool3d(x, 3, stride=1))


def cumsum() -> torch.Tensor:
    return torch.randn(1 << 22, device=CUDA, generator=_inputs()).cumsum(0)


def sdpa_backward() -> torch.Tensor:
    g = _inputs()
    q = torch.randn(8, 8, 1024, 64, device=CUDA, dtype=torch.float16, generator=g).requires_grad_()
    out = torch.nn.functional.scaled_dot_product_attention(q, q.detach(), q.detach())
    return _grad(q, out)


def adaptive_avg_pool_backward() -> torch.Tensor:
    x = torch.randn(8, 16, 33, 33, device=CUDA, generator=_inputs()).requires_grad_()
    return _grad(x, torch.nn.functional.adaptive_avg_pool2d(x, 5))


def adaptive_max_pool_backward() -> torch.Tensor:
    x = torch.randn(8, 16, 33, 33, device=CUDA, generator=_inputs()).requires_grad_()
    return _grad(x, torch.nn.functional.adaptive_max_pool2d(x, 5))


def bilinear_backward() -> torch.Tensor:
    x = torch.randn(8, 16, 32, 32, device=CUDA, generator=_inputs()).requires_grad_()
    return _grad(x, torch.nn.functional.interpolate(x, scale_factor=2, mode="bilinear"))


def _upsample(shape: tuple[int, ...], mode: str, **kw: object) -> Callable[[], torch.Tensor]:
    def run() -> torch.Tensor:
        x = torch.randn(*shape, device=CUDA, generator=_inputs()).requires_grad_()
        return _grad(x, torch.nn.functional.interpolate(x, scale_factor=2, mode=mode, **kw))
    return run


def _reflection_pad(shape: tuple[int, ...], pad: tuple[int, ...]) -> Callable[[], torch.Tensor]:
    def run() -> torch.Tensor:
        x = torch.randn(*shape, device=CUDA, generator=_inputs()).requires_grad_()
        return _grad(x, torch.nn.functional.pad(x, pad, mode="reflect"))
    return run


def segmentation_loss_backward() -> torch.Tensor:
    """What a segmentation model's loss runs: cross-entropy on (N, C, H, W) logits (nll_loss2d)."""
    g = _inputs()
    logits = torch.randn(8, 10, 64, 64, device=CUDA, generator=g).requires_grad_()
    target = torch.randint(0, 10, (8, 64, 64), device=CUDA, generator=g)
    return _grad(logits, torch.nn.functional.cross_entropy(logits, target))


def avg_pool3d_backward() -> torch.Tensor:
    x = torch.randn(4, 8, 16, 32, 32, device=CUDA, generator=_inputs()).requires_grad_()
    return _grad(x, torch.nn.functional.avg_pool3d(x, 3, stride=1))


def ctc_backward() -> torch.Tensor:
    g = _inputs()
    logits = torch.randn(50, 16, 20, device=CUDA, generator=g).requires_grad_()
    targets = torch.randint(1, 20, (16, 30), device=CUDA, generator=g)
    loss = torch.nn.functional.ctc_loss(logits.log_softmax(2), targets, [50] * 16, [30] * 16)
    return _grad(logits, loss)


def histc() -> torch.Tensor:
    return torch.histc(torch.randn(1 << 20, device=CUDA, generator=_inputs()), bins=100)


def bincount_weights() -> torch.Tensor:
    g = _inputs()
    return torch.bincount(torch.randint(0, 100, (1 << 20,), device=CUDA, generator=g),
                          torch.randn(1 << 20, device=CUDA, generator=g))


def grid_sample_backward() -> torch.Tensor:
    g = _inputs()
    x = torch.randn(4, 8, 32, 32, device=CUDA, generator=g).requires_grad_()
    grid = torch.rand(4, 64, 64, 2, device=CUDA, generator=g) * 2 - 1
    return _grad(x, torch.nn.functional.grid_sample(x, grid, align_corners=False))


def put() -> torch.Tensor:
    g = _inputs()
    return torch.zeros(64, device=CUDA).put_(torch.randint(0, 64, (4096,), device=CUDA, generator=g),
                                            torch.randn(4096, device=CUDA, generator=g))


def median_dim() -> torch.Tensor:
    return torch.median(torch.randn(64, 1025, device=CUDA, generator=_inputs()), dim=1).indices


def kthvalue() -> torch.Tensor:
    return torch.kthvalue(torch.randn(64, 1025, device=CUDA, generator=_inputs()), 7, dim=1).values


def embedding_bag_max_backward() -> torch.Tensor:
    bag = torch.nn.EmbeddingBag(100, 16, mode="max").to(CUDA)
    out = bag(torch.randint(0, 100, (64, 10), device=CUDA, generator=_inputs()))
    out.backward(torch.ones_like(out))
    return bag.weight.grad


WORKLOADS: dict[str, Callable[[], torch.Tensor]] = {
    "PT-SCATTER-ADD": scatter_add, "PT-INDEX-ADD": index_add, "PT-GATHER-BACKWARD": gather_backward,
    "PT-INDEX-SELECT-BACKWARD": index_select_backward, "PT-CUDNN-CONV": conv_backward,
    "PT-MAXPOOL3D-BACKWARD": max_pool3d_backward, "PT-CUMSUM": cumsum, "PT-SDPA-BACKWARD": sdpa_backward,
    "PT-ADAPTIVE-AVG-POOL-BACKWARD": adaptive_avg_pool_backward,
    "PT-ADAPTIVE-MAX-POOL-BACKWARD": adaptive_max_pool_backward,
    "PT-INTERPOLATE-BACKWARD": _upsample((8, 16, 256), "linear"),
    "PT-INTERPOLATE-BILINEAR-BACKWARD": bilinear_backward,
    "PT-INTERPOLATE-TRILINEAR-BACKWARD": _upsample((2, 4, 16, 16, 16), "trilinear"),
    "PT-INTERPOLATE-BICUBIC-BACKWARD": _upsample((8, 16, 32, 32), "bicubic"),
    "PT-HF-SEGMENTATION-UPSAMPLING": segmentation_loss_backward,  # the loss those models run (no transformers there)
    "PT-REFLECTION-PAD-BACKWARD": _reflection_pad((8, 16, 256), (3, 3)),
    "PT-REFLECTION-PAD-2D-BACKWARD": _reflection_pad((8, 16, 32, 32), (3, 3, 3, 3)),
    "PT-POOL3D-BACKWARD": avg_pool3d_backward,
    "PT-CTC-LOSS-BACKWARD": ctc_backward, "PT-HISTC": histc, "PT-BINCOUNT": bincount_weights,
    "PT-GRID-SAMPLE-BACKWARD": grid_sample_backward, "PT-PUT": put, "PT-MEDIAN-INDICES": median_dim,
    "PT-KTHVALUE": kthvalue, "PT-EMBEDDING-BAG-MAX-BACKWARD": embedding_bag_max_backward,
    "PT-SCATTER-REDUCE-SUM-MEAN": scatter_reduce_sum, "PT-SCATTER-SRC": scatter_src, "PT-INDEX-COPY": index_copy,
}


def ops_with(status: str) -> list[str]:
    out = []
    for op_id, op in KB.ops.items():
        found = op.status_at(VERSION) if op.framework == "torch" else None
        if found is not None and found.status == status and op_id in WORKLOADS:
            out.append(op_id)
    return sorted(out)


def results(op_id: str, deterministic: bool) -> list[bytes]:
    torch.use_deterministic_algorithms(deterministic)
    try:
        out = []
        for _ in range(REPEATS):
            value = WORKLOADS[op_id]()
            torch.cuda.synchronize()
            out.append(value.detach().float().cpu().numpy().tobytes())
        return out
    finally:
        torch.use_deterministic_algorithms(False)
        torch.backends.cudnn.benchmark = False


def test_every_torch_op_of_the_knowledge_base_has_a_workload() -> None:
    """A new op entry needs its GPU workload here, or its claim goes unchecked."""
    missing = [i for i, op in KB.ops.items() if op.framework == "torch" and op.status_at(VERSION) is not None
               and i not in WORKLOADS and i not in ("PT-MAX-UNPOOL", "PT-REPLICATION-PAD-2D-BACKWARD",
                                                     "PT-REPLICATION-PAD-BACKWARD", "PT-SCATTER-REDUCE-PROD")]
    assert not missing


@pytest.mark.parametrize("op_id", ops_with("determinism"))
def test_ops_marked_determinism_run_and_match_under_the_switch(op_id: str) -> None:
    """The claim a fix rests on: under the switch the op runs (no RuntimeError) and gives one
    result. Whether this GPU shows the op's nondeterminism without the switch depends on its
    kernels and the workload's shape; it is printed for the report, not asserted (a run that
    happens to be identical does not make the kernel deterministic)."""
    off = results(op_id, deterministic=False)
    print(f"{op_id}: {len(set(off))} distinct results in {REPEATS} runs without the switch"
          + ("" if len(set(off)) > 1 else " (nondeterminism not shown by this workload on this GPU)"))
    on = results(op_id, deterministic=True)
    assert len(set(on)) == 1, f"{op_id}: runs with deterministic algorithms differ"


@pytest.mark.parametrize("op_id", ops_with("raises"))
def test_ops_marked_raising_raise_under_deterministic_algorithms(op_id: str) -> None:
    with pytest.raises(RuntimeError, match="deterministic"):
        results(op_id, deterministic=True)
