#!/usr/bin/env bash
# Run the GPU claims of the PyTorch knowledge base on this machine's CUDA device and keep the
# report: docs/gpu-evidence/torch-<version>-<gpu>.txt (commit it). Needs torch with CUDA.
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-docs/gpu-evidence}
mkdir -p "$out"
name=$(python -c "import torch; print(torch.__version__.split('+')[0] + '-' + torch.cuda.get_device_name(0).replace(' ', '_'))")
{
  python -c "import torch, platform; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version(), 'gpu', torch.cuda.get_device_name(0), 'python', platform.python_version())"
  PYTHONPATH=. python -m pytest -p no:cacheprovider -rA -q tests/gpu
} 2>&1 | tee "$out/torch-$name.txt"
