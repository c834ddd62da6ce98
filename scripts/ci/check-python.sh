#!/usr/bin/env bash
# Is PYTHON (default python3) 3.11 or newer, with a working `venv`? ansible-core 2.19 needs 3.11.
# Exits 3 with the fix when not (Ubuntu 22.04's python3 is 3.10: see the message).
#
#   scripts/ci/check-python.sh [PYTHON]
#   scripts/ci/check-python.sh --install [PYTHON]   (make venv) on Debian/Ubuntu as root, first install
#                                      python3 and python3-venv when PYTHON is python3 and either is missing
#                                      (a bare Debian 12 has neither)
set -euo pipefail

install=0
if [ "${1:-}" = --install ]; then
  install=1
  shift
fi
python=${1:-python3}
if [ "$install" = 1 ] && [ "$python" = python3 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  probe=$(mktemp -d)
  if ! { command -v python3 >/dev/null 2>&1 && python3 -m venv "$probe/venv" >/dev/null 2>&1; }; then
    echo "check-python: installing python3 and python3-venv (missing here)"
    DEBIAN_FRONTEND=noninteractive apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends python3 python3-venv
  fi
  rm -rf "$probe"
fi
die() { printf 'check-python: error: %s\n  fix: %s\n' "$1" "$2" >&2; exit 3; }
fix="install Python 3.11+ and name it: make venv PYTHON=python3.11 (Debian 12 and Ubuntu 24.04 have it as python3; \
Ubuntu 22.04: apt-get install python3.11 python3.11-venv; GitHub Actions: actions/setup-python with python-version 3.11)"

command -v "$python" >/dev/null 2>&1 || die "$python is not installed (or not on PATH)" "$fix"
version=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null) \
  || die "$python does not run (\`$python -c 'import sys'\` failed)" "$fix"
"$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
  || die "$python is Python $version; pbs-harness needs 3.11 or newer (ansible-core 2.19)" "$fix"
# `python3 -m venv` needs ensurepip, which Debian ships apart (python3-venv): try it for real.
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
"$python" -m venv "$probe/venv" >/dev/null 2>&1 \
  || die "$python (Python $version) cannot make a venv (no ensurepip)" \
    "apt-get install python3-venv (or python$version-venv for a python$version beside the system's)"
echo "check-python: $python is Python $version, venv works"
