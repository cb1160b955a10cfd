#!/usr/bin/env bash
# Launch training with one process per data-parallel rank.
#   scripts/launch.sh CONFIG [key=value ...]
# Example: scripts/launch.sh configs/base.yaml train.max_steps=12 run_name=short
# Resume:  scripts/launch.sh configs/base.yaml train.resume_from_checkpoint=outputs/base/checkpoint-6
set -euo pipefail
config=${1:?usage: scripts/launch.sh CONFIG [key=value ...]}
shift
nproc=$(python -m fcast.config "$config" launch.nproc "$@")
exec torchrun --standalone --nproc_per_node="$nproc" -m fcast.train --config "$config" "$@"
