#!/usr/bin/env bash
# Data-parallel fine-tuning on one node. Extra arguments are config overrides, e.g.
#   bash scripts/train.sh training.max_steps=20 training.gradient_accumulation_steps=1
# CONFIG picks the run configuration (default configs/sft_tiny.yaml).
set -euo pipefail
cd "$(dirname "$0")/.."
exec torchrun --standalone --nproc_per_node "${NPROC:-${TRAINFAIL_DEVICES:-2}}" \
  -m sft.train --config "${CONFIG:-configs/sft_tiny.yaml}" "$@"
