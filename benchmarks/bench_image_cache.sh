#!/usr/bin/env bash
# How CI can keep a runtime image between runs: a persistent dockerd data root (what .ci/run
# does) against `docker save` / `docker load` tarballs into a fresh data root.
#
#   benchmarks/bench_image_cache.sh [RUNTIME_DIR]     (as root; needs dockerd, see scripts/start-dockerd.sh)
#
# The image is a runtime folder imported as one layer (default: the built control runtime),
# about the size of the runtime layer of a real runtime image. Prints seconds for: restarting
# dockerd on its data root until the image is there; `docker save`; starting a fresh data root
# and `docker load`. Figures, not assertions; scratch space under a temporary folder, removed.
set -euo pipefail
cd "$(dirname "$0")/.."
runtime="${1:-$(.venv/bin/python -c 'from gym_trainfail.runtimes import find_runtime; print(find_runtime("control").root)')}"
scratch="$(mktemp -d /var/tmp/trainfail-bench-image-cache.XXXXXX)"
persistent="$scratch/persistent" fresh="$scratch/fresh"
cleanup() {
  scripts/start-dockerd.sh --stop "$persistent" 2>/dev/null || true
  scripts/start-dockerd.sh --stop "$fresh" 2>/dev/null || true
  rm -rf --one-file-system "$scratch"
}
trap cleanup EXIT
now() { date +%s.%N; }
since() { echo "$(now) - $1" | bc; }

host="$(scripts/start-dockerd.sh "$persistent" 2>/dev/null)"
start="$(now)"
tar -C "$runtime" -c . | docker -H "$host" import - bench/runtime:cache >/dev/null
import_s="$(since "$start")"
size="$(docker -H "$host" image inspect bench/runtime:cache --format '{{.Size}}')"

scripts/start-dockerd.sh --stop "$persistent" 2>/dev/null
start="$(now)"
host="$(scripts/start-dockerd.sh "$persistent" 2>/dev/null)"
docker -H "$host" image inspect bench/runtime:cache >/dev/null
persistent_s="$(since "$start")"

start="$(now)"
docker -H "$host" save -o "$scratch/image.tar" bench/runtime:cache
save_s="$(since "$start")"
scripts/start-dockerd.sh --stop "$persistent" 2>/dev/null

start="$(now)"
host="$(scripts/start-dockerd.sh "$fresh" 2>/dev/null)"
docker -H "$host" load -q -i "$scratch/image.tar" >/dev/null
load_s="$(since "$start")"

printf 'image: %s (%.2f GB, imported in %.1f s)\n' "$runtime" "$(echo "$size / 1000000000" | bc -l)" "$import_s"
printf 'persistent data root: dockerd restart until the image answers  %6.1f s\n' "$persistent_s"
printf 'tarball: docker save (after each build)                         %6.1f s\n' "$save_s"
printf 'tarball: fresh dockerd + docker load (every run)                %6.1f s\n' "$load_s"
printf 'load average: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
