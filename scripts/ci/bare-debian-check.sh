#!/usr/bin/env bash
# The README's path on a truly bare Debian 12, for real (issue #34): a minbase debootstrap (no python3, no
# make, no git, no python3-venv), plus only what the README's first line installs (git, make); in it, a
# fresh clone of this checkout's HEAD runs `make test`, then `./acceptance OPENPBS=<an empty folder>`: it
# installs what the hosts need and runs `pbs-harness up`, which must refuse cleanly (no OpenPBS there, and
# no hosts can run in a chroot) with one of the README's codes, never a traceback.
#
#   scripts/ci/bare-debian-check.sh            (root; .ci/run runs it; CI_BARE_DEBIAN=0 there skips it)
#
# The minbase root is cached as a tarball in ${PBS_HARNESS_CACHE_DIR:-/var/cache/pbs-harness}/bare-debian/
# (made once, about 2 minutes); each check unpacks it into a new folder and removes that folder after.
# Needs debootstrap and network access to deb.debian.org and PyPI. Exits 0 when both hold, else 1.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ "$(id -u)" = 0 ] || { printf 'bare-debian: error: needs root (debootstrap, chroot)\n  fix: run it as root\n' >&2; exit 3; }
command -v debootstrap >/dev/null 2>&1 || [ -x /usr/sbin/debootstrap ] \
  || { printf 'bare-debian: error: debootstrap is missing\n  fix: apt-get install debootstrap\n' >&2; exit 3; }

cache=${PBS_HARNESS_CACHE_DIR:-/var/cache/pbs-harness}/bare-debian
image=$cache/bookworm-minbase.tar
mkdir -p "$cache"
if [ ! -f "$image" ]; then
  echo "bare-debian: making the minbase Debian 12 root (once; cached in $image)"
  build=$(mktemp -d "$cache/build.XXXXXX")
  /usr/sbin/debootstrap --variant=minbase bookworm "$build/root" http://deb.debian.org/debian >"$build/log" 2>&1 \
    || { tail -20 "$build/log" >&2; rm -rf "$build"; exit 1; }
  tar -C "$build/root" -cf "$image.part" . && mv "$image.part" "$image"
  rm -rf "$build"
fi

work=$(mktemp -d /var/tmp/bare-debian.XXXXXX)
root=$work/root
cleanup() {
  for m in src.git dev sys proc; do
    if mountpoint -q "$root/$m"; then umount -R "$root/$m" || umount -lR "$root/$m" || true; fi
  done
  if mountpoint -q "$root"; then umount "$root" || umount -l "$root" || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$root"
tar -C "$root" -xf "$image"
# The root a mount point of its own, as a machine's / is (unshare --propagation in the unit tests needs it).
mount --bind "$root" "$root"
cp /etc/resolv.conf "$root/etc/resolv.conf"
mount -t proc proc "$root/proc"
mount --rbind /sys "$root/sys"
mount --rbind /dev "$root/dev"
mkdir -p "$root/src.git"
mount --bind -o ro "$(git rev-parse --git-common-dir | xargs realpath)" "$root/src.git"
head=$(git rev-parse HEAD)

inside() {
  chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin sh -c "$1"
}
for prog in python3 make git; do
  if inside "command -v $prog" >/dev/null; then echo "bare-debian: the minbase root has $prog already" >&2; exit 1; fi
done
echo "bare-debian: the README's first line: apt-get install -y git make"
inside 'apt-get update -q && apt-get install -y -q git make' >"$work/apt.log" 2>&1 || { tail -20 "$work/apt.log" >&2; exit 1; }
# This machine's CA bundle (it may trust a proxy that PyPI is reached through).
cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
inside "git config --global --add safe.directory '*' && git clone -q /src.git /root/pbs-harness && cd /root/pbs-harness && git checkout -q $head"
echo "bare-debian: make test in a fresh clone at $head"
rc=0
inside 'cd /root/pbs-harness && make test' || rc=$?
# Its unit tests' results count in CI's closing line (.ci/run runs make test only here).
mkdir -p reports
[ ! -f "$root/root/pbs-harness/reports/junit-unit.xml" ] || cp "$root/root/pbs-harness/reports/junit-unit.xml" reports/junit-unit.xml
[ "$rc" = 0 ] || { echo "bare-debian: FAILED: make test exited $rc" >&2; exit 1; }
echo "bare-debian: ./acceptance OPENPBS=/root/no-openpbs (an empty folder): it must refuse cleanly with a README code"
out=$work/acceptance.out
arc=0
inside 'mkdir -p /root/no-openpbs && cd /root/pbs-harness && ./acceptance OPENPBS=/root/no-openpbs CLUSTERS=1' >"$out" 2>&1 \
  || arc=$?
cat "$out"
if grep -q Traceback "$out" || ! { [ "$arc" = 2 ] || [ "$arc" = 3 ]; }; then
  echo "bare-debian: FAILED: ./acceptance exited $arc (README: 2 or 3 with a message)" >&2
  exit 1
fi
echo "bare-debian: passed: make test, and ./acceptance refused with exit $arc"
