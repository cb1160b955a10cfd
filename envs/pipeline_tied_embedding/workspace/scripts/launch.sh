#!/usr/bin/env bash
# Usage: bash scripts/launch.sh [CONFIG] [section.key=value ...]
# Ranks: $NPROC (default 4). The data-parallel size is NPROC / pipeline.stages.
set -euo pipefail
config="${1:-configs/dp2_pp2.json}"
shift || true
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
python -m relaylm.prepare --config "$config" "$@"
torchrun --standalone --nproc_per_node="${NPROC:-4}" -m relaylm.train --config "$config" "$@"
