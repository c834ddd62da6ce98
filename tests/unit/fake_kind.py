"""A kind of host that exists only in the unit tests: one module plus one registry line (`registered`).

FAKED: nothing of a host. Its faults record themselves in the class (FakeKind.calls, FakeKind.healed), its
inventory facts are fixed answers (it claims inventories whose file is named `fake-hosts.yml`, shares a
directory /srv/fake-shared, names its cluster by the server host's `fake_cluster` variable). What the
tests using it prove is that the harness's inventory, cluster, fault and reachability code accepts a kind
it has never heard of, through pbs_harness.hosts's registry alone (no other module edited).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

import pytest

from pbs_harness import hosts
from pbs_harness.common.errors import PreconditionError
from pbs_harness.hosts.base import BOOT, CRASH, PARTITION, PAUSE, HostKind, HostVars

INVENTORY_NAME = "fake-hosts.yml"


class FakeKind(HostKind):
    NAME = "fake"
    managed = True
    shares_controller_files = False
    installs_openpbs_packages = True  # asked by localcluster/openpbs_packages.py and deploy/mutants/hosts.py
    FAULTS = frozenset({CRASH, BOOT, PAUSE, PARTITION})
    MECHANISMS: ClassVar[Mapping[str, str]] = {
        CRASH: "fake power cut",
        BOOT: "fake power on",
        PAUSE: "fake freeze",
        PARTITION: "fake cable pulled",
    }
    HINT = "ask the fake cloud to power the hosts of"
    # What every instance did, in order (host, action); the hosts the session's setup healed.
    calls: ClassVar[list[tuple[str, str]]] = []
    healed: ClassVar[list[str]] = []
    network_refused: ClassVar[bool] = False

    @classmethod
    def claims_inventory(cls, path: Path) -> bool:
        return path.name == INVENTORY_NAME

    @classmethod
    def check_network(cls, server_vars: HostVars) -> None:
        if cls.network_refused:
            raise PreconditionError("the fake network is down", "plug the fake network in")

    @classmethod
    def unreachable_hint(cls, inventory_path: Path) -> str:
        return f"{cls.HINT} {inventory_path}"

    @classmethod
    def cluster_name(cls, server_vars: HostVars) -> str | None:
        return server_vars.get("fake_cluster")

    @classmethod
    def shared_dir(cls, server_vars: HostVars) -> Path | None:
        return Path("/srv/fake-shared")

    def _did(self, action: str) -> None:
        self.calls.append((self.name, action))

    def is_running(self) -> bool:
        return True

    def is_paused(self) -> bool:
        return False

    def is_partitioned(self) -> bool:
        return False

    def crash(self) -> None:
        self._did("crash")

    def boot(self) -> None:
        self._did("boot")

    def pause(self) -> None:
        self._did("pause")

    def resume(self) -> None:
        self._did("resume")

    def partition(self) -> None:
        self._did("partition")

    def reconnect(self) -> None:
        self._did("reconnect")

    def heal_leftovers(self) -> None:
        super().heal_leftovers()
        self.healed.append(self.name)


def registered(monkeypatch: pytest.MonkeyPatch) -> type[FakeKind]:
    """The one line a new kind needs: its name -> "module.Class" in the registry (undone after the test)."""
    monkeypatch.setitem(hosts.KINDS, FakeKind.NAME, f"{__name__}.FakeKind")
    monkeypatch.setattr(FakeKind, "calls", [])
    monkeypatch.setattr(FakeKind, "healed", [])
    monkeypatch.setattr(FakeKind, "network_refused", False)
    return FakeKind
