#!/usr/bin/env bash
# Put the moms of a running local cluster behind a jump host, as VMs behind a bastion are, and write an
# inventory that reaches them only that way (docs/local-cluster.md, "Moms behind a jump host").
#
#   bench/behind_a_jump_host.sh up STATE_DIR WRITTEN_INVENTORY OUT_DIR
#   bench/behind_a_jump_host.sh down STATE_DIR
#
# STATE_DIR is the cluster's state directory; WRITTEN_INVENTORY the inventory `pbs-harness up
# --write-inventory` wrote for it. Each mom besides the server host gets a second address, .2NN of the
# cluster's /24 (NN its number), whose SSH port forwards to its sshd, and traffic from this machine (the
# bridge's address, .1) to that address is dropped in the mom's own network namespace: the address
# answers only to the other hosts. OUT_DIR/inventory names the moms by those addresses and holds
# `-F OUT_DIR/ssh_config` in its ssh arguments: a ProxyJump through the server host for them. Ansible
# and the harness read the same file. What stays direct is the local cluster's own machinery, as a
# cloud's API would: namespaces for crash/pause/partition, and sshd's boot-time banner on the real
# address. `down` removes the addresses and the rules (`pbs-harness down` removes them with the hosts).
set -euo pipefail

mode=${1:?usage: bench/behind_a_jump_host.sh up STATE_DIR WRITTEN_INVENTORY OUT_DIR | down STATE_DIR}
state_dir=${2:?the state directory of the cluster}
# name real-address alias-address, one line per mom besides the server host; then the bridge address
read_cluster() {
  python3 - "$state_dir/state.json" <<'PY'
import ipaddress, json, sys
st = json.load(open(sys.argv[1]))
net = ipaddress.IPv4Network(st["subnet"])
base = int(net.network_address)
print(ipaddress.IPv4Address(base + 1))
for n in range(2, st["host_count"] + 1):
    print(f"{st['prefix']}{n:02d}", ipaddress.IPv4Address(base + 10 + n), ipaddress.IPv4Address(base + 200 + n))
PY
}
mapfile -t lines < <(read_cluster)
bridge=${lines[0]}
moms=("${lines[@]:1}")

rules() {  # ACTION (-A or -D) NAME REAL ALIAS
  local ns=pbsh-$2
  ip netns exec "$ns" iptables -w 5 -t nat "$1" PREROUTING -d "$4" -p tcp --dport 22 -j DNAT --to-destination "$3:22"
  ip netns exec "$ns" iptables -w 5 -t mangle "$1" PREROUTING -s "$bridge" -d "$4" -j DROP
}

if [ "$mode" = down ]; then
  for line in "${moms[@]}"; do
    read -r name real alias <<<"$line"
    rules -D "$name" "$real" "$alias" 2>/dev/null || true
    ip netns exec "pbsh-$name" ip addr del "$alias/32" dev eth0 2>/dev/null || true
  done
  echo "behind-a-jump-host: removed"
  exit 0
fi

written=${3:?the inventory pbs-harness up --write-inventory wrote}
out=${4:?the folder to write the jump-host inventory into}
rm -rf "$out"
mkdir -p "$out"
cp -r "$written" "$out/inventory"
server=$(python3 -c 'import sys, yaml; print(next(iter(yaml.safe_load(open(sys.argv[1]))["all"]["children"]["pbs_server"]["hosts"])))' "$written/hosts.yml")
server_ip=$(awk -v s="$server" -F'[ ,]' '$1 == s {print $2}' "$written/.ssh/known_hosts")
key=$(python3 -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["all"]["vars"]["ansible_ssh_private_key_file"])' "$written/hosts.yml")
known=$out/inventory/.ssh/known_hosts
aliases=()
for line in "${moms[@]}"; do
  read -r name real alias <<<"$line"
  ip netns exec "pbsh-$name" ip addr replace "$alias/32" dev eth0
  rules -D "$name" "$real" "$alias" 2>/dev/null || true
  rules -A "$name" "$real" "$alias"
  # The same host key, pinned under the address the inventory now names.
  awk -v n="$name" -v a="$alias" -F'[ ,]' '$1 == n {print a, $3, $4}' "$written/.ssh/known_hosts" >>"$known"
  aliases+=("$alias")
done
cat >"$out/ssh_config" <<EOF
# Written by bench/behind_a_jump_host.sh: the moms' addresses answer only through the server host.
Host jump-$server
  HostName $server_ip
  User root
  IdentityFile $key
  IdentitiesOnly yes
  UserKnownHostsFile $known
  StrictHostKeyChecking yes
Host ${aliases[*]}
  ProxyJump jump-$server
EOF
python3 - "$out/inventory/hosts.yml" "$out/ssh_config" "$written/.ssh/known_hosts" "$known" "${moms[@]}" <<'PY'
import sys, yaml
path, config, old_known, known = sys.argv[1:5]
moms = [m.split() for m in sys.argv[5:]]
text = open(path).read()
header = "".join(line for line in text.splitlines(True) if line.startswith("#"))
data = yaml.safe_load(text)
args = data["all"]["vars"]["ansible_ssh_common_args"].replace(old_known, known)
data["all"]["vars"]["ansible_ssh_common_args"] = f"-F {config} {args}"
for group in data["all"]["children"].values():
    for name, hv in (group.get("hosts") or {}).items():
        for mom, _real, alias in moms:
            if name == mom:
                hv["ansible_host"] = alias
note = "# Rewritten by bench/behind_a_jump_host.sh: the moms by addresses reached only through a ProxyJump.\n"
open(path, "w").write(header + note + "---\n" + yaml.safe_dump(data, sort_keys=False, width=1000))
PY
echo "behind-a-jump-host: ${#moms[@]} moms behind $server ($server_ip); inventory $out/inventory, ssh config $out/ssh_config"
