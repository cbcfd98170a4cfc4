#!/usr/bin/env bash
# GPU check of TriMul / MLA-Decode (one lent H200, under 6 minutes): PyTorch baseline geometric-mean μs
# on the 7 timed TriMul cases, CV of 3 measurements, the fused Triton kernel's correctness and μs,
# a patched wrong kernel rejected by the out-of-process verifier, the MLA-Decode baseline, and the GPU
# name. Prints a table (see benchmarks/gpu_kernels_check.py).
# With --kernelbench (about 3 minutes): the KernelBench level 1 cumsum and tall skinny matmul
# baselines (correctness + timing of 4 shapes each) and a wrong kernel of each rejected on the GPU.
#
# Run from anywhere on the GPU machine: bash benchmarks/gpu_kernels_check.sh [--kernelbench]
# The machine's python3 must have torch (CUDA/ROCm) and triton. gymnasium is installed from wheels in
# build/wheels when missing (make them here with
#   .venv/bin/pip download --no-deps -d build/wheels gymnasium==1.4.0 farama-notifications==0.0.6
# and carry "build/wheels" to the device machine).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if ! "$PY" -c "import gymnasium" 2>/dev/null; then
    if compgen -G "build/wheels/*.whl" >/dev/null; then
        "$PY" -m pip install -q --no-index --no-deps --target /tmp/discoverygym-site build/wheels/*.whl
        export PYTHONPATH=/tmp/discoverygym-site${PYTHONPATH:+:$PYTHONPATH}
    else
        echo "gymnasium is missing and build/wheels has no wheels (see the header of $0)" >&2
        exit 2
    fi
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
if ! command -v bwrap >/dev/null 2>&1; then
    echo "WARNING: bubblewrap is missing: kernels are judged unconfined (the sandbox path is NOT tested)" >&2
    export DISCOVERYGYM_KERNELS_ALLOW_UNCONFINED=1
fi
export PYTHONUNBUFFERED=1
"$PY" -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, 'cuda', torch.cuda.is_available())"
# as a module, so that benchmarks/ resolves as a package from the repository root
exec timeout 355 "$PY" -m benchmarks.gpu_kernels_check "$@"
