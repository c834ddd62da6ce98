#!/usr/bin/env bash
# Acceptance on cloud VMs, as the CI recipes' cloud job runs it (examples/ci/github-actions.yml, aws-cluster):
# `pbs-harness test --cloud` creates the run's VMs, deploys and verifies, runs the suites and ALWAYS removes the
# run (and the EXIT trap again), unless KEEP_ON_FAILURE=1 and something failed: then it prints how to remove it.
#   cloud-acceptance.sh        the whole run
#   cloud-acceptance.sh down   remove the run an earlier call recorded (the job's always-step after a cancel)
# The run id is chosen and written to $PBS_HARNESS_CLOUD_DIR/current-run before anything is created.
# At an endpoint that is not AWS's (AWS_ENDPOINT_URL set: moto under .ci/run) `test --cloud` must be refused
# before any API call, and the run stops after provisioning (up --provision-only): the addresses a stand-in
# hands out are fake and nothing connects to them, so the deploy and the suites are skipped, and this says so.
# Environment: AWS_REGION (required), PBSH_CLOUD (aws), PBSH_CLOUD_HOSTS (4), PBSH_CLOUD_TTL (2h),
# PBSH_CLOUD_TYPE, PBSH_CLOUD_IMAGE, PBSH_CLOUD_OWNER (the owner tag; CI: one for the repository, so that the
# sweep job finds every job's runs), PBSH_SSH_FROM (CIDR for port 22), PYTEST_ARGS (split into words as a shell
# splits them: "-m 'ramp_down and not destructive'" is two), KEEP_ON_FAILURE.
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
# shellcheck disable=SC1091 # checked on its own (tests/unit/test_ci_recipes.py)
. scripts/ci/pytest-args.sh
pytest_args_words cloud-acceptance  # before the run id is chosen: a quote left open creates nothing

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

opts=(--cloud "${PBSH_CLOUD:-aws}" --region "$AWS_REGION" --run-id "$run" --hosts "${PBSH_CLOUD_HOSTS:-4}"
  --ttl "${PBSH_CLOUD_TTL:-2h}")
[ -z "${PBSH_CLOUD_TYPE:-}" ] || opts+=(--instance-type "$PBSH_CLOUD_TYPE")
[ -z "${PBSH_CLOUD_IMAGE:-}" ] || opts+=(--image "$PBSH_CLOUD_IMAGE")
[ -z "${PBSH_CLOUD_OWNER:-}" ] || opts+=(--owner "$PBSH_CLOUD_OWNER")
[ -z "${PBSH_SSH_FROM:-}" ] || opts+=(--ssh-from "$PBSH_SSH_FROM")
[ "${KEEP_ON_FAILURE:-0}" != 1 ] || opts+=(--keep-on-failure)
if [ -n "${AWS_ENDPOINT_URL:-}${AWS_ENDPOINT_URL_EC2:-}" ]; then
  # A stand-in: `test --cloud` is refused before any API call (it would deploy over SSH to fake addresses).
  refused=0
  "$harness" test "${opts[@]}" || refused=$?
  if [ "$refused" != 2 ]; then
    echo "cloud-acceptance: test --cloud at the stand-in endpoint ended with exit $refused: it must be refused (2)"
    exit 1
  fi
  "$harness" up "${opts[@]}" --provision-only
  echo "cloud-acceptance: stand-in endpoint ${AWS_ENDPOINT_URL:-$AWS_ENDPOINT_URL_EC2}: provisioned only; deploy and" \
    "suites skipped (its addresses are fake: nothing connects to them)"
  exit 0
fi
# One command: create, deploy, verify, the suites, and always remove the run (also on a failure, Ctrl-C or
# the job's SIGTERM; a SIGKILLed job's run is swept). The EXIT trap above removes it again, should this shell
# itself be stopped before `test` could. `test --cloud` judges the pytest line before any API call.
"$harness" test "${opts[@]}" "${PYTEST_ARGS_WORDS[@]}"
