#!/usr/bin/env bash
# System packages gym-trainfail needs on Debian/Ubuntu: bubblewrap (the embedded sandbox),
# patch (case reference repairs), g++ (DeepSpeed builds its CPU ops when the runtime is built),
# and with --for-tests chromium (the tests check the leaderboard page in a real headless browser).
# Installs only what is missing; needs root (or sudo) when something is.
# With TRAINFAIL_PHASE_LOG set (the Makefile sets it), appends how long this took to that file
# (`trainfail demo` prints it as the "system packages" phase).
set -euo pipefail
started="$(date +%s.%N)"
phase="system packages"
need=()
command -v bwrap >/dev/null || need+=(bubblewrap)
command -v patch >/dev/null || need+=(patch)
command -v g++ >/dev/null || need+=(g++)
if [ "${1:-}" = "--for-tests" ]; then
  phase="system packages for tests"
  command -v chromium >/dev/null || command -v chromium-browser >/dev/null || need+=(chromium)
fi
record() {
  if [ -n "${TRAINFAIL_PHASE_LOG:-}" ] && [ -d "$(dirname "$TRAINFAIL_PHASE_LOG")" ]; then
    printf '%s\t%s\t%s\t%s\n' "$phase" "$started" "$(date +%s.%N)" "$1" >>"$TRAINFAIL_PHASE_LOG"
  fi
}
if [ ${#need[@]} -eq 0 ]; then
  record "nothing to install"
  exit 0
fi
sudo=""
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || { echo "need root to install: ${need[*]}" >&2; exit 1; }
  sudo=sudo
fi
echo "installing system packages: ${need[*]}" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
record "apt-get install ${need[*]}"
