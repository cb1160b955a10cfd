#!/usr/bin/env bash
# Usage: bash train.sh [--field-name VALUE ...]   (fields of recipes/default.json)
set -euo pipefail
cd "$(dirname "$0")"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
exec torchrun --standalone --nproc_per_node "${NPROC:-2}" -m gearsense.loop --recipe recipes/default.json "$@"
