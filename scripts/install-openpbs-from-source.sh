#!/usr/bin/env bash
# Build OpenPBS from a source archive or tree by its INSTALL file and install it into /opt/pbs on
# THIS machine (the namespace flavour's hosts share it). For hosts of their own (the system
# flavour) the harness builds packages instead: `pbs-harness packages build SOURCE`.
#
#   scripts/install-openpbs-from-source.sh SOURCE   # openpbs-*.tar.gz, or a source tree
#   OPENPBS_PREFIX=/other/prefix scripts/...          # another prefix (default /opt/pbs)
#
# Debian 12, as root. Installs the Debian build and runtime dependencies INSTALL names (without
# sendmail-bin, whose postinst can hang in newaliases), configures with the system Python 3,
# `make -j$(nproc)`, `make install`, `pbs_postinstall`, then makes pbs_iff/pbs_rcp setuid as the
# official packages do. Idempotent: an /opt/pbs built from the same source (by sha256, recorded in
# /opt/pbs/.pbs-harness-source) is left alone.
#
# /opt/pbs/.pbs-harness-source names the source for the conformance report
# (pbs_harness/conformance/provenance.py): a first line `archive:<sha256>` or `tree:<sha256>` (of
# the tree's files), then `name:<archive file name>` and `commit:<upstream commit>` when known (a
# `git archive` tarball carries its commit in a pax header: `git get-tar-commit-id`; a tree that
# is a git checkout: its HEAD).
set -euo pipefail

src=${1:?usage: scripts/install-openpbs-from-source.sh SOURCE (an OpenPBS .tar.gz or source tree)}
prefix=${OPENPBS_PREFIX:-/opt/pbs}
stamp=$prefix/.pbs-harness-source
say() { printf 'install-openpbs: %s\n' "$*"; }
die() { printf 'install-openpbs: error: %s\n' "$1" >&2; [ -z "${2:-}" ] || printf '  fix: %s\n' "$2" >&2; exit 3; }

[ "$(id -u)" = 0 ] || die "must run as root (it installs Debian packages and writes $prefix)" "run it with sudo"
command -v apt-get >/dev/null || die "no apt-get: this script knows Debian/Ubuntu only" \
  "build by the INSTALL file of the OpenPBS source by hand"
if [ -d "$src" ]; then
  [ -f "$src/configure.ac" ] && [ -f "$src/INSTALL" ] || die "$src is not an OpenPBS source tree (no configure.ac/INSTALL)" \
    "name the top folder of an OpenPBS checkout"
  id=tree:$(cd "$src" && find . -path ./.git -prune -o -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-64)
elif [ -f "$src" ]; then
  case "$src" in *.tar.gz|*.tgz) ;; *) die "$src is not a .tar.gz source archive" "name an openpbs-*.tar.gz or a source tree";; esac
  id=archive:$(sha256sum "$src" | cut -c1-64)
else
  die "$src does not exist" "name an OpenPBS source archive (.tar.gz) or source tree"
fi
commit=
if [ -d "$src" ]; then
  name=
  if command -v git >/dev/null && git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
    commit=$(git -C "$src" rev-parse HEAD)
  fi
else
  name=$(basename "$src")
  # The commit `git archive` wrote into the pax global header (empty for other tarballs).
  if command -v git >/dev/null; then
    commit=$(gzip -dc "$src" | git get-tar-commit-id || true)
  elif command -v python3 >/dev/null; then
    commit=$(python3 -c 'import sys, tarfile; print(tarfile.open(sys.argv[1]).pax_headers.get("comment", ""))' "$src" || true)
  fi
fi
[[ "$commit" =~ ^[0-9a-f]{40}$ ]] || commit=
write_stamp() {
  { printf '%s\n' "$id"; [ -z "$name" ] || printf 'name:%s\n' "$name"; [ -z "$commit" ] || printf 'commit:%s\n' "$commit"; } >"$stamp"
}
if [ -x "$prefix/bin/qstat" ] && [ "$(head -n1 "$stamp" 2>/dev/null)" = "$id" ]; then
  write_stamp  # a stamp of an older version of this script gains the archive's name and commit
  say "$prefix already holds OpenPBS built from this source ($id${commit:+, commit $commit}): nothing to do"
  exit 0
fi

build_deps=(gcc g++ make libtool autoconf automake pkg-config libhwloc-dev libx11-dev libxt-dev libedit-dev
  libical-dev libncurses-dev perl postgresql-server-dev-all postgresql-contrib python3-dev tcl-dev tk-dev swig
  libexpat1-dev libssl-dev libxext-dev libxft-dev libcjson-dev)
runtime_deps=(expat libedit2 postgresql python3 sudo tcl tk libical3 libcjson1)
missing=()
for p in "${build_deps[@]}" "${runtime_deps[@]}"; do
  dpkg-query -W -f '${db:Status-Status}' "$p" 2>/dev/null | grep -qx installed || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing ${#missing[@]} Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

work=$(mktemp -d /var/tmp/openpbs-build.XXXXXX)
trap 'rm -rf "$work"' EXIT
if [ -d "$src" ]; then
  cp -a "$src" "$work/src"
else
  mkdir "$work/src" && tar -xzf "$src" -C "$work/src" --strip-components=1
fi
cd "$work/src"
start=$(date +%s)
say "autogen + configure (PYTHON=/usr/bin/python3, prefix $prefix)"
./autogen.sh >"$work/autogen.log" 2>&1 || { tail -30 "$work/autogen.log"; die "autogen.sh failed"; }
PYTHON=/usr/bin/python3 ./configure --prefix="$prefix" >"$work/configure.log" 2>&1 \
  || { tail -30 "$work/configure.log"; die "configure failed (log above)"; }
say "make -j$(nproc) (a few minutes)"
make -j"$(nproc)" >"$work/make.log" 2>&1 || { tail -40 "$work/make.log"; die "make failed (log above)"; }
say "make install + pbs_postinstall"
make install >"$work/install.log" 2>&1 || { tail -30 "$work/install.log"; die "make install failed (log above)"; }
"$prefix/libexec/pbs_postinstall" >"$work/postinstall.log" 2>&1 || { tail -20 "$work/postinstall.log"; die "pbs_postinstall failed"; }
chmod 4755 "$prefix/sbin/pbs_iff" "$prefix/sbin/pbs_rcp"
write_stamp
say "$("$prefix/bin/qstat" --version) installed in $prefix in $(( $(date +%s) - start ))s (source $id${commit:+, commit $commit})"
