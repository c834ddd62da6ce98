"""A cloud run's record on this machine: saved before anything is created (Molecule's run id), so
that a run killed at any step is known, and kept until `down` or `sweep` removed its resources.

<root>/<run id>/run.json   the record: run id, cloud, region, endpoint, owner, times, status, pid
<root>/<run id>/plan.json  the playbook variables of the run (ansible-playbook provision.yml -e @plan.json)
<root>/<run id>/ssh/       the run's SSH key and the VMs' host key (private halves stay here)
<root>/<run id>/inventory/ the inventory of the created instances (after provision)
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from pbs_harness.common.errors import PreconditionError

ROOT_ENV = "PBS_HARNESS_CLOUD_DIR"
DEFAULT_ROOT = Path("/var/lib/pbs-harness/cloud")
RECORD = "run.json"
# provisioning: up is creating; deploying: up is deploying and verifying; testing: `test --cloud` is
# deploying, verifying and running the suites; removing: `down`, `sweep` or a failed `up` is tearing the run
# down (each of these four: a controller process, its pid, owns the run, and a run whose controller is gone
# was killed: sweep removes it, a second `down` finishes it); up: created (and deployed), handed to the user
# until `down`; failed: up failed and tore down what it could; kept: failed, kept by --keep-on-failure;
# down: removed. Each is saved BEFORE the step it names acts, so a kill at any step leaves a record that says
# what was under way.
CONTROLLED = ("provisioning", "deploying", "testing", "removing")
STATUSES = (*CONTROLLED, "up", "failed", "kept", "down")
# Nothing of the run is left: its id may name a new run.
ENDED = ("failed", "down")


def process_start(pid: int) -> int:
    """The process's start time (clock ticks since boot, /proc/PID/stat field 22), 0 when unknown: with the
    pid it names one process, so a pid the kernel gave to a new process later does not pass for the controller."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return int(stat.rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return 0


def root(given: str | None = None) -> Path:
    return Path(given or os.environ.get(ROOT_ENV) or DEFAULT_ROOT).absolute()


@dataclass
class RunRecord:
    run_id: str
    cloud: str
    region: str
    endpoint_url: str
    owner: str
    created: str
    expires: str
    status: str = "provisioning"
    pid: int = field(default_factory=os.getpid)
    pid_start: int = field(default_factory=lambda: process_start(os.getpid()))
    dir: Path = field(default=Path(), compare=False)

    def save(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        data = {k: v for k, v in asdict(self).items() if k != "dir"}
        tmp = self.dir / f".{RECORD}.tmp"
        tmp.write_text(json.dumps(data, indent=2) + "\n")
        tmp.replace(self.dir / RECORD)

    def set_status(self, status: str) -> None:
        assert status in STATUSES, status
        self.status = status
        self.pid = os.getpid()
        self.pid_start = process_start(self.pid)
        self.save()

    @property
    def controller_alive(self) -> bool:
        """A controller process still owns this run (its `up` or `test --cloud` was not killed). False for a
        run no controller owns (up, kept, failed, down)."""
        if self.status not in CONTROLLED:
            return False
        if self.pid == os.getpid():
            return True
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass  # another user's process: alive; its start time is still readable in /proc
        # Records written before pid_start existed have 0 there: the pid alone then.
        return not self.pid_start or process_start(self.pid) == self.pid_start

    @property
    def inventory(self) -> Path:
        return self.dir / "inventory"


def load(run_dir: Path) -> RunRecord:
    path = run_dir / RECORD
    try:
        data = json.loads(path.read_text())
        return RunRecord(**data, dir=run_dir)
    except (OSError, ValueError, TypeError) as exc:
        raise PreconditionError(f"cloud run record {path} cannot be read ({exc})", f"remove {run_dir} by hand") from exc


def find(state_root: Path, run_id: str) -> RunRecord | None:
    run_dir = state_root / run_id
    return load(run_dir) if (run_dir / RECORD).exists() else None


def all_runs(state_root: Path) -> list[RunRecord]:
    if not state_root.is_dir():
        return []
    return [load(d) for d in sorted(state_root.iterdir()) if (d / RECORD).exists()]


def check_writable(state_root: Path) -> None:
    """The record can be saved: checked before anything is created."""
    existing = next(p for p in (state_root, *state_root.parents) if p.exists())
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        raise PreconditionError(
            f"the cloud state directory {state_root} cannot be created or written ({existing})",
            f"give --state-dir DIR (or {ROOT_ENV}) a directory this user can write",
        )
