#!/usr/bin/env bash
# The acceptance job: `make acceptance` on local clusters of CI's own, always taken down, and never green
# having tested nothing. Run as root from the checkout, after `make venv`.
#
#   scripts/ci/acceptance.sh        the job
#   scripts/ci/acceptance.sh down   take CI's clusters down (a cancelled job's cleanup step)
#
# Environment (all optional):
#   PYTEST_ARGS      arguments for pytest, e.g. "-m smoke" (empty: every suite)
#   CLUSTERS         local clusters side by side (default auto: from the machine's cores and memory)
#   FLAVOUR, OPENPBS, IMAGE  passed to make as they are (the host flavour, its OpenPBS and distribution;
#                    empty: the Makefile's default, system hosts installing OpenPBS from packages)
#   CI_NAME_PREFIX   host names PREFIX01.. (default ci<4 hex of the checkout path>)
#   CI_SUBNET        the first cluster's /24 (default auto: the first free 10.X.0.0/24)
#   PBS_HARNESS_STATE_DIR  state directory of the first cluster (default /var/lib/pbs-harness/ci-<4 hex>)
#   CI_VM_JOB_CHECK  1 (default): before the clusters go, run scripts/ci/vm-cluster.sh against the first one
#                    through the inventory it wrote (deploy + -m smoke), as the VM-cluster job would; 0: skip
# A cluster another checkout left up is neither tested nor touched: names, subnet and state directory are
# this checkout's own.
set -euo pipefail
cd "$(dirname "$0")/../.."

tag=$(printf %s "$PWD" | sha256sum | cut -c1-4)
prefix=${CI_NAME_PREFIX:-ci$tag}
subnet=${CI_SUBNET:-auto}
export PBS_HARNESS_STATE_DIR=${PBS_HARNESS_STATE_DIR:-/var/lib/pbs-harness/ci-$tag}
harness=.venv/bin/pbs-harness
if [ "${1:-}" = down ]; then
  exec "$harness" down
fi
make_args=(CLUSTERS="${CLUSTERS:-auto}" UP_ARGS="--name-prefix $prefix --subnet $subnet" PYTEST_ARGS="${PYTEST_ARGS:-}")
[ -z "${FLAVOUR:-}" ] || make_args+=(FLAVOUR="$FLAVOUR")
[ -z "${OPENPBS:-}" ] || make_args+=(OPENPBS="$OPENPBS")
[ -z "${IMAGE:-}" ] || make_args+=(IMAGE="$IMAGE")

foreign=$(.venv/bin/python -c 'from pbs_harness.localcluster import registry; print(len(registry.others()))')
[ "$foreign" = 0 ] || echo "acceptance: $foreign other local cluster(s) on this machine are left alone (pbs-harness status)"
echo "acceptance: local clusters $prefix.. ($PBS_HARNESS_STATE_DIR): make acceptance ${make_args[*]}"
rm -f reports/junit.xml
rc=0
# make's output is kept too: when the job fails, its last lines say why, after the teardown's lines (CI
# keeps only a log's tail). pipefail: the pipeline's status is make's.
output=$(mktemp)
trap '"$harness" down || true; rm -f "$output"' EXIT
make acceptance "${make_args[@]}" 2>&1 | tee "$output" || rc=$?
if [ "${CI_VM_JOB_CHECK:-1}" = 1 ] && [ -f "$PBS_HARNESS_STATE_DIR/inventory/hosts.yml" ]; then
  # The VM-cluster job's script, for real: the first cluster as if it were VMs (its written inventory, key
  # and pinned host keys as the job's secrets). Its reports go to reports/vm-job/; the acceptance run's
  # stay where they are.
  echo "acceptance: the VM-cluster job's scripts against $prefix.. (deploy, then -m smoke)"
  kept=(junit.xml acceptance.html results.json conformance.html conformance.md conformance.json)
  rm -rf reports/.acceptance reports/vm-job
  mkdir -p reports/.acceptance reports/vm-job
  for f in "${kept[@]}"; do [ ! -e "reports/$f" ] || cp -p "reports/$f" reports/.acceptance/; done
  inv=$PBS_HARNESS_STATE_DIR/inventory
  key=$(.venv/bin/python -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["all"]["vars"]["ansible_ssh_private_key_file"])' "$inv/hosts.yml")
  vm_rc=0
  PBSH_HOSTS_FILE=$inv/hosts.yml PBSH_KNOWN_HOSTS_FILE=$inv/.ssh/known_hosts PBSH_SSH_KEY_FILE=$key \
    PBSH_SSH_USER=root PBSH_INVENTORY_BASE=$inv PBSH_DEPLOY=true PBSH_WORK=$PBS_HARNESS_STATE_DIR/vm-job \
    PYTEST_ARGS="-m smoke" scripts/ci/vm-cluster.sh || vm_rc=$?
  for f in "${kept[@]}"; do
    [ ! -e "reports/$f" ] || mv "reports/$f" reports/vm-job/
    [ ! -e "reports/.acceptance/$f" ] || mv "reports/.acceptance/$f" reports/
  done
  rmdir reports/.acceptance
  [ "$vm_rc" = 0 ] || { echo "acceptance: the VM-cluster job's scripts failed (exit $vm_rc)"; [ "$rc" != 0 ] || rc=$vm_rc; }
fi
"$harness" down
trap 'rm -f "$output"' EXIT
# Never green having tested nothing: OpenPBS is here, so acceptance tests must have run.
if ! .venv/bin/python .ci/summary.py --require-run reports/junit.xml; then
  [ "$rc" != 0 ] || rc=1
fi
if [ "$rc" != 0 ]; then
  echo "acceptance: why it failed (exit $rc; the lines of make acceptance that say so, the failed tests):"
  .venv/bin/python .ci/summary.py --why "$output" reports/junit.xml
fi
exit "$rc"
