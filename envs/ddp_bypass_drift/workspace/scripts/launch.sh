#!/usr/bin/env bash
# scripts/launch.sh CONFIG [name=value ...]
#
# torchrun with launch.nproc_per_node processes (the setting as resolved with the overrides),
# one per data-parallel rank, each running gaitnet.train on CONFIG. For example:
#   scripts/launch.sh configs/ddp.yaml train.steps=100 run_name=ddp-long
set -o errexit -o nounset -o pipefail

if (( $# < 1 )); then
    sed -n '2,4p' "$0" >&2
    exit 64
fi
config="$1"
shift
processes="$(python -m gaitnet.settings "$config" launch.nproc_per_node "$@")"
torchrun --standalone --nproc_per_node="$processes" -m gaitnet.train --config "$config" "$@"
