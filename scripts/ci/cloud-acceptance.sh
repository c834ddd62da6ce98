#!/usr/bin/env bash
# Acceptance on cloud VMs, as the CI recipes' cloud job runs it (examples/ci/github-actions.yml, aws-cluster):
# create the run's VMs (pbs-harness up --cloud: deploy and verify included), run the suites, and ALWAYS remove
# the run (EXIT trap), unless KEEP_ON_FAILURE=1 and something failed: then it prints how to remove it later.
#   cloud-acceptance.sh        the whole run
#   cloud-acceptance.sh down   remove the run an earlier call recorded (the job's always-step after a cancel)
# The run id is chosen and written to $PBS_HARNESS_CLOUD_DIR/current-run before anything is created.
# At an endpoint that is not AWS's (AWS_ENDPOINT_URL set: moto under .ci/run) the run stops after provisioning
# (--provision-only): the addresses a stand-in hands out are fake and nothing connects to them, so the deploy
# and the suites are skipped, and this says so.
# Environment: AWS_REGION (required), PBSH_CLOUD (aws), PBSH_CLOUD_HOSTS (4), PBSH_CLOUD_TTL (2h),
# PBSH_CLOUD_TYPE, PBSH_CLOUD_IMAGE, PBSH_CLOUD_OWNER (the owner tag; CI: one for the repository, so that the
# sweep job finds every job's runs), PBSH_SSH_FROM (CIDR for port 22), PYTEST_ARGS, KEEP_ON_FAILURE.
set -euo pipefail
cd "$(dirname "$0")/../.."
harness=${HARNESS:-.venv/bin/pbs-harness}
# GitLab: the web identity written by cloud-credentials.sh (a script of its own shell).
cloud_env=${PBS_HARNESS_CLOUD_DIR:-/tmp}.env
# shellcheck disable=SC1090 # written by cloud-credentials.sh
if [ -r "$cloud_env" ]; then . "$cloud_env"; fi
export PBS_HARNESS_CLOUD_DIR=${PBS_HARNESS_CLOUD_DIR:-${TMPDIR:-/tmp}/pbsh-cloud}  # never under reports/: it holds keys
mkdir -p "$PBS_HARNESS_CLOUD_DIR"
run_file=$PBS_HARNESS_CLOUD_DIR/current-run

remove_run() {
  if [ -s "$run_file" ]; then
    "$harness" down --run "$(cat "$run_file")"
    rm -f "$run_file"
  else
    echo "cloud-acceptance: no run recorded in $run_file: nothing to remove"
  fi
}

if [ "${1:-}" = down ]; then
  remove_run
  exit 0
fi
: "${AWS_REGION:?set AWS_REGION to the region of the run}"

run="${PBSH_CLOUD_PREFIX:-ci}-$(date -u +%Y%m%d-%H%M%S)-$(od -An -N2 -tx2 /dev/urandom | tr -d ' ')"
echo "$run" > "$run_file"

# shellcheck disable=SC2329 # called by the EXIT trap
finish() {
  local rc=$?
  if [ "$rc" != 0 ] && [ "${KEEP_ON_FAILURE:-0}" = 1 ]; then
    echo "cloud-acceptance: failed (exit $rc); run $run kept (KEEP_ON_FAILURE=1). Remove it with:"
    echo "  PBS_HARNESS_CLOUD_DIR=$PBS_HARNESS_CLOUD_DIR $harness down --run $run"
  else
    remove_run || rc=$?
  fi
  exit "$rc"
}
trap finish EXIT

up=(up --cloud "${PBSH_CLOUD:-aws}" --region "$AWS_REGION" --run-id "$run" --hosts "${PBSH_CLOUD_HOSTS:-4}"
  --ttl "${PBSH_CLOUD_TTL:-2h}")
[ -z "${PBSH_CLOUD_TYPE:-}" ] || up+=(--instance-type "$PBSH_CLOUD_TYPE")
[ -z "${PBSH_CLOUD_IMAGE:-}" ] || up+=(--image "$PBSH_CLOUD_IMAGE")
[ -z "${PBSH_CLOUD_OWNER:-}" ] || up+=(--owner "$PBSH_CLOUD_OWNER")
[ -z "${PBSH_SSH_FROM:-}" ] || up+=(--ssh-from "$PBSH_SSH_FROM")
[ "${KEEP_ON_FAILURE:-0}" != 1 ] || up+=(--keep-on-failure)
stand_in=0
if [ -n "${AWS_ENDPOINT_URL:-}${AWS_ENDPOINT_URL_EC2:-}" ]; then
  stand_in=1
  up+=(--provision-only)
fi

"$harness" "${up[@]}"
if [ "$stand_in" = 1 ]; then
  echo "cloud-acceptance: stand-in endpoint ${AWS_ENDPOINT_URL:-$AWS_ENDPOINT_URL_EC2}: provisioned only; deploy and" \
    "suites skipped (its addresses are fake: nothing connects to them)"
  exit 0
fi
# shellcheck disable=SC2086 # PYTEST_ARGS is a list of pytest arguments
"$harness" test -i "$PBS_HARNESS_CLOUD_DIR/$run/inventory" ${PYTEST_ARGS:-}
