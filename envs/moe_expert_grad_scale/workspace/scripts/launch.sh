#!/usr/bin/env bash
# Start one training process per rank on this host.
#   scripts/launch.sh [-n PROCESSES] CONFIG [key=value ...]      (2 processes unless -n says)
# Example: scripts/launch.sh -n 4 configs/ep2.yaml train.steps=100 run_name=ep2-w4
set -euo pipefail
processes=2
if [[ "${1:-}" == "-n" ]]; then
  processes=${2:?-n needs a process count}
  shift 2
fi
config=${1:?usage: scripts/launch.sh [-n PROCESSES] CONFIG [key=value ...]}
shift
python -m moetrain.config "$config" run_name "$@" >/dev/null   # refuse a bad config before starting ranks
exec torchrun --standalone --nproc_per_node="$processes" -m moetrain.train --config "$config" "$@"
