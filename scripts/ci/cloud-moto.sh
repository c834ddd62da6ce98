#!/usr/bin/env bash
# The GitHub recipe's cloud jobs (examples/ci/github-actions.yml aws-cluster, then aws-sweep) against moto's EC2
# on 127.0.0.1, as .ci/run's stage "cloud (moto)": each `run:` step of the two jobs, read from the recipe itself
# (so what runs here is what the recipe says, not a copy of it), in order, the `if: always()` ones included;
# only `make venv` is left out (.ci/run made the venv). The GitLab recipe's jobs call the same scripts. The real
# playbooks and amazon.aws modules create, tag, list and remove the run; then nothing tagged may be left. moto boots nothing: the run stops after provisioning
# (cloud-acceptance.sh passes --provision-only at a stand-in endpoint) and nothing connects to the addresses
# moto hands out. Fake credentials; a state directory of its own; moto is stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/../.."
python=.venv/bin/python
port=$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$python" -m moto.server -H 127.0.0.1 -p "$port" > /dev/null 2>&1 &
moto=$!
state=$(mktemp -d)
# shellcheck disable=SC2329 # called by the EXIT trap
stop() {
  kill "$moto" 2> /dev/null || true
  wait "$moto" 2> /dev/null || true
  rm -rf "$state"
}
trap stop EXIT
for _ in $(seq 100); do
  if "$python" -c "import socket; socket.create_connection(('127.0.0.1', $port), 1)" 2> /dev/null; then break; fi
  sleep 0.3
done

export AWS_ENDPOINT_URL=http://127.0.0.1:$port AWS_REGION=eu-west-1 AWS_ACCESS_KEY_ID=moto AWS_SECRET_ACCESS_KEY=moto
export AWS_EC2_METADATA_DISABLED=true PBS_HARNESS_CLOUD_DIR=$state PBSH_CLOUD_OWNER=ci-moto@pbs-harness
export PBSH_CLOUD_HOSTS=2 PBSH_CLOUD_IMAGE=ami-12c6146b PBSH_SSH_FROM=127.0.0.1/32
unset ACTIONS_ID_TOKEN_REQUEST_URL
steps=$("$python" - << 'EOF'
import yaml

jobs = yaml.safe_load(open("examples/ci/github-actions.yml"))["jobs"]
for job in ("aws-cluster", "aws-sweep"):
    for step in jobs[job]["steps"]:
        run = step.get("run", "").strip()
        if not run or run.startswith("make venv"):
            continue
        assert "\n" not in run and "\t" not in run, f"{job}: {step['name']}: one command per step"
        print(f"{job}\t{step['name']}\t{run}")
EOF
)
ran=0
while IFS=$'\t' read -r job name run; do
  echo "cloud-moto: $job: $name: $run"
  bash -euo pipefail -c "$run" < /dev/null
  ran=$((ran + 1))
done <<< "$steps"
# aws-cluster: credentials, the run, the always-step's removal; aws-sweep: credentials, the sweep.
if [ "$ran" != 5 ]; then
  echo "cloud-moto: FAILED: ran $ran of the recipe's cloud steps, expected 5: update this script with the recipe"
  exit 1
fi
# Nothing of the owner may be left: the acceptance script removed its run, the sweep found nothing more.
left=$(.venv/bin/pbs-harness sweep --region "$AWS_REGION" --owner "$PBSH_CLOUD_OWNER" --dry-run)
echo "$left"
if ! grep -q ": 0 tagged runs" <<< "$left"; then
  echo "cloud-moto: FAILED: tagged resources left after the run and the sweep"
  exit 1
fi
echo "cloud-moto: provision, inventory, teardown and sweep against moto: nothing left"
