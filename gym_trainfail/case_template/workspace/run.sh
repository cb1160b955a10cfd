#!/usr/bin/env bash
set -euo pipefail
cd "$(dirname "$0")"
exec torchrun --standalone --nproc_per_node "${NPROC:-2}" train.py "$@"
