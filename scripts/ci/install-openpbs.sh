#!/usr/bin/env bash
# OpenPBS on THIS machine, for the local cluster of namespaced hosts (they share its /opt/pbs).
#
#   scripts/ci/install-openpbs.sh            install it (below)
#   scripts/ci/install-openpbs.sh --source   print the source archive or tree it would build from
#                                            (OPENPBS_SOURCE, or the archive found above the checkout)
#                                            and install nothing: the OPENPBS of hosts that install
#                                            OpenPBS themselves (FLAVOUR=system)
#
# The first of these that applies:
#   OPENPBS_ZIP_URL + OPENPBS_ZIP_SHA256   an official release zip (openpbs_<version>.<distro>.zip): its
#                                          openpbs-server package is installed with apt or dnf
#   OPENPBS_SOURCE_URL + OPENPBS_SOURCE_SHA256, or OPENPBS_SOURCE (a path)
#                                          an OpenPBS source archive (or tree), built and installed into
#                                          /opt/pbs by its INSTALL file (scripts/install-openpbs-from-source.sh)
#   /opt/pbs/bin/qstat exists              OpenPBS is installed already: nothing to do
#   shared/openpbs/openpbs-master-cd7ab5e.tar.gz in a folder above the checkout (../shared/openpbs/ of
#                                          the development machine; found from a worktree too): built as above
# Without any of them it stops with exit 3 and says what to set. Installing needs root.
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
default_archive=shared/openpbs/openpbs-master-cd7ab5e.tar.gz
say() { printf 'install-openpbs: %s\n' "$*"; }
die() { printf 'install-openpbs: error: %s\n' "$1" >&2; [ -z "${2:-}" ] || printf '  fix: %s\n' "$2" >&2; exit 3; }
need_root() { [ "$(id -u)" = 0 ] || die "installing OpenPBS needs root" "run it with sudo"; }

# Download $1 to $2 and check it against the sha256 $3 before anything uses it.
fetch() {
  [ -n "$3" ] || die "$1 is given without its sha256" "set the matching *_SHA256 variable (sha256sum FILE)"
  curl -fsSL --retry 3 -o "$2" "$1"
  echo "$3  $2" | sha256sum -c --quiet - || die "$1 does not have the sha256 given" "check the URL and the *_SHA256 value"
}

from_zip() {
  need_root
  local work pkg
  work=$(mktemp -d)
  trap 'rm -rf "$work"' RETURN
  fetch "$OPENPBS_ZIP_URL" "$work/openpbs.zip" "${OPENPBS_ZIP_SHA256:-}"
  unzip -q -o "$work/openpbs.zip" -d "$work/openpbs"
  # The server package holds every daemon; the local hosts share this machine's /opt/pbs.
  if command -v apt-get >/dev/null; then
    pkg=$(find "$work/openpbs" -name 'openpbs-server_*.deb' | head -n 1)
    [ -n "$pkg" ] || die "no openpbs-server_*.deb in $OPENPBS_ZIP_URL" "name the zip built for this distribution"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$pkg"
  else
    pkg=$(find "$work/openpbs" -name 'openpbs-server-*.rpm' | head -n 1)
    [ -n "$pkg" ] || die "no openpbs-server-*.rpm in $OPENPBS_ZIP_URL" "name the zip built for this distribution"
    dnf install -y "$pkg"
  fi
}

from_source() {
  need_root
  "$repo/scripts/install-openpbs-from-source.sh" "$1"
}

# The default archive in the nearest folder above the checkout that has it.
find_default_archive() {
  local dir=$repo
  while [ "$dir" != / ]; do
    dir=$(dirname "$dir")
    if [ -f "$dir/$default_archive" ]; then
      echo "$dir/$default_archive"
      return 0
    fi
  done
  return 1
}

if [ "${1:-}" = --source ]; then
  if [ -n "${OPENPBS_SOURCE:-}" ]; then
    echo "$OPENPBS_SOURCE"
  elif ! find_default_archive; then
    die "no OpenPBS source is named, and no $default_archive is found above the checkout" \
      "set OPENPBS_SOURCE to an OpenPBS source archive or tree"
  fi
  exit 0
fi

if [ -n "${OPENPBS_ZIP_URL:-}" ]; then
  say "from the release zip $OPENPBS_ZIP_URL"
  from_zip
elif [ -n "${OPENPBS_SOURCE_URL:-}" ]; then
  say "from the source archive $OPENPBS_SOURCE_URL"
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  fetch "$OPENPBS_SOURCE_URL" "$work/openpbs.tar.gz" "${OPENPBS_SOURCE_SHA256:-}"
  from_source "$work/openpbs.tar.gz"
elif [ -n "${OPENPBS_SOURCE:-}" ]; then
  say "from the source $OPENPBS_SOURCE"
  from_source "$OPENPBS_SOURCE"
elif [ -x /opt/pbs/bin/qstat ]; then
  say "OpenPBS is installed already: $(/opt/pbs/bin/qstat --version 2>&1) in /opt/pbs"
  exit 0
elif archive=$(find_default_archive); then
  say "from $archive (found above the checkout)"
  from_source "$archive"
else
  die "OpenPBS is not installed here (/opt/pbs/bin/qstat), and no source for it is named" \
    "set OPENPBS_ZIP_URL and OPENPBS_ZIP_SHA256 (a release zip for this distribution), OPENPBS_SOURCE (an OpenPBS \
source archive or tree), or put $default_archive in a folder above the checkout"
fi
say "$(/opt/pbs/bin/qstat --version 2>&1) in /opt/pbs"
