#!/usr/bin/env bash
# The CI recipes' scheduled sweep: remove this repository's cloud runs that expired, or are older than
# PBSH_SWEEP_OLDER_THAN (default 3h), whatever job left them (pbs-harness sweep; docs/cloud.md#sweep).
# Only resources tagged with the owner PBSH_CLOUD_OWNER (default: user@machine) are looked at.
set -euo pipefail
cd "$(dirname "$0")/../.."
harness=${HARNESS:-.venv/bin/pbs-harness}
# GitLab: the web identity written by cloud-credentials.sh (a script of its own shell).
cloud_env=${PBS_HARNESS_CLOUD_DIR:-/tmp}.env
# shellcheck disable=SC1090 # written by cloud-credentials.sh
if [ -r "$cloud_env" ]; then . "$cloud_env"; fi
: "${AWS_REGION:?set AWS_REGION to the region to sweep}"
args=(sweep --cloud "${PBSH_CLOUD:-aws}" --region "$AWS_REGION" --older-than "${PBSH_SWEEP_OLDER_THAN:-3h}")
[ -z "${PBSH_CLOUD_OWNER:-}" ] || args+=(--owner "$PBSH_CLOUD_OWNER")
[ -z "${SWEEP_DRY_RUN:-}" ] || args+=(--dry-run)
"$harness" "${args[@]}"
