#!/usr/bin/env bash
# One torchrun process per rank on this machine; launch.nproc of the config says how many.
#
#   bash scripts/launch.sh CONFIG [section.key=value ...]
#   bash scripts/launch.sh configs/base.yaml train.max_steps=12 run_name=short
#   bash scripts/launch.sh configs/base.yaml train.resume_from_checkpoint=outputs/base/checkpoint-6
set -euo pipefail
if (( $# < 1 )); then
    echo "usage: bash scripts/launch.sh CONFIG [section.key=value ...]" >&2
    exit 2
fi
config="$1"
shift
ranks="$(python -m fcast.config "$config" launch.nproc "$@")"
exec torchrun --standalone --nproc_per_node="$ranks" -m fcast.train --config "$config" "$@"
