#!/usr/bin/env bash
# Is PYTHON (default python3) 3.11 or newer, with a working `venv`? ansible-core 2.19 needs 3.11.
# Exits 3 with the fix when not (Ubuntu 22.04's python3 is 3.10: see the message).
#
#   scripts/ci/check-python.sh [PYTHON]
set -euo pipefail

python=${1:-python3}
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
