"""Shared plumbing of the PBS client modules: where commands run and how they are quoted."""

from __future__ import annotations

import json
import shlex
from typing import Any

from pbs_harness.pbs.evidence.pick import Attributes, named
from pbs_harness.remote.cluster import Cluster
from pbs_harness.remote.transport import CommandError, CommandResult, RemoteHost

# Sections of qstat/pbsnodes -F json output: each entry is an object named `<kind> <key>` in messages.
SECTIONS = {"Jobs": "job", "nodes": "vnode", "Server": "server", "Queue": "queue", "Resv": "reservation"}


def parse_json(text: str) -> dict[str, Any]:
    """qstat/pbsnodes -F json output; every object is a pick.Attributes: a missing attribute fails
    naming its job, vnode, server or queue and what it has."""
    # qstat/pbsnodes may emit control characters inside strings (job environments): be lenient.
    data = json.loads(text, strict=False) if text.strip() else {}
    out = Attributes(what="the command's JSON output")
    for section, objs in data.items():
        kind = SECTIONS.get(section)
        if kind and isinstance(objs, dict):
            out[section] = Attributes({k: named(o, f"{kind} {k}") for k, o in objs.items()}, what=section)
        else:
            out[section] = named(objs, section)
    return out


class PbsCommands:
    """Runs PBS commands from PBS_EXEC on one host (the submit host by default)."""

    def __init__(self, cluster: Cluster, host: RemoteHost | None = None) -> None:
        self.cluster = cluster
        self.host = host or cluster.client

    def line(self, name: str, *args: str, sbin: bool = False) -> str:
        path = self.cluster.prefix / ("sbin" if sbin else "bin") / name
        return shlex.join([str(path), *args])

    def run(self, name: str, *args: str, user: str | None = None, stdin: str | None = None) -> CommandResult:
        return self.host.run(self.line(name, *args), user=user, stdin=stdin)

    def check(self, name: str, *args: str, user: str | None = None, stdin: str | None = None) -> CommandResult:
        __tracebackhide__ = True
        res = self.run(name, *args, user=user, stdin=stdin)
        if not res.ok:
            raise CommandError(res)
        return res

    def json(self, name: str, *args: str, user: str | None = None) -> dict[str, Any]:
        """`name args` (which must succeed) parsed as JSON."""
        __tracebackhide__ = True
        return parse_json(self.check(name, *args, user=user).stdout)

    def run_json(self, name: str, *args: str, user: str | None = None) -> dict[str, Any] | None:
        """JSON output of a command, or None when it exits non-zero (e.g. an unknown job)."""
        res = self.run(name, *args, user=user)
        return parse_json(res.stdout) if res.ok else None


def qmgr_value(value: object) -> str:
    """A value as qmgr wants it: booleans as True/False, strings with specials double-quoted."""
    if isinstance(value, bool):
        return "True" if value else "False"
    text = str(value)
    if any(ch in text for ch in ' ,="#'):
        return '"' + text.replace('"', '\\"') + '"'
    return text
