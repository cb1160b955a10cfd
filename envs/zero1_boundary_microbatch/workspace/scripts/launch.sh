#!/usr/bin/env bash
# Launch training with one process per data-parallel rank.
#   scripts/launch.sh CONFIG [key=value ...]
# Example: scripts/launch.sh configs/dp2.yaml train.steps=100 run_name=dp2-long
set -euo pipefail
config=${1:?usage: scripts/launch.sh CONFIG [key=value ...]}
shift
nproc=$(python -m surrogate.config "$config" parallel.data_parallel_size "$@")
exec torchrun --standalone --nproc_per_node="$nproc" -m surrogate.train --config "$config" "$@"
