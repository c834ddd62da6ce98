#!/usr/bin/env bash
# Short-lived AWS credentials for a CI job, without a stored secret: on GitHub Actions (permissions: id-token:
# write) the job's OIDC token is written to a file and the AWS SDK trades it for the role AWS_ROLE_ARN's
# credentials itself (AssumeRoleWithWebIdentity: AWS_WEB_IDENTITY_TOKEN_FILE + AWS_ROLE_ARN, passed on to the
# job's next steps through $GITHUB_ENV); on GitLab (id_tokens: AWS_ID_TOKEN) the same, through a file that
# cloud-acceptance.sh and cloud-sweep.sh read ($PBS_HARNESS_CLOUD_DIR.env). Elsewhere (.ci/run against moto, a developer's shell) it only checks
# that credentials are in the environment. Never prints a token or a key.
set -euo pipefail
if [ -n "${ACTIONS_ID_TOKEN_REQUEST_URL:-}" ]; then
  : "${AWS_ROLE_ARN:?set the repository variable PBSH_AWS_ROLE_ARN to the role the job assumes}"
  token_file=${RUNNER_TEMP:-/tmp}/aws-web-identity-token
  curl -fsS -H "Authorization: bearer $ACTIONS_ID_TOKEN_REQUEST_TOKEN" \
    "$ACTIONS_ID_TOKEN_REQUEST_URL&audience=sts.amazonaws.com" |
    python3 -c 'import json, sys; sys.stdout.write(json.load(sys.stdin)["value"])' > "$token_file"
  chmod 600 "$token_file"
  {
    echo "AWS_WEB_IDENTITY_TOKEN_FILE=$token_file"
    echo "AWS_ROLE_ARN=$AWS_ROLE_ARN"
    echo "AWS_ROLE_SESSION_NAME=pbs-harness-${GITHUB_RUN_ID:-ci}"
  } >> "${GITHUB_ENV:?}"
  echo "cloud-credentials: OIDC token written; the AWS SDK assumes $AWS_ROLE_ARN with it"
elif [ -n "${AWS_ID_TOKEN:-}" ]; then
  # GitLab (id_tokens: AWS_ID_TOKEN): the token is in the job's environment. after_script runs in a shell of
  # its own, so the token file and the role go to a file that the next scripts read (cloud-env.sh).
  : "${AWS_ROLE_ARN:?set the CI/CD variable AWS_ROLE_ARN to the role the job assumes}"
  token_file=${CI_BUILDS_DIR:-/tmp}/aws-web-identity-token
  printf '%s' "$AWS_ID_TOKEN" > "$token_file"
  chmod 600 "$token_file"
  echo "cloud-credentials: GitLab OIDC token written; the AWS SDK assumes $AWS_ROLE_ARN with it"
  echo "export AWS_WEB_IDENTITY_TOKEN_FILE=$token_file AWS_ROLE_SESSION_NAME=pbs-harness-${CI_JOB_ID:-ci}" \
    > "${PBS_HARNESS_CLOUD_DIR:-/tmp}.env"
elif [ -n "${AWS_ACCESS_KEY_ID:-}${AWS_PROFILE:-}${AWS_WEB_IDENTITY_TOKEN_FILE:-}" ]; then
  echo "cloud-credentials: not on GitHub Actions: using the credentials already in the environment"
else
  echo "cloud-credentials: no AWS credentials (not on GitHub Actions, and no AWS_ACCESS_KEY_ID, AWS_PROFILE)" >&2
  exit 3
fi
