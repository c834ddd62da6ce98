"""Server, queues and qmgr: status, set/unset of attributes, stop and start of the server."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pbs_harness.common.waits import WaitTimeout, wait_until
from pbs_harness.pbs.base import PbsCommands, qmgr_value
from pbs_harness.pbs.nodes import Nodes, nodes_up
from pbs_harness.remote.transport import CommandError, CommandResult


class VnodesNotReported(WaitTimeout):
    """After a server restart, some vnode was still down or state-unknown at the timeout."""


class Server(PbsCommands):
    def status(self) -> dict[str, Any]:
        servers = self.json("qstat", "-Bf", "-F", "json").get("Server", {})
        return next(iter(servers.values()), {})

    def queues(self) -> dict[str, dict[str, Any]]:
        return self.json("qstat", "-Qf", "-F", "json").get("Queue", {})

    def qmgr(self, directive: str, *, user: str | None = None, check: bool = False) -> CommandResult:
        """Run one qmgr directive; the result carries qmgr's own error text. With check=True a
        non-zero exit raises CommandError instead."""
        __tracebackhide__ = True
        return (self.check if check else self.run)("qmgr", "-c", directive, user=user)

    def set(
        self,
        attrs: Mapping[str, object],
        obj: str = "server",
        name: str = "",
        *,
        user: str | None = None,
        check: bool = False,
    ) -> CommandResult:
        """qmgr `set OBJ NAME a=v,...`; check=True raises CommandError when qmgr refuses."""
        __tracebackhide__ = True
        items = ",".join(f"{k}={qmgr_value(v)}" for k, v in attrs.items())
        return self.qmgr(f"set {obj} {name} {items}".replace("  ", " "), user=user, check=check)

    def unset(self, *attrs: str, obj: str = "server", name: str = "", user: str | None = None) -> CommandResult:
        return self.qmgr(f"unset {obj} {name} {','.join(attrs)}".replace("  ", " "), user=user)

    def stop(self, timeout: float = 60, *, shutdown: str = "quick") -> CommandResult:
        """qterm -t SHUTDOWN, then wait until pbs_server.bin has exited. quick: running jobs keep
        running; immediate: they are killed (rerunnable ones requeued).

        qterm can return while the old daemon is still shutting down (stopping its data service);
        a pbs_server started in that window loses its data service connection and dies.
        """
        res = self.run("qterm", "-t", shutdown)
        if res.ok:
            wait_until(
                lambda: self.cluster.server.run(["pgrep", "-x", "pbs_server.bin"]).ok,
                lambda running: not running,
                timeout=timeout,
                describe=f"pbs_server.bin exited after qterm -t {shutdown}",
            )
        return res

    def start(self, timeout: float = 60) -> None:
        """Start the server daemon on the server host and wait until it answers."""
        server_host = self.cluster.server
        server_host.check(f"{self.cluster.prefix}/sbin/pbs_server")
        wait_until(
            lambda: self.run("qstat", "-B").ok,
            bool,
            timeout=timeout,
            describe="PBS server answering qstat -B",
        )

    def restart(
        self, shutdown: str = "quick", *, timeout: float = 90, schedule: bool = False
    ) -> dict[str, dict[str, Any]]:
        """`stop(shutdown=...)`, `start()`, then wait up to `timeout` s until every vnode reported
        again (none down or state-unknown: the moms report a few seconds after the start); returns
        the vnodes, or raises VnodesNotReported (a WaitTimeout). A refused qterm (e.g. no server
        running) raises CommandError.

        schedule=True then sets scheduling=True (checked) to start a cycle: the one pbs_server
        runs at its start came before the moms reported and found no nodes.
        """
        stopped = self.stop(shutdown=shutdown)
        if not stopped.ok:
            raise CommandError(stopped)
        self.start()
        describe = f"every vnode reported after the server restart (qterm -t {shutdown})"
        nodes = wait_until(
            Nodes(self.cluster, self.host).all,
            nodes_up,
            timeout=timeout,
            describe=describe,
            fail=lambda last: VnodesNotReported(describe, timeout, last),
        )
        if schedule:
            self.set({"scheduling": True}, check=True)
        return nodes
