#!/usr/bin/env bash
# Launch training with one process per tensor-parallel rank.
#   scripts/launch.sh CONFIG [key=value ...]
# Example: scripts/launch.sh configs/tp2.yaml train.steps=100 run_name=tp2-long
set -euo pipefail
config=${1:?usage: scripts/launch.sh CONFIG [key=value ...]}
shift
nproc=$(python -m emulator.config "$config" parallel.tensor_model_parallel_size "$@")
exec torchrun --standalone --nproc_per_node="$nproc" -m emulator.train --config "$config" "$@"
