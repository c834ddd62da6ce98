#!/usr/bin/env bash
# `make test` in a fresh clone, as on a fresh Debian 12 without tini, sshd and iptables: the README's
# test command must pass there (issue #23, "Done when").
#
#   bench/fresh_clone_test.sh [--runs N] [--busy] [REF]
#
# Clones this repository at REF (default: this checkout's HEAD commit) into a new folder under
# ${TMPDIR:-/tmp}, then runs `make test` (which makes the clone's own .venv) in a mount namespace of
# its own in which tini, sshd and iptables (and iptables' variants) do not exist: an overlay on their
# folders removes their names, so neither `command -v`, `[ -x ]` nor `shutil.which` finds them. Nothing
# outside that namespace changes. --runs N: N fresh clones in a row, each run whole; --busy: two
# processes keep both cores busy meanwhile (the load of other work beside it). Prints each run's
# pytest summary lines and wall time, and exits 1 when any run failed. Root (mount namespaces).
set -euo pipefail

runs=1 busy=0 ref=
while [ $# -gt 0 ]; do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --busy) busy=1; shift ;;
    -*) echo "usage: bench/fresh_clone_test.sh [--runs N] [--busy] [REF]" >&2; exit 2 ;;
    *) ref=$1; shift ;;
  esac
done
repo=$(cd "$(dirname "$0")/.." && pwd)
ref=${ref:-$(git -C "$repo" rev-parse HEAD)}
[ "$(id -u)" = 0 ] || { echo "fresh-clone: needs root (a mount namespace)" >&2; exit 3; }

# name-in-its-folder of each program to hide, wherever PATH could find it (/bin and /sbin only where they
# are folders of their own, not the links of a merged /usr)
hidden=()
for prog in tini sshd iptables iptables-legacy iptables-nft ip6tables ip6tables-legacy ip6tables-nft; do
  for dir in /usr/bin /usr/sbin /bin /sbin /usr/local/bin /usr/local/sbin; do
    [ -L "$dir" ] && continue
    { [ -e "$dir/$prog" ] || [ -L "$dir/$prog" ]; } && hidden+=("$dir/$prog")
  done
done
echo "fresh-clone: $ref, $runs run(s)$([ "$busy" = 1 ] && echo ', both cores busy'); hidden: ${hidden[*]:-nothing}"

burners=()
# shellcheck disable=SC2329 # called by the EXIT trap
stop_burners() {
  for pid in "${burners[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${burners[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap stop_burners EXIT
if [ "$busy" = 1 ]; then
  for _ in 1 2; do
    python3 -c 'while True: pass' &
    burners+=($!)
  done
fi

# The namespace's script: an overlay on each folder that holds a hidden program, in which a whiteout
# removes that name (the files themselves are untouched; the overlays end with the namespace); show
# that they are gone, then run make test in the clone.
# shellcheck disable=SC2016 # expanded by the inner bash
inner='
set -e
scratch=$(mktemp -d ../hidden.XXXXXX)  # beside the clone: removed with it
mount -t tmpfs pbsh-hidden "$scratch"
for path in "$@"; do
  dir=$(dirname "$path")
  mkdir -p "$scratch/$dir/upper" "$scratch/$dir/work"
  mknod "$scratch/$dir/upper/$(basename "$path")" c 0 0
done
for dir in $(printf "%s\n" "$@" | xargs -n1 dirname | sort -u); do
  mount -t overlay pbsh-hidden -o "lowerdir=$dir,upperdir=$scratch/$dir/upper,workdir=$scratch/$dir/work" "$dir"
done
for prog in tini sshd iptables; do
  if command -v "$prog" >/dev/null || [ -e "/usr/sbin/$prog" ]; then echo "fresh-clone: $prog is still there" >&2; exit 3; fi
done
echo "fresh-clone: tini, sshd and iptables are not found here"
exec make test
'
failed=0
for n in $(seq 1 "$runs"); do
  clone=$(mktemp -d "${TMPDIR:-/tmp}/pbsh-fresh-clone.XXXXXX")
  git clone -q --no-checkout "$repo" "$clone/pbs-harness"
  git -C "$clone/pbs-harness" checkout -q --detach "$ref"
  log=$clone/make-test.log
  start=$SECONDS
  rc=0
  (cd "$clone/pbs-harness" && unshare --mount --propagation private bash -c "$inner" bash "${hidden[@]}") >"$log" 2>&1 || rc=$?
  summary=$(grep -E '^[0-9]+ (passed|failed)|[0-9]+ (passed|failed).* in [0-9.]+s' "$log" | tr '\n' ' ')
  echo "fresh-clone: run $n: exit $rc in $((SECONDS - start))s: ${summary:-no pytest summary} (log: $log)"
  if [ "$rc" = 0 ]; then
    rm -rf "$clone/pbs-harness" "$clone"/hidden.*  # keep the log only
  else
    failed=1
    tail -n 30 "$log"
  fi
done
exit "$failed"
