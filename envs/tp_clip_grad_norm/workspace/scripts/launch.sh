#!/usr/bin/env bash
# One process per tensor-parallel rank, as many as the config asks for.
#   scripts/launch.sh CONFIG [section.key=value ...]
#   scripts/launch.sh configs/tp2.yaml train.steps=100 run_name=tp2-long
set -euo pipefail
if [ $# -lt 1 ]; then
    echo "usage: scripts/launch.sh CONFIG [section.key=value ...]" >&2
    exit 2
fi
ranks="$(python -m surrogate.config "$@" --show parallel.tensor_model_parallel_size)"
exec torchrun --standalone --nproc_per_node="$ranks" -m surrogate.train --config "$@"
