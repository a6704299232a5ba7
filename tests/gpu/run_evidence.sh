#!/usr/bin/env bash
# Run the GPU claims of the PyTorch and JAX knowledge bases on this machine's GPU and keep the
# reports: docs/gpu-evidence/torch-<version>-<gpu>.txt and jax-<version>-<gpu>.txt, and what each
# op did (torch-observations.json); commit them. Each part runs where its framework is installed
# with GPU support. PYTHON names the interpreter (default: python3); one pytest process, so that
# what the tests print reaches the report.
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-docs/gpu-evidence}
py=${PYTHON:-python3}
mkdir -p "$out"
export DETLINT_EVIDENCE_DIR=$out
if "$py" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  name=$("$py" -c "import torch; print(torch.__version__.split('+')[0] + '-' + torch.cuda.get_device_name(0).replace(' ', '_'))")
  {
    "$py" -c "import torch, platform; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version(), 'gpu', torch.cuda.get_device_name(0), 'python', platform.python_version())"
    PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" "$py" -m pytest -p no:cacheprovider -n 0 -rA -q -s tests/gpu/test_torch_gpu_claims.py \
      tests/gpu/test_torch_gpu_observations.py tests/gpu/test_diverge_gpu.py
  } 2>&1 | tee "$out/torch-$name.txt"
fi
if "$py" -c "import jax, sys; sys.exit(0 if jax.default_backend() == 'gpu' else 1)" 2>/dev/null; then
  name=$("$py" -c "import jax; print(jax.__version__ + '-' + jax.devices()[0].device_kind.replace(' ', '_'))")
  {
    "$py" -c "import jax, jaxlib, platform; print('jax', jax.__version__, 'jaxlib', jaxlib.__version__, 'gpu', jax.devices()[0].device_kind, 'python', platform.python_version())"
    PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" "$py" -m pytest -p no:cacheprovider -n 0 -rA -q -s tests/gpu/test_jax_gpu_claims.py
  } 2>&1 | tee "$out/jax-$name.txt"
fi
