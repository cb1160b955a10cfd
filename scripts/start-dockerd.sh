#!/usr/bin/env bash
# A private Docker engine for gym-trainfail (CI, or a machine without a system engine).
#
#   export DOCKER_HOST="$(scripts/start-dockerd.sh [STATE_DIR])"   start (or reuse) it
#   scripts/start-dockerd.sh --stop [STATE_DIR]                    stop it
#
# Installs docker.io (Debian/Ubuntu) when dockerd is missing, then starts dockerd as root with
# its own data root (STATE_DIR/data, default /var/lib/trainfail-docker), exec root and unix
# socket, so it never touches a system engine. Flags that work on the project's machines
# (see FIELD-NOTES): overlay2 storage, no iptables, no masquerading, no default bridge
# (sandboxes run with network none; image builds are offline). Idempotent: when the socket
# already answers, it only prints it. Prints the DOCKER_HOST to use on stdout; logs on stderr.
set -euo pipefail

stop=0
if [ "${1:-}" = "--stop" ]; then
  stop=1
  shift
fi
state="${1:-${TRAINFAIL_DOCKER_STATE:-/var/lib/trainfail-docker}}"
mkdir -p "$state"
state="$(cd "$state" && pwd)"
# containerd's sockets live under the exec root: keep it short (unix socket paths < 108 bytes).
tag="$(printf '%s' "$state" | sha256sum | cut -c1-10)"
exec_root="/run/trainfail-docker-$tag"
socket="$exec_root/docker.sock"
pidfile="$exec_root/dockerd.pid"
log="$state/dockerd.log"

say() { echo "start-dockerd: $*" >&2; }

answers() {
  [ -S "$socket" ] && docker -H "unix://$socket" version --format '{{.Server.Version}}' >/dev/null 2>&1
}

running_pid() {
  [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null && cat "$pidfile"
}

# dockerd can leave its data root mounted over itself after it exits; unmount what is left
# under the state directory (deepest first) so that the directory can be removed.
release_mounts() {
  awk -v root="$state/" 'index($5, root) == 1 || $5 == substr(root, 1, length(root) - 1) { print $5 }' \
    /proc/self/mountinfo | sort -r | while read -r target; do
    umount "$target" 2>/dev/null || umount -l "$target" 2>/dev/null || say "could not unmount $target"
  done
}

if [ "$stop" = 1 ]; then
  if pid="$(running_pid)"; then
    say "stopping dockerd $pid ($state)"
    kill -TERM "$pid"
    for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    if kill -0 "$pid" 2>/dev/null; then
      say "dockerd $pid did not stop within 30 s; killing it"
      kill -KILL "$pid" 2>/dev/null || true
      sleep 1
    fi
  fi
  release_mounts
  exit 0
fi

if answers; then
  echo "unix://$socket"
  exit 0
fi

if [ "$(id -u)" != 0 ]; then
  say "dockerd must run as root here; run this script as root, or point DOCKER_HOST at an engine you have"
  exit 1
fi

if ! command -v dockerd >/dev/null || ! command -v docker >/dev/null; then
  say "installing docker.io (apt)"
  apt-get -o DPkg::Lock::Timeout=600 update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
    --no-install-recommends docker.io >&2
  # The package's own service (where an init system runs it) is not the engine we use.
fi

mkdir -p "$exec_root" "$state/data"
if pid="$(running_pid)"; then
  say "dockerd $pid is starting; waiting for it"
else
  rm -f "$socket" "$pidfile"
  say "starting dockerd (data root $state/data, log $log)"
  setsid dockerd \
    --host "unix://$socket" \
    --data-root "$state/data" \
    --exec-root "$exec_root" \
    --pidfile "$pidfile" \
    --storage-driver overlay2 \
    --iptables=false \
    --ip-masq=false \
    --bridge=none \
    >>"$log" 2>&1 </dev/null &
fi

for _ in $(seq 1 120); do
  if answers; then
    echo "unix://$socket"
    exit 0
  fi
  sleep 0.5
done
say "dockerd did not answer on $socket within 60 s; last log lines:"
tail -n 20 "$log" >&2
exit 1
