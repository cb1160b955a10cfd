#!/usr/bin/env bash
# Launch training with one process per rank.
#   scripts/launch.sh CONFIG [key=value ...]
# Example: scripts/launch.sh configs/ep2.yaml train.steps=100 run_name=ep2-long
set -euo pipefail
config=${1:?usage: scripts/launch.sh CONFIG [key=value ...]}
shift
nproc=$(python -m moetrain.config "$config" parallel.world_size "$@")
exec torchrun --standalone --nproc_per_node="$nproc" -m moetrain.train --config "$config" "$@"
