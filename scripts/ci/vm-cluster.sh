#!/usr/bin/env bash
# The VM-cluster job: the suites against an existing cluster of VMs, reached with secrets only the job
# sees. Run from the checkout after `make venv`; it needs no root.
#
#   scripts/ci/vm-cluster.sh
#
# Secrets, each as a file (GitLab File variables) or as its content (GitHub secrets):
#   PBSH_HOSTS_FILE or PBSH_HOSTS_YML             hosts.yml (inventory/cloud.example's layout)
#   PBSH_KNOWN_HOSTS_FILE or PBSH_KNOWN_HOSTS     known_hosts lines of every host, from a trusted source
#   PBSH_SSH_KEY_FILE or PBSH_SSH_KEY             the login user's private key
#   PBSH_SSH_USER                                 the login user (passwordless sudo on the VMs)
# Optional: PBSH_INVENTORY_BASE (group_vars to use, default inventory/cloud.example), PBSH_DEPLOY=true
# (deploy OpenPBS first), PYTEST_ARGS (e.g. "-m 'ramp_down and not destructive'": split into words as a
# shell splits them, and judged as `pbs-harness test` judges it before anything else), PBSH_WORK (where the
# key and inventory live while the job runs, outside the checkout; removed at the end).
# On failure the PBS logs of every VM go to reports/logs/.
set -euo pipefail
cd "$(dirname "$0")/../.."

work=${PBSH_WORK:-${RUNNER_TEMP:-/tmp}/pbsh-vm-cluster}
harness=.venv/bin/pbs-harness
# shellcheck disable=SC1091 # checked on its own (tests/unit/test_ci_recipes.py)
. scripts/ci/pytest-args.sh
pytest_args_words vm-cluster
# The pytest line judged before any secret is written or any host contacted (the deploy comes first): a -m
# marker no suite registers, an unknown option, a missing path exit 2 here, not after a deploy.
"$harness" test --judge-only -q -rs "${PYTEST_ARGS_WORDS[@]}"
umask 077
secrets=$(mktemp -d)
trap 'rm -rf "$secrets" "$work"' EXIT

# A secret given as content is written to a file of the secrets folder (never echoed).
as_file() {
  local file_var=$1 content_var=$2 name=$3
  if [ -z "${!file_var:-}" ] && [ -n "${!content_var:-}" ]; then
    printf '%s\n' "${!content_var}" >"$secrets/$name"
    export "$file_var=$secrets/$name"
  fi
}
as_file PBSH_HOSTS_FILE PBSH_HOSTS_YML hosts.yml
as_file PBSH_KNOWN_HOSTS_FILE PBSH_KNOWN_HOSTS known_hosts
as_file PBSH_SSH_KEY_FILE PBSH_SSH_KEY ssh_key

examples/ci/vm-inventory.sh "$work"
rm -rf "$secrets"
inventory=$work/inventory
rc=0
if [ "${PBSH_DEPLOY:-false}" = true ]; then
  "$harness" deploy -i "$inventory" || rc=$?
fi
if [ "$rc" = 0 ]; then
  "$harness" test -i "$inventory" -q -rs "${PYTEST_ARGS_WORDS[@]}" || rc=$?
fi
if [ "$rc" != 0 ]; then
  echo "vm-cluster: failed (exit $rc): collecting the PBS logs of every VM into reports/logs/"
  .venv/bin/ansible-playbook -i "$inventory" playbooks/collect_logs.yml -e collect_logs_days=1 || true
fi
exit "$rc"
