"""Vnodes: status from `pbsnodes -av -F json`, state changes, and waits on states and counts."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pbs_harness.common.waits import wait_until
from pbs_harness.pbs.base import PbsCommands
from pbs_harness.pbs.evidence.pick import Attributes
from pbs_harness.remote.transport import CommandResult


def states(node: Mapping[str, Any]) -> set[str]:
    """The comma-separated `state` of a vnode as a set, e.g. {'down', 'offline'}."""
    return {s.strip() for s in str(node.get("state", "")).split(",") if s.strip()}


def nodes_up(nodes: Mapping[str, Mapping[str, Any]]) -> bool:
    """There are vnodes and none is down or state-unknown (after a server start, before the moms
    reported)."""
    return bool(nodes) and not any(states(n) & {"down", "state-unknown"} for n in nodes.values())


class Nodes(PbsCommands):
    def all(self) -> dict[str, dict[str, Any]]:
        return self.json("pbsnodes", "-av", "-F", "json").get("nodes", {})

    def status(self, name: str) -> dict[str, Any]:
        found = self.all().get(name)
        return found if found is not None else Attributes(what=f"vnode {name} (pbsnodes lists no such vnode)")

    def offline(self, *names: str, comment: str | None = None) -> CommandResult:
        args = ["-o", *names] + (["-C", comment] if comment else [])
        return self.run("pbsnodes", *args)

    def clear_offline(self, *names: str) -> CommandResult:
        return self.run("pbsnodes", "-r", *names)

    def wait(
        self,
        predicate: Callable[[dict[str, dict[str, Any]]], bool],
        *,
        timeout: float,
        describe: str,
    ) -> dict[str, dict[str, Any]]:
        return wait_until(self.all, predicate, timeout=timeout, describe=describe)

    def wait_state(self, names: Iterable[str], state: str, *, timeout: float, exact: bool = True) -> dict:
        """Wait until every named vnode's state is `state` (exact) or includes it."""
        wanted = list(names)

        def ok(nodes: dict[str, dict[str, Any]]) -> bool:
            got = [states(nodes.get(n, {})) for n in wanted]
            return all((s == {state}) if exact else (state in s) for s in got)

        return self.wait(ok, timeout=timeout, describe=f"vnodes {', '.join(wanted)} state={state}")

    def wait_count(self, state: str, count: int, *, timeout: float) -> dict:
        """Wait until exactly `count` vnodes have state == {state} (e.g. "17 vnodes free")."""
        return self.wait(
            lambda nodes: sum(states(n) == {state} for n in nodes.values()) == count,
            timeout=timeout,
            describe=f"{count} vnodes {state}",
        )
