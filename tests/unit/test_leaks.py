"""pbs_harness.suite.leaks and the plugin's call-phase leak check, over stand-ins: SimpleNamespace objects
play pbs.nodes/jobs/server/queues/hooks and each mom's hook directory (FAKED: only the shapes of
pbsnodes -F json, qstat -Bf and `ls mom_priv/hooks`, `cat NAME.HK`). What it proves: which states count
as a leak, that a leak raises in the test's own call phase (so it fails the test or is the strict xfail
of the one known bug), and that an unknown leak next to a known one is never taken for the known one."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from pbs_harness.suite import baseline, leaks, plugin


def fake_pbs(*, nodes=None, jobs=None, server=None, queues=None, server_hooks=(), mom_files=None) -> SimpleNamespace:
    mom_files = mom_files or {}

    def mom(name: str) -> SimpleNamespace:
        files = mom_files[name]

        def run(cmd):
            if cmd[0] == "ls":
                return SimpleNamespace(stdout="\n".join(sorted(files)))
            return SimpleNamespace(stdout=files.get(Path(cmd[1]).name, ""))

        return SimpleNamespace(name=name, check=run, run=run)

    return SimpleNamespace(
        nodes=SimpleNamespace(all=lambda: nodes or {}),
        jobs=SimpleNamespace(all=lambda history=False: jobs or {}),
        resv=SimpleNamespace(all=lambda: {}),
        server=SimpleNamespace(status=lambda: server or {}, queues=lambda: queues or {}),
        hooks=SimpleNamespace(names=lambda: sorted(server_hooks)),
        cluster=SimpleNamespace(moms=[mom(n) for n in sorted(mom_files)], pbs_home=Path("/var/spool/pbs")),
    )


END_HOOK = {"rd_end.HK": "type=site\nenabled=true\nevent=execjob_end\n", "rd_end.PY": "", "PBS_power.HK": ""}
LAUNCH_HOOK = {"fb_launch_5295.HK": "type=site\nevent=execjob_launch\n", "fb_launch_5295.PY": ""}


def test_a_mom_only_hook_is_named_with_its_mom_and_events() -> None:
    pbs = fake_pbs(mom_files={"lk02": dict(END_HOOK), "lk03": {"PBS_power.HK": ""}})
    assert [str(leak) for leak in leaks.find(pbs)] == [
        "mom lk02: hook rd_end = events execjob_end, deleted on the server"
    ]


def test_the_server_totals_with_no_job_name_each_resource() -> None:
    pbs = fake_pbs(server={"resources_assigned": {"ncpus": 1, "nodect": 1, "mem": "0kb"}})
    assert [str(leak) for leak in leaks.find(pbs)] == [
        "server: resources_assigned.ncpus = 1",
        "server: resources_assigned.nodect = 1",
    ]


def test_only_end_hooks_kept_make_the_known_bug() -> None:
    """A strict xfail expecting MomKeptDeletedEndHook must not swallow any other leak."""
    end = leaks.Leak("mom lk02", "hook rd_end", "events execjob_end, deleted on the server")
    launch = leaks.Leak("mom lk03", "hook fb_launch_5295", "events execjob_launch, deleted on the server")
    ncpus = leaks.Leak("vnode lk02", "resources_assigned.ncpus", "2")
    assert type(leaks.error([end])) is leaks.MomKeptDeletedEndHook
    assert type(leaks.error([end, ncpus])) is leaks.Leaked
    assert type(leaks.error([launch])) is leaks.Leaked
    assert "vnode lk02: resources_assigned.ncpus = 2" in str(leaks.error([end, ncpus]))


def test_settle_waits_for_a_draining_assignment() -> None:
    seen = iter([[leaks.Leak("vnode n", "resources_assigned.ncpus", "1")], []])
    assert leaks.settle(None, timeout=5, probe=lambda _pbs: next(seen)) == []
    stuck = [leaks.Leak("vnode n", "resources_assigned.ncpus", "1")]
    assert leaks.settle(None, timeout=0.3, probe=lambda _pbs: stuck) == stuck


class FakeNemesis:
    def __init__(self, problems: list[str]) -> None:
        self.problems, self.healed = problems, 0

    def heal_all(self) -> list[str]:
        self.healed += 1
        return self.problems


def item_with(pbs, nemesis, leak_of: type[leaks.Leaked] | None = None) -> SimpleNamespace:
    marker = SimpleNamespace(args=(leak_of,)) if leak_of is not None else None
    item = SimpleNamespace(stash=pytest.Stash(), get_closest_marker=lambda name: marker if name == "leak_of" else None)
    item.stash[plugin.LEAK_CHECK_KEY] = (pbs, "BASE", nemesis)
    return item


def test_a_leak_after_a_passing_body_raises_in_the_call_phase(monkeypatch: pytest.MonkeyPatch) -> None:
    """Faults healed and the test's work cleared first, then what is left raises (and teardown is told)."""
    calls: list[str] = []
    monkeypatch.setattr(baseline, "clear_test_work", lambda pbs, base, **kw: calls.append(f"cleared {base}"))
    pbs = fake_pbs(nodes={"lk02": {"resources_assigned": {"ncpus": 2}}})
    item = item_with(pbs, FakeNemesis([]))
    monkeypatch.setattr(leaks, "settle", lambda pbs, probe, **kw: probe(pbs))  # no waiting: what is there is left
    with pytest.raises(leaks.Leaked, match=r"vnode lk02: resources_assigned\.ncpus = 2"):
        plugin._check_leaks(item)  # type: ignore[arg-type]
    assert calls == ["cleared BASE"]
    assert item.stash[plugin.LEAK_RAISED_KEY] is True


def test_no_leak_check_on_a_cluster_not_healed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(baseline, "clear_test_work", lambda pbs, base, **kw: pytest.fail("must not clear"))
    item = item_with(fake_pbs(), FakeNemesis(["healing crash on lk03: boom"]))
    plugin._check_leaks(item)  # type: ignore[arg-type]
    assert item.stash[plugin.HEAL_PROBLEMS_KEY] == ["healing crash on lk03: boom"]


class VnodeCpusLeak(leaks.Leaked):
    """A stand-in known bug: cpus left assigned on vnodes only."""

    @staticmethod
    def matches(found: list[str]) -> bool:
        return all(f.startswith("vnode ") and ": resources_assigned.ncpus" in f for f in found)


@pytest.mark.parametrize(
    ("server", "expected"),
    [({}, VnodeCpusLeak), ({"resources_assigned": {"nodect": 1}}, leaks.Leaked)],
    ids=["only-the-known-leak", "another-leak-beside-it"],
)
def test_the_known_leak_of_leak_of_is_raised_only_when_it_is_all_that_leaked(
    server: dict, expected: type, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(baseline, "clear_test_work", lambda pbs, base, **kw: None)
    monkeypatch.setattr(leaks, "settle", lambda pbs, probe, **kw: probe(pbs))
    pbs = fake_pbs(nodes={"lk02": {"resources_assigned": {"ncpus": 2}}}, server=server)
    with pytest.raises(leaks.Leaked) as caught:
        plugin._check_leaks(item_with(pbs, FakeNemesis([]), leak_of=VnodeCpusLeak))  # type: ignore[arg-type]
    assert type(caught.value) is expected


def test_a_mom_holds_a_job_while_its_job_file_is_there() -> None:
    pbs = fake_pbs(mom_files={"lk02": {"3.lk01.JB": "", "3.lk01.SC": "", "3.lk01.TK": ""}, "lk03": {}})
    assert leaks.moms_holding_jobs(pbs) == {"lk02": ["3.lk01"]}


def test_the_test_hooks_go_only_once_no_mom_holds_a_job() -> None:
    """The order of clear_test_work (FAKED: a mom whose job file goes on the third look, and the hook
    list): a hook deleted while a mom still runs the job's end hooks is kept by pbs_mom, so the test's
    hooks are deleted only after every mom let its jobs go."""
    events: list[str] = []
    files = {"3.lk01.JB": ""}
    looks = iter([1, 2, 3])

    def ls(cmd):
        if next(looks, 3) >= 3:
            files.clear()
        events.append(f"ls {len(files)}")
        return SimpleNamespace(stdout="\n".join(files))

    mom = SimpleNamespace(name="lk02", run=ls)
    pbs = SimpleNamespace(
        resv=SimpleNamespace(all=lambda: {}, delete=lambda r: None),
        jobs=SimpleNamespace(all=lambda history=False: {}, delete=lambda j, force=False: None),
        hooks=SimpleNamespace(attributes=lambda: {"rd_end": {}, "pbs_cgroups": {}}, delete=events.append),
        nodes=SimpleNamespace(all=lambda: {"lk02": {"state": "free"}}),
        cluster=SimpleNamespace(moms=[mom], pbs_home=Path("/var/spool/pbs")),
    )
    base = SimpleNamespace(hooks={"pbs_cgroups": {}}, nodes={"lk02": {"state": "free"}})
    baseline.clear_test_work(pbs, base)  # type: ignore[arg-type]
    assert events == ["ls 1", "ls 1", "ls 0", "rd_end"]


def test_the_test_hooks_go_only_once_every_mom_is_connected_again() -> None:
    """FAKED: pbsnodes answers (lk03 down on the first look, as after a healed kill before its mom's hello,
    then free) and the hook list. A hook deleted while a mom is down can come back on that mom when it
    reconnects (docs/test-core.md, "A hook deleted while a mom is down"), so the test's hooks are deleted
    once no vnode that was up at the baseline is down; a vnode down at the baseline is not waited for."""
    events: list[str] = []
    looks = iter(["down", "free"])

    def nodes() -> dict:
        state = next(looks, "free")
        events.append(f"lk03 {state}")
        return {"lk03": {"state": state}, "lk04": {"state": "down,offline"}}

    mom = SimpleNamespace(name="lk03", run=lambda cmd: SimpleNamespace(stdout=""))
    pbs = SimpleNamespace(
        resv=SimpleNamespace(all=lambda: {}, delete=lambda r: None),
        jobs=SimpleNamespace(all=lambda history=False: {}, delete=lambda j, force=False: None),
        hooks=SimpleNamespace(
            attributes=lambda: {"fb_launch": {}}, delete=lambda name: events.append(f"delete {name}")
        ),
        nodes=SimpleNamespace(all=nodes),
        cluster=SimpleNamespace(moms=[mom], pbs_home=Path("/var/spool/pbs")),
    )
    base = SimpleNamespace(hooks={}, nodes={"lk03": {"state": "free"}, "lk04": {"state": "down,offline"}})
    baseline.clear_test_work(pbs, base)  # type: ignore[arg-type]
    assert events == ["lk03 down", "lk03 free", "delete fb_launch"]


def test_a_job_a_mom_held_before_the_test_is_not_waited_for() -> None:
    """FAKED: a mom that holds a job for good (OpenPBS: a sister keeps its copy of a tolerant job that
    pruned it away after its prologue failed) and one of the test's jobs that goes on the second look.
    Only the test's job is waited for; before, every later test waited the whole SETTLE (60 s) for the
    job that never goes (one-cluster run of 28 Nov: each test after a prologue failure took 1m14s)."""
    events: list[str] = []
    files = {"4.lk01.JB": "", "9.lk01.JB": ""}
    looks = iter([1, 2])

    def ls(cmd):
        if next(looks, 2) >= 2:
            files.pop("9.lk01.JB", None)
        events.append(f"ls {len(files)}")
        return SimpleNamespace(stdout="\n".join(files))

    mom = SimpleNamespace(name="lk03", run=ls)
    pbs = SimpleNamespace(
        resv=SimpleNamespace(all=lambda: {}, delete=lambda r: None),
        jobs=SimpleNamespace(all=lambda history=False: {}, delete=lambda j, force=False: None),
        hooks=SimpleNamespace(attributes=lambda: {"launch": {}}, delete=events.append),
        nodes=SimpleNamespace(all=lambda: {"lk02": {"state": "free"}}),
        cluster=SimpleNamespace(moms=[mom], pbs_home=Path("/var/spool/pbs")),
    )
    started = time.monotonic()
    base = SimpleNamespace(hooks={}, nodes={"lk02": {"state": "free"}})
    baseline.clear_test_work(pbs, base, held_before=frozenset({"4.lk01"}))  # type: ignore[arg-type]
    assert events == ["ls 2", "ls 1", "launch"]
    assert time.monotonic() - started < 5


def test_a_job_a_mom_kept_after_the_server_let_it_go_is_a_leak_of_the_test() -> None:
    """FAKED: the moms' mom_priv/jobs listings and the server's job list. A job the server still has is
    not kept; one a mom held before the test began is not the test's; the rest is a leak naming the
    mom and the job."""
    pbs = fake_pbs(
        jobs={"8.lk01": {}},
        mom_files={"lk02": {"7.lk01.JB": "", "7.lk01.SC": ""}, "lk03": {"4.lk01.JB": "", "8.lk01.JB": ""}},
    )
    assert [str(leak) for leak in leaks.find(pbs, held_before=frozenset({"4.lk01"}))] == [
        "mom lk02: job 7.lk01 = in mom_priv/jobs, gone from the server"
    ]
    assert leaks.kept_jobs(pbs) == {"lk02": ["7.lk01"], "lk03": ["4.lk01"]}


def test_the_kept_pruned_sister_job_is_its_bug_only_when_alone() -> None:
    """The strict xfail of ptl_tests' SisterKeptPrunedJob takes only jobs kept on one mom, not the
    primary: a job kept on two moms, beside an assignment, or on the primary is another finding (Leaked)."""
    from ptl_tests.reliable_startup.kept_jobs import SisterKeptPrunedJob

    kept = leaks.Leak("mom lk03", "job 7.lk01", "in mom_priv/jobs, gone from the server")
    other_mom = leaks.Leak("mom lk04", "job 7.lk01", "in mom_priv/jobs, gone from the server")
    ncpus = leaks.Leak("vnode lk03", "resources_assigned.ncpus", "1")
    assert type(leaks.error([kept], SisterKeptPrunedJob)) is SisterKeptPrunedJob
    assert type(leaks.error([kept, other_mom], SisterKeptPrunedJob)) is leaks.Leaked
    assert type(leaks.error([kept, ncpus], SisterKeptPrunedJob)) is leaks.Leaked
    # The primary (the server host, whose name the job id carries) keeping the job is another bug.
    on_primary = leaks.kept_job("lk01", "7.lk01")
    assert type(leaks.error([on_primary], SisterKeptPrunedJob)) is leaks.Leaked


def test_jobs_kept_for_a_whole_settle_already_are_not_waited_for_again() -> None:
    """clear_test_work waited SETTLE for the test's jobs to leave the moms; a job still held then is
    the answer at once (before: a second SETTLE, 2m20s per test that reproduces the kept-job bug).
    Any other leak, or another job, is still waited for."""
    kept = [leaks.Leak("mom lk03", "job 7.lk01", "in mom_priv/jobs, gone from the server")]
    started = time.monotonic()
    assert leaks.settle(None, timeout=30, probe=lambda _pbs: kept, kept_already=frozenset({"7.lk01"})) == kept
    assert time.monotonic() - started < 5
    other = [*kept, leaks.Leak("vnode lk03", "resources_assigned.ncpus", "1")]
    assert leaks.settle(None, timeout=0.3, probe=lambda _pbs: other, kept_already=frozenset({"7.lk01"})) == other
    assert leaks.settle(None, timeout=0.3, probe=lambda _pbs: kept, kept_already=frozenset({"8.lk01"})) == kept
