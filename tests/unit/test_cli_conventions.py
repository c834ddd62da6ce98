"""The command line follows the conventions a new user tries first (#23 item 11).

`--version`; `-i` before the verb as after it; the harness's own options anywhere on `test`'s line
(`test -m smoke -i INV` used to hand -i to pytest); `cluster ssh HOST --state-dir DIR` (the option
used to start the remote command); messages that name PBS_HARNESS_STATE_DIR say what it is; `test
--help` lists pytest's options. The verbs' handlers are replaced by recorders where only the parsing
is under test (named in each test); `--version` and `test --help` run the real entry point.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from pbs_harness import cli
from pbs_harness.common import errors
from pbs_harness.localcluster import provider
from tests.unit.badinput import ROOT, assert_refused, run_cli

USAGE = errors.EXIT_USAGE


def entry_point(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pbs_harness", *argv], capture_output=True, text=True, check=False, cwd=ROOT, timeout=120
    )


def test_version_names_the_package_python_and_checkout() -> None:
    proc = entry_point("--version")
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"pbs-harness {version} (Python {sys.version.split()[0]}; checkout {ROOT})")


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> list[argparse.Namespace]:
    """RECORDERS in place of the verbs' handlers: each records the parsed arguments and exits 0."""
    seen: list[argparse.Namespace] = []
    for name in ("cmd_deploy", "cmd_verify", "cmd_test", "cmd_up"):
        monkeypatch.setattr(cli, name, lambda args: seen.append(args) or 0)
    return seen


@pytest.mark.parametrize(
    ("argv", "inventory", "pytest_args"),
    [
        (["-i", "inv", "deploy"], "inv", None),
        (["--inventory", "inv", "verify"], "inv", None),
        (["-i", "inv", "deploy", "-i", "inv"], "inv", None),
        (["-i", "a", "test", "-i", "b", "-m", "smoke"], ["a", "b"], ["-m", "smoke"]),
        # Used to reach pytest as `-m smoke -i inv` (pytest: unrecognized arguments: -i).
        (["test", "-m", "smoke", "-i", "inv"], ["inv"], ["-m", "smoke"]),
        (["test", "ptl_tests/test_smoke.py", "--inventory=inv", "-x"], ["inv"], ["ptl_tests/test_smoke.py", "-x"]),
        # A pytest option's value stays pytest's; after `--` everything is pytest's.
        (["test", "-k", "-i", "--", "--state-dir"], None, ["-k", "-i", "--state-dir"]),
    ],
    ids=str,
)
def test_inventory_before_or_after_the_verb(
    argv: list[str], inventory: str | list[str] | None, pytest_args: list[str] | None, recorded: list
) -> None:
    assert cli.main(argv) == 0
    (args,) = recorded
    assert args.inventory == inventory
    if pytest_args is not None:
        assert args.pytest_args == pytest_args


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["-i", "inv", "cluster", "status"], "-i/--inventory inv: `cluster status` takes no inventory"),
        (["-i", "inv", "report"], "-i/--inventory inv: `report` takes no inventory"),
        (["-i", "a", "deploy", "-i", "b"], "deploy takes one inventory, and was given 2: a, b"),
    ],
)
def test_inventory_where_it_cannot_apply(
    argv: list[str], says: str, recorded: list, capsys: pytest.CaptureFixture[str]
) -> None:
    assert_refused(*run_cli(argv, capsys), USAGE, says, "fix:")
    assert recorded == []


@pytest.mark.parametrize(
    "after_host",
    [["--state-dir", "STATE"], ["--state-dir=STATE"]],
    ids=["separate", "equals"],
)
def test_state_dir_after_host_is_the_harness_option(
    after_host: list[str], isolated: Path, as_root: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """FAKES: provider.host (no cluster runs here) and os.execvp (records the ssh command line)."""
    state = isolated / "named-state"
    seen: dict[str, object] = {}

    def host(name: str) -> object:
        seen["state_dir"] = os.environ["PBS_HARNESS_STATE_DIR"]
        return argparse.Namespace(name=name)

    monkeypatch.setattr(provider, "host", host)
    monkeypatch.setattr(os, "execvp", lambda prog, argv: seen.update(argv=argv))
    words = [w.replace("STATE", str(state)) for w in after_host]
    cli.main(["cluster", "ssh", "fc02", *words, "ls", "-l", "--state-dir"])
    assert seen["state_dir"] == str(state)
    assert seen["argv"][-4:] == ["fc02", "ls", "-l", "--state-dir"]  # type: ignore[index]


def test_state_dir_messages_say_what_it_is(
    isolated: Path, as_root: None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No cluster is up in either state directory: the message names the directory, where its name came
    from, and what PBS_HARNESS_STATE_DIR is."""
    monkeypatch.setattr(os, "execvp", lambda *_: pytest.fail("ssh started without a cluster"))
    rc, out = run_cli(["cluster", "ssh", "fc02"], capsys)
    assert_refused(
        rc, out, errors.EXIT_PRECONDITION,
        f"no local cluster is up (no state in {isolated / 'state'} (from the environment variable "
        "PBS_HARNESS_STATE_DIR, which names the local cluster's state directory))",
        "named by --state-dir DIR or by the environment variable PBS_HARNESS_STATE_DIR=DIR (default "
        "/var/lib/pbs-harness/local)",
    )  # fmt: skip
    rc, out = run_cli(["cluster", "ssh", "fc02", "--state-dir", str(isolated / "other")], capsys)
    assert_refused(rc, out, errors.EXIT_PRECONDITION, f"no state in {isolated / 'other'} (--state-dir))")


def test_help_of_test_lists_pytest_options_after_its_own() -> None:
    proc = entry_point("test", "--help")
    assert proc.returncode == 0, proc.stderr
    own, _, pytest_part = proc.stdout.partition("\npytest's options (")
    assert "--clusters N" in own
    assert "-i INVENTORY, --inventory INVENTORY" in own
    assert "-m MARKEXPR" in pytest_part  # pytest's own
    assert "--results-json" in pytest_part  # the suites' plugin options (ptl_tests' conftest)
    assert proc.stderr == ""
