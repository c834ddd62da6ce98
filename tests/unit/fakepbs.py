"""A small FAKE of the `pbs` hook module, for unit tests of our hook logic only.

It fakes just what hooks/reliable_startup.py and the suites' test hooks (ptl_tests/hooks/*.py)
touch: event type constants, log levels, ND_OFFLINE, ND_STATE_MAINTENANCE, pbs.hook_config_filename,
pbs.event() (type, hook_name, job, env, vnode_list, vnode_list_fail, accept/reject, which end the
hook, as in PBS, by raising), logmsg, hold_types, duration, get_local_nodename, server() (whatever
object the test gives), and a select value (also from pbs.select()) whose increment_chunks()
RECORDS the increment it was given (it does not compute PBS's result: that is for the acceptance
suites). Jobs and vnodes are plain records: a hook may set any attribute on them, and nothing
refuses a set unless the test gives an object that does.
It also models one observed OpenPBS 23.06 defect: release_nodes() hands back a job object the
hook must keep referenced until the hook ends (accept() records whether it still is).
Nothing here says how real OpenPBS behaves.
"""

from __future__ import annotations

import gc
import sys
import types
import weakref
from dataclasses import dataclass, field
from typing import Any

QUEUEJOB, EXECJOB_LAUNCH, EXECJOB_PROLOGUE, EXECJOB_BEGIN, EXECJOB_RESIZE, EXECJOB_END = 1, 2, 3, 4, 5, 6
LOG_DEBUG, LOG_ERROR, LOG_WARNING, EVENT_DEBUG = 4, 2, 3, 5
ND_OFFLINE = "offline"
ND_STATE_MAINTENANCE = 0x1000


class HookExit(Exception):
    def __init__(self, accepted: bool, message: str = "") -> None:
        super().__init__(message)
        self.accepted = accepted
        self.message = message


class FakeSelect(str):
    calls: list[Any]

    def increment_chunks(self, spec: Any) -> FakeSelect:
        FakeSelect.calls.append(spec)
        return FakeSelect(f"padded({self})")


FakeSelect.calls = []


class FakeResourceList(dict):
    """Unset resources read as None, as they do in PBS hooks."""

    def __missing__(self, key: str) -> None:
        return None


@dataclass
class FakeVnode:
    state: Any = None
    maintenance_jobs: Any = None
    comment: str | None = None


@dataclass
class PrunedJob:
    """What release_nodes() returns on success (weak-referenceable, unlike SimpleNamespace)."""

    exec_vnode: str
    exec_host: str = "(kept host)"
    schedselect: str = "(kept select)"


@dataclass
class FakeJob:
    Resource_List: dict[str, Any] = field(default_factory=dict)
    tolerate_node_failures: str | None = None
    interactive: bool | None = None
    ms: bool = True
    prune_result: Any = "pruned"  # what release_nodes returns (None = failure)
    Hold_Types: Any = None
    Job_Name: str | None = None
    resources_used: dict[str, Any] = field(default_factory=dict)
    released_with: list[str] = field(default_factory=list)
    reran: bool = False
    deleted: bool = False
    released_refs: list[weakref.ref] = field(default_factory=list)
    # At accept(): were all release_nodes() results still referenced by the hook? (None: not accepted)
    results_alive_at_accept: bool | None = None

    def __post_init__(self) -> None:
        self.Resource_List = FakeResourceList(self.Resource_List)

    def in_ms_mom(self) -> bool:
        return self.ms

    def release_nodes(self, keep_select: str | None = None) -> Any:
        self.released_with.append(keep_select or "")
        if self.prune_result is None:
            return None
        result = PrunedJob(exec_vnode="(kept)")
        self.released_refs.append(weakref.ref(result))
        return result

    def rerun(self) -> None:
        self.reran = True

    def delete(self) -> None:
        self.deleted = True


@dataclass
class FakeEvent:
    type: int
    job: FakeJob
    env: dict[str, str] = field(default_factory=dict)
    vnode_list_fail: dict[str, FakeVnode] = field(default_factory=dict)
    vnode_list: dict[str, FakeVnode] = field(default_factory=dict)
    hook_name: str = "fake_hook"

    def accept(self) -> None:
        gc.collect()
        self.job.results_alive_at_accept = all(ref() is not None for ref in self.job.released_refs)
        raise HookExit(True)

    def reject(self, message: str = "") -> None:
        raise HookExit(False, message)


def install(
    event: FakeEvent, config_path: str | None, *, nodename: str = "fakehost", server: Any = None
) -> list[tuple[int, str]]:
    """Put a fake `pbs` module in sys.modules for one hook run (on host `nodename`; pbs.server()
    returns `server`); returns the list logmsg fills."""
    logs: list[tuple[int, str]] = []
    mod = types.ModuleType("pbs")
    mod.QUEUEJOB, mod.EXECJOB_LAUNCH, mod.EXECJOB_PROLOGUE = QUEUEJOB, EXECJOB_LAUNCH, EXECJOB_PROLOGUE
    mod.EXECJOB_BEGIN, mod.EXECJOB_RESIZE, mod.EXECJOB_END = EXECJOB_BEGIN, EXECJOB_RESIZE, EXECJOB_END
    mod.LOG_DEBUG, mod.LOG_ERROR, mod.LOG_WARNING, mod.EVENT_DEBUG = LOG_DEBUG, LOG_ERROR, LOG_WARNING, EVENT_DEBUG
    mod.ND_OFFLINE, mod.ND_STATE_MAINTENANCE = ND_OFFLINE, ND_STATE_MAINTENANCE
    mod.hook_config_filename = config_path
    mod.event = lambda: event
    mod.logmsg = lambda level, msg: logs.append((level, msg))
    mod.hold_types = lambda s: f"hold_types({s})"
    mod.duration = lambda s: f"duration({s})"
    mod.select = FakeSelect
    mod.get_local_nodename = lambda: nodename
    mod.server = lambda: server
    sys.modules["pbs"] = mod
    return logs
