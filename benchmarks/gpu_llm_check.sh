#!/usr/bin/env bash
# GPU check of the LLM policies (one lent H200, under 5 minutes): HFPolicy sampling and one LoRA
# TTT-Discover step on CUDA with the tiny offline model, float32 and bfloat16; prints tokens/s, the
# behaviour-vs-forward log-prob gap and the step time (see benchmarks/gpu_llm_check.py).
#
# Run from anywhere on the GPU machine: bash benchmarks/gpu_llm_check.sh [--max-new-tokens 256 ...]
# The machine's python3 must have torch (CUDA), transformers, peft and tokenizers (the H200 image has
# them). gymnasium is installed from wheels in build/wheels when missing (make them here with
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
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
"$PY" -c "import torch, transformers, peft; print('torch', torch.__version__, 'transformers', transformers.__version__, 'peft', peft.__version__, 'cuda', torch.cuda.is_available())"
exec timeout 290 "$PY" benchmarks/gpu_llm_check.py "$@"
