#!/usr/bin/env bash
# Launch a training run on this host: one process per device (TRAINFAIL_DEVICES, default 2).
#   bash scripts/launch.sh [section.key=value ...]
set -euo pipefail
cd "$(dirname "$0")/.."
python scripts/publish_base.py --if-missing
exec torchrun --standalone --nproc_per_node="${TRAINFAIL_DEVICES:-2}" \
  -m ftpipe.train --config configs/finetune.yaml "$@"
