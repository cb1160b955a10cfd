#!/bin/sh
# One training process per data-parallel rank, as many as parallel.data_parallel_size says
# (after the overrides):
#   scripts/launch.sh CONFIG [section.field=value ...]
#   scripts/launch.sh configs/dp2.yaml train.steps=50 run_name=dp2-long
set -eu
if [ "$#" -lt 1 ]; then
    echo "usage: scripts/launch.sh CONFIG [section.field=value ...]" >&2
    exit 2
fi
world=$(python -m surrogate.options "$@" --get parallel.data_parallel_size)
exec torchrun --standalone --nproc_per_node "$world" -m surrogate.train --config "$@"
