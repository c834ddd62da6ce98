"""Which checkout a local cluster belongs to: recorded in its state by `up`, and the acceptance
suites of another checkout leave it alone unless it is named explicitly.

Each test writes a state.json into its own PBS_HARNESS_STATE_DIR (tmp_path); nothing is brought
up, and no inventory is loaded except as noted. The availability checks get a stand-in config that
answers only --inventory and keeps a session stash.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pbs_harness.common import project
from pbs_harness.common.errors import PreconditionError
from pbs_harness.localcluster import provider, state
from pbs_harness.localcluster.spec import ClusterSpec
from pbs_harness.suite import availability, testrun
from tests.unit.badinput import InventoryConfig

OTHER = "/elsewhere/another-clone"
LABEL = "local cluster pbsh01..pbsh06 (10.71.0.0/24)"


@pytest.fixture
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PBS_HARNESS_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("PBS_HARNESS_INVENTORY", raising=False)
    return tmp_path / "state"


def _up_by(owner: str | None) -> None:
    state.save(state.ClusterState.from_spec(ClusterSpec(), owner=owner))


def test_state_records_the_owner_and_reads_older_files(state_dir: Path) -> None:
    _up_by(OTHER)
    assert state.load().owner == OTHER
    # A state.json written before the owner was recorded (and one with a field from a newer harness).
    (state_dir / "state.json").write_text(
        json.dumps({"subnet": "10.71.0.0/24", "host_count": 6, "prefix": "pbsh", "created_paths": [], "later": 1})
    )
    old = state.load()
    assert old.owner is None
    assert old.label == LABEL


def test_up_claims_a_new_or_unrecorded_cluster_and_refuses_another_checkouts() -> None:
    spec = ClusterSpec()
    assert provider.claim(None, spec, "/here").owner == "/here"
    assert provider.claim(state.ClusterState.from_spec(spec, owner=None), spec, "/here").owner == "/here"
    assert provider.claim(state.ClusterState.from_spec(spec, owner="/here"), spec, "/here").owner == "/here"
    with pytest.raises(PreconditionError) as err:
        provider.claim(state.ClusterState.from_spec(spec, owner=OTHER), spec, "/here")
    assert err.value.message == f"the {LABEL} was brought up by another checkout ({OTHER}), not this one (/here)"
    assert "pbs-harness down" in err.value.hint


def test_ci_leaves_a_cluster_alone_unless_it_is_this_checkouts(state_dir: Path) -> None:
    assert provider.foreign_owner() is None  # none up
    _up_by(project.checkout())
    assert provider.foreign_owner() is None
    _up_by(OTHER)
    assert provider.foreign_owner() == OTHER
    _up_by(None)
    assert provider.foreign_owner() == "a checkout that did not record itself"


def test_suites_skip_another_checkouts_cluster_naming_both(state_dir: Path) -> None:
    _up_by(OTHER)
    reason = availability.unavailable_reason(InventoryConfig(), reach=False)
    assert reason is not None
    assert f"the {LABEL} was brought up by another checkout ({OTHER}), not this one ({project.checkout()})" in reason
    assert "-i inventory/local" in reason


def test_suites_skip_a_cluster_whose_owner_is_not_recorded(state_dir: Path) -> None:
    _up_by(None)
    reason = availability.unavailable_reason(InventoryConfig(), reach=False)
    assert reason is not None
    assert "does not record which checkout brought it up" in reason
    assert project.checkout() in reason
    assert "pbs-harness cluster up" in reason


def test_a_cluster_named_explicitly_or_our_own_is_not_refused(state_dir: Path) -> None:
    _up_by(OTHER)
    assert (
        availability.not_ours_reason(InventoryConfig("inventory/local"), project.root() / "inventory" / "local") is None
    )
    named = availability.describe_target(InventoryConfig("inventory/local"))
    assert named == f"{LABEL}, named with --inventory (brought up by {OTHER})"
    _up_by(project.checkout())
    assert availability.not_ours_reason(InventoryConfig(), project.root() / "inventory" / "local") is None
    assert availability.describe_target(InventoryConfig()) == f"{LABEL}, brought up by this checkout"


ACCEPTANCE_TEST = """
def test_on_the_cluster(inventory):
    pass
"""


@pytest.mark.parametrize("verbosity", ["-q", "-v"])
def test_one_line_says_which_cluster_or_why_none(pytester: pytest.Pytester, state_dir: Path, verbosity: str) -> None:
    """A child pytest session, as `make test` runs the suites (-q) and as `make acceptance` does."""
    _up_by(OTHER)
    pytester.makepyfile(test_acceptance=ACCEPTANCE_TEST)
    out = pytester.runpytest_subprocess(
        "-p",
        "pbs_harness.suite.plugin",
        "-p",
        "pbs_harness.suite.progress",
        "-p",
        "no:cacheprovider",
        verbosity,
        timeout=120,
    ).stdout.str()
    lines = [ln for ln in out.splitlines() if ln.startswith("pbs-harness:")]
    assert len(lines) == 1, out
    skipped = f"pbs-harness: no cluster: acceptance suites skipped (the {LABEL} was brought up by"
    assert lines[0].startswith(skipped), out
    assert f"({OTHER}), not this one ({project.checkout()})" in lines[0], out
    assert re.search(rf"^   1 x the {re.escape(LABEL)} was brought up by another checkout", out, re.M), out


def test_suites_say_first_when_openpbs_is_missing_under_the_local_inventorys_prefix(
    state_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No cluster is up either: the missing OpenPBS is said first, under the prefix the inventory declares.
    monkeypatch.setattr(availability.inventory_mod, "declared_openpbs_prefix", lambda path: tmp_path / "pbs")
    reason = availability.unavailable_reason(InventoryConfig(), reach=False)
    assert reason is not None
    assert reason.startswith(f"{testrun.SKIP_NO_OPENPBS} ({tmp_path}/pbs/bin/qstat missing)")
