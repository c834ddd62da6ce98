"""Helpers of the node ramp-down suite (test_ramp_down.py): hook bodies, a stageout that lasts
until the test lets it finish, and the custom resources the keep_select (-k) tests request.
"""

from __future__ import annotations

import shlex
import uuid
from dataclasses import dataclass

from pbs_harness.transport import RemoteHost

RELNODES_ATTR = "release_nodes_on_stageout"
STAGEOUT_SUBSTATE = 51  # JOB_SUBSTATE_STAGEOUT (src/include/job.h)
PRERUN_SUBSTATE = 41  # JOB_SUBSTATE_PRERUN: sent to the mom, not yet running


def hook_set_release_nodes_on_stageout(value: bool) -> str:
    """queuejob/modifyjob hook body setting the job's release_nodes_on_stageout (a Python bool)."""
    return f"""import pbs

e = pbs.event()
e.job.release_nodes_on_stageout = {value!r}
pbs.logmsg(pbs.LOG_DEBUG, "ramp_down hook set release_nodes_on_stageout=%s" % {value!r})
e.accept()
"""


def hook_log_event_on_this_host(tag: str) -> str:
    """execjob_* hook body logging `<tag> <event> on <host>` in the mom log of the host it runs on."""
    return f"""import pbs

e = pbs.event()
pbs.logmsg(pbs.LOG_DEBUG, "{tag} %s on %s" % (e.hook_name, pbs.get_local_nodename()))
e.accept()
"""


@dataclass
class BlockedStageout:
    """A stageout whose copy waits for the test.

    The destination is a FIFO under the shared /home: `$usecp *:/home /home` makes the mom copy
    with `cp -rp`, and cp blocks opening a FIFO for writing until a reader opens it. The job thus
    stays in substate 51 (STAGEOUT) until `drain()` reads the file; what it reads is the copied
    source, which proves the stageout really ran through it.
    """

    host: RemoteHost
    user: str
    source: str
    fifo: str
    payload: str
    drained: bool = False

    @classmethod
    def create(cls, host: RemoteHost, user: str) -> BlockedStageout:
        token = uuid.uuid4().hex[:10]
        base = f"/home/{user}/rd-stageout-{token}"
        made = cls(host, user, f"{base}.src", f"{base}.fifo", f"stageout payload {token}")
        host.check(f"echo {shlex.quote(made.payload)} > {made.source} && mkfifo {made.fifo}", user=user)
        return made

    def attribute(self, dest_host: str) -> str:
        """The -W stageout value: local source @ host:destination."""
        return f"{self.source}@{dest_host}:{self.fifo}"

    def drain(self, timeout: int = 30) -> str:
        """Read the FIFO as its owner: the blocked cp writes the source and finishes."""
        self.drained = True
        return self.host.check(f"timeout {timeout} cat {self.fifo}", user=self.user).stdout.strip()

    def cleanup(self) -> None:
        if not self.drained:  # a failed test may leave the mom's cp waiting on the FIFO
            self.host.run(f"timeout 10 cat {self.fifo} > /dev/null", user=self.user)
        self.host.run(["rm", "-f", self.source, self.fifo])


@dataclass(frozen=True)
class CustomResource:
    """A host-level, non-consumable custom resource (flag=h) and two values for it: the chunks of a
    keep_select job carry `kept` or `other`, so a -k select naming `kept` picks chunks by it."""

    name: str
    type: str
    kept: str
    other: str


CUSTOM_RESOURCES = (
    CustomResource("rd_str", "string", "def", "abc"),
    CustomResource("rd_bool", "boolean", "True", "False"),
    CustomResource("rd_long", "long", "9", "7"),
    CustomResource("rd_size", "size", "9kb", "7kb"),
    CustomResource("rd_float", "float", "9.1", "7.5"),
)


def resource_terms(resources: tuple[CustomResource, ...], which: str) -> str:
    """`:name=value` for each resource, with its `kept` or `other` value."""
    return "".join(f":{r.name}={getattr(r, which)}" for r in resources)
