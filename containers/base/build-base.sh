#!/usr/bin/env bash
# Build the local base image when no image registry is reachable:
#   debootstrap --variant=minbase bookworm (plus packages.txt), then `docker import`.
#
#   containers/base/build-base.sh TAG
#
# Needs root, debootstrap (installed from apt when missing), a Debian mirror
# ($DEBIAN_MIRROR, default http://deb.debian.org/debian) and a Docker engine ($DOCKER_HOST).
# About 2 minutes on 2 cores. `trainfail images build` calls it with a content-hashed TAG.
set -euo pipefail
tag="${1:?usage: build-base.sh TAG}"
here="$(cd "$(dirname "$0")" && pwd)"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
suite="${DEBIAN_SUITE:-bookworm}"

if [ "$(id -u)" != 0 ]; then
  echo "build-base.sh: debootstrap needs root; run it as root, or build with --base IMAGE from a registry" >&2
  exit 1
fi
if ! command -v debootstrap >/dev/null; then
  echo "build-base.sh: installing debootstrap (apt)" >&2
  apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends debootstrap
fi

include="$(grep -v '^\s*#' "$here/packages.txt" | grep -v '^\s*$' | paste -sd, -)"
work="$(mktemp -d "${TMPDIR:-/tmp}/trainfail-base.XXXXXX")"
rootfs="$work/rootfs"
cleanup() {
  # debootstrap mounts /proc and /sys inside the rootfs while it works: unmount before deleting.
  { grep -o " $rootfs/[^ ]*" /proc/mounts || true; } | sort -r | while read -r mnt; do umount -l "$mnt" || true; done
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT

echo "build-base.sh: debootstrap $suite ($include) from $mirror" >&2
debootstrap --variant=minbase --include="$include" "$suite" "$rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 || {
  tail -n 30 "$work/debootstrap.log" >&2
  exit 1
}
# Keep the image small: no package caches or lists (images are built offline anyway).
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/log/*.log
rm -rf "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/*

echo "build-base.sh: importing as $tag" >&2
tar -C "$rootfs" --numeric-owner -c . | docker import \
  --change 'ENV LANG=C.UTF-8 PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'CMD ["/bin/bash"]' \
  --message "gym-trainfail base: debootstrap --variant=minbase $suite + $include" \
  - "$tag" >&2
echo "$tag"
