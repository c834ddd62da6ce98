"""Bad input of the parallel verbs (docs/bad-input.md): --clusters out of range, --clusters that
disagrees with the inventories given, clusters that are not up. The state directory is an empty
temporary one (the `isolated` fixture); nothing is faked."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.badinput import assert_refused, run_cli

USAGE, PRECONDITION = 2, 3


@pytest.mark.parametrize("argv", [["up", "--clusters", "13"], ["test", "--clusters", "0"]], ids=str)
def test_cluster_count_out_of_range(argv: list[str], isolated: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out = run_cli(argv, capsys)
    assert_refused(rc, out, USAGE, "argument --clusters:", "is out of range: use between 1 and 12 clusters, or auto")


def test_cluster_count_that_disagrees_with_the_inventories(isolated: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out = run_cli(["test", "--clusters", "2", "-i", "a", "-i", "b", "-i", "c"], capsys)
    assert_refused(rc, out, USAGE, "--clusters 2 with 3 inventories (-i)", "give one -i per cluster")


def test_clusters_that_are_not_up(isolated: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out = run_cli(["test", "--clusters", "3"], capsys)
    assert_refused(
        rc, out, PRECONDITION, "no local cluster is up in", "fix: bring them up first: pbs-harness up --clusters 3"
    )
