"""Job script bodies shared by the suites, in one place. Each takes the PBS prefix."""

from __future__ import annotations

from pbs_harness.pbs.evidence.pick import MissingEvidence


def nodefile_and_pbsdsh(prefix: str) -> str:
    """Print the job's distinct hosts from $PBS_NODEFILE, then `hostname` run by pbsdsh on each chunk."""
    return f"""#!/bin/bash
echo "== nodefile"
sort -u "$PBS_NODEFILE"
echo "== pbsdsh"
{prefix}/bin/pbsdsh -- /bin/hostname
echo "== end"
"""


def section(output: str, name: str) -> list[str]:
    """Lines of one `== name` section of a job's output (up to the next `== ` line); fails naming
    the section when the output has none or it never ends."""
    __tracebackhide__ = True
    lines = output.splitlines()
    if f"== {name}" not in lines:
        raise MissingEvidence(f"expected a '== {name}' section in the job's output, found: {output[-2000:]!r}")
    start = lines.index(f"== {name}") + 1
    ends = [i for i in range(start, len(lines)) if lines[i].startswith("== ")]
    if not ends:
        raise MissingEvidence(
            f"expected the job's '== {name}' section to end with a '== ' line, found: {output[-2000:]!r}"
        )
    return [line.strip() for line in lines[start : ends[0]] if line.strip()]


def sleep_on_every_chunk(prefix: str, seconds: int) -> str:
    """Start `sleep SECONDS` as a task on every chunk (pbsdsh) and on the primary: each host of the
    job then runs a process that is visible with ps and must die when that host is released."""
    return f"""#!/bin/bash
{prefix}/bin/pbsdsh -- /bin/sleep {seconds} &
/bin/sleep {seconds}
"""


def sleep_on_every_chunk_and_burn_on(prefix: str, host: str, burn_seconds: int, seconds: int) -> str:
    """sleep_on_every_chunk, plus one more task on `host` (pbs_tmrsh HOST: a task spawned through the task
    manager, as pbsdsh's -h would, which OpenPBS 23.06.06 does not have) that keeps a cpu busy until it
    has used BURN_SECONDS of cpu time (its own utime + stime from /proc/$$/stat, read with bash's `read`:
    no process is started), then sleeps in the same process: the job's cpu time comes from that host
    alone, whatever else the machine runs, and stays visible to its mom's samples (a process that ended
    takes its cput along)."""
    if not host.replace("-", "").replace(".", "").isalnum():
        raise ValueError(f"host must be a plain host name, not {host!r}")
    ticks = burn_seconds * 100  # USER_HZ
    burn = (
        "while :; do for ((i = 0; i < 100000; i++)); do :; done; read -r -a st < /proc/$$/stat; "
        f"[ $((st[13] + st[14])) -ge {ticks} ] && break; done; exec /bin/sleep {seconds}"
    )
    return f"""#!/bin/bash
{prefix}/bin/pbsdsh -- /bin/sleep {seconds} &
{prefix}/bin/pbs_tmrsh {host} /bin/bash -c '{burn}' &
/bin/sleep {seconds}
"""


def sleepers_recording_pids(prefix: str, pid_file: str, seconds: int) -> str:
    """Start `sleep SECONDS` as a task on every chunk (pbsdsh) and once from the job script itself;
    each sleep appends "<host> <pid> <task|script>" to pid_file on the host it runs on (read back
    with JobKit.read, which merges the hosts' copies where homes are not shared), so a test can look
    at exactly those processes on their hosts (ps state T when suspended)."""
    if not pid_file.startswith("/") or any(c in pid_file for c in " '\"$`\\"):
        raise ValueError(f"pid_file must be a plain absolute path, not {pid_file!r}")
    record = f'echo "$(hostname) $$ {{origin}}" >> {pid_file}; exec /bin/sleep {seconds}'
    return f"""#!/bin/bash
{prefix}/bin/pbsdsh -- /bin/bash -c '{record.format(origin="task")}' &
/bin/bash -c '{record.format(origin="script")}' &
wait
"""


def pid_records(text: str) -> list[tuple[str, int, str]]:
    """(host, pid, origin) of every line sleepers_recording_pids wrote."""
    out = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1].isdigit():
            out.append((parts[0], int(parts[1]), parts[2]))
    return out


def pruned_job_report(prefix: str, report: str, indexes: int, hosts: list[str], seconds: int) -> str:
    """Write what a (pruned) job can reach into `report` (on the job's primary host), then sleep SECONDS:
    `== nodefile` ($PBS_NODEFILE as is); `== pbsdsh` ("<i> rc=<rc> <stderr>" of `pbsdsh -n i` for i in
    0..indexes-1); `== tmrsh` ("<host> rc=<rc> <stderr>" of `pbs_tmrsh <host>` for every given host); `== end`.
    Each task that really ran appends "pbsdsh-<i> <hostname>" / "tmrsh-<host> <hostname>" to
    `report`.tasks on the host it ran on (a task's own output goes to the job's output file, delivered
    only when the job ends): read them with JobKit.read, which merges the hosts' copies."""
    if not report.startswith("/") or any(c in report for c in " '\"$`\\"):
        raise ValueError(f"report must be a plain absolute path, not {report!r}")
    task = f"/bin/bash -c 'echo \"$1 $(hostname)\" >> {report}.tasks' task"  # the whole task: argv only
    return f"""#!/bin/bash
exec > {report} 2>&1
echo "== nodefile"
cat "$PBS_NODEFILE"
echo "== pbsdsh"
for i in $(seq 0 {indexes - 1}); do
    out=$({prefix}/bin/pbsdsh -n "$i" -- {task} "pbsdsh-$i" 2>&1); rc=$?; echo "$i rc=$rc" $out
done
echo "== tmrsh"
for h in {" ".join(hosts)}; do
    out=$(timeout 20 {prefix}/bin/pbs_tmrsh "$h" {task} "tmrsh-$h" 2>&1); rc=$?; echo "$h rc=$rc" $out
done
echo "== end"
exec /bin/sleep {seconds}
"""


def release_nodes_from_inside(prefix: str, release_args: str, out_file: str, seconds: int) -> str:
    """Start `sleep SECONDS` on every chunk (pbsdsh), then run `pbs_release_nodes RELEASE_ARGS`
    without -j (so $PBS_JOBID names the job) until it succeeds, writing to out_file the job's hosts
    from $PBS_NODEFILE before and after ("before: h1 h2", "after: h1") and "released" once done.
    The release is retried because the server refuses it until it has the job running (substate 42)."""
    if not out_file.startswith("/") or any(c in out_file for c in " '\"$`\\"):
        raise ValueError(f"out_file must be a plain absolute path, not {out_file!r}")
    return f"""#!/bin/bash
{prefix}/bin/pbsdsh -- /bin/sleep {seconds} &
echo "before: $(sort -u "$PBS_NODEFILE" | xargs)" >> {out_file}
for attempt in $(seq 30); do
    if {prefix}/bin/pbs_release_nodes {release_args} 2>> {out_file}; then
        echo "released" >> {out_file}
        break
    fi
    sleep 1
done
echo "after: $(sort -u "$PBS_NODEFILE" | xargs)" >> {out_file}
exec /bin/sleep {seconds}
"""
