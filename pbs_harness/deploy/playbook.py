"""Run the project's playbooks with progress, and read the PLAY RECAP."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pbs_harness.common import project, shell
from pbs_harness.common.errors import HarnessError, PreconditionError, UnreachableError
from pbs_harness.remote.inventory import with_this_python

RECAP_RE = re.compile(
    r"^(?P<host>\S+)\s+:\s+ok=(?P<ok>\d+)\s+changed=(?P<changed>\d+)\s+unreachable=(?P<unreachable>\d+)\s+"
    r"failed=(?P<failed>\d+)"
)
TASK_RE = re.compile(r"^(TASK|PLAY|RUNNING HANDLER) \[(?P<name>.*)\]")
# ansible-core 2.19 prints each task failure as one line, followed by the task's `Origin: file:line:col`.
TASK_ERROR_RE = re.compile(r"^\[ERROR\]: Task failed: (?:Action failed: )?(?P<msg>.*)$")
ORIGIN_RE = re.compile(r"^Origin: (?P<file>[^:<]+)")
# The default callback's "changed: [host]" (or "changed: [host -> delegate]") line of a task's result.
CHANGED_RE = re.compile(r"^changed: \[(?P<host>[^\]\s]+)")
# The preflight's failed SSH check (playbooks/preflight.yml, "Report the unreachable host").
PREFLIGHT_SSH = "did not answer over SSH within"
# Seconds an interrupted ansible-playbook gets to stop its workers before they are killed.
PLAYBOOK_GRACE = 10.0


@dataclass(frozen=True)
class HostRecap:
    host: str
    ok: int
    changed: int
    unreachable: int
    failed: int


def parse_recap(lines: Sequence[str]) -> dict[str, HostRecap]:
    recap: dict[str, HostRecap] = {}
    for line in lines:
        m = RECAP_RE.match(line.strip())
        if m:
            recap[m["host"]] = HostRecap(
                m["host"], int(m["ok"]), int(m["changed"]), int(m["unreachable"]), int(m["failed"])
            )
    return recap


def changed_tasks(lines: Sequence[str]) -> dict[str, list[str]]:
    """Host -> the names of the tasks (and handlers) that reported changed on it, in order, once each."""
    found: dict[str, list[str]] = {}
    task = ""
    for line in lines:
        m = TASK_RE.match(line)
        if m:
            task = m["name"]
            continue
        m = CHANGED_RE.match(line.strip())
        if m and task not in found.setdefault(m["host"], []):
            found[m["host"]].append(task)
    return found


def task_errors(lines: Sequence[str]) -> list[tuple[str, str]]:
    """(message, file of the failing task) of each task failure in ansible-playbook's output."""
    found: list[tuple[str, str]] = []
    for i, line in enumerate(lines):
        m = TASK_ERROR_RE.match(line.strip())
        if m:
            origin = next(
                (ORIGIN_RE.match(x.strip()) for x in lines[i + 1 : i + 4] if ORIGIN_RE.match(x.strip())), None
            )
            found.append((m["msg"], origin["file"] if origin else ""))
    return found


def _failure(playbook: str, rc: int, result: PlaybookRun, lines: Sequence[str]) -> HarnessError:
    """The error of a failed run: the preflight's own message for bad input (its last failure), else the hosts."""
    fix = f"full output: {result.log}"
    for message, origin in reversed(task_errors(lines)):
        if Path(origin).name == "preflight.yml":
            if PREFLIGHT_SSH in message:
                return UnreachableError(f"{playbook}: preflight: {message}", fix)
            return PreconditionError(f"{playbook}: preflight: {message}", fix)
    unreachable = [r.host for r in result.recap.values() if r.unreachable]
    if unreachable:
        return UnreachableError(f"{playbook}: unreachable hosts: {', '.join(unreachable)}", fix)
    failed = [r.host for r in result.recap.values() if r.failed]
    last = task_errors(lines)[-1:]
    detail = f": {last[0][0][:600]}" if last else ""
    return HarnessError(f"{playbook} failed (rc={rc}) on: {', '.join(failed) or 'see log'}{detail}", fix)


def _ansible_bin(name: str) -> str:
    exe = Path(sys.executable).parent / name
    return str(exe) if exe.exists() else name


@dataclass(frozen=True)
class PlaybookRun:
    rc: int
    seconds: float
    recap: dict[str, HostRecap]
    log: Path
    # Host -> the tasks that reported changed on it (changed_tasks of the output).
    changes: dict[str, list[str]] = field(default_factory=dict)

    @property
    def changed(self) -> int:
        return sum(r.changed for r in self.recap.values())


def run_playbook(
    playbook: str,
    inventory: Path,
    extra: Sequence[str] = (),
    progress: Callable[[str], None] = print,
    log_dir: Path | None = None,
) -> PlaybookRun:
    """Run playbooks/<playbook>; print task names as progress; full output goes to a log file."""
    root = project.root()
    log_dir = log_dir or root / "reports"
    log_dir.mkdir(parents=True, exist_ok=True)
    log = log_dir / f"ansible-{Path(playbook).stem}.log"
    argv = [_ansible_bin("ansible-playbook"), "-i", str(inventory), str(root / "playbooks" / playbook), *extra]
    env = dict(os.environ, ANSIBLE_CONFIG=str(root / "ansible.cfg"), ANSIBLE_FORCE_COLOR="0", PYTHONUNBUFFERED="1")
    env["PATH"] = with_this_python(env.get("PATH", ""))  # the inventory scripts' python3
    start = time.monotonic()
    lines: list[str] = []
    if not shutil.which(argv[0]):  # checked before the last run's log is overwritten
        raise PreconditionError(
            f"ansible-playbook is not installed ({argv[0]} not found)",
            "install the project's requirements (`make venv`, or pip install -r requirements.txt) and run "
            "pbs-harness from that environment",
        )
    with log.open("w") as out:
        # A group of its own, ended whole (SIGTERM, then SIGKILL after PLAYBOOK_GRACE s) when this wait is
        # interrupted (Ctrl-C, SIGTERM): no ansible worker or ssh goes on alone.
        dies = shell.dies_with_this_process(signal.SIGTERM)  # also when this process is SIGKILLed
        proc = subprocess.Popen(
            argv, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1,
            stdin=subprocess.DEVNULL, start_new_session=True,
            preexec_fn=dies,  # noqa: PLW1509 - it only calls prctl
        )  # fmt: skip
        assert proc.stdout is not None
        try:
            for line in proc.stdout:
                out.write(line)
                lines.append(line)
                m = TASK_RE.match(line)
                if m:
                    progress(f"  {m.group(1).lower()}: {m['name']}")
                elif line.startswith(("fatal:", "failed:", "[ERROR]:")) or "UNREACHABLE!" in line:
                    progress("  " + line.rstrip()[:400])
            rc = proc.wait()
        except BaseException:
            shell.kill_group(proc, grace=PLAYBOOK_GRACE)
            raise
    result = PlaybookRun(rc, time.monotonic() - start, parse_recap(lines), log, changed_tasks(lines))
    if rc != 0:
        raise _failure(playbook, rc, result, lines)
    return result
