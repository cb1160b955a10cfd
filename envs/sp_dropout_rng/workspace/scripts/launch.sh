#!/usr/bin/env bash
# Launch training with one process per tensor-parallel rank.
#   scripts/launch.sh CONFIG [section.key=value ...]
# Example: scripts/launch.sh configs/tp2-sp.toml train.steps=100 run_name=long
set -euo pipefail
config=${1:?usage: scripts/launch.sh CONFIG [section.key=value ...]}
shift
nproc=$(python -m seqmodel.config "$config" parallel.tensor_model_parallel_size "$@")
exec torchrun --standalone --nproc_per_node="$nproc" -m seqmodel.train --config "$config" "$@"
