#!/usr/bin/env bash
# GPU checks: the `gpu`-marked tests (device plumbing per backend, one CUDA episode per case,
# a qualification), under a time budget that fits 8 minutes on one GPU.
# Usage: scripts/gpu-check.sh [extra pytest arguments]
# Exits non-zero, with the reason, when no NVIDIA GPU is present.
set -euo pipefail

cd "$(dirname "$0")/.."
budget_s="${GPU_CHECK_BUDGET_S:-450}"
python="${PYTHON:-.venv/bin/python}"

if ! command -v nvidia-smi >/dev/null 2>&1; then
    echo "gpu-check: no GPU: nvidia-smi is not installed (these checks need an NVIDIA GPU and its driver)" >&2
    exit 2
fi
if ! gpus="$(nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader 2>&1)" || [ -z "$gpus" ]; then
    echo "gpu-check: no GPU: nvidia-smi lists none (${gpus:-no output})" >&2
    exit 2
fi
echo "gpu-check: GPUs:"
echo "$gpus" | sed 's/^/  /'

# Torch checks need torch's CUDA build: the 'cuda' runtime variant, from its own lock.
export TRAINFAIL_RUNTIME_VARIANT="${TRAINFAIL_RUNTIME_VARIANT:-cuda}"
# Built once from the committed lock (torch's CUDA wheels come from PyPI: about 5 GB, a few
# minutes) and cached by content hash; outside the tests' time budget.
if ! "$python" -m gym_trainfail.cli runtimes build --arm control; then
    echo "gpu-check: the $TRAINFAIL_RUNTIME_VARIANT runtime could not be built (it needs PyPI for the CUDA" \
        "wheels); the torch checks will fail: build it where PyPI answers, with the same TRAINFAIL_HOME" >&2
fi
"$python" -m gym_trainfail.cli doctor || true
timeout --kill-after=20 "$budget_s" "$python" -m pytest -m gpu tests/test_gpu.py -rs -q "$@"
