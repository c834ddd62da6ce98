#!/usr/bin/env bash
# The Debian/Ubuntu packages the local cluster and its tests need, installed when missing (root).
#
#   scripts/ci/install-system-packages.sh
#
# Programs and their packages: python3, make, sudo, ssh/sshd (OpenSSH), ip (iproute2), tini, iptables,
# ps (procps), gdb (the interleaving faults, suite/faults/interleave.py: namespace hosts use this machine's),
# unzip and curl (OpenPBS release zips), python3-venv (ensurepip for `make venv`); for system hosts
# (FLAVOUR=system): debootstrap (their image) and systemd-nspawn (systemd-container, their engine);
# chromium for bench/check_report_render.py (the reports rendered at 1400 px).
set -euo pipefail

need=()
for pair in python3:python3 make:make sudo:sudo ssh:openssh-client sshd:openssh-server ip:iproute2 tini:tini \
    iptables:iptables ps:procps gdb:gdb unzip:unzip curl:curl debootstrap:debootstrap systemd-nspawn:systemd-container \
    chromium:chromium; do
  prog=${pair%%:*} pkg=${pair#*:}
  command -v "$prog" >/dev/null 2>&1 || [ -x "/usr/sbin/$prog" ] || need+=("$pkg")
done
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
{ command -v python3 >/dev/null 2>&1 && python3 -m venv "$probe/venv" >/dev/null 2>&1; } || need+=(python3-venv)
if [ ${#need[@]} -eq 0 ]; then
  echo "install-system-packages: nothing missing"
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  printf 'install-system-packages: error: missing %s and not root\n  fix: run it with sudo\n' "${need[*]}" >&2
  exit 3
fi
echo "install-system-packages: installing ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${need[@]}"
