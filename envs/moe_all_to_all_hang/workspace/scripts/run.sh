#!/usr/bin/env bash
# Train with one process per rank: scripts/run.sh [-n RANKS] CONFIG [--set key=value ...]
set -euo pipefail
ranks=2
if [[ "${1:-}" == "-n" ]]; then ranks="$2"; shift 2; fi
config="$1"; shift
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
python -m switchyard.synth --config "$config" "$@"
exec torchrun --standalone --nproc_per_node="$ranks" -m switchyard.fit --config "$config" "$@"
