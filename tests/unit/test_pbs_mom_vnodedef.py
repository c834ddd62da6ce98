"""Unit tests of the pbs_mom_vnodedef module (library/pbs_mom_vnodedef.py).

FAKED: pbs_mom. `run_command` is replaced (tests/unit/ansible_module.py) by a small model of
`pbs_mom -s show|remove|insert` on one config.d folder held in a dict: `show` prints the stored file
as the real one does (its bytes, unchanged) or fails with pbs_mom's log_err line, `insert` reads the
file the module wrote and refuses an existing name, `remove` refuses a missing one. No pbs_mom is run,
nothing outside pytest's tmp_path is written. The module itself runs unmodified, in this process.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.ansible_module import Answer, FakeCommands, fail_module, load, run_module

vnodedef = load("pbs_mom_vnodedef")

PBS_MOM = "/opt/pbs/sbin/pbs_mom"
NAME = "harness_vnodes"
LAYOUT = """$configversion 2
pbsh03: resources_available.ncpus = 0
pbsh03[0]: resources_available.ncpus = 1
pbsh03[0]: resources_available.mem = 1gb
pbsh03[1]: resources_available.ncpus = 1
"""


class FakeMom:
    """`pbs_mom -s ACTION NAME [FILE]` on an in-memory PBS_HOME/mom_priv/config.d."""

    def __init__(self, files: dict[str, str] | None = None, fail: str | None = None) -> None:
        self.files = dict(files or {})
        self.fail = fail  # an action that fails as if pbs_mom could not write config.d
        self.commands = FakeCommands(self.answer)

    def answer(self, argv: list[str], data: str | None) -> Answer:
        assert data is None
        assert argv[:2] == [PBS_MOM, "-s"], argv
        action, name, *rest = argv[2:]
        path = f"/var/spool/pbs/mom_priv/config.d/{name}"
        if action == self.fail:
            return 1, "", f"pbs_mom: Permission denied (13) in doconfig_{action}, open {path}\n"
        handler = {"show": self.show, "remove": self.remove, "insert": self.insert}[action]
        return handler(name, path, *rest)

    def show(self, name: str, path: str) -> Answer:
        if name not in self.files:
            return 1, "", f"pbs_mom: No such file or directory (2) in doconfig_show, access R_OK {path}\n"
        return 0, self.files[name], ""

    def remove(self, name: str, path: str) -> Answer:
        if name not in self.files:
            return 1, "", f"pbs_mom: No such file or directory (2) in doconfig_remove, unlink {path}\n"
        del self.files[name]
        return 0, "", ""

    def insert(self, name: str, path: str, source: str) -> Answer:
        if name in self.files:
            return 1, "", f"pbs_mom: File exists (17) in doconfig_insert, open {path}\n"
        self.files[name] = Path(source).read_text(encoding="utf-8")
        return 0, "", ""

    def actions(self) -> list[str]:
        return [call.argv[2] for call in self.commands.calls]


def run(mom: FakeMom, tmp_path: Path, **kw: object) -> dict:
    check = bool(kw.pop("check", False))
    diff = bool(kw.pop("diff", False))
    return run_module(vnodedef, {"name": NAME, **kw}, mom.commands, tmp_path, check=check, diff=diff)


@pytest.mark.parametrize(
    ("content", "ids"),
    [
        (LAYOUT, ["pbsh03", "pbsh03[0]", "pbsh03[1]"]),
        ("$configversion 2\n# pbsh09: a comment\n\n  pbsh04 : sharing = force_excl\n", ["pbsh04"]),
        ("$configversion 2\n$action checkpoint_abort 30 !/bin/true\n", []),
        ("$configversion 2\npbsh05[0]: resources_available.foo = a:b\n", ["pbsh05[0]"]),
        (None, []),
        ("", []),
    ],
)
def test_vnode_ids(content: str | None, ids: list[str]) -> None:
    assert vnodedef.vnode_ids(content) == ids


def test_new_file_is_inserted_with_one_final_newline(tmp_path: Path) -> None:
    mom = FakeMom()
    result = run(mom, tmp_path, content=LAYOUT + "\n\n")
    assert result["changed"] is True
    assert mom.actions() == ["show", "insert"]  # nothing to remove
    insert = mom.commands.calls[1].argv
    assert insert[:4] == [PBS_MOM, "-s", "insert", NAME]
    assert Path(insert[4]).parent == tmp_path  # written in the module's tmpdir
    assert mom.files[NAME] == LAYOUT
    assert result["vnodes_before"] == []
    assert result["vnodes_after"] == ["pbsh03", "pbsh03[0]", "pbsh03[1]"]
    assert result["vnodes_removed"] == []


@pytest.mark.parametrize("shown", [LAYOUT, LAYOUT.rstrip("\n"), LAYOUT + "\n"])
def test_same_content_is_left_alone(tmp_path: Path, shown: str) -> None:
    mom = FakeMom({NAME: shown})
    result = run(mom, tmp_path, content=LAYOUT)
    assert result["changed"] is False
    assert mom.actions() == ["show"]
    assert result["vnodes_before"] == result["vnodes_after"] == ["pbsh03", "pbsh03[0]", "pbsh03[1]"]
    assert result["vnodes_removed"] == []


def test_second_run_after_a_change_is_idempotent(tmp_path: Path) -> None:
    mom = FakeMom()
    assert run(mom, tmp_path, content=LAYOUT)["changed"] is True
    again = FakeMom(mom.files)
    assert run(again, tmp_path, content=LAYOUT)["changed"] is False
    assert again.actions() == ["show"]


def test_different_content_is_replaced_and_dropped_vnodes_reported(tmp_path: Path) -> None:
    mom = FakeMom({NAME: LAYOUT})
    smaller = "$configversion 2\npbsh03: resources_available.ncpus = 0\npbsh03[0]: resources_available.ncpus = 2\n"
    result = run(mom, tmp_path, content=smaller)
    assert result["changed"] is True
    assert mom.actions() == ["show", "remove", "insert"]
    assert mom.files[NAME] == smaller
    assert result["vnodes_before"] == ["pbsh03", "pbsh03[0]", "pbsh03[1]"]
    assert result["vnodes_after"] == ["pbsh03", "pbsh03[0]"]
    assert result["vnodes_removed"] == ["pbsh03[1]"]


def test_whitespace_inside_lines_is_a_difference(tmp_path: Path) -> None:
    """Only trailing newlines are ignored: pbs_mom reads the file as written."""
    mom = FakeMom({NAME: LAYOUT.replace("ncpus = 0", "ncpus=0")})
    assert run(mom, tmp_path, content=LAYOUT)["changed"] is True
    assert mom.files[NAME] == LAYOUT


@pytest.mark.parametrize("present", [True, False])
def test_check_mode_reports_the_change_and_runs_only_show(tmp_path: Path, present: bool) -> None:
    files = {NAME: "$configversion 2\npbsh03[7]: resources_available.ncpus = 1\n"} if present else {}
    mom = FakeMom(files)
    result = run(mom, tmp_path, content=LAYOUT, check=True)
    assert result["changed"] is True
    assert mom.actions() == ["show"]
    assert mom.files == files
    assert result["vnodes_after"] == ["pbsh03", "pbsh03[0]", "pbsh03[1]"]
    assert result["vnodes_removed"] == (["pbsh03[7]"] if present else [])


def test_check_mode_absent_reports_removal_and_keeps_the_file(tmp_path: Path) -> None:
    mom = FakeMom({NAME: LAYOUT})
    result = run(mom, tmp_path, state="absent", check=True)
    assert result["changed"] is True
    assert mom.actions() == ["show"]
    assert NAME in mom.files


def test_diff_shows_old_and_new_file(tmp_path: Path) -> None:
    old = "$configversion 2\npbsh03: resources_available.ncpus = 4\n"
    result = run(FakeMom({NAME: old}), tmp_path, content=LAYOUT, diff=True, check=True)
    assert result["diff"] == {
        "before": old,
        "after": LAYOUT,
        "before_header": f"pbs_mom -s show {NAME}",
        "after_header": f"pbs_mom -s show {NAME}",
    }


def test_diff_of_a_new_file_starts_empty(tmp_path: Path) -> None:
    result = run(FakeMom(), tmp_path, content=LAYOUT, diff=True)
    assert result["diff"]["before"] == ""
    assert result["diff"]["after"] == LAYOUT


def test_no_diff_key_without_diff_mode(tmp_path: Path) -> None:
    assert "diff" not in run(FakeMom(), tmp_path, content=LAYOUT)


def test_absent_removes_an_existing_file(tmp_path: Path) -> None:
    mom = FakeMom({NAME: LAYOUT, "other": "$configversion 2\n"})
    result = run(mom, tmp_path, state="absent")
    assert result["changed"] is True
    assert mom.actions() == ["show", "remove"]
    assert set(mom.files) == {"other"}
    assert result["vnodes_after"] == []
    assert result["vnodes_removed"] == ["pbsh03", "pbsh03[0]", "pbsh03[1]"]


def test_absent_and_missing_is_no_change(tmp_path: Path) -> None:
    mom = FakeMom()
    result = run(mom, tmp_path, state="absent")
    assert result == {"changed": False, "vnodes_before": [], "vnodes_after": [], "vnodes_removed": []}
    assert mom.actions() == ["show"]


def test_custom_pbs_mom_path(tmp_path: Path) -> None:
    seen = []

    def answer(argv: list[str], data: str | None) -> Answer:
        seen.append(argv)
        return 0, LAYOUT, ""

    run_module(
        vnodedef,
        {"name": NAME, "content": LAYOUT, "pbs_mom": "/usr/local/pbs/sbin/pbs_mom"},
        FakeCommands(answer),
        tmp_path,
    )
    assert seen == [["/usr/local/pbs/sbin/pbs_mom", "-s", "show", NAME]]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"name": "PBSvnodes", "content": LAYOUT}, "PBSvnodes: Version 2 file names starting with PBS are reserved"),
        ({"name": NAME, "content": "pbsh03: resources_available.ncpus = 1\n"}, "must start with '$configversion 2'"),
        ({"name": NAME}, "state is present but all of the following are missing: content"),
        ({"name": NAME, "content": LAYOUT, "state": "gone"}, "value of state must be one of: present, absent"),
    ],
)
def test_bad_arguments_fail_before_pbs_mom_runs(tmp_path: Path, args: dict, message: str) -> None:
    mom = FakeMom()
    result = fail_module(vnodedef, args, mom.commands, tmp_path)
    assert message in result["msg"]
    assert mom.commands.calls == []


def test_a_failed_remove_fails_with_pbs_mom_message_and_inserts_nothing(tmp_path: Path) -> None:
    mom = FakeMom({NAME: "$configversion 2\n"}, fail="remove")
    result = fail_module(vnodedef, {"name": NAME, "content": LAYOUT}, mom.commands, tmp_path)
    assert result["msg"] == (
        f"pbs_mom -s remove {NAME} failed (rc=1): pbs_mom: Permission denied (13) in doconfig_remove,"
        f" open /var/spool/pbs/mom_priv/config.d/{NAME}"
    )
    assert mom.actions() == ["show", "remove"]


def test_a_failed_insert_fails_with_pbs_mom_message(tmp_path: Path) -> None:
    mom = FakeMom(fail="insert")
    result = fail_module(vnodedef, {"name": NAME, "content": LAYOUT}, mom.commands, tmp_path)
    assert result["msg"].startswith(f"pbs_mom -s insert {NAME} failed (rc=1): pbs_mom: Permission denied (13)")
    assert mom.files == {}
