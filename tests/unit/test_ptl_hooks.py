"""The suites' test hooks (ptl_tests/hooks/*.py), each run against tests/unit/fakepbs.py (a FAKE pbs
module) with the JSON config its factory writes: the config keys drive the documented behaviour, and
the log lines have the exact formats the suites match (the patterns below are the suites' own).
Whether OpenPBS does the same with them is for the suites on a real cluster.

Also: ptl_tests/hook_files.py (SuiteHook, the mom-side wait for body AND config), and no module of
ptl_tests/ keeps a hook body as a string.
"""

from __future__ import annotations

import ast
import re
import runpy
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from ptl_tests import hook_files
from ptl_tests.admin_suspend_helpers import hook_log_vnode_maintenance
from ptl_tests.hook_files import HOOKS_DIR, MomHook, SuiteHook, install_hooks, md5, mom_holds, parse_mom_hook_view
from ptl_tests.ramp_down_helpers import hook_log_event_on_this_host, hook_set_release_nodes_on_stageout
from ptl_tests.reliable_startup_helpers import (
    LAUNCH_SET_REFUSED,
    ORIGINAL_SELECT,
    launch_sets_hook,
    pad_hook,
    probe_hook,
    prune_hook,
    select_probe_hook,
)
from tests.unit import fakepbs
from tests.unit.fakepbs import (
    EVENT_DEBUG,
    EXECJOB_BEGIN,
    EXECJOB_END,
    EXECJOB_LAUNCH,
    EXECJOB_PROLOGUE,
    EXECJOB_RESIZE,
    LOG_DEBUG,
    LOG_WARNING,
    ND_OFFLINE,
    ND_STATE_MAINTENANCE,
    QUEUEJOB,
    FakeEvent,
    FakeJob,
    FakeSelect,
    FakeVnode,
)

ROOT = Path(__file__).resolve().parents[2]
PTL_TESTS = ROOT / "ptl_tests"
SITE = "ncpus=2:mem=2gb+ncpus=1"  # what the queuejob hook saved


def run(hook: SuiteHook, event: FakeEvent, tmp_path: Path, **install: Any) -> tuple[fakepbs.HookExit, list]:
    """Run the hook file with its config file, as the daemon would; (how it ended, logmsg calls)."""
    config = tmp_path / "hook.CF"
    config.write_text(hook.config_text)
    logs = fakepbs.install(event, str(config), **install)
    FakeSelect.calls = []
    try:
        with pytest.raises(fakepbs.HookExit) as outcome:
            runpy.run_path(str(hook.path))
    finally:
        sys.modules.pop("pbs", None)
    return outcome.value, logs


def messages(logs: list, level: int | None = None) -> list[str]:
    return [msg for lvl, msg in logs if level is None or lvl == level]


# ---------------------------------------------------------------------------------------------
# pad_and_tolerate.py (queuejob)


def queued(select: str = SITE) -> FakeJob:
    return FakeJob(Resource_List={"select": FakeSelect(select)})


def test_pad_hook_saves_pads_and_sets_tolerance(tmp_path: Path) -> None:
    job = queued()
    result, logs = run(pad_hook(), FakeEvent(QUEUEJOB, job), tmp_path)
    assert result.accepted
    assert FakeSelect.calls == [1]
    assert job.Resource_List["site"] == SITE
    assert job.Resource_List["select"] == f"padded({SITE})"
    assert job.tolerate_node_failures == "job_start"
    assert logs == []


def test_pad_hook_per_chunk_increment_keeps_int_chunk_indexes(tmp_path: Path) -> None:
    run(pad_hook(increment={0: 0, 1: 4, 2: "50%"}), FakeEvent(QUEUEJOB, queued()), tmp_path)
    assert FakeSelect.calls == [{0: 0, 1: 4, 2: "50%"}]


def test_pad_hook_without_increment_only_sets_tolerance(tmp_path: Path) -> None:
    job = queued()
    result, _ = run(pad_hook(increment=None, tolerance="all"), FakeEvent(QUEUEJOB, job), tmp_path)
    assert result.accepted
    assert FakeSelect.calls == []
    assert job.Resource_List == {"select": SITE}
    assert job.tolerate_node_failures == "all"


def test_pad_hook_without_tolerance_leaves_it(tmp_path: Path) -> None:
    job = queued()
    run(pad_hook(tolerance=None), FakeEvent(QUEUEJOB, job), tmp_path)
    assert job.tolerate_node_failures is None
    assert FakeSelect.calls == [1]


# ---------------------------------------------------------------------------------------------
# select_api_probe.py (queuejob)

SPECS = [2, "3", "23.5%", {0: 0, 1: 4, 2: "50%"}]


def test_select_probe_logs_each_increment_as_the_suite_reads_it(tmp_path: Path) -> None:
    hook = select_probe_hook("incr", increment_probe=[(ORIGINAL_SELECT, SPECS)])
    job = queued()
    result, logs = run(hook, FakeEvent(QUEUEJOB, job), tmp_path)
    assert result.accepted
    assert job.Resource_List == {"select": SITE}
    got = f"padded({ORIGINAL_SELECT})"
    assert messages(logs, LOG_DEBUG) == [
        f"incr: sel={ORIGINAL_SELECT}",
        f"incr: sel.increment_chunks(2)={got} [FakeSelect]",
        f"incr: sel.increment_chunks('3')={got} [FakeSelect]",
        f"incr: sel.increment_chunks('23.5%')={got} [FakeSelect]",
        f"incr: sel.increment_chunks({{0: 0, 1: 4, 2: '50%'}})={got} [FakeSelect]",
    ]
    assert FakeSelect.calls == SPECS
    # test_increment_chunks_spec_examples: one line per spec, found by repr(spec), split at ")=" and " ["
    for spec in SPECS:
        (line,) = [
            m for m in messages(logs) if re.search(f"incr: sel.increment_chunks\\({re.escape(repr(spec))}\\)=", m)
        ]
        assert line.split(")=", 1)[1].rpartition(" [") == (got, " [", "FakeSelect]")


def test_select_probe_logs_draft_values_and_exceptions(tmp_path: Path) -> None:
    probes = ["j.Job_Name", "j.select_requested", 'int("x")', "pbs.select('ncpus=1')"]
    job = FakeJob(Job_Name="rs0")
    _, logs = run(select_probe_hook("draft", draft_probe=probes), FakeEvent(QUEUEJOB, job), tmp_path)
    assert messages(logs, LOG_DEBUG) == [
        "draft: draft j.Job_Name -> 'rs0'",
        "draft: draft j.select_requested -> AttributeError: 'FakeJob' object has no attribute 'select_requested'",
        "draft: draft int(\"x\") -> ValueError: invalid literal for int() with base 10: 'x'",
        "draft: draft pbs.select('ncpus=1') -> 'ncpus=1'",
    ]
    # test_early_draft_api_absent reads what follows " -> "
    line = next(m for m in messages(logs) if re.search(f"draft: draft {re.escape(probes[1])} -> ", m))
    assert line.split(" -> ", 1)[1].startswith("AttributeError: ")


# ---------------------------------------------------------------------------------------------
# vnode_lists_and_prune.py (execjob_launch / execjob_prologue / execjob_begin)


def started(ms: bool = True, prune_result: Any = "pruned") -> FakeJob:
    return FakeJob(Resource_List={"select": "padded", "site": SITE}, ms=ms, prune_result=prune_result)


def launch_event(job: FakeJob, event_type: int = EXECJOB_LAUNCH, **kw: Any) -> FakeEvent:
    lists = {
        "vnode_list": {"h2[0]": FakeVnode(), "h1": FakeVnode(), "h3": FakeVnode()},
        "vnode_list_fail": {"h3": FakeVnode()},
    }
    return FakeEvent(event_type, job, **{"env": {"PBS_NODEFILE": "/x"}, **lists, **kw})


def test_prune_hook_lists_offlines_and_prunes_to_the_saved_select(tmp_path: Path) -> None:
    job = started()
    event = launch_event(job)
    result, logs = run(prune_hook(offline_failed=True), event, tmp_path)
    assert result.accepted
    assert messages(logs, LOG_DEBUG) == [
        "launch: found vnode_list[h1]",
        "launch: found vnode_list[h2[0]]",
        "launch: found vnode_list[h3]",
        "launch: found vnode_list_fail[h3]",
        "launch: offlined vnode_list_fail[h3]",
        f"launch: release_nodes(keep_select={SITE}) returned a job",
        "launch: job.exec_vnode=(kept)",
        "launch: job.exec_host=(kept host)",
        "launch: job.schedselect=(kept select)",
    ]
    assert event.vnode_list_fail["h3"].state == ND_OFFLINE
    assert job.released_with == [SITE]
    assert job.results_alive_at_accept is True  # release_nodes()'s job is still referenced
    assert not job.reran


def test_prune_hook_keeps_the_given_select_and_lists_nothing_unless_asked(tmp_path: Path) -> None:
    job = started()
    event = launch_event(job)
    _, logs = run(prune_hook(keep=ORIGINAL_SELECT, log_lists=False), event, tmp_path)
    assert job.released_with == [ORIGINAL_SELECT]
    assert event.vnode_list_fail["h3"].state is None
    # test_prune_without_failures
    want = f"launch: release_nodes\\(keep_select={re.escape(ORIGINAL_SELECT)}\\) returned a job"
    assert [m for m in messages(logs) if re.search(want, m)]
    assert not [m for m in messages(logs) if "found vnode_list" in m]


def test_prune_hook_ignores_task_launches(tmp_path: Path) -> None:
    job = started()
    result, logs = run(prune_hook(), launch_event(job, env={}), tmp_path)
    assert result.accepted
    assert logs == []
    assert job.released_with == []


def test_prune_hook_on_a_sister_lists_but_does_not_prune(tmp_path: Path) -> None:
    job = started(ms=False)
    _, logs = run(prune_hook(), launch_event(job), tmp_path)
    assert job.released_with == []
    assert messages(logs)[-1] == "launch: found vnode_list_fail[h3]"


@pytest.mark.parametrize(
    ("event", "event_type", "phase"),
    [("execjob_launch", EXECJOB_LAUNCH, "LAUNCH"), ("execjob_prologue", EXECJOB_PROLOGUE, "PROLOGUE")],
)
def test_prune_failure_holds_and_requeues(tmp_path: Path, event: str, event_type: int, phase: str) -> None:
    job = started(prune_result=None)
    result, logs = run(prune_hook(event), launch_event(job, event_type), tmp_path)
    assert (result.accepted, result.message) == (False, f"unsuccessful at {phase}")
    assert (job.Hold_Types, job.reran, job.deleted) == ("hold_types(s)", True, False)
    tag = "launch" if event == "execjob_launch" else "prolo"
    assert messages(logs)[-1] == f"{tag}: release_nodes(keep_select={SITE}) returned None"


def test_prune_failure_deletes(tmp_path: Path) -> None:
    job = started(prune_result=None)
    result, _ = run(prune_hook(on_failure="delete"), launch_event(job), tmp_path)
    assert (result.accepted, result.message) == (False, "unsuccessful at LAUNCH")
    assert (job.deleted, job.reran, job.Hold_Types) == (True, False, None)


def test_prune_failure_without_action_only_logs(tmp_path: Path) -> None:
    """test_release_nodes_outside_prologue_and_launch_returns_none's execjob_begin hook."""
    job = started(prune_result=None)
    hook = prune_hook("execjob_begin", keep=ORIGINAL_SELECT, on_failure=None, log_lists=False)
    result, logs = run(hook, launch_event(job, EXECJOB_BEGIN, env={}), tmp_path)
    assert result.accepted
    assert messages(logs, LOG_DEBUG) == [f"begin: release_nodes(keep_select={ORIGINAL_SELECT}) returned None"]
    assert re.search(f"begin: release_nodes\\(keep_select={re.escape(ORIGINAL_SELECT)}\\) returned None", logs[0][1])
    assert (job.deleted, job.reran) == (False, False)


def test_list_only_prologue_hook(tmp_path: Path) -> None:
    """test_failed_begin_and_prologue_sisters_are_reported_and_offlined's prologue hook."""
    job = started()
    _, logs = run(prune_hook("execjob_prologue", prune=False), launch_event(job, EXECJOB_PROLOGUE), tmp_path)
    assert job.released_with == []
    assert messages(logs) == [
        "prolo: found vnode_list[h1]",
        "prolo: found vnode_list[h2[0]]",
        "prolo: found vnode_list[h3]",
        "prolo: found vnode_list_fail[h3]",
    ]


# ---------------------------------------------------------------------------------------------
# event_probe.py (execjob_*)


@pytest.fixture
def slept(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    naps: list[float] = []
    monkeypatch.setattr(time, "sleep", naps.append)
    return naps


@pytest.mark.parametrize(
    ("event_type", "word"),
    [
        (EXECJOB_BEGIN, "begin"),
        (EXECJOB_PROLOGUE, "prologue"),
        (EXECJOB_LAUNCH, "launch"),
        (EXECJOB_RESIZE, "resize"),
        (EXECJOB_END, str(EXECJOB_END)),
    ],
)
def test_probe_marks_where_it_runs(tmp_path: Path, event_type: int, word: str, slept: list[float]) -> None:
    event = FakeEvent(event_type, started(), env={"PBS_NODEFILE": "/x"})
    result, logs = run(probe_hook("fb0", "execjob_begin"), event, tmp_path, nodename="hostA")
    assert result.accepted
    assert logs == [(LOG_WARNING, f"fb0 {word} on hostA: started")]
    assert slept == []


def test_probe_sleeps_only_on_its_hosts(tmp_path: Path, slept: list[float]) -> None:
    hook = probe_hook("fb0", "execjob_prologue", alarm=5, sleep_on={"hostA": 3})
    assert hook.attrs == {"event": "execjob_prologue", "enabled": True, "alarm": 5}
    _, logs = run(hook, FakeEvent(EXECJOB_PROLOGUE, started()), tmp_path, nodename="hostA")
    assert messages(logs) == [
        "fb0 prologue on hostA: started",
        "fb0 prologue on hostA: sleeping 3 secs",
        "fb0 prologue on hostA: slept",
    ]
    assert slept == [3]
    _, logs = run(hook, FakeEvent(EXECJOB_PROLOGUE, started()), tmp_path, nodename="hostB")
    assert messages(logs) == ["fb0 prologue on hostB: started"]


def test_probe_ignores_task_launches(tmp_path: Path) -> None:
    result, logs = run(probe_hook("fb", "execjob_launch"), FakeEvent(EXECJOB_LAUNCH, started()), tmp_path)
    assert result.accepted
    assert logs == []


class RefusingServer:
    """A server object that refuses every attribute set, as the launch hook's server does."""

    def __setattr__(self, name: str, value: object) -> None:
        raise AssertionError(LAUNCH_SET_REFUSED)


def test_probe_tries_sets_then_holds_and_rejects(tmp_path: Path) -> None:
    """test_launch_hook_sets_job_and_vnode_attributes_but_not_server_ones's hook and its lines."""
    hook = probe_hook("fb", "execjob_launch", try_set=["vnode", "job", "server"], hold_and_reject=True)
    job = started()
    event = FakeEvent(EXECJOB_LAUNCH, job, env={"PBS_NODEFILE": "/x"}, vnode_list={"hostA": FakeVnode()})
    result, logs = run(hook, event, tmp_path, nodename="hostA", server=RefusingServer())
    assert (result.accepted, result.message) == (False, "held by fb")
    assert (job.Hold_Types, job.reran) == ("hold_types(s)", True)
    assert (job.comment, event.vnode_list["hostA"].comment) == ("set by fb", "set by fb")
    tried = {
        what: next(m for m in messages(logs) if f"fb launch on hostA: set {what} attribute: " in m)
        for what in ("vnode", "job", "server")
    }
    assert tried["vnode"].endswith("set vnode attribute: accepted")
    assert tried["job"].endswith("set job attribute: accepted")
    assert tried["server"].endswith(f"set server attribute: AssertionError: {LAUNCH_SET_REFUSED}")


def test_probe_holds_only_on_the_primary(tmp_path: Path) -> None:
    job = started(ms=False)
    hook = probe_hook("fb", "execjob_launch", hold_and_reject=True)
    result, _ = run(hook, FakeEvent(EXECJOB_LAUNCH, job, env={"PBS_NODEFILE": "/x"}), tmp_path)
    assert result.accepted
    assert not job.reran


# ---------------------------------------------------------------------------------------------
# launch_sets_job_attributes.py (execjob_launch)

NOW = 1_700_000_000


@pytest.mark.parametrize("rerun", [True, False])
def test_launch_sets_execution_time_run_count_and_cput(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rerun: bool
) -> None:
    monkeypatch.setattr(time, "time", lambda: NOW + 0.7)
    job = started()
    hook = launch_sets_hook("fb", run_count=5, cput="00:10:00", rerun=rerun)
    result, logs = run(hook, FakeEvent(EXECJOB_LAUNCH, job), tmp_path)
    assert (job.Execution_Time, job.run_count, job.resources_used) == (NOW + 3600, 5, {"cput": "duration(00:10:00)"})
    (line,) = messages(logs, EVENT_DEBUG)
    assert line == f"fb set Execution_Time={time.ctime(NOW + 3600)} run_count=5 cput=00:10:00"
    # test_launch_hook_sets_execution_time_run_count_and_resources_used
    assert re.search("fb set Execution_Time=.* run_count=5 cput=00:10:00$", line)
    assert re.search(r"Execution_Time=(.*) run_count=", line)[1] == time.ctime(NOW + 3600)
    assert (result.accepted, result.message, job.reran) == (
        (False, "fb requeues the job", True) if rerun else (True, "", False)
    )


def test_launch_sets_nothing_on_a_sister(tmp_path: Path) -> None:
    job = started(ms=False)
    result, logs = run(
        launch_sets_hook("fb", run_count=5, cput="00:10:00", rerun=True), FakeEvent(EXECJOB_LAUNCH, job), tmp_path
    )
    assert result.accepted
    assert logs == []
    assert not hasattr(job, "Execution_Time")


# ---------------------------------------------------------------------------------------------
# The ramp-down and admin-suspend hooks


@pytest.mark.parametrize("value", [True, False])
@pytest.mark.parametrize("event", ["queuejob", "modifyjob"])
def test_set_release_nodes_on_stageout(tmp_path: Path, value: bool, event: str) -> None:
    hook = hook_set_release_nodes_on_stageout(value, event)
    assert hook.attrs == {"event": event, "enabled": True}
    job = FakeJob()
    result, logs = run(hook, FakeEvent(QUEUEJOB, job), tmp_path)
    assert result.accepted
    assert job.release_nodes_on_stageout is value
    assert logs == [(LOG_DEBUG, f"ramp_down hook set release_nodes_on_stageout={value}")]


def test_log_event_on_this_host(tmp_path: Path) -> None:
    hook = hook_log_event_on_this_host("ramp_down hook", "execjob_end")
    assert hook.attrs == {"event": "execjob_end", "enabled": True}
    event = FakeEvent(EXECJOB_END, started(), hook_name="rd_end")
    result, logs = run(hook, event, tmp_path, nodename="hostB")
    assert result.accepted
    assert logs == [(LOG_DEBUG, "ramp_down hook rd_end on hostB")]


def test_log_event_on_this_host_runs_on_for_its_sleep(tmp_path: Path) -> None:
    hook = hook_log_event_on_this_host("slow end hook", "execjob_end", sleep=0.01)
    event = FakeEvent(EXECJOB_END, started(), hook_name="rd_slow_end")
    result, logs = run(hook, event, tmp_path, nodename="hostB")
    assert result.accepted
    assert logs == [
        (LOG_DEBUG, "slow end hook rd_slow_end on hostB"),
        (LOG_DEBUG, "slow end hook rd_slow_end done on hostB"),
    ]


class OneVnodeServer:
    def __init__(self, name: str, vnode: FakeVnode) -> None:
        self.name, self.node, self.asked = name, vnode, []

    def vnode(self, name: str) -> FakeVnode:
        self.asked.append(name)
        return self.node


@pytest.mark.parametrize(
    ("vnode", "tail"),
    [
        (FakeVnode(state=0, maintenance_jobs=None), "maintenance_jobs=None maintenance=False"),
        (
            FakeVnode(state=ND_STATE_MAINTENANCE | 0x2, maintenance_jobs="12.srv"),
            "maintenance_jobs=12.srv maintenance=True",
        ),
    ],
)
def test_log_vnode_maintenance(tmp_path: Path, vnode: FakeVnode, tail: str) -> None:
    server = OneVnodeServer("hostA", vnode)
    result, logs = run(
        hook_log_vnode_maintenance("hostA"), FakeEvent(QUEUEJOB, FakeJob(Job_Name="as3")), tmp_path, server=server
    )
    assert result.accepted
    assert server.asked == ["hostA"]
    assert logs == [(LOG_DEBUG, f"admin_suspend probe as3: hostA {tail}")]
    # test_hooks_see_maintenance_jobs_and_the_maintenance_state
    assert re.search(rf"admin_suspend probe as3: {re.escape('hostA')} ", logs[0][1])
    assert logs[0][1].endswith(tail)


# ---------------------------------------------------------------------------------------------
# Every hook file: used by a factory, refuses to run without its config

EVERY_HOOK = [
    pad_hook(),
    select_probe_hook("incr"),
    prune_hook(),
    probe_hook("fb", "execjob_begin"),
    launch_sets_hook("fb", run_count=1, cput="00:00:01", rerun=False),
    hook_set_release_nodes_on_stageout(True),
    hook_log_event_on_this_host("tag", "execjob_end"),
    hook_log_vnode_maintenance("v"),
]


def test_every_hook_file_has_a_factory_and_no_package() -> None:
    assert sorted(h.file for h in EVERY_HOOK) == sorted(p.name for p in HOOKS_DIR.glob("*.py"))
    assert not (HOOKS_DIR / "__init__.py").exists()  # never imported: they need a daemon's pbs module


@pytest.mark.parametrize("hook", EVERY_HOOK, ids=lambda h: h.file)
def test_every_hook_needs_its_config(hook: SuiteHook) -> None:
    fakepbs.install(FakeEvent(QUEUEJOB, FakeJob()), None)
    try:
        with pytest.raises(RuntimeError, match=r"no hook config file \(pbs.hook_config_filename is None\)"):
            runpy.run_path(str(hook.path))
    finally:
        sys.modules.pop("pbs", None)


def test_test_hook_names_an_existing_file_and_writes_sorted_json() -> None:
    with pytest.raises(ValueError, match="no hook file"):
        SuiteHook("nope.py", {})
    hook = SuiteHook("event_probe.py", {"event": "execjob_begin"}, {"tag": "t", "sleep_on": {"b": 1, "a": 2}})
    assert hook.config_text == '{"sleep_on": {"a": 2, "b": 1}, "tag": "t"}\n'
    assert hook.body == (HOOKS_DIR / "event_probe.py").read_text()


# ---------------------------------------------------------------------------------------------
# The moms' copy: body and config


def test_mom_hook_view_parses_body_and_config_digests() -> None:
    text = "fb_pad true - -\nfb_launch true aaa bbb\nrjs_prune false ccc -\ngarbage line\n"
    assert parse_mom_hook_view(text) == {
        "fb_pad": MomHook("true", "", ""),
        "fb_launch": MomHook("true", "aaa", "bbb"),
        "rjs_prune": MomHook("false", "ccc", ""),
    }


def test_mom_hook_view_script_on_a_hook_directory(tmp_path: Path) -> None:
    """The listing script, run by a local shell on a stand-in mom_priv/hooks."""
    hooks = tmp_path / "mom_priv" / "hooks"
    hooks.mkdir(parents=True)

    def run(script: str) -> subprocess.CompletedProcess:  # like host.run: never raises
        return subprocess.run(["sh", "-c", script], check=False, capture_output=True, text=True)

    cluster = SimpleNamespace(pbs_home=tmp_path, hosts={"m": SimpleNamespace(run=run)})
    assert hook_files.mom_hook_view(cluster, "m") == {}  # type: ignore[arg-type]
    files = {
        "launch.HK": "type=site\nevent=execjob_launch\n",
        "launch.PY": "body\n",
        "launch.CF": '{"tag": "launch"}\n',
        "fault.HK": "enabled=false\n",
        "fault.PY": "fault body\n",
        "PBS_cgroups.HK": "",
    }
    for name, text in files.items():
        (hooks / name).write_text(text)
    assert hook_files.mom_hook_view(cluster, "m") == {  # type: ignore[arg-type]
        "launch": MomHook("true", md5("body\n"), md5('{"tag": "launch"}\n')),
        "fault": MomHook("false", md5("fault body\n"), ""),
    }


def test_mom_holds_needs_the_config_too() -> None:
    server = {"launch": "true", "fault": "true"}
    digests = {"launch": ("body", "new"), "fault": ("fbody", None)}
    new_body_old_config = {"launch": MomHook("true", "body", "old"), "fault": MomHook("true", "fbody", "")}
    assert not mom_holds(new_body_old_config, server, digests)
    assert not mom_holds({**new_body_old_config, "launch": MomHook("true", "body", "")}, server, digests)
    assert mom_holds({**new_body_old_config, "launch": MomHook("true", "body", "new")}, server, digests)
    # a stale hook, or a missing one, is never the server's set
    assert not mom_holds({**new_body_old_config, "stale": MomHook("true", "x", "")}, server, {})
    assert not mom_holds({"launch": MomHook("true", "body", "new")}, server, {})


class StandInCluster:
    """One mom whose hook directory listing the test scripts, poll by poll."""

    def __init__(self, views: list[str]) -> None:
        self.views = views
        self.pbs_home = "/var/spool/pbs"
        self.moms = [SimpleNamespace(name="mom1")]
        self.hosts = {"mom1": SimpleNamespace(run=self.listing)}

    def listing(self, script: str) -> SimpleNamespace:
        assert "mom_priv/hooks" in script
        return SimpleNamespace(stdout=self.views.pop(0) if len(self.views) > 1 else self.views[0])


def test_install_hooks_imports_the_config_and_waits_for_it_on_the_moms() -> None:
    hooks = {"launch": prune_hook(), "pad": pad_hook()}
    created: list[tuple[str, str, dict, str | None]] = []
    pbs = SimpleNamespace(
        hooks=SimpleNamespace(
            create=lambda name, body, attrs, *, config=None: created.append((name, body, dict(attrs), config)),
            attributes=lambda: {
                "launch": {"event": "execjob_launch", "enabled": "True"},
                "pad": {"event": "queuejob", "enabled": "True"},
            },
        )
    )
    launch = hooks["launch"]
    body, config = md5(launch.body), md5(launch.config_text)
    cluster = StandInCluster([f"launch true {body} -", f"launch true {body} {config}"])
    install_hooks(pbs, cluster, hooks)  # type: ignore[arg-type]
    assert created == [(name, h.body, dict(h.attrs), h.config_text) for name, h in hooks.items()]
    assert cluster.views == [f"launch true {body} {config}"]  # it waited past the config-less poll


# ---------------------------------------------------------------------------------------------
# No hook body as a string in ptl_tests/


def hook_body_strings(source: str, filename: str = "<source>") -> list[int]:
    """Line numbers of string literals (f-strings joined) holding both "import pbs" and "pbs.event()"."""
    found = set()
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.JoinedStr):
            text = "".join(v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        else:
            continue
        if "import pbs" in text and "pbs.event()" in text:
            found.add(node.lineno)
    return sorted(found)


def test_the_detector_finds_hook_bodies_in_plain_and_f_strings() -> None:
    old_style = '''
BODY = """import pbs
e = pbs.event()
e.accept()
"""


def body(tag):
    return f"""import pbs

e = pbs.event()
pbs.logmsg(pbs.LOG_DEBUG, "{tag} %s" % e.hook_name)
"""
'''
    assert hook_body_strings(old_style) == [2, 9]
    assert hook_body_strings('DOC = "hooks read pbs.hook_config_filename"\n') == []


def test_no_hook_body_as_a_string_in_ptl_tests() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in sorted(PTL_TESTS.rglob("*.py"))
        if path.parent != HOOKS_DIR
        for line in hook_body_strings(path.read_text(), str(path))
    ]
    assert found == [], "put the hook in ptl_tests/hooks/ with a JSON config (ptl_tests/hook_files.py)"
    assert hook_files.HOOKS_DIR == PTL_TESTS / "hooks"
