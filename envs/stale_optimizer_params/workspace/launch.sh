#!/usr/bin/env bash
# bash launch.sh [key=value ...]   (ranks: $NPROC, default 2)
set -euo pipefail
cd "$(dirname "$0")"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
exec torchrun --standalone --nproc_per_node "${NPROC:-2}" -m pulsenet.train --config configs/train.toml "$@"
