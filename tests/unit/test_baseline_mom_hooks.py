"""baseline.stale_mom_hooks / repair_stale_mom_hooks with stand-ins: a dict of hook files per mom
plays each mom's mom_priv/hooks listing, a small hooks object the server's hook list (create adds
the hook, delete removes it from the server and from every mom, as a delete request that arrives
after the end hooks finished does)."""

from pathlib import Path
from types import SimpleNamespace

from pbs_harness.suite import baseline


class FakeServerHooks:
    def __init__(
        self,
        names: set[str],
        moms: dict[str, set[str]],
        mom_ignores_delete: bool = False,
        pending: frozenset[str] = frozenset(),
    ) -> None:
        self.server, self.moms, self.ignores, self.pending = set(names), moms, mom_ignores_delete, set(pending)
        self.created: list[tuple[str, dict]] = []

    def names(self) -> list[str]:
        return sorted(self.server)

    def create_unless_pending(self, name: str, body: str, attrs: dict) -> bool:
        if name in self.pending:  # the server is still delivering its deletion: it arrives now
            self.pending.discard(name)
            for files in self.moms.values():
                files -= {f"{name}.HK", f"{name}.PY"}
            return False
        self.created.append((name, attrs))
        self.server.add(name)
        for files in self.moms.values():
            files |= {f"{name}.HK", f"{name}.PY"}
        return True

    def delete(self, name: str) -> None:
        self.server.discard(name)
        if not self.ignores:
            for files in self.moms.values():
                files -= {f"{name}.HK", f"{name}.PY"}


def fake_pbs(hooks: FakeServerHooks) -> SimpleNamespace:
    def mom(name: str) -> SimpleNamespace:
        listing = lambda _cmd: SimpleNamespace(stdout="\n".join(sorted(hooks.moms[name])))  # noqa: E731
        return SimpleNamespace(name=name, check=listing)

    cluster = SimpleNamespace(moms=[mom(n) for n in sorted(hooks.moms)], pbs_home=Path("/var/spool/pbs"))
    return SimpleNamespace(hooks=hooks, cluster=cluster)


def test_mom_only_hook_is_found_and_deleted_again_through_the_server() -> None:
    moms = {
        "pbsh02": {"PBS_power.HK", "pbs_cgroups.HK", "pbs_cgroups.PY", "rd_end.HK", "rd_end.PY", "resourcedef"},
        "pbsh03": {"PBS_power.HK", "pbs_cgroups.HK", "pbs_cgroups.PY"},
    }
    hooks = FakeServerHooks({"pbs_cgroups"}, moms)
    pbs = fake_pbs(hooks)
    assert baseline.stale_mom_hooks(pbs) == {"pbsh02": ["rd_end"]}  # type: ignore[arg-type]
    said = baseline.repair_stale_mom_hooks(pbs, timeout=1)  # type: ignore[arg-type]
    assert said is not None
    assert said.kept == {"pbsh02": ["rd_end"]}
    assert said.describe() == (
        "hooks left on moms after the server deleted them (pbsh02: rd_end): deleted again through the server"
    )
    assert hooks.created == [("rd_end", {"event": "execjob_end", "enabled": False})]
    assert "rd_end.HK" not in moms["pbsh02"]
    assert "rd_end" not in hooks.server


def test_nothing_to_repair_says_nothing() -> None:
    hooks = FakeServerHooks({"pbs_cgroups"}, {"pbsh02": {"pbs_cgroups.HK", "PBS_power.HK"}})
    assert baseline.repair_stale_mom_hooks(fake_pbs(hooks)) is None  # type: ignore[arg-type]
    assert hooks.created == []


def test_a_mom_that_still_ignores_the_deletion_is_reported() -> None:
    hooks = FakeServerHooks(set(), {"pbsh02": {"rd_end.HK"}}, mom_ignores_delete=True)
    said = baseline.repair_stale_mom_hooks(fake_pbs(hooks), timeout=0.5)  # type: ignore[arg-type]
    assert said is not None
    assert said.still_there == {"pbsh02": ["rd_end"]}
    assert "still there: {'pbsh02': ['rd_end']}" in said.describe()


def test_a_deletion_still_on_its_way_is_waited_for_not_repaired() -> None:
    moms = {"pbsh02": {"fb_launch_1a2b.HK", "rd_end.HK"}, "pbsh03": {"fb_launch_1a2b.HK"}}
    hooks = FakeServerHooks(set(), moms, pending={"fb_launch_1a2b"})
    said = baseline.repair_stale_mom_hooks(fake_pbs(hooks), timeout=1)  # type: ignore[arg-type]
    assert said is not None
    assert said.kept == {"pbsh02": ["rd_end"]}
    assert said.describe() == (
        "hooks left on moms after the server deleted them (pbsh02: rd_end): deleted again through the server"
    )
    assert [name for name, _ in hooks.created] == ["rd_end"]


def test_only_pending_deletions_say_nothing() -> None:
    hooks = FakeServerHooks(set(), {"pbsh02": {"fb_launch_1a2b.HK"}}, pending={"fb_launch_1a2b"})
    assert baseline.repair_stale_mom_hooks(fake_pbs(hooks), timeout=1) is None  # type: ignore[arg-type]
    assert hooks.created == []
