#!/usr/bin/env bash
# Launch training with one process per data-parallel rank.
#   scripts/launch.sh CONFIG [key=value ...]
# Example: scripts/launch.sh configs/train.yaml processes=4 run_name=demand-4
set -euo pipefail
config=${1:?usage: scripts/launch.sh CONFIG [key=value ...]}
shift
nproc=$(python -m demandnet.config "$config" processes "$@")
exec torchrun --standalone --nproc_per_node="$nproc" -m demandnet.train --config "$config" "$@"
