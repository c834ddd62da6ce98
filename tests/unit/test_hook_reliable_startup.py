"""Logic of hooks/reliable_startup.py, run against tests/unit/fakepbs.py (a FAKE pbs module).

What is checked is our hook's decisions (which increment it passes, what it saves, when it prunes,
what it does on failure, how it treats bad config); what OpenPBS does with them is the job of
ptl_tests/reliable_startup/padding_pruning/test_site_hook_pack.py on a real cluster.
"""

from __future__ import annotations

import json
import runpy
import sys
from pathlib import Path

import pytest

from tests.unit import fakepbs
from tests.unit.fakepbs import EXECJOB_LAUNCH, EXECJOB_PROLOGUE, QUEUEJOB, FakeEvent, FakeJob, FakeSelect, FakeVnode

HOOK = Path(__file__).resolve().parents[2] / "hooks" / "reliable_startup.py"
SHIPPED_CONFIG = HOOK.with_suffix(".json")


def run_hook(event: FakeEvent, config: dict | str | None, tmp_path: Path) -> tuple[fakepbs.HookExit, list]:
    path = None
    if config is not None:
        path = tmp_path / "config.json"
        path.write_text(config if isinstance(config, str) else json.dumps(config))
    logs = fakepbs.install(event, str(path) if path else None)
    FakeSelect.calls = []
    try:
        with pytest.raises(fakepbs.HookExit) as outcome:
            runpy.run_path(str(HOOK))
    finally:
        sys.modules.pop("pbs", None)
    return outcome.value, logs


def queued_job(select: str = "ncpus=3:mem=1gb+2:ncpus=2", **kw: object) -> FakeJob:
    return FakeJob(Resource_List={"select": FakeSelect(select)}, **kw)


@pytest.mark.parametrize(
    ("increment", "passed"),
    [
        (2, 2),
        ("3", "3"),
        ("23.5%", "23.5%"),
        ({"0": 0, "1": 4, "2": "50%"}, {0: 0, 1: 4, 2: "50%"}),
    ],
)
def test_queuejob_pads_with_each_increment_form(tmp_path: Path, increment: object, passed: object) -> None:
    job = queued_job()
    result, _ = run_hook(FakeEvent(QUEUEJOB, job), {"increment": increment}, tmp_path)
    assert result.accepted
    assert FakeSelect.calls == [passed]
    assert job.Resource_List["site"] == "ncpus=3:mem=1gb+2:ncpus=2"
    assert job.Resource_List["select"] == "padded(ncpus=3:mem=1gb+2:ncpus=2)"
    assert job.tolerate_node_failures == "job_start"


def test_queuejob_tolerance_all_and_other_resource(tmp_path: Path) -> None:
    job = queued_job()
    run_hook(FakeEvent(QUEUEJOB, job), {"tolerance": "all", "save_select_in": "software"}, tmp_path)
    assert job.tolerate_node_failures == "all"
    assert job.Resource_List["software"] == "ncpus=3:mem=1gb+2:ncpus=2"


@pytest.mark.parametrize(
    ("job", "config", "why"),
    [
        (queued_job(interactive=True), {}, "interactive"),
        (queued_job(tolerate_node_failures="none"), {}, "sets tolerate_node_failures=none itself"),
        (queued_job("ncpus=1"), {"min_chunks": 2}, "fewer than 2 chunks"),
        (FakeJob(Resource_List={"select": None}), {}, "no select"),
    ],
)
def test_queuejob_leaves_jobs_it_should_not_touch(tmp_path: Path, job: FakeJob, config: dict, why: str) -> None:
    before = dict(job.Resource_List)
    result, logs = run_hook(FakeEvent(QUEUEJOB, job), config, tmp_path)
    assert result.accepted
    assert job.Resource_List == before
    assert FakeSelect.calls == []
    assert any(why in msg for _, msg in logs), logs


def test_queuejob_can_override_the_users_choice_when_configured(tmp_path: Path) -> None:
    job = queued_job(tolerate_node_failures="none")
    run_hook(FakeEvent(QUEUEJOB, job), {"respect_user_tolerance": False}, tmp_path)
    assert job.tolerate_node_failures == "job_start"


def test_chunk_count_of_min_chunks_counts_repeats(tmp_path: Path) -> None:
    job = queued_job("2:ncpus=1")
    run_hook(FakeEvent(QUEUEJOB, job), {"min_chunks": 2}, tmp_path)
    assert FakeSelect.calls == [1]


def launched_job(**kw: object) -> FakeJob:
    return FakeJob(Resource_List={"select": "padded", "site": "ncpus=1+ncpus=1"}, **kw)


def test_launch_prunes_to_the_saved_select_on_the_primary_mom(tmp_path: Path) -> None:
    job = launched_job()
    event = FakeEvent(EXECJOB_LAUNCH, job, env={"PBS_NODEFILE": "/x"})
    result, logs = run_hook(event, {}, tmp_path)
    assert result.accepted
    assert job.released_with == ["ncpus=1+ncpus=1"]
    assert any("pruned to exec_vnode=(kept)" in msg for _, msg in logs)
    # OpenPBS frees the event's job with the last reference to release_nodes()'s result.
    assert job.results_alive_at_accept is True


@pytest.mark.parametrize(
    ("event_type", "env", "ms"),
    [(EXECJOB_LAUNCH, {}, True), (EXECJOB_LAUNCH, {"PBS_NODEFILE": "/x"}, False), (EXECJOB_PROLOGUE, {}, False)],
)
def test_launch_does_nothing_for_tasks_or_on_sisters(tmp_path: Path, event_type: int, env: dict, ms: bool) -> None:
    job = launched_job(ms=ms)
    result, _ = run_hook(FakeEvent(event_type, job, env=env), {}, tmp_path)
    assert result.accepted
    assert job.released_with == []


def test_prologue_prunes_on_the_primary_mom(tmp_path: Path) -> None:
    job = launched_job()
    run_hook(FakeEvent(EXECJOB_PROLOGUE, job), {}, tmp_path)
    assert job.released_with == ["ncpus=1+ncpus=1"]


def test_launch_ignores_jobs_it_did_not_pad(tmp_path: Path) -> None:
    job = FakeJob(Resource_List={"select": "ncpus=1"})
    run_hook(FakeEvent(EXECJOB_LAUNCH, job, env={"PBS_NODEFILE": "/x"}), {}, tmp_path)
    assert job.released_with == []


def test_failed_vnodes_offlined_when_configured(tmp_path: Path) -> None:
    job = launched_job()
    failed = {"pbsh03": FakeVnode(), "pbsh04": FakeVnode()}
    event = FakeEvent(EXECJOB_LAUNCH, job, env={"PBS_NODEFILE": "/x"}, vnode_list_fail=failed)
    run_hook(event, {"offline_failed_vnodes": True}, tmp_path)
    assert {v.state for v in failed.values()} == {fakepbs.ND_OFFLINE}
    failed = {"pbsh03": FakeVnode()}
    event = FakeEvent(EXECJOB_LAUNCH, launched_job(), env={"PBS_NODEFILE": "/x"}, vnode_list_fail=failed)
    run_hook(event, {}, tmp_path)
    assert failed["pbsh03"].state is None


def test_prune_failure_holds_and_requeues_by_default(tmp_path: Path) -> None:
    job = launched_job(prune_result=None)
    result, _ = run_hook(FakeEvent(EXECJOB_LAUNCH, job, env={"PBS_NODEFILE": "/x"}), {}, tmp_path)
    assert not result.accepted
    assert "job held (s) and requeued" in result.message
    assert job.Hold_Types == "hold_types(s)"
    assert job.reran
    assert not job.deleted


def test_prune_failure_can_delete(tmp_path: Path) -> None:
    job = launched_job(prune_result=None)
    result, _ = run_hook(
        FakeEvent(EXECJOB_LAUNCH, job, env={"PBS_NODEFILE": "/x"}), {"on_prune_failure": "delete"}, tmp_path
    )
    assert not result.accepted
    assert "job deleted" in result.message
    assert job.deleted
    assert not job.reran


@pytest.mark.parametrize(
    ("config", "words"),
    [
        ("{not json", "Expecting property name"),
        ("[1, 2]", "must be a JSON object"),
        ({"tolerance": "always"}, "tolerance: 'always' must be one of"),
        ({"increment": -1}, "increment: -1 is negative"),
        ({"increment": 0}, "increment: 0 pads nothing"),
        ({"increment": "0"}, "increment: 0 pads nothing"),
        ({"increment": True}, "is a boolean"),
        ({"increment": 1.5}, "is not an increment"),
        ({"increment": "lots"}, "is not an increment"),
        ({"increment": {}}, "per-chunk object is empty"),
        ({"increment": {"first": 1}}, "chunk index 'first'"),
        ({"increment": {"1": "x%"}}, "increment[1]"),
        ({"min_chunks": 0}, "min_chunks"),
        ({"enabled": "yes"}, "enabled: 'yes' must be true or false"),
        ({"on_prune_failure": "ignore"}, "on_prune_failure"),
        ({"save_select_in": "bad name"}, "save_select_in"),
        ({"tolerence": "all"}, "unknown keys ['tolerence']"),
    ],
)
def test_bad_config_is_logged_and_the_job_left_alone(tmp_path: Path, config: object, words: str) -> None:
    job = queued_job()
    result, logs = run_hook(FakeEvent(QUEUEJOB, job), config, tmp_path)
    assert result.accepted
    assert FakeSelect.calls == []
    assert job.tolerate_node_failures is None
    errors = [msg for level, msg in logs if level == fakepbs.LOG_ERROR]
    assert len(errors) == 1
    assert "invalid hook configuration, doing nothing" in errors[0]
    assert words in errors[0]


def test_disabled_and_no_config(tmp_path: Path) -> None:
    job = queued_job()
    run_hook(FakeEvent(QUEUEJOB, job), {"enabled": False}, tmp_path)
    assert FakeSelect.calls == []
    job = queued_job()
    run_hook(FakeEvent(QUEUEJOB, job), None, tmp_path)  # no config file: defaults apply
    assert FakeSelect.calls == [1]


def test_shipped_config_is_valid(tmp_path: Path) -> None:
    job = queued_job()
    result, logs = run_hook(FakeEvent(QUEUEJOB, job), SHIPPED_CONFIG.read_text(), tmp_path)
    assert result.accepted
    assert not [m for level, m in logs if level == fakepbs.LOG_ERROR]
