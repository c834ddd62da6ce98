"""`cluster up` / `up` with --flavour, --image and --openpbs: bad combinations refused with the fix, and the
packages handed to the cluster (docs/bad-input.md's conventions: exit code, message, fix, no traceback).

Faked: os.geteuid() (the `as_root` fixture, or a non-root uid); the state directory is a tmp folder
(`isolated`); the OpenPBS packages are empty files named like OpenPBS's .deb files; provider.up is a
tripwire where the command must stop, or a recorder of the packages it is given (nothing is brought up).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pbs_harness.common import errors
from pbs_harness.deploy import openpbs_build
from pbs_harness.localcluster import provider
from pbs_harness.localcluster.containers import images
from tests.unit.badinput import assert_refused, run_cli, snapshot, tripwire

# FAKE package files: the first bytes of a .deb (an ar archive), which --openpbs checks; nothing more.
FAKE_DEB = b"!<arch>\n"

USAGE, PRECONDITION = errors.EXIT_USAGE, errors.EXIT_PRECONDITION


@pytest.fixture
def no_side_effects(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(provider, "up", tripwire("bring a cluster up"))
    monkeypatch.setattr(openpbs_build, "ensure", tripwire("build or unpack packages"))
    monkeypatch.setattr(images, "ensure", tripwire("make an image layer"))


def package_folder(path: Path) -> Path:
    path.mkdir()
    for kind in ("server", "execution", "client"):
        (path / f"openpbs-{kind}_23.06.06-1_amd64.deb").write_bytes(FAKE_DEB)
    return path


@pytest.mark.parametrize("verb", [["cluster", "up"], ["up"]])
@pytest.mark.parametrize("euid", [0, 1000], ids=["root", "not-root"])
@pytest.mark.usefixtures("no_side_effects")
def test_openpbs_without_system_hosts_is_a_usage_error(
    verb: list[str], euid: int, isolated: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bad command line is said as one, root or not (exit 2, before the root check)."""
    monkeypatch.setattr(os, "geteuid", lambda: euid)
    argv = [*verb, "--flavour", "namespace", "--openpbs", str(package_folder(isolated / "debs"))]
    rc, out = run_cli(argv, capsys)
    assert_refused(rc, out, USAGE, "--openpbs is for system hosts: namespace hosts run this machine's /opt/pbs")
    assert "fix: add --flavour system, or leave --openpbs out" in out
    assert not (isolated / "state").exists()


def test_system_hosts_without_openpbs_and_no_cluster_are_refused_with_the_fix(
    isolated: Path, as_root: None, no_side_effects: None, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out = run_cli(["cluster", "up", "--flavour", "system"], capsys)
    assert_refused(rc, out, USAGE, "system hosts install OpenPBS from packages, and --openpbs names none")
    assert "fix: give --openpbs PATH (make acceptance OPENPBS=PATH): a release zip, a folder of .deb files" in out
    assert "or --flavour namespace to use the OpenPBS installed in this machine" in out
    assert not (isolated / "state").exists()


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--flavour", "system", "--image", "centos-9"], "argument --image: invalid choice: 'centos-9'"),
        (["--flavour", "vm"], "argument --flavour: invalid choice: 'vm'"),
    ],
)
def test_an_unknown_image_or_flavour_is_a_usage_error(
    argv: list[str], says: str, isolated: Path, no_side_effects: None, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out = run_cli(["cluster", "up", *argv], capsys)
    assert_refused(rc, out, USAGE, says)
    assert "debian-12" in out or "namespace" in out  # the choices are listed


def test_an_openpbs_path_that_does_not_exist_is_refused_with_the_accepted_forms(
    isolated: Path, as_root: None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(provider, "up", tripwire("bring a cluster up"))
    missing = isolated / "openpbs-missing.tar.gz"
    rc, out = run_cli(["cluster", "up", "--flavour", "system", "--openpbs", str(missing)], capsys)
    assert_refused(rc, out, PRECONDITION, f"--openpbs {missing} does not exist", "fix: name an OpenPBS release zip")


def test_a_folder_of_packages_is_handed_to_the_cluster_as_it_is(
    isolated: Path, as_root: None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    given: dict = {}

    def recorder(spec, progress, packages=None):
        given.update(spec=spec, packages=packages)
        raise errors.PreconditionError("stopped by the test", "nothing")

    monkeypatch.setattr(provider, "up", recorder)
    debs = package_folder(isolated / "debs")
    rc, out = run_cli(["cluster", "up", "--flavour", "system", "--image", "debian-11", "--openpbs", str(debs)], capsys)
    assert rc == PRECONDITION, out
    assert "stopped by the test" in out
    assert given["packages"] == debs.resolve()
    assert (given["spec"].flavour, given["spec"].image) == ("system", "debian-11")


def test_a_running_system_cluster_is_repaired_with_its_recorded_packages(
    isolated: Path, as_root: None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    state_dir = isolated / "state"
    state_dir.mkdir()
    record = {"subnet": "10.71.0.0/24", "host_count": 6, "prefix": "pbsh", "flavour": "system"}
    record["packages_dir"] = "/var/cache/pbs-harness/packages/0123-debian-12-builder-abc"
    (state_dir / "state.json").write_text(json.dumps(record))
    kept = snapshot(state_dir)
    given: dict = {}

    def recorder(spec, progress, packages=None):
        given.update(packages=packages)
        raise errors.PreconditionError("stopped by the test", "nothing")

    monkeypatch.setattr(provider, "up", recorder)
    monkeypatch.setattr(openpbs_build, "ensure", tripwire("build or unpack packages"))
    rc, out = run_cli(["cluster", "up", "--flavour", "system"], capsys)
    assert rc == PRECONDITION, out
    assert given["packages"] == Path(record["packages_dir"])
    assert snapshot(state_dir) == kept
