#!/usr/bin/env bash
# Usage: bash scripts/train.sh [section.key=value ...]   (CONFIG=... to use another config)
set -euo pipefail
cd "$(dirname "$0")/.."
NPROC="${NPROC:-${TRAINFAIL_DEVICES:-2}}"
exec torchrun --standalone --nproc_per_node "$NPROC" -m petite.train --config "${CONFIG:-configs/small.toml}" "$@"
