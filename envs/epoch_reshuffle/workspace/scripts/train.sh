#!/usr/bin/env bash
# Usage: scripts/train.sh [CONFIG] [--set section.key=value ...]
# Starts one process per rank on this machine; the rank count comes from run.nproc.
set -euo pipefail
cd "$(dirname "$0")/.."
config="${1:-configs/cpu.toml}"
[[ $# -gt 0 ]] && shift
nproc="$(python -m wristnet.settings "$config" run.nproc "$@")"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
exec torchrun --standalone --nproc_per_node="$nproc" -m wristnet.fit --config "$config" "$@"
