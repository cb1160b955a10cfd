#!/usr/bin/env bash
# Launch training with one process per data-parallel rank.
#   scripts/launch.sh CONFIG [key=value ...]
# Example: scripts/launch.sh configs/ddp.yaml train.steps=100 run_name=ddp-long
set -euo pipefail
config=${1:?usage: scripts/launch.sh CONFIG [key=value ...]}
shift
nproc=$(python -m gaitnet.config "$config" launch.nproc_per_node "$@")
exec torchrun --standalone --nproc_per_node="$nproc" -m gaitnet.train --config "$config" "$@"
