#!/bin/bash
# Start the emulator's pretraining with one process per tensor-parallel rank.
#
#   bash scripts/launch.sh RUN_FILE [key=value ...]
#   bash scripts/launch.sh configs/tp2.yaml train.steps=100 run_name=tp2-long

RUN_FILE=$1
if [[ -z "$RUN_FILE" ]]; then
    echo "usage: bash scripts/launch.sh RUN_FILE [key=value ...]" >&2
    exit 2
fi
shift

TP_SIZE=$(python -m emulator.arguments "$RUN_FILE" "$@" --print tensor_model_parallel_size) || exit $?
DISTRIBUTED_ARGS="--standalone --nproc_per_node $TP_SIZE"

exec torchrun $DISTRIBUTED_ARGS -m emulator.train --config "$RUN_FILE" "$@"
