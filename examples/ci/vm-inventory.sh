#!/usr/bin/env bash
# Assemble the inventory of an existing VM cluster for a CI job, from the CI's secrets.
#
#   examples/ci/vm-inventory.sh OUT_DIR
#
# Inputs (environment; the *_FILE variables are paths to files holding the secret):
#   PBSH_HOSTS_FILE        hosts.yml: the groups pbs_server / pbs_moms / pbs_clients with ansible_host
#                          (the layout of inventory/cloud.example/hosts.yml, or an inventory written
#                          by `pbs-harness up --write-inventory`)
#   PBSH_KNOWN_HOSTS_FILE  known_hosts lines of every host, taken from a trusted source once
#   PBSH_SSH_KEY_FILE      the private key of the login user
#   PBSH_SSH_USER          the login user (it has passwordless sudo on the VMs)
#   PBSH_INVENTORY_BASE    inventory whose group_vars/ are used (default inventory/cloud.example)
#   ANSIBLE_INVENTORY_BIN  ansible-inventory to read the result with (default .venv/bin/ansible-inventory)
#
# OUT_DIR gets known_hosts, ssh_key (mode 0600) and inventory/ (pass that to -i): group_vars/ from
# the base ({{ inventory_dir }} in them made the base's absolute path, so that settings such as
# openpbs_hooks_src_dir still name the checkout's files), hosts.yml, and a group_vars/all/connection.yml that pins the host keys
# (StrictHostKeyChecking=yes against OUT_DIR/known_hosts) with absolute paths, so that Ansible and
# the harness's own SSH layer read the same settings. (known_hosts and the key stay outside the
# inventory folder, where Ansible would try to read them as inventory sources.)
# It refuses hosts missing from known_hosts and any host-key checking turned off in hosts.yml.
# It prints host names only, never addresses or secrets. Keep OUT_DIR outside the uploaded reports/.
set -euo pipefail

out=${1:?usage: examples/ci/vm-inventory.sh OUT_DIR}
for var in PBSH_HOSTS_FILE PBSH_KNOWN_HOSTS_FILE PBSH_SSH_KEY_FILE PBSH_SSH_USER; do
  if [ -z "${!var:-}" ]; then
    echo "vm-inventory: $var is not set; see examples/ci/README.md for the secrets this job needs" >&2
    exit 2
  fi
done
for var in PBSH_HOSTS_FILE PBSH_KNOWN_HOSTS_FILE PBSH_SSH_KEY_FILE; do
  if [ ! -s "${!var}" ]; then
    echo "vm-inventory: $var names ${!var}, which is missing or empty" >&2
    exit 2
  fi
done
base=${PBSH_INVENTORY_BASE:-inventory/cloud.example}
inventory_bin=${ANSIBLE_INVENTORY_BIN:-.venv/bin/ansible-inventory}

umask 077
rm -rf "$out"
mkdir -p "$out/inventory"
abs=$(cd "$out" && pwd)
inv="$abs/inventory"
cp -rL "$base/group_vars" "$inv/"  # -L: a base may share files through symlinks (examples/six-vms)
# The copies live in another folder: {{ inventory_dir }} in them (e.g. openpbs_hooks_src_dir, the hook sources
# found from inventory/cloud.example/../../hooks) would name OUT_DIR. Make it the base's absolute path.
base_abs=$(cd "$base" && pwd)
python3 - "$inv/group_vars" "$base_abs" <<'PY'
import pathlib, re, sys
folder, base = pathlib.Path(sys.argv[1]), sys.argv[2]
for path in folder.rglob("*.y*ml"):
    text = path.read_text()
    fixed = re.sub(r"\{\{\s*inventory_dir\s*\}\}", lambda _: base, text)
    if fixed != text:
        path.write_text(fixed)
PY
cp "$PBSH_HOSTS_FILE" "$inv/hosts.yml"
cp "$PBSH_KNOWN_HOSTS_FILE" "$abs/known_hosts"
cp "$PBSH_SSH_KEY_FILE" "$abs/ssh_key"
chmod 600 "$abs/ssh_key"

# group_vars files win over variables written in hosts.yml, so this file decides how hosts are reached.
cat >"$inv/group_vars/all/connection.yml" <<YAML
---
# Written by examples/ci/vm-inventory.sh: login user, key and pinned host keys from the CI's secrets.
ansible_user: "${PBSH_SSH_USER}"
ansible_become: true
ansible_python_interpreter: /usr/bin/python3
ansible_ssh_private_key_file: "${abs}/ssh_key"
ansible_ssh_common_args: >-
  -o StrictHostKeyChecking=yes
  -o UserKnownHostsFile=${abs}/known_hosts
  -o IdentitiesOnly=yes
  -o ControlMaster=auto -o ControlPersist=120s -o ConnectTimeout=10
YAML

# One line per host: name, the known_hosts lookup key ([address]:port unless port 22), and whether
# its own variables turn host-key checking off.
listing=$("$inventory_bin" -i "$inv" --list)
hosts=$(python3 -c '
import json, re, sys
data = json.loads(sys.stdin.read())
for name, hv in sorted(data.get("_meta", {}).get("hostvars", {}).items()):
    addr, port = str(hv.get("ansible_host", name)), int(hv.get("ansible_port", 22))
    key = addr if port == 22 else f"[{addr}]:{port}"
    args = " ".join(str(hv.get(v, "")) for v in ("ansible_ssh_common_args", "ansible_ssh_extra_args", "ansible_ssh_args"))
    m = re.findall(r"StrictHostKeyChecking[= ]+(\S+)", args, flags=re.I)
    weak = any(v.lower() != "yes" for v in m) or str(hv.get("ansible_host_key_checking", "true")).lower() in ("false", "no", "0")
    print(name, key, "weak" if weak else "strict")
' <<<"$listing")

if [ -z "$hosts" ]; then
  echo "vm-inventory: $PBSH_HOSTS_FILE lists no hosts (expected the groups pbs_server, pbs_moms, pbs_clients)" >&2
  exit 2
fi
unpinned=() weak=()
while read -r name key checking; do
  ssh-keygen -F "$key" -f "$abs/known_hosts" >/dev/null || unpinned+=("$name")
  [ "$checking" = strict ] || weak+=("$name")
done <<<"$hosts"
if [ ${#weak[@]} -gt 0 ]; then
  echo "vm-inventory: host-key checking is turned off for ${weak[*]} in hosts.yml; remove StrictHostKeyChecking" \
    "and ansible_host_key_checking from it: the host keys are pinned through PBSH_KNOWN_HOSTS_FILE" >&2
  exit 2
fi
if [ ${#unpinned[@]} -gt 0 ]; then
  echo "vm-inventory: no host key pinned for ${unpinned[*]}: add their keys to the known_hosts secret" \
    "(from a trusted source: the provider's console or cloud-init's printed fingerprints)" >&2
  exit 2
fi
echo "vm-inventory: inventory $inv with $(wc -l <<<"$hosts") hosts ($(cut -d' ' -f1 <<<"$hosts" | paste -sd' ')), host keys pinned"
