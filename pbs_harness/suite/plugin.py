"""pytest wiring for the acceptance suites.

Session: inventory -> cluster (SSH connections) -> pbs (client) -> baseline (healed cluster,
snapshot). Per test (any test using `cluster`): a command transcript, a `nemesis` whose faults
are healed in teardown, an evidence folder when the test failed, and the baseline restored and
verified — a test that leaks state it cannot restore fails in teardown naming the leak.

What is judged here lives in its own module: whether the suites can run and on what
(pbs_harness.suite.availability, once per session), healing what a killed run left (the nemesis's
setup, once, through each host's kind: pbs_harness.suite.faults.Nemesis.setup), the baseline
(pbs_harness.suite.baseline), whether a test failed (pbs_harness.suite.outcome).
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import threading
import warnings
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from pbs_harness.common.waits import WaitTimeout
from pbs_harness.pbs.client import Pbs
from pbs_harness.pbs.evidence import collect, page, timeline
from pbs_harness.remote import inventory as inventory_mod
from pbs_harness.remote.cluster import Cluster
from pbs_harness.remote.transport import CommandResult
from pbs_harness.suite import availability, defects, leaks, outcome, precheck, release_features, session_lock
from pbs_harness.suite import baseline as baseline_mod
from pbs_harness.suite import declared as declared_mod
from pbs_harness.suite import topology as topology_mod
from pbs_harness.suite.defect_retry import DEFECT_KEY, attempt_of, end_attempt, uses_cluster
from pbs_harness.suite.evidence_dir import evidence_root
from pbs_harness.suite.faults import Nemesis
from pbs_harness.suite.markers import MARKERS
from pbs_harness.suite.parallel import binding


class BaselineRepairWarning(UserWarning):
    """The harness repaired something beyond deleting the test's work (named in the text): at session
    start what a killed run left, after a test what it changed or (after the leak was reported as a
    failure or a known bug's xfail) what OpenPBS leaked."""


def _repair_reporter(config: pytest.Config) -> Callable[[str], None]:
    """Tells of a repair twice: a BaselineRepairWarning of the test being set up or torn down, and a
    line of the conformance report (carried by that test's report: pbs_harness.conformance.recorder)."""

    def report(text: str) -> None:
        warnings.warn(text, BaselineRepairWarning, stacklevel=2)
        if config.pluginmanager.has_plugin("pbs_harness.conformance.recorder"):
            from pbs_harness.conformance import recorder

            recorder.record_repair(config, text)

    return report


EVIDENCE_KEY = pytest.StashKey[list[str]]()
# The jobs the server had when the test (this attempt) started: a diagnosis looks only at the others.
JOBS_BEFORE_KEY = pytest.StashKey[frozenset[str]]()
# What the call phase's leak check needs (pbs, baseline, nemesis), and what it left for teardown.
# An exception of the call phase's leak check itself (not a leak): for the evidence's hang capture.
HARNESS_ERROR_KEY = pytest.StashKey[Exception]()
LEAK_CHECK_KEY = pytest.StashKey[tuple[Pbs, baseline_mod.Snapshot, Nemesis]]()
HELD_BEFORE_KEY = pytest.StashKey[frozenset[str]]()  # jobs moms held when the test began
LEAK_RAISED_KEY = outcome.LEAK_FOUND_KEY
HEAL_PROBLEMS_KEY = pytest.StashKey[list[str]]()


@pytest.fixture
def repaired(request: pytest.FixtureRequest) -> Callable[[str], None]:
    """For a test that repairs the cluster itself (say, a server restart after a known bug left a
    vnode assigned): tell the repair, and it is reported like the baseline's own repairs."""
    return _repair_reporter(request.config)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("pbs-harness")
    group.addoption(
        "--inventory",
        default=os.environ.get(availability.INVENTORY_ENV),
        help="Ansible inventory of the cluster under test (default: inventory/local)",
    )
    group.addoption(
        "--evidence-dir",
        default=None,
        help="where evidence folders of failed tests go (default: reports/evidence)",
    )


def _interrupt_on_sigterm(signum: int, frame: object) -> None:
    # A CI timeout or `kill` must heal injected faults like Ctrl-C does: pytest turns
    # KeyboardInterrupt into teardown of the running test, then stops the session.
    raise KeyboardInterrupt(f"signal {signum}")


def pytest_configure(config: pytest.Config) -> None:
    for name, text in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {text}")
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _interrupt_on_sigterm)
        # A shell starts background jobs with SIGINT ignored; Ctrl-C/kill -INT must still heal.
        if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
            signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    release_features.check_markers(items)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[pytest.TestReport]:
    report = yield
    outcome.record(item, report)
    return report


def target_line(config: pytest.Config) -> str:
    """One line: whether the suites found a cluster, and which (in a parallel run: each worker's)."""
    if getattr(config.option, "worker_inventories", None) and not hasattr(config, "workerinput"):
        return binding.targets_line(config)
    reason = availability.unavailable_reason(config, reach=False)
    if reason:
        return f"pbs-harness: no cluster: acceptance suites skipped ({reason})"
    return f"pbs-harness: acceptance target: {availability.describe_target(config)}"


def pytest_report_header(config: pytest.Config) -> str:
    return target_line(config)


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    # With -q pytest shows no header; the target line is shown all the same.
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None and session.config.get_verbosity() < 0:
        reporter.write_line(target_line(session.config))


@pytest.fixture(scope="session")
def inventory(pytestconfig: pytest.Config) -> inventory_mod.Inventory:
    reason = availability.unavailable_reason(pytestconfig)
    if reason:
        pytest.skip(reason)
    return availability.session_inventory(pytestconfig)


@pytest.fixture(scope="session")
def cluster(inventory: inventory_mod.Inventory) -> Iterator[Cluster]:
    c = Cluster.from_inventory(inventory)
    yield c
    c.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """A wait that timed out because of a known OpenPBS defect in one of the test's own jobs
    (pbs_harness.suite.defects, diagnosed on the cluster before teardown touches it) ends the attempt
    naming the defect (defect_retry: another attempt follows; met on every attempt it fails); any
    other is a failure. Without the list of jobs the test started with, nothing is diagnosed.

    A body that passed is followed, still in the call phase, by the leak check (pbs_harness.suite.leaks):
    what OpenPBS keeps of the test's work once it is gone fails the test, or is the strict xfail of
    the one known bug it reproduces."""
    try:
        result = yield
    except WaitTimeout as exc:
        cluster = item.funcargs.get("cluster") if isinstance(item, pytest.Function) else None
        before = item.stash.get(JOBS_BEFORE_KEY, None)
        diagnosis = defects.diagnose(cluster, before) if cluster is not None and before is not None else None
        if diagnosis is None:
            raise
        end_attempt(item, diagnosis, f". The test's wait: {str(exc)[:400]}")
    _check_leaks(item)
    return result


def _check_leaks(item: pytest.Item) -> None:
    """Heal the test's faults, remove its work (baseline.clear_test_work), then raise what leaked."""
    context = item.stash.get(LEAK_CHECK_KEY, None)
    if context is None:
        return
    pbs, base, nemesis = context
    problems = nemesis.heal_all()
    if problems:  # teardown reports them; a cluster not healed is no place to judge leaks
        item.stash[HEAL_PROBLEMS_KEY] = problems
        return
    try:
        held_before = item.stash.get(HELD_BEFORE_KEY, frozenset())
        kept = baseline_mod.clear_test_work(pbs, base, held_before=held_before)
        found = leaks.settle(pbs, probe=functools.partial(leaks.find, held_before=held_before), kept_already=kept)
    except Exception as exc:
        # The harness's own leak check broke (the test fails on it as it came): its teardown evidence
        # adds, for a command that hung, what the hosts were doing.
        item.stash[HARNESS_ERROR_KEY] = exc
        raise
    if found:
        item.stash[LEAK_RAISED_KEY] = True
        raise leaks.error(found, expected_leak(item))


def expected_leak(item: pytest.Item) -> type[leaks.Leaked] | None:
    marker = item.get_closest_marker("leak_of")
    return marker.args[0] if marker is not None else None


@pytest.hookimpl(wrapper=True)
def pytest_runtestloop(session: pytest.Session) -> Iterator[object]:
    """Hold the cluster's session lock for the whole test loop when any selected test uses the cluster.

    Taken here rather than in a fixture so that waiting for another session is not counted in the
    first test's pytest-timeout.
    """
    config = session.config
    if session.config.option.collectonly or not any(uses_cluster(i) for i in session.items):
        return (yield)
    if availability.unavailable_reason(config, reach=False) is not None:
        return (yield)  # the inventory fixture skips the tests with the reason
    inv = availability.session_inventory(config)
    reporter = config.pluginmanager.get_plugin("terminalreporter")

    def say(text: str) -> None:
        if reporter is not None:
            reporter.write_line(f"pbs-harness: {text}")

    with session_lock.hold(precheck.cluster_key(inv), say):
        return (yield)


@pytest.fixture(scope="session")
def pbs(cluster: Cluster) -> Pbs:
    return Pbs(cluster)


@pytest.fixture(scope="session")
def topology(inventory: inventory_mod.Inventory, pbs: Pbs) -> topology_mod.Topology:
    """Which host plays which part (server, plain hosts, multi-vnode host, resource hosts, users):
    suites ask it by role and never name a host."""
    return topology_mod.build(inventory, pbs.nodes.all())


@pytest.fixture(scope="session")
def baseline(pbs: Pbs, pytestconfig: pytest.Config) -> baseline_mod.Snapshot:
    """The cluster's declared state, made true at session start (hosts healed, leftovers of killed
    runs and server restarts repaired and reported), and its snapshot."""
    inv = pbs.cluster.inventory
    problems = availability.heal_leftovers(pytestconfig, inv, pbs.cluster)
    healed = pytestconfig.stash[availability.HEALED_KEY]
    folder = evidence_root(pytestconfig)
    folder.mkdir(parents=True, exist_ok=True)
    healed.write(folder / "session-setup-faults.txt")  # the heals' lines, begun and ended
    if problems:
        pytest.fail("the session's setup could not heal what a killed run left: " + "; ".join(problems), pytrace=False)
    if pytestconfig.pluginmanager.has_plugin("pbs_harness.conformance.recorder"):
        from pbs_harness.conformance import environment, recorder

        recorder.record_environment(pytestconfig, environment.of(pbs))
    try:
        return baseline_mod.take_at_session_start(pbs, repaired=_repair_reporter(pytestconfig))
    except (declared_mod.NotDeclared, baseline_mod.NotAtBaseline) as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def release_checked(pbs: Pbs, baseline: baseline_mod.Snapshot, pytestconfig: pytest.Config) -> None:
    """Every run, whatever -m selects: the release-feature probes agree with the build's version, or
    every cluster test fails naming the disagreement (pbs_harness.suite.release_features). After the
    baseline: the session-start repair has healed the cluster the probes ask."""
    release_features.check_against_release(pbs, pytestconfig)


@pytest.fixture
def harness_test(request: pytest.FixtureRequest, pbs: Pbs, baseline: baseline_mod.Snapshot) -> Iterator[Nemesis]:
    """Per-test machinery: transcript, nemesis, evidence on failure, baseline restore + check."""
    since = datetime.now() - timedelta(seconds=1)
    request.node.stash[JOBS_BEFORE_KEY] = defects.jobs_now(pbs.cluster)
    # Jobs moms already hold are not the test's: its leak check does not wait for them (clear_test_work).
    # Unreadable now: none, and the check waits for every held job as it did before.
    request.node.stash[HELD_BEFORE_KEY] = frozenset()
    with contextlib.suppress(Exception):
        request.node.stash[HELD_BEFORE_KEY] = leaks.held_job_ids(pbs)
    transcript: list[tuple[datetime, CommandResult]] = []  # (when it ended, the command)

    def keep(result: CommandResult) -> None:
        transcript.append((datetime.now(), result))

    for host in pbs.cluster:
        host.recorders.append(keep)
    nemesis = Nemesis(pbs.cluster)
    request.node.stash[LEAK_CHECK_KEY] = (pbs, baseline, nemesis)
    try:
        yield nemesis
    finally:
        try:
            _teardown(request, pbs, baseline=baseline, nemesis=nemesis, since=since, transcript=transcript)
        finally:
            for host in pbs.cluster:
                host.recorders.remove(keep)


def _teardown(
    request: pytest.FixtureRequest,
    pbs: Pbs,
    *,
    baseline: baseline_mod.Snapshot,
    nemesis: Nemesis,
    since: datetime,
    transcript: list[tuple[datetime, CommandResult]],
) -> None:
    """Evidence of a failed/xfailed test, faults healed, baseline restored and checked. A teardown
    error of the harness's own restore or leak check (an exception or what it could not put back)
    leaves the same evidence folder through the one path, _keep_evidence, and stays an error."""
    why = _evidence_reason(request.node)
    folder = _evidence_folder(request) if why else None
    if folder is not None:
        collect.capture_state(pbs.cluster, folder)  # as the test left it, before faults are healed
    heal_problems = request.node.stash.get(HEAL_PROBLEMS_KEY, []) + nemesis.heal_all()
    if folder is not None:
        broke = request.node.stash.get(HARNESS_ERROR_KEY, None)
        _keep_evidence(
            request,
            pbs,
            nemesis=nemesis,
            since=since,
            transcript=transcript,
            why=why,
            error=_describe(broke) if broke is not None else "",
            hang=broke is not None and _is_hang(broke),
            state_taken=True,
        )
    if nemesis.log.events:  # the fault log (faults/log.py): in the JUnit of every test that injected one
        request.node.user_properties.append(("faults", nemesis.log.text()))
        from pbs_harness.conformance import recorder  # the recorder is an optional plugin

        recorder.record_faults(request.node, nemesis.log.windows())
    try:
        restored = baseline_mod.restore(
            pbs,
            baseline,
            repaired=_repair_reporter(request.config),
            held_before=request.node.stash.get(HELD_BEFORE_KEY, frozenset()),
        )
    except Exception as exc:
        try:
            if folder is None:  # the error is raised as it came, after the evidence
                _keep_evidence(
                    request,
                    pbs,
                    nemesis=nemesis,
                    since=since,
                    transcript=transcript,
                    why=TEARDOWN_ERROR,
                    error=_describe(exc),
                    hang=_is_hang(exc),
                )
            else:  # the test's own folder, written before the restore: the teardown error is added to it
                with (folder / "failure.txt").open("a") as fh:
                    fh.write(f"\n{TEARDOWN_ERROR}:\n{_describe(exc)}\n")
                if _is_hang(exc):
                    collect.capture_hang(pbs.cluster, folder)
        except Exception as lost:  # noqa: BLE001 - the teardown's own error is the one raised
            exc.add_note(f"its evidence folder could not be written: {_describe(lost)}")
        raise
    # Leaks the call phase did not judge (its body failed, or the leak came with the restore):
    # a finding all the same, repaired by now so that the next test starts at the baseline.
    found = [] if request.node.stash.get(LEAK_RAISED_KEY, False) else restored.leaks
    expected = expected_leak(request.node)
    if expected is not None and leaks.expected_matches(expected, found):
        # The known bug the test's leak_of names, pinned by a strict xfail (its own or another
        # test's): after a body that failed for another reason it is reported, not failed twice.
        _repair_reporter(request.config)(f"leak of the known OpenPBS bug {expected.__name__}: {'; '.join(found)}")
        found = []
    if heal_problems or restored.left or found:
        message = "; ".join(
            ([f"leak seen after the test (repaired): {'; '.join(found)}"] if found else [])
            + (
                ["teardown could not return the cluster to its baseline: " + "; ".join(heal_problems + restored.left)]
                if heal_problems or restored.left
                else []
            )
        )
        if folder is None:
            _keep_evidence(
                request, pbs, nemesis=nemesis, since=since, transcript=transcript, why=TEARDOWN_ERROR, error=message
            )
        else:
            with (folder / "failure.txt").open("a") as fh:
                fh.write(f"\n{TEARDOWN_ERROR}:\n{message}\n")
        pytest.fail(message, pytrace=False)


def _evidence_folder(request: pytest.FixtureRequest) -> Path:
    name = collect.folder_name(request.node.nodeid)
    if DEFECT_KEY in request.node.stash or attempt_of(request.node) > 1:
        name += f"-attempt{attempt_of(request.node)}"  # each attempt keeps its own evidence
    return evidence_root(request.config) / name


TEARDOWN_ERROR = "teardown error (the harness's baseline restore or leak check)"


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _is_hang(exc: BaseException) -> bool:
    """A command that did not finish (transport's TimeoutError, or a wait's): what the hosts were doing."""
    return isinstance(exc, (TimeoutError, WaitTimeout))


def _keep_evidence(
    request: pytest.FixtureRequest,
    pbs: Pbs,
    *,
    nemesis: Nemesis,
    since: datetime,
    transcript: list[tuple[datetime, CommandResult]],
    why: str,
    error: str,
    hang: bool = False,
    state_taken: bool = False,
) -> Path:
    """The evidence folder (state, logs since the test began, transcript, fault log, timeline, page);
    `error` is the teardown error when that is why; after a command that hung, each host's processes
    and the server log's tail (collect.capture_hang)."""
    inv, reports = pbs.cluster.inventory, outcome.reports(request.node)
    folder = _evidence_folder(request)
    commands = list(transcript)  # what the test and teardown ran, without the collection's reads
    if not state_taken:
        collect.capture_state(pbs.cluster, folder)
    if hang:
        collect.capture_hang(pbs.cluster, folder)
    logs = collect.capture_logs(pbs.cluster, folder, since)
    longrepr = "\n".join(str(r.longrepr) for r in reports.values() if r.failed or hasattr(r, "wasxfail"))
    longrepr = "\n".join(x for x in (longrepr or request.node.stash.get(DEFECT_KEY, ""), error) if x)
    collect.write_summary(folder, request.node.nodeid, since, longrepr, cluster=binding.cluster_name(inv), why=why)
    collect.write_transcript(folder / "transcript.txt", commands, failing=error if hang else "")
    nemesis.log.write(folder / "faults.txt")
    entries = timeline.merge(
        timeline.from_commands(commands),
        timeline.from_faults(nemesis.log.events),
        timeline.from_logs(logs[0]),
        timeline.from_accounting(logs[1], pbs.cluster.server.name),
    )
    timeline.write(folder / "timeline.txt", entries, since)
    page.write(folder, request.node.nodeid, why, binding.cluster_name(inv) or "", entries)
    request.node.user_properties.append(("evidence", str(folder)))
    request.config.stash.setdefault(EVIDENCE_KEY, []).append(str(folder))
    return folder


def _evidence_reason(item: pytest.Item) -> str:
    """Why the test keeps an evidence folder ("" when it does not): it failed, it xfailed (each xfail
    pins an OpenPBS bug a developer will want to see), or this attempt met a known race and is retried."""
    if DEFECT_KEY in item.stash:
        return f"attempt {attempt_of(item)} met a known OpenPBS race: {item.stash[DEFECT_KEY]}"
    if outcome.failed(item):
        return "failed"
    if outcome.xfailed(item):
        return "xfailed (a known OpenPBS bug)"
    return ""


@pytest.fixture
def nemesis(harness_test: Nemesis) -> Nemesis:
    """The test's fault injector; every fault it starts is healed in teardown."""
    return harness_test


@pytest.fixture(autouse=True)
def _acceptance_machinery(request: pytest.FixtureRequest) -> None:
    """Give every test that touches the cluster the per-test machinery and its requirements."""
    if "cluster" not in request.fixturenames and "pbs" not in request.fixturenames:
        return
    marker = request.node.get_closest_marker("needs_moms")
    if marker:
        inv = request.getfixturevalue("inventory")
        need = int(marker.args[0])
        if len(inv.moms) < need:
            pytest.skip(f"needs {need} moms, the cluster has {len(inv.moms)}")
    marker = request.node.get_closest_marker("needs_faults")
    if marker:
        from pbs_harness import hosts

        inv = request.getfixturevalue("inventory")
        why = hosts.undeclared({name: h.vars for name, h in inv.hosts.items()}, marker.args)
        if why:
            pytest.skip(why)
    request.getfixturevalue("release_checked")
    release_features.skip_if_missing(request)
    request.getfixturevalue("harness_test")


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    folders = config.stash.get(EVIDENCE_KEY, [])
    if folders:
        terminalreporter.write_sep("-", "evidence (failed and xfailed tests, retried attempts)")
        for folder in folders:
            terminalreporter.write_line(folder)
