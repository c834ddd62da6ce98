"""Features of OpenPBS that a release may lack, each found by a live probe of the cluster, and the
`requires_feature` marker that turns a missing one into a skip "not in this release (...)".

pbs_version cannot decide this: master and the v23.06.06 tag both say 23.06.06. So each feature
is asked of the running OpenPBS itself, once per session and cluster:

  hook_event        qmgr's error for an unknown event on a scratch hook lists every event the
                    server knows ("... Should be one or more of: queuejob,postqueuejob,... or
                    "" for no event"); the hook is deleted at once
  server_attribute  `qmgr -c "list server @default NAME"`: exit 0 when the server knows NAME (set
                    or not), "Undefined attribute" (PBSE_NOATTR, 15002) when it does not
  command           the program is in PREFIX/bin

A probe that cannot tell (qmgr failed for another reason) is an error, never a skip: a broken probe
must not quietly turn a suite into "not in this release". `since` is the first release whose source
has the feature (docs/releases.md). Every probe is checked against the build's version in EVERY run,
whatever `-m` or `-k` selects: before the session's first test that touches the cluster
(`check_against_release`, called by the plugin), all probes run and must agree with `since`. A
probe that says a release lacks a feature its version has (a build that broke the probe's own
command, or a broken probe) fails every cluster test of the run naming it; it never skips a suite.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest

from pbs_harness.conformance.status import NOT_IN_RELEASE

if TYPE_CHECKING:
    from pbs_harness.pbs.client import Pbs

MARKER = "requires_feature"
UNDEFINED_ATTRIBUTE = "Undefined attribute"  # PBSE_NOATTR's text (src/lib/Libpbs/pbs_error_text)
_EVENTS = re.compile(r'Should be one or more of: (.*?) or "" for no event')
_CACHE = pytest.StashKey[dict[str, bool]]()
_CHECKED = pytest.StashKey[str]()  # "" when every probe agreed with the version, else the failure


@dataclass(frozen=True)
class Feature:
    name: str  # the marker's argument
    what: str  # words for the skip reason
    kind: str  # "hook_event", "server_attribute" or "command"
    key: str  # the event, attribute or program
    since: str  # first release whose source has it, "" when every release of /work/shared/openpbs has it


FEATURES = {
    f.name: f
    for f in (
        Feature("postqueuejob_hook_event", "postqueuejob hook event", "hook_event", "postqueuejob", since="23.06"),
        Feature("execjob_resize_hook_event", "execjob_resize hook event", "hook_event", "execjob_resize", since=""),
        Feature(
            "reserve_retry_time",
            "server attribute reserve_retry_time",
            "server_attribute",
            "reserve_retry_time",
            since="",
        ),
        Feature(
            "reserve_retry_init",
            "server attribute reserve_retry_init",
            "server_attribute",
            "reserve_retry_init",
            since="",
        ),
        Feature("pbs_release_nodes", "pbs_release_nodes command", "command", "pbs_release_nodes", since=""),
    )
}


class ProbeError(RuntimeError):
    """A probe got an answer that says neither yes nor no."""


def hook_events(stderr: str) -> list[str]:
    """The events qmgr's error for an unknown event lists (every event this server knows)."""
    found = _EVENTS.search(" ".join(stderr.split()))
    if not found:
        raise ProbeError(f"qmgr's error names no list of hook events: {stderr.strip()[:300]!r}")
    return [e.strip() for e in found[1].split(",") if e.strip()]


def attribute_known(rc: int, stderr: str, name: str) -> bool:
    if rc == 0:
        return True
    if UNDEFINED_ATTRIBUTE in stderr:
        return False
    raise ProbeError(f"qmgr could not tell whether the server knows {name}: rc {rc}, {stderr.strip()[:300]!r}")


def probe(pbs: Pbs, feature: Feature) -> bool:
    """Ask the cluster whether it has the feature."""
    if feature.kind == "hook_event":
        hook = f"pbsh_probe_{uuid.uuid4().hex[:6]}"
        pbs.server.qmgr(f"create hook {hook}", check=True)
        try:
            answer = pbs.server.qmgr(f"set hook {hook} event = pbsh_no_such_event")
        finally:
            pbs.server.qmgr(f"delete hook {hook}", check=True)
        return feature.key in hook_events(answer.stderr)
    if feature.kind == "server_attribute":
        answer = pbs.server.qmgr(f"list server @default {feature.key}")
        return attribute_known(answer.rc, answer.stderr, feature.key)
    if feature.kind == "command":
        return pbs.cluster.server.run(["test", "-x", str(pbs.cluster.prefix / "bin" / feature.key)]).rc == 0
    raise ProbeError(f"unknown kind of probe {feature.kind!r} for {feature.name}")


def has(pbs: Pbs, name: str, config: pytest.Config) -> bool:
    """Whether the cluster's OpenPBS has the feature (probed once per session and cluster)."""
    cache = config.stash.setdefault(_CACHE, {})
    if name not in cache:
        cache[name] = probe(pbs, FEATURES[name])
    return cache[name]


def release(version: str) -> tuple[int, ...]:
    """ "23.06.06" -> (23, 6, 6); the leading numbers only ("" or "unknown" -> ())."""
    found = re.match(r"\d+(?:\.\d+)*", version.strip())
    return tuple(int(n) for n in found[0].split(".")) if found else ()


def expected(feature: Feature, version: str) -> bool:
    """Whether a release of this version has the feature, by the source reading of docs/releases.md."""
    return not feature.since or release(version) >= release(feature.since)


def reason(feature: Feature, version: str) -> str:
    since = f", which OpenPBS has since {feature.since}" if feature.since else ""
    return f"{NOT_IN_RELEASE} (OpenPBS {version} on this cluster has no {feature.what}{since})"


def disagreements(found: dict[str, bool], version: str) -> list[str]:
    """What the probes found (`found`: feature name -> present) that the build's version says
    otherwise, in words; [] when they agree."""
    if not release(version) and any(FEATURES[n].since for n in found):
        return [
            f"pbs_version {version!r} is no release number, so the probes cannot be checked against it "
            "(docs/releases.md, section 4): install an OpenPBS build that reports its version"
        ]
    said = []
    for name, present in found.items():
        feature = FEATURES[name]
        if present == expected(feature, version):
            continue
        if not present:
            since = f"since {feature.since}" if feature.since else "in every release the harness knows"
            said.append(
                f"the probe of the {feature.what} ({feature.kind} {feature.key!r}) says OpenPBS {version} lacks it, "
                f"but OpenPBS has it {since}: this build broke what the probe asks, or the probe is wrong; "
                "the tests that need it are NOT skipped as 'not in this release'"
            )
        else:
            said.append(
                f"the probe of the {feature.what} finds it in OpenPBS {version}, which by the source reading has it "
                f"only since {feature.since}: correct `since` in pbs_harness/suite/release_features.py "
                "and docs/releases.md"
            )
    return said


def check_against_release(pbs: Pbs, config: pytest.Config) -> None:
    """Once per session and cluster: run every probe and check it against the build's version;
    fail (this test, and every later one of the session) when any disagrees or cannot tell."""
    said = config.stash.get(_CHECKED, None)
    if said is None:
        try:
            found = {name: has(pbs, name, config) for name in FEATURES}
            version = str(pbs.server.status().get("pbs_version", ""))
            problems = disagreements(found, version)
        except ProbeError as exc:
            problems = [f"a probe could not tell whether the feature is there: {exc}"]
        said = (
            "the release-feature probes disagree with this build's version, so no test can be skipped as "
            "'not in this release' (pbs_harness/suite/release_features.py; docs/releases.md, section 4): "
            + "; ".join(problems)
            if problems
            else ""
        )
        config.stash[_CHECKED] = said
    if said:
        pytest.fail(said, pytrace=False)


def marker_problem(names: tuple[str, ...]) -> str | None:
    unknown = [n for n in names if n not in FEATURES]
    if not names or unknown:
        return (
            f"{MARKER} names unknown features {unknown or '(none)'}; known: {', '.join(FEATURES)} "
            "(pbs_harness/suite/release_features.py)"
        )
    return None


def check_markers(items: list[pytest.Item]) -> None:
    """At collection: every requires_feature marker names known features."""
    for item in items:
        for mark in item.iter_markers(MARKER):
            problem = marker_problem(tuple(mark.args))
            if problem:
                raise pytest.UsageError(f"{item.nodeid}: {problem}")


def skip_if_missing(request: pytest.FixtureRequest) -> None:
    """Skip the test, saying "not in this release (...)", when the cluster lacks a feature it requires
    (once the probes were checked against the build's version: check_against_release)."""
    names = [n for mark in request.node.iter_markers(MARKER) for n in mark.args]
    if not names:
        return
    pbs = request.getfixturevalue("pbs")
    check_against_release(pbs, request.config)
    missing = [FEATURES[n] for n in dict.fromkeys(names) if not has(pbs, n, request.config)]
    if missing:
        version = str(pbs.server.status().get("pbs_version", "?"))
        pytest.skip("; ".join(reason(f, version) for f in missing))
