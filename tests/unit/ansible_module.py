"""Run one of our Ansible modules (library/) in this process, the way ansible-test's module unit tests do.

What is FAKED: `AnsibleModule.run_command` is replaced by a `FakeCommands`, which records every argv
with the stdin it was given and answers from a function the test writes (canned qmgr / pbs_mom
output); no program is executed. `exit_json` and `fail_json` raise `ModuleExit` / `ModuleFailed`
carrying the result. Everything else - argument parsing and validation, check and diff mode, the
module's own code - is the real thing. Arguments go in through
`ansible.module_utils.testing.patch_module_args`.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any
from unittest import mock

import pytest
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.testing import patch_module_args

LIBRARY = Path(__file__).resolve().parents[2] / "library"

Answer = tuple[int, str, str]


def load(name: str) -> ModuleType:
    """Import library/NAME.py (the folder is not a package)."""
    spec = importlib.util.spec_from_file_location(f"_library_{name}", LIBRARY / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class ModuleExit(Exception):
    """exit_json was called."""

    def __init__(self, result: dict[str, Any]) -> None:
        super().__init__(result)
        self.result = result


class ModuleFailed(Exception):
    """fail_json was called."""

    def __init__(self, result: dict[str, Any]) -> None:
        super().__init__(result.get("msg"))
        self.result = result


@dataclass
class Call:
    argv: list[str]
    data: str | None


@dataclass
class FakeCommands:
    """Stands in for AnsibleModule.run_command: records each call, answers with `answer(argv, data)`."""

    answer: Callable[[list[str], str | None], Answer]
    calls: list[Call] = field(default_factory=list)

    def __call__(self, args: list[str], data: str | None = None, **_: Any) -> Answer:
        argv = [str(a) for a in args]
        self.calls.append(Call(argv, data))
        return self.answer(argv, data)


def _exit_json(_self: AnsibleModule, **result: Any) -> None:
    raise ModuleExit(result)


def _fail_json(_self: AnsibleModule, msg: str, **result: Any) -> None:
    raise ModuleFailed({"msg": msg, "failed": True, **result})


def _invoke(
    module: ModuleType, args: dict[str, Any], commands: FakeCommands, tmp_path: Path, *, check: bool, diff: bool
) -> None:
    internal = {
        "_ansible_check_mode": check,
        "_ansible_diff": diff,
        "_ansible_tmpdir": str(tmp_path),
        "_ansible_no_log": True,  # no syslog/journal record of the invocation
    }

    def run_command(_self: AnsibleModule, args: list[str], **kw: Any) -> Answer:
        return commands(args, **kw)

    with (
        patch_module_args({**args, **internal}),
        mock.patch.object(AnsibleModule, "exit_json", _exit_json),
        mock.patch.object(AnsibleModule, "fail_json", _fail_json),
        mock.patch.object(AnsibleModule, "run_command", run_command),
    ):
        module.main()


def run_module(
    module: ModuleType,
    args: dict[str, Any],
    commands: FakeCommands,
    tmp_path: Path,
    *,
    check: bool = False,
    diff: bool = False,
) -> dict[str, Any]:
    """The result the module exits with (the test fails if the module fails)."""
    try:
        _invoke(module, args, commands, tmp_path, check=check, diff=diff)
    except ModuleExit as done:
        return done.result
    except ModuleFailed as failed:
        pytest.fail(f"the module failed: {failed.result}")
    pytest.fail("the module returned without calling exit_json")


def fail_module(
    module: ModuleType,
    args: dict[str, Any],
    commands: FakeCommands,
    tmp_path: Path,
    *,
    check: bool = False,
) -> dict[str, Any]:
    """The result the module fails with (the test fails if the module exits normally)."""
    with pytest.raises(ModuleFailed) as failed:
        _invoke(module, args, commands, tmp_path, check=check, diff=False)
    return failed.value.result
