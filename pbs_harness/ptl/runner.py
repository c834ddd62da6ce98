"""One `pbs_benchpress` run on the cluster's server host, the way upstream runs PTL: as root, from
`test/tests`, `-t Class.test,...`, `-p moms=h1:h2:...`, results with `--db-type=json`.

How we run it, and why (each is an environment fix, none touches PTL's tests):
- PTL_RSH_CMD / PTL_CP_CMD (PTL's own settings, ptl_config.py) carry the cluster's ssh_config when it
  has one, so root on the server host logs in to the moms without touching any host's ~/.ssh; and an
  SSH ControlMaster, since PTL opens one ssh per remote command (hundreds per test): a multiplexed
  connection takes 0.1 s instead of 0.35 s on a loaded 2-core machine.
- PATH holds PTL's bin and OpenPBS's bin/sbin (PTL finds PBS_EXEC from /etc/pbs.conf anyway).
- pbs_benchpress runs on a pseudo-terminal (`script -qfec CMD /dev/null`), as it does when a developer
  starts it: the commands PTL runs inherit its stdin, and qmgr only prints the error of a `set node`
  of a read-only attribute when stdin is a terminal (src/cmds/qmgr.c, "bug 4941"); without one
  pbs_admin_suspend.py's test_cmd_perm met an empty error and failed with an IndexError.
- The run is detached on the host (setsid nohup) and polled, so a dropped SSH connection does not
  kill a run of an hour; Ctrl-C or the time limit kills its whole process group.
- PTL's own post-analysis data (`--post-analysis-data`, its PTLTestData plugin): for every test that
  fails, its log and a `pbs_snapshot` of the daemons' logs of the server and moms. PTL's log shows only
  what PTL asked and got; why a job was held or a mom rejected a start is in the daemons' logs, gone
  with the cluster (docs/ptl.md: the failures of the run of 29 Nov could not be decided without them).
"""

from __future__ import annotations

import base64
import hashlib
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePosixPath

from pbs_harness.ptl.selection import Group
from pbs_harness.ptl.site import PtlSite
from pbs_harness.remote.transport import RemoteHost

# PTL's per-test limit is max(600 s, the test's @timeout) (ptl_test_runner.py __get_timeout); a group
# gets that per test and a margin for setUpClass and PTL's clean-up of temporary files.
PER_TEST_LIMIT = 900
GROUP_MARGIN = 600
POLL_SECONDS = 10


@dataclass(frozen=True)
class GroupRun:
    """Where one group's files are on the server host."""

    name: str  # e.g. pbs_node_rampdown-3moms
    dir: PurePosixPath

    @property
    def script(self) -> PurePosixPath:
        return self.dir / f"{self.name}.sh"

    @property
    def json(self) -> PurePosixPath:
        return self.dir / f"{self.name}.json"

    @property
    def log(self) -> PurePosixPath:
        return self.dir / f"{self.name}.log"  # PTL's -o log

    @property
    def out(self) -> PurePosixPath:
        return self.dir / f"{self.name}.out"  # stdout/stderr of pbs_benchpress

    @property
    def post_data(self) -> PurePosixPath:
        return self.dir / f"{self.name}.post"  # PTL's --post-analysis-data: <Class>/<test>/ per test

    @property
    def rc(self) -> PurePosixPath:
        return self.dir / f"{self.name}.rc"

    @property
    def pid(self) -> PurePosixPath:
        return self.dir / f"{self.name}.pid"  # the script's (a session and process group of its own)

    @property
    def ptl_pid(self) -> PurePosixPath:
        return self.dir / f"{self.name}.ptl-pid"  # pbs_benchpress's (it makes its own group: os.setpgrp)


def group_run(site: PtlSite, run_id: str, group: Group, part: int = 0) -> GroupRun:
    """Where a group's run goes; `part` (1, 2, ...) names one part of a group cut in parts (pbs_harness.ptl.pool)."""
    stem = PurePosixPath(group.file.path).stem
    return GroupRun(f"{stem}-{group.num_moms}moms" + (f"-p{part:02d}" if part else ""), site.work_dir / run_id)


def control_dir_of(run: GroupRun) -> PurePosixPath:
    """Where the multiplexing sockets go: short, since ssh appends `/<40 hex>.<16 random>` to the
    socket path while creating it and a Unix socket path holds at most 107 bytes (a longer one made
    every ssh of a group fail with `unix_listener: path ... too long for Unix domain socket`)."""
    digest = hashlib.sha1(f"{run.dir}/{run.name}".encode(), usedforsecurity=False).hexdigest()[:8]
    return PurePosixPath("/tmp") / f"ptl-{digest}"  # noqa: S108 - the host's own /tmp, private to the host


def ssh_options(site: PtlSite, control_dir: PurePosixPath) -> str:
    """Options for PTL's ssh and scp: the cluster's ssh_config, and a ControlMaster per host."""
    opts = ["-o", "ControlMaster=auto", "-o", f"ControlPath={control_dir}/%C", "-o", "ControlPersist=300"]
    if site.ssh_config:
        opts = ["-F", str(site.ssh_config), *opts]
    return " ".join(opts)


def script(site: PtlSite, run: GroupRun, group: Group, params: tuple[str, ...] = ()) -> str:
    """The shell script that runs one group on the server host and writes its exit code."""
    control_dir = control_dir_of(run)
    opts = ssh_options(site, control_dir)
    param = ",".join((f"moms={':'.join(site.moms_for(group.num_moms))}", *params))
    argv = [
        "pbs_benchpress", "-t", group.selector, "-p", param, "-o", str(run.log),
        "--db-type=json", f"--db-name={run.json}", f"--post-analysis-data={run.post_data}",
    ]  # fmt: skip
    return "\n".join(
        [
            "#!/bin/bash",
            f"# pbs-harness: PTL {group.file.path}, {len(group.tests)} tests, {group.num_moms} moms",
            f"export PATH={site.bin_dir}:/opt/pbs/bin:/opt/pbs/sbin:$PATH",
            f"export PTL_RSH_CMD={shlex.quote('ssh ' + opts)}",
            f"export PTL_CP_CMD={shlex.quote('scp -p ' + opts)}",
            f"mkdir -p {control_dir}",
            f"cd {site.tests_dir}",
            # In the background, waited for: pbs_benchpress leaves the script's process group (os.setpgrp).
            # Under `script`, which gives it a terminal: PTL is run from one, and some tests depend on it
            # (qmgr prints "Cannot set attribute, read only ..." for a node only when stdin is a tty).
            # pbs_benchpress records its own pid (exec keeps it); it then makes it its process group's id.
            "script -qfec " + shlex.quote(f"echo $$ > {run.ptl_pid}; exec {shlex.join(argv)}") + " /dev/null &",
            "wait $!",
            "rc=$?",
            # Close the multiplexed connections (their masters outlive the run otherwise).
            f"for h in {' '.join(site.moms_for(group.num_moms))}; do ssh {opts} -q -O exit $h 2>/dev/null; done",
            f"rm -rf {control_dir}",
            f"echo $rc > {run.rc}",
            "",
        ]
    )


def limit(group: Group) -> int:
    return PER_TEST_LIMIT * len(group.tests) + GROUP_MARGIN


def run_group(
    host: RemoteHost,
    run: GroupRun,
    body: str,
    time_limit: float,
    *,
    progress: Callable[[str], None] = lambda _: None,
    stop: Callable[[], bool] = lambda: False,
) -> tuple[int | None, float]:
    """Start the script detached on `host`, wait for its exit code; (rc or None on timeout or `stop`, wall
    seconds). `stop` is asked at every poll: true, the run is killed (another thread's Ctrl-C)."""
    # PTL keeps no post-analysis data of a test whose directory exists already: a rerun starts without it.
    host.check(f"mkdir -p {run.dir} && cat > {run.script} && rm -rf {run.rc} {run.json} {run.post_data}", stdin=body)
    start = time.monotonic()
    host.check(
        f"setsid nohup bash {run.script} > {run.out} 2>&1 < /dev/null & echo $! > {run.pid}",
        timeout=30,
    )
    reported = "0"
    try:
        while time.monotonic() - start < time_limit and not stop():
            res = host.run(f"cat {run.rc} 2>/dev/null", timeout=30)
            if res.ok and res.stdout.strip():
                return int(res.stdout.strip()), time.monotonic() - start
            time.sleep(POLL_SECONDS)
            # PTL logs each finished test's verdict on a line of its own: ok, FAILED, ERROR, SKIPPED, TIMEDOUT
            # (ending in CR LF: the terminal's line discipline).
            done = (
                host.run(
                    f"grep -cE ' INFO +(ok|FAILED|ERROR|SKIPPED|TIMEDOUT)[[:space:]]*$' {run.out}", timeout=30
                ).stdout.strip()
                or "0"
            )
            if done != reported:
                progress(f"{run.name}: {done} tests done, {time.monotonic() - start:.0f}s")
                reported = done
        kill(host, run)
        return None, time.monotonic() - start
    except BaseException:
        kill(host, run)
        raise


def kill(host: RemoteHost, run: GroupRun) -> None:
    """Kill pbs_benchpress's process group (it and the ssh/commands it started), then the script's."""
    for pid_file in (run.ptl_pid, run.pid):
        host.run(
            f'pid=$(cat {pid_file} 2>/dev/null) && [ -n "$pid" ] && kill -TERM -- -$pid 2>/dev/null; '
            f'sleep 2; [ -n "$pid" ] && kill -KILL -- -$pid 2>/dev/null; true',
            timeout=30,
        )


def fetch(host: RemoteHost, path: PurePosixPath) -> str | None:
    res = host.run(f"cat {path}", timeout=120)
    return res.stdout if res.ok else None


def fetch_tree(host: RemoteHost, path: PurePosixPath) -> bytes | None:
    """The directory `path` on `host` as a gzipped tar (its name at the top), or None when it is absent.
    In base64 on the wire: the transport carries text."""
    res = host.run(
        f"[ -d {path} ] && tar -C {path.parent} -czf - {path.name} | base64 -w0", timeout=600
    )  # fmt: skip
    return base64.b64decode(res.stdout) if res.ok and res.stdout.strip() else None
