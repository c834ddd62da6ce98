"""Bad hook lists and hook configurations (docs/bad-input.md), refused by `pbs-harness deploy` first.

The hook's own checks (hooks/reliable_startup.py parse_config) are the ones used here: the deploy
loads the real source with a stub `pbs` module and asks it. The inventory listing comes from a
FAKE ansible-inventory (tests/unit/badinput.py); the hooks folder is a copy of the repository's.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from pbs_harness.common import errors
from pbs_harness.deploy import hookconfig
from pbs_harness.deploy import playbook as deploy
from pbs_harness.remote import inventory
from tests.unit.badinput import ROOT, assert_refused, fake_ansible_inventory, listing, run_cli

PRECONDITION = errors.EXIT_PRECONDITION
BAD_JSON = '{\n  "enabled": true\n  "increment": 2\n}\n'  # a comma missing at the end of line 2
HOOKS_VARS = ROOT / "inventory" / "local" / "group_vars" / "pbs_server" / "openpbs_hooks.yml"


def shipped_hook_list() -> list[dict[str, Any]]:
    return yaml.safe_load(HOOKS_VARS.read_text())["openpbs_hooks_list"]


@pytest.fixture
def hooks_dir(isolated: Path) -> Path:
    folder = isolated / "hooks"
    shutil.copytree(ROOT / "hooks", folder)
    return folder


def deploy_with(
    monkeypatch: pytest.MonkeyPatch, tmp: Path, hooks: Path, hook_list: object, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str]:
    """`pbs-harness deploy` of an inventory listing `hook_list` from `hooks`; ansible-playbook is a tripwire."""

    def tripwire(*_: object, **__: object) -> None:
        raise AssertionError("a refused hook list went on to run ansible-playbook")

    monkeypatch.setattr(deploy, "run_playbook", tripwire)
    data = listing(hostvars={"s1": {"openpbs_hooks_src_dir": str(hooks), "openpbs_hooks_list": hook_list}})
    return run_cli(["deploy", "-i", str(fake_ansible_inventory(monkeypatch, tmp, data))], capsys)


@pytest.mark.parametrize(
    ("config", "says"),
    [
        (BAD_JSON, "is not valid JSON: Expecting ',' delimiter (line 3, column 3)"),
        ({"enabled": "yes"}, "enabled: 'yes' must be true or false"),
        ({"increment": 0}, "increment: 0 pads nothing and increment_chunks(0) is refused by PBS"),
        ({"increment": "lots"}, "increment: 'lots' is not an increment"),
        ({"incremnet": 2}, "unknown keys ['incremnet']"),
        ({"min_chunks": 0}, "min_chunks: 0 must be an integer >= 1"),
        ({"tolerance": "some"}, "tolerance: 'some' must be one of ['job_start', 'all']"),
        ([1, 2], "the configuration must be a JSON object"),
    ],
    ids=["bad-json", "enabled-not-boolean", "increment-0", "increment-word", "unknown-key", "min-chunks-0",
         "tolerance", "not-an-object"],
)  # fmt: skip
def test_reliable_startup_config(
    config: object,
    says: str,
    *,
    isolated: Path,
    hooks_dir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = hooks_dir / "reliable_startup.json"
    path.write_text(config if isinstance(config, str) else json.dumps(config))
    rc, out = deploy_with(monkeypatch, isolated, hooks_dir, shipped_hook_list(), capsys)
    assert_refused(rc, out, PRECONDITION, "hook rjs_pad: configuration", str(path), says)
    assert f"fix: fix it (keys and values: {hooks_dir / 'reliable_startup.md'})" in out


@pytest.mark.parametrize(
    ("change", "says", "fix"),
    [
        (
            {"config": "missing.json"},
            "hook rjs_pad: configuration {hooks}/missing.json does not exist",
            "fix: put it in",
        ),
        (
            {"file": "missing.py"},
            "hook rjs_pad: source {hooks}/missing.py does not exist",
            "fix: put the hook's source",
        ),
        ({"file": None}, "hook rjs_pad has no 'file'", "fix: see the item format"),
        ({"state": "gone"}, "hook rjs_pad: state 'gone' is not present or absent", "fix: see the item format"),
        ({"file": "broken.py"}, "hook rjs_pad: {hooks}/broken.py does not compile: ", "fix: fix the hook's source"),
    ],
    ids=["config-missing", "source-missing", "no-file", "bad-state", "source-does-not-compile"],
)
def test_hook_list_item(
    change: dict[str, Any],
    says: str,
    fix: str,
    *,
    isolated: Path,
    hooks_dir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (hooks_dir / "broken.py").write_text("import pbs\nif True\n    pass\n")
    hook_list = shipped_hook_list()
    hook_list[0].update(change)
    hook_list[0] = {k: v for k, v in hook_list[0].items() if v is not None}
    rc, out = deploy_with(monkeypatch, isolated, hooks_dir, hook_list, capsys)
    assert_refused(rc, out, PRECONDITION, says.format(hooks=hooks_dir), fix)


@pytest.mark.parametrize(
    ("hook_list", "says"),
    [
        ("rjs_pad", "openpbs_hooks_list is str, not a list"),
        ([{"file": "x.py"}], "openpbs_hooks_list[0] is not an item"),
    ],
    ids=["not-a-list", "item-without-name"],
)
def test_hook_list_shape(
    hook_list: object,
    says: str,
    *,
    isolated: Path,
    hooks_dir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rc, out = deploy_with(monkeypatch, isolated, hooks_dir, hook_list, capsys)
    assert_refused(rc, out, PRECONDITION, says, "fix: see the item format in roles/openpbs_hooks/defaults/main.yml")


def test_shipped_hooks_pass_and_the_check_leaves_no_pbs_module(hooks_dir: Path) -> None:
    """The check can pass: the repository's hook list and configuration are accepted as shipped."""
    import sys

    hosts = {"s1": inventory.InventoryHost("s1", {"openpbs_hooks_list": shipped_hook_list()}, frozenset())}
    inv = inventory.Inventory(ROOT / "inventory" / "local", hosts, {"pbs_server": ["s1"], "pbs_moms": ["s1"]})
    assert hookconfig.source_dir(inv) == (ROOT / "hooks").resolve()  # "{{ inventory_dir }}/../../hooks" rendered
    hookconfig.check(inv)
    assert "pbs" not in sys.modules
