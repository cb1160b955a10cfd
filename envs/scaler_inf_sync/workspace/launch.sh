#!/usr/bin/env bash
# Usage: bash launch.sh [section.key=value ...]
set -euo pipefail
cd "$(dirname "$0")"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
exec torchrun --standalone --nproc_per_node "${NPROC:-2}" -m twinhead.train --config configs/base.toml "$@"
