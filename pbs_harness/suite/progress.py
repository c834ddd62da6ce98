"""Progress a person can follow during a long acceptance run (a pytest plugin).

- One line per test as it finishes: `[n/N] suite test-name OUTCOME duration (reason)`, in a
  parallel run `[n/N] cluster: suite test-name ...`. It replaces pytest's dots and fspath
  prefixes; with -q the dots stay and these lines are left out.
- At the end, one line per suite: counts by outcome and the suite's wall time. A suite is the
  test's suite marker (pbs_harness.suite.markers.SUITES), else its module's name.
- Skips: one line per distinct reason with its count, in place of pytest's -rs lines (which
  repeat a reason once per test location).

Loaded by ptl_tests/conftest.py; `-p no:pbs_harness.suite.progress` turns it off.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from pbs_harness.suite.markers import SUITES

PLUGIN_NAME = "pbs-harness-progress"
REASON_WIDTH = 100
# Order of the counts in a suite's line (pytest's own words).
CATEGORIES = ("passed", "failed", "error", "xfailed", "xpassed", "skipped")


def suite_of(item: pytest.Item) -> str:
    for mark in item.iter_markers():
        if mark.name in SUITES:
            return mark.name
    return module_of(item.nodeid)


def module_of(nodeid: str) -> str:
    """The suite of a test without a suite marker: its module's name less `test_`."""
    return nodeid.split("::", 1)[0].rsplit("/", 1)[-1].removesuffix(".py").removeprefix("test_")


def duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes}m{secs:02d}s"


def skip_reason(report: pytest.TestReport | pytest.CollectReport) -> str:
    """The reason of a skip as the test gave it (pytest's longrepr is (path, line, 'Skipped: why'))."""
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return reason.removeprefix("Skipped: ")


def outcome(reports: dict[str, pytest.TestReport]) -> tuple[list[str], str]:
    """A test's outcome categories (pytest's words; a teardown error is one more) and its reason."""
    setup, call, teardown = (reports.get(when) for when in ("setup", "call", "teardown"))
    reason = ""
    first = setup if setup is not None and not setup.passed else call
    if first is None:
        cats = []  # no call report: interrupted
    elif hasattr(first, "wasxfail"):
        cats = ["xfailed" if first.skipped else "xpassed"]
        reason = str(first.wasxfail)
    elif first.skipped:
        cats, reason = ["skipped"], skip_reason(first)
    elif first.failed:
        cats = ["error" if first.when == "setup" else "failed"]
    else:
        cats = ["passed"]
    if teardown is not None and teardown.failed:
        cats.append("error")
    return cats, reason


def known_races(reports: dict[str, pytest.TestReport]) -> int:
    """How many earlier attempts of the test met a known OpenPBS race (pbs_harness.suite.defect_retry)."""
    call = reports.get("call") or next(iter(reports.values()), None)
    return sum(1 for key, _ in (call.user_properties if call else []) if key == "known_defect")


def cluster_of(reports: dict[str, pytest.TestReport]) -> str:
    """The cluster a test ran on (its `cluster` user property, pbs_harness.suite.parallel.binding)."""
    for report in reports.values():
        for key, value in report.user_properties:
            if key == "cluster":
                return str(value)
    return "(no cluster)"


WORDS = {
    "passed": "PASSED",
    "failed": "FAILED",
    "error": "ERROR",
    "xfailed": "XFAIL",
    "xpassed": "XPASS",
    "skipped": "SKIPPED",
}


@dataclass
class Suite:
    started: float
    finished: float = 0.0
    counts: Counter[str] = field(default_factory=Counter)


class Progress:
    def __init__(self, config: pytest.Config, reporter: pytest.TerminalReporter) -> None:
        self.config = config
        self.reporter = reporter
        self.lines = config.get_verbosity() >= 0
        self.suite_by_id: dict[str, str] = {}
        self.reports: dict[str, dict[str, pytest.TestReport]] = {}
        self.suites: dict[str, Suite] = {}
        self.skips: Counter[str] = Counter()
        self.done = 0
        self.total = 0
        self.name_clusters = False  # a parallel run: each line says which cluster ran the test
        self.in_logreport = False
        if self.lines:
            reporter.showfspath = False  # our line names the test
        # Skips are summarised by reason below; pytest's own -rs lines would repeat them per location.
        reporter.reportchars = reporter.reportchars.replace("s", "")

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.suite_by_id = {item.nodeid: suite_of(item) for item in session.items}

    def learn(self, suites: dict[str, str], total: int) -> None:
        """What a parallel run's workers collected (its controller collects nothing itself)."""
        self.suite_by_id.update(suites)
        self.total = total
        self.name_clusters = True

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.skipped:
            self.skips[skip_reason(report)] += 1

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        self.suites.setdefault(self._suite(nodeid), Suite(started=time.monotonic()))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> Iterator[None]:
        self.reports.setdefault(report.nodeid, {})[report.when] = report
        self.in_logreport = True
        try:
            return (yield)
        finally:
            self.in_logreport = False

    @pytest.hookimpl(wrapper=True)
    def pytest_report_teststatus(self, report: pytest.TestReport) -> Iterator[tuple]:
        """While the terminal reporter reports a test's phase, keep its category (the counts) but
        drop its letter and word: our line per test replaces them. Elsewhere (the short summary)
        pytest's words stay."""
        status = yield
        if self.lines and self.in_logreport and status:
            return (status[0], "", "")
        return status

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        now = time.monotonic()
        reports = self.reports.pop(nodeid, {})
        cats, reason = outcome(reports)
        suite_name = self._suite(nodeid)
        suite = self.suites.setdefault(suite_name, Suite(started=now))
        suite.counts.update(cats)
        suite.finished = now
        if "skipped" in cats:
            self.skips[reason] += 1
        self.done += 1
        if not self.lines:
            return
        took = sum(r.duration for r in reports.values())
        word = " + ".join(WORDS[c] for c in cats) or "INTERRUPTED"
        if reason:
            reason = " (" + (reason if len(reason) <= REASON_WIDTH else reason[: REASON_WIDTH - 3] + "...") + ")"
        races = known_races(reports)
        if races:
            reason += f" [attempt {races + 1}: the earlier one met a known OpenPBS race, see its evidence]"
        label = f"{suite_name} {nodeid.split('::', 1)[-1]}"
        if self.name_clusters:
            label = f"{cluster_of(reports)}: {label}"
        total = self.total or len(self.suite_by_id) or self.done
        markup = (
            {"red": True} if {"failed", "error"} & set(cats) else {"yellow": True} if cats[:1] != ["passed"] else {}
        )
        self.reporter.write_line(
            f"[{self.done:>{len(str(total))}}/{total}] {label} {word} {duration(took)}{reason}", **markup
        )

    def _suite(self, nodeid: str) -> str:
        return self.suite_by_id.get(nodeid) or module_of(nodeid)

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.suites:
            terminalreporter.write_sep("=", "suites")
            width = max(map(len, self.suites))
            for name, suite in self.suites.items():
                counts = ", ".join(f"{suite.counts[c]} {c}" for c in CATEGORIES if suite.counts[c])
                wall = max(0.0, suite.finished - suite.started)
                terminalreporter.write_line(f"{name:<{width}}  {counts or 'nothing finished'} in {duration(wall)}")
        if self.skips:
            terminalreporter.write_sep("=", "skipped, by reason")
            for reason, count in self.skips.most_common():
                terminalreporter.write_line(f"{count:>4} x {reason or '(no reason given)'}")


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None and not config.pluginmanager.has_plugin(PLUGIN_NAME):
        config.pluginmanager.register(Progress(config, reporter), PLUGIN_NAME)
