"""Unit tests of the pbs_qmgr module (library/pbs_qmgr.py).

FAKED: qmgr. `run_command` is replaced (tests/unit/ansible_module.py) by `FakeQmgr`, which answers
the module's read (`qmgr` with `print server` / `print node @default` / `print hook` on stdin) with
canned text in the format OpenPBS 23.06's qmgr prints (src/cmds/qmgr.c display(): the "Max open
servers" line on stdout, comment banners, list attributes as `=` then `+=` lines, string attributes
quoted whole when they hold a space, comma or quote, hook contents as base64 blocks ended by a blank
line, exit status of the LAST request only), and records the script given to `qmgr -a` without
running it. No OpenPBS, root or network is needed; the module runs unmodified in this process.
"""

from __future__ import annotations

import base64
import json
import stat
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.unit.ansible_module import Answer, FakeCommands, fail_module, load, run_module

pbs_qmgr = load("pbs_qmgr")

QMGR = "/opt/pbs/bin/qmgr"
BANNER = "Max open servers: 49\n"

PRINT_SERVER = """\
#
# Create resources and set their properties.
#
#
# Create and define resource localssd
#
create resource localssd
set resource localssd type = long
set resource localssd flag = nh
#
# Create queues and set their attributes.
#
#
# Create and define queue workq
#
create queue workq
set queue workq queue_type = Execution
set queue workq enabled = True
set queue workq started = True
#
# Create and define queue debugq
#
create queue debugq
set queue debugq queue_type = Execution
set queue debugq max_run = [u:PBS_GENERIC=2]
set queue debugq resources_max.walltime = 01:00:00
set queue debugq comment = "short jobs only"
set queue debugq enabled = True
set queue debugq started = False
#
# Set server attributes.
#
set server scheduling = True
set server managers = pbsmgr@*
set server managers += root@pbsh01
set server default_queue = workq
set server log_events = 511
set server mail_from = adm
set server query_other_jobs = True
set server resources_default.ncpus = 1
set server default_chunk.ncpus = 1
set server scheduler_iteration = 600
set server flatuid = True
set server resv_enable = True
set server node_fail_requeue = 310
set server max_array_size = 10000
set server pbs_license_min = 0
set server pbs_license_max = 2147483647
set server pbs_license_linger_time = 31536000
set server eligible_time_enable = False
set server job_history_enable = True
set server max_concurrent_provision = 5
set server max_job_sequence_id = 9999999
"""

PRINT_NODES = """\
#
# Create nodes and set their properties.
#
#
# Create and define node pbsh01
#
create node pbsh01
set node pbsh01 state = free
set node pbsh01 resources_available.arch = linux
set node pbsh01 resources_available.host = pbsh01
set node pbsh01 resources_available.mem = 2030756kb
set node pbsh01 resources_available.ncpus = 2
set node pbsh01 resources_available.vnode = pbsh01
set node pbsh01 resv_enable = True
#
# Create and define node pbsh02
#
create node pbsh02 Mom=pbsh02.cluster.test
set node pbsh02 state = offline
set node pbsh02 comment = "disk replaced, back on monday"
set node pbsh02 resources_available.arch = linux
set node pbsh02 resources_available.host = pbsh02
set node pbsh02 resources_available.ncpus = 2
set node pbsh02 resources_available.vnode = pbsh02
set node pbsh02 resv_enable = True
#
# Create and define node pbsh03
#
create node pbsh03
set node pbsh03 state = free
set node pbsh03 resources_available.host = pbsh03
set node pbsh03 resources_available.ncpus = 0
set node pbsh03 resources_available.vnode = pbsh03
set node pbsh03 resv_enable = True
#
# Create and define node pbsh03[0]
#
create node pbsh03[0] Mom=pbsh03
set node pbsh03[0] state = free
set node pbsh03[0] resources_available.host = pbsh03
set node pbsh03[0] resources_available.ncpus = 1
set node pbsh03[0] resources_available.vnode = pbsh03[0]
set node pbsh03[0] resv_enable = True
#
# Create and define node pbsh03[1]
#
create node pbsh03[1] Mom=pbsh03
set node pbsh03[1] state = down
set node pbsh03[1] state += offline
set node pbsh03[1] resources_available.host = pbsh03
set node pbsh03[1] resources_available.ncpus = 1
set node pbsh03[1] resources_available.vnode = pbsh03[1]
set node pbsh03[1] resv_enable = True
#
# Create and define node oldnode
#
create node oldnode port=15003
set node oldnode resv_enable = True
"""

RS_SCRIPT = textwrap.dedent(
    '''\
    """Reliable job startup (test stand-in)."""
    import pbs

    e = pbs.event()
    if e.type == pbs.EXECJOB_LAUNCH:
        e.vnode_list_fail  # noqa
    e.accept()
    '''
)
RS_CONFIG = '{"increment": 1}\n'
CG_SCRIPT = "# pbs_cgroups stand-in\nimport pbs\npbs.event().accept()\n" + "# padding line\n" * 60  # > 513 bytes
CG_CONFIG = '{\n    "enabled": false\n}\n'


def b64_block(text: str) -> str:
    """Hook content as qmgr prints it: base64 in lines of 684 characters (513 bytes)."""
    encoded = base64.b64encode(text.encode("utf-8")).decode("ascii")
    return "".join(f"{line}\n" for line in textwrap.wrap(encoded, 684))


PRINT_HOOKS = f"""\
#
# Create hooks and set their properties.
#
#
# Create and define hook pbs_cgroups
#
create hook pbs_cgroups
set hook pbs_cgroups type = site
set hook pbs_cgroups enabled = false
set hook pbs_cgroups event = execjob_begin
set hook pbs_cgroups event += execjob_epilogue
set hook pbs_cgroups event += execjob_end
set hook pbs_cgroups event += execjob_launch
set hook pbs_cgroups event += execjob_attach
set hook pbs_cgroups event += execjob_resize
set hook pbs_cgroups event += execjob_abort
set hook pbs_cgroups event += execjob_postsuspend
set hook pbs_cgroups event += execjob_preresume
set hook pbs_cgroups event += exechost_periodic
set hook pbs_cgroups event += exechost_startup
set hook pbs_cgroups user = pbsadmin
set hook pbs_cgroups alarm = 90
set hook pbs_cgroups freq = 120
set hook pbs_cgroups order = 100
set hook pbs_cgroups debug = false
set hook pbs_cgroups fail_action = offline_vnodes
import hook pbs_cgroups application/x-python base64 -
{b64_block(CG_SCRIPT)}
import hook pbs_cgroups application/x-config base64 -
{b64_block(CG_CONFIG)}
#
# Create and define hook reliable_startup
#
create hook reliable_startup
set hook reliable_startup type = site
set hook reliable_startup enabled = true
set hook reliable_startup event = execjob_prologue
set hook reliable_startup event += execjob_launch
set hook reliable_startup user = pbsadmin
set hook reliable_startup alarm = 30
set hook reliable_startup order = 1
set hook reliable_startup debug = false
set hook reliable_startup fail_action = none
import hook reliable_startup application/x-python base64 -
{b64_block(RS_SCRIPT)}
import hook reliable_startup application/x-config base64 -
{b64_block(RS_CONFIG)}
"""

NO_NODES = "qmgr obj= svr=default: Server has no node list\nqmgr: Error (15064) returned from server\n"

# What the module is asked for when the cluster above is exactly as wanted.
CONVERGED: dict[str, Any] = {
    "server": {
        "scheduling": True,
        "managers": ["root@pbsh01", "pbsmgr@*"],
        "flatuid": True,
        "job_history_enable": True,
        "resources_default.ncpus": 1,
        "node_fail_requeue": 310,
        "default_queue": "workq",
    },
    "queues": {
        "workq": {"queue_type": "Execution", "enabled": True, "started": True},
        "debugq": {
            "queue_type": "Execution",
            "max_run": "[u:PBS_GENERIC=2]",
            "resources_max.walltime": "01:00:00",
            "comment": "short jobs only",
            "enabled": True,
            "started": False,
        },
    },
    "nodes": {"pbsh01": {}, "pbsh02": {"comment": "disk replaced, back on monday"}, "pbsh03": {}, "oldnode": {}},
    "prune_nodes": True,
    "hooks": [
        {
            "name": "reliable_startup",
            "script": RS_SCRIPT,
            "config": RS_CONFIG,
            "attributes": {"event": ["execjob_launch", "execjob_prologue"], "order": 1, "alarm": 30, "enabled": True},
        },
    ],
    "prune_hooks": True,
}


class FakeQmgr:
    """qmgr reading from stdin: canned `print` output; `qmgr -a` scripts are recorded, not run."""

    def __init__(
        self,
        server: str = PRINT_SERVER,
        nodes: str | None = PRINT_NODES,
        hooks: str = PRINT_HOOKS,
        *,
        apply: Answer = (0, BANNER, ""),
        read: Answer | None = None,
    ) -> None:
        self.printed = {"print server": server, "print node @default": nodes, "print hook": hooks}
        self.apply = apply
        self.read = read
        self.scripts: list[str] = []
        self.commands = FakeCommands(self.answer)

    def answer(self, argv: list[str], data: str | None) -> Answer:
        assert data is not None
        assert data.endswith("\n")
        if argv == [QMGR, "-a"]:
            self.scripts.append(data)
            return self.apply
        assert argv == [QMGR], argv
        if self.read is not None:
            return self.read
        out, err, rc = BANNER, "", 0
        for request in data.splitlines():
            printed = self.printed[request]
            if printed is None:  # `print node @default` on a server without nodes (PBSE_NONODES)
                err, rc = err + NO_NODES, 1
            else:
                out, rc = out + printed, 0  # the exit status is the last request's
        return rc, out, err

    def reads(self) -> list[str]:
        return [call.data or "" for call in self.commands.calls if call.argv == [QMGR]]


def run(fake: FakeQmgr, tmp_path: Path, *, check: bool = False, diff: bool = False, **args: Any) -> dict:
    return run_module(pbs_qmgr, args, fake.commands, tmp_path, check=check, diff=diff)


def fail(fake: FakeQmgr, tmp_path: Path, **args: Any) -> dict:
    return fail_module(pbs_qmgr, args, fake.commands, tmp_path)


def applied(fake: FakeQmgr) -> list[str]:
    """The directives of the one `qmgr -a` script (hook imports as their first line)."""
    assert len(fake.scripts) == 1, fake.scripts
    return [
        line
        for line in fake.scripts[0].splitlines()
        if line.split(" ", 1)[0] in {"set", "unset", "create", "delete", "import"}
    ]


# --- parsing what qmgr prints ---------------------------------------------------------------


def test_parse_server_and_queues() -> None:
    state = pbs_qmgr.parse_print(BANNER + PRINT_SERVER)
    server = state["server"]
    assert server["managers"] == ["pbsmgr@*", "root@pbsh01"]  # `=` then `+=`
    assert server["resources_default.ncpus"] == "1"
    assert server["scheduling"] == "True"
    assert len(server) == 20  # 21 lines, managers on two
    assert "type" not in server  # `set resource` lines belong to no managed object
    assert set(state["queues"]) == {"workq", "debugq"}
    assert state["queues"]["debugq"] == {
        "queue_type": "Execution",
        "max_run": "[u:PBS_GENERIC=2]",
        "resources_max.walltime": "01:00:00",
        "comment": "short jobs only",  # unquoted
        "enabled": "True",
        "started": "False",
    }
    assert state["nodes"] == {}
    assert state["hooks"] == {}
    assert state["resources"] == {"localssd": {"type": "long", "flag": "nh"}}


def test_parse_nodes() -> None:
    nodes = pbs_qmgr.parse_print(PRINT_NODES)["nodes"]
    assert list(nodes) == ["pbsh01", "pbsh02", "pbsh03", "pbsh03[0]", "pbsh03[1]", "oldnode"]
    assert nodes["pbsh02"]["comment"] == "disk replaced, back on monday"
    assert nodes["pbsh02"]["state"] == "offline"
    assert nodes["pbsh03[1]"]["state"] == ["down", "offline"]
    assert nodes["pbsh03[0]"]["resources_available.vnode"] == "pbsh03[0]"
    assert nodes["oldnode"] == {"resv_enable": "True"}  # Mom= and port= of the create line are not attributes


def test_parse_hooks_decodes_contents() -> None:
    hooks = pbs_qmgr.parse_print(PRINT_HOOKS)["hooks"]
    assert set(hooks) == {"pbs_cgroups", "reliable_startup"}
    cgroups = hooks["pbs_cgroups"]
    assert cgroups["attributes"]["event"][:2] == ["execjob_begin", "execjob_epilogue"]
    assert len(cgroups["attributes"]["event"]) == 11
    assert cgroups["attributes"]["fail_action"] == "offline_vnodes"
    assert len(CG_SCRIPT.encode()) > 513  # two base64 lines
    assert cgroups["content"] == {
        "application/x-python": CG_SCRIPT.encode(),
        "application/x-config": CG_CONFIG.encode(),
    }
    assert hooks["reliable_startup"]["content"]["application/x-python"] == RS_SCRIPT.encode()
    assert hooks["reliable_startup"]["attributes"]["order"] == "1"


def test_parse_consecutive_imports_without_blank_line_and_empty_hook() -> None:
    text = (
        "create hook a\nimport hook a application/x-python base64 -\n"
        + b64_block("x = 1\n")
        + "import hook a application/x-config base64 -\n"
        + b64_block("{}")
        + "create hook empty\nset hook empty enabled = false\nimport hook empty application/x-python base64 -\n\n"
    )
    hooks = pbs_qmgr.parse_print(text)["hooks"]
    assert hooks["a"]["content"] == {"application/x-python": b"x = 1\n", "application/x-config": b"{}"}
    assert hooks["empty"] == {"attributes": {"enabled": "false"}, "content": {"application/x-python": b""}}


def test_parse_whole_read_with_banner() -> None:
    state = pbs_qmgr.parse_print(BANNER + PRINT_SERVER + PRINT_NODES + PRINT_HOOKS)
    assert len(state["queues"]) == 2
    assert len(state["nodes"]) == 6
    assert len(state["hooks"]) == 2


# --- comparing and quoting ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("wanted", "current", "same"),
    [
        (True, "True", True),
        (True, "true", True),
        (False, "False", True),
        (True, "False", False),
        ("True", "true", False),  # only booleans ignore case
        (1, "1", True),
        ("01:00:00", "1:00:00", False),  # compared as printed
        (["b", "a"], ["a", "b"], True),
        (["a"], "a", True),
        ("a,b", ["b", "a"], True),
        (["a", "b"], ["a"], False),
        ([True], "True", True),
        ("x", None, False),
    ],
)
def test_equal(wanted: object, current: object, same: bool) -> None:
    assert pbs_qmgr.equal(wanted, current) is same


@pytest.mark.parametrize(
    ("value", "rendered"),
    [
        ("workq", "workq"),
        (True, "True"),
        (False, "False"),
        (310, "310"),
        ("01:00:00", "01:00:00"),
        ("pbsmgr@*", "pbsmgr@*"),
        ("short jobs only", '"short jobs only"'),
        (["pbsmgr@*", "root@pbsh01"], '"pbsmgr@*,root@pbsh01"'),
        (["execjob_launch"], "execjob_launch"),
        ("[u:PBS_GENERIC=2]", '"[u:PBS_GENERIC=2]"'),
        ("it's", '"it\'s"'),
        ("a#b", '"a#b"'),
        ("a;b", '"a;b"'),
        ("tab\there", '"tab\there"'),
        ("f(x)", '"f(x)"'),
        ("", '""'),
        ([], '""'),
    ],
)
def test_render_quotes_when_needed(value: object, rendered: str) -> None:
    assert pbs_qmgr.render(value) == rendered


def test_render_refuses_a_double_quote() -> None:
    with pytest.raises(ValueError, match="cannot contain a double quote"):
        pbs_qmgr.render('say "hi"')


# --- the module: reading --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "requests"),
    [
        ({"server": {}}, "print server\n"),
        ({"resources": {}}, "print server\n"),
        ({"queues": {}}, "print server\n"),
        ({"nodes": {}}, "print node @default\n"),
        ({"prune_nodes": True}, "print node @default\n"),
        ({"nodes_reset": True}, "print node @default\n"),
        ({"hooks": []}, "print hook\n"),
        ({"prune_hooks": True}, "print hook\n"),
        ({"server": {}, "nodes": {}, "hooks": []}, "print server\nprint node @default\nprint hook\n"),
    ],
)
def test_reads_only_the_sections_passed_in_one_call(tmp_path: Path, args: dict, requests: str) -> None:
    fake = FakeQmgr()
    run(fake, tmp_path, check=True, **args)
    assert fake.reads() == [requests]


def test_nothing_to_manage_runs_no_qmgr(tmp_path: Path) -> None:
    fake = FakeQmgr()
    assert run(fake, tmp_path) == {"changed": False, "commands": [], "baseline_recorded": False}
    assert fake.commands.calls == []


def test_custom_qmgr_path(tmp_path: Path) -> None:
    fake = FakeQmgr()
    calls = []

    def answer(argv: list[str], data: str | None) -> Answer:
        calls.append(argv)
        return fake.answer([QMGR, *argv[1:]], data)

    args = {"qmgr": "/usr/local/pbs/bin/qmgr", "server": {"flatuid": False}}
    run_module(pbs_qmgr, args, FakeCommands(answer), tmp_path)
    assert calls == [["/usr/local/pbs/bin/qmgr"], ["/usr/local/pbs/bin/qmgr", "-a"]]


def test_failed_read_fails_with_qmgr_message(tmp_path: Path) -> None:
    fake = FakeQmgr(read=(3, "", "Max open servers: 49\nqmgr: cannot connect to server pbsh01 (errno=15010)\n"))
    result = fail(fake, tmp_path, server={"flatuid": True})
    assert (
        result["msg"]
        == "qmgr could not read the server state (rc=3): qmgr: cannot connect to server pbsh01 (errno=15010)"
    )
    assert result["rc"] == 3
    assert fake.scripts == []


# --- idempotence, check mode, diff ----------------------------------------------------------


def test_converged_cluster_is_no_change(tmp_path: Path) -> None:
    fake = FakeQmgr()
    result = run(fake, tmp_path, **CONVERGED)
    assert result == {"changed": False, "commands": [], "baseline_recorded": False}
    assert fake.scripts == []  # no `qmgr -a`
    assert len(fake.commands.calls) == 1


def test_converged_cluster_diff_is_empty(tmp_path: Path) -> None:
    result = run(FakeQmgr(), tmp_path, diff=True, **CONVERGED)
    assert result["diff"] == {"before": "", "after": ""}


def test_changes_are_applied_in_one_qmgr_a_call(tmp_path: Path) -> None:
    fake = FakeQmgr()
    server = {
        "flatuid": False,  # differs
        "scheduling": "True",  # same
        "managers": ["pbsmgr@*", "root@pbsh01", "admin@pbsh02"],  # one more
        "node_fail_requeue": None,  # set, to unset
        "acl_hosts": None,  # not set: nothing to do
        "resources_default.walltime": "00:30:00",  # new
        "comment": "harness, do not touch",  # needs quotes
    }
    result = run(fake, tmp_path, server=server)
    expected = [
        "set server flatuid = False",
        'set server managers = "pbsmgr@*,root@pbsh01,admin@pbsh02"',
        "unset server node_fail_requeue",
        "set server resources_default.walltime = 00:30:00",
        'set server comment = "harness, do not touch"',
    ]
    assert result == {"changed": True, "commands": expected, "baseline_recorded": False}
    assert fake.scripts == ["\n".join(expected) + "\n"]
    assert [call.argv for call in fake.commands.calls] == [[QMGR], [QMGR, "-a"]]


def test_check_mode_reports_changes_and_runs_no_qmgr_a(tmp_path: Path) -> None:
    fake = FakeQmgr()
    result = run(fake, tmp_path, check=True, server={"flatuid": False}, queues={"debugq": None})
    assert result["changed"] is True
    assert result["commands"] == ["set server flatuid = False", "delete queue debugq"]
    assert fake.scripts == []
    assert [call.argv for call in fake.commands.calls] == [[QMGR]]


def test_diff_lists_the_touched_objects_only(tmp_path: Path) -> None:
    fake = FakeQmgr()
    result = run(
        fake,
        tmp_path,
        check=True,
        diff=True,
        server={"flatuid": False, "scheduling": True, "node_fail_requeue": None},
        queues={"workq": {"started": False}, "newq": {"queue_type": "Execution"}, "debugq": None},
    )
    assert result["diff"]["before"] == (
        "queue debugq:\n"
        "    exists = True\n"
        "queue newq:\n"
        "queue workq:\n"
        "    started = True\n"
        "server:\n"
        "    flatuid = True\n"
        "    node_fail_requeue = 310\n"
    )
    assert result["diff"]["after"] == (
        "queue debugq:\n"
        "queue newq:\n"
        "    exists = True\n"
        "    queue_type = Execution\n"
        "queue workq:\n"
        "    started = False\n"
        "server:\n"
        "    flatuid = False\n"
    )


def test_applied_state_reads_back_as_converged(tmp_path: Path) -> None:
    """What the module writes is qmgr's own print syntax: parsed back, a second run changes nothing."""
    bare = FakeQmgr(
        server="#\n# Set server attributes.\n#\nset server scheduling = True\n", nodes=PRINT_NODES, hooks=""
    )
    wanted = dict(CONVERGED, prune_nodes=False, prune_hooks=False)
    first = run(bare, tmp_path, **wanted)
    assert first["changed"] is True
    assert not any(line.startswith(("unset", "delete")) for line in applied(bare))
    again = FakeQmgr(server=bare.printed["print server"] + bare.scripts[0], nodes=PRINT_NODES, hooks="")
    assert run(again, tmp_path, **wanted)["changed"] is False


# --- custom resources -----------------------------------------------------------------------


def test_converged_resources_are_no_change_flags_compared_as_letters(tmp_path: Path) -> None:
    fake = FakeQmgr()
    result = run(fake, tmp_path, resources={"localssd": {"type": "long", "flag": "hn"}})
    assert result == {"changed": False, "commands": [], "baseline_recorded": False}
    assert fake.reads() == ["print server\n"]


def test_missing_resources_are_created_before_the_attributes_that_use_them(tmp_path: Path) -> None:
    fake = FakeQmgr()
    run(
        fake,
        tmp_path,
        resources={"ngpus": {"type": "long", "flag": "nh"}, "scratch": {"type": "size", "flag": None}},
        server={"resources_default.scratch": "1gb"},
        nodes={"pbsh01": {"resources_available.ngpus": 1}},
    )
    assert applied(fake) == [
        "create resource ngpus type=long,flag=nh",
        "create resource scratch type=size",
        "set server resources_default.scratch = 1gb",
        "set node pbsh01 resources_available.ngpus = 1",
    ]


def test_resource_type_or_flag_that_differs_is_changed(tmp_path: Path) -> None:
    fake = FakeQmgr()
    result = run(fake, tmp_path, diff=True, resources={"localssd": {"type": "size", "flag": "h"}})
    assert result["commands"] == ["set resource localssd type = size", "set resource localssd flag = h"]
    assert result["diff"] == {
        "before": "resource localssd:\n    flag = nh\n    type = long\n",
        "after": "resource localssd:\n    flag = h\n    type = size\n",
    }


def test_resource_flag_left_out_is_unset(tmp_path: Path) -> None:
    fake = FakeQmgr()
    run(fake, tmp_path, resources={"localssd": {"type": "long"}})
    assert applied(fake) == ["unset resource localssd flag"]


def test_created_resources_read_back_as_converged(tmp_path: Path) -> None:
    wanted = {"ngpus": {"type": "long", "flag": "nh"}, "scratch": {"type": "size"}}
    first = FakeQmgr()
    run(first, tmp_path, resources=wanted)
    again = FakeQmgr(server=PRINT_SERVER + first.scripts[0])
    assert run(again, tmp_path, resources=wanted)["changed"] is False


@pytest.mark.parametrize(
    ("resources", "message"),
    [
        ({"ngpus": {"flag": "nh"}}, "resource ngpus: a new resource needs a type"),
        ({"localssd": {"type": "long", "sched": True}}, "resource localssd: expected a dict with the keys type, flag"),
        ({"localssd": None}, "resources are never deleted"),
    ],
)
def test_bad_resource_fails_before_qmgr_a(tmp_path: Path, resources: dict, message: str) -> None:
    fake = FakeQmgr()
    assert message in fail(fake, tmp_path, resources=resources)["msg"]
    assert fake.scripts == []


# --- queues ---------------------------------------------------------------------------------


def test_new_queue_is_created_with_queue_type_first(tmp_path: Path) -> None:
    fake = FakeQmgr()
    run(fake, tmp_path, queues={"longq": {"enabled": True, "started": True, "queue_type": "Execution"}})
    assert applied(fake) == [
        "create queue longq",
        "set queue longq queue_type = Execution",
        "set queue longq enabled = True",
        "set queue longq started = True",
    ]


def test_null_queue_is_deleted_and_missing_null_queue_is_no_change(tmp_path: Path) -> None:
    fake = FakeQmgr()
    assert run(fake, tmp_path, check=True, queues={"debugq": None})["commands"] == ["delete queue debugq"]
    assert run(FakeQmgr(), tmp_path, queues={"nosuchq": None})["changed"] is False


def test_prune_queues_deletes_unlisted(tmp_path: Path) -> None:
    fake = FakeQmgr()
    run(fake, tmp_path, queues={"workq": {}}, prune_queues=True)
    assert applied(fake) == ["delete queue debugq"]


def test_prune_queues_without_queues_deletes_all(tmp_path: Path) -> None:
    fake = FakeQmgr()
    run(fake, tmp_path, prune_queues=True)
    assert fake.reads() == ["print server\n"]
    assert applied(fake) == ["delete queue debugq", "delete queue workq"]


def test_queues_exclusive_unsets_unlisted_attributes(tmp_path: Path) -> None:
    fake = FakeQmgr()
    run(
        fake,
        tmp_path,
        queues={"debugq": {"queue_type": "Execution", "enabled": True, "started": True}},
        queues_exclusive=True,
    )
    assert applied(fake) == [
        "set queue debugq started = True",
        "unset queue debugq max_run",
        "unset queue debugq resources_max.walltime",
        "unset queue debugq comment",
    ]


# --- nodes ----------------------------------------------------------------------------------


def test_missing_node_is_created_with_its_attributes(tmp_path: Path) -> None:
    fake = FakeQmgr()
    run(fake, tmp_path, nodes={"pbsh01": {}, "pbsh04": {"resv_enable": False}})
    assert applied(fake) == ["create node pbsh04", "set node pbsh04 resv_enable = False"]


def test_prune_nodes_keeps_listed_hosts_and_their_vnodes(tmp_path: Path) -> None:
    fake = FakeQmgr()
    run(fake, tmp_path, nodes={"pbsh01": {}, "pbsh03": {}}, prune_nodes=True)
    assert applied(fake) == ["delete node oldnode", "delete node pbsh02"]


def test_null_node_is_deleted_even_without_prune(tmp_path: Path) -> None:
    fake = FakeQmgr()
    run(fake, tmp_path, nodes={"pbsh03[1]": None, "pbsh09": None})
    assert applied(fake) == ["delete node pbsh03[1]"]


def test_nodes_reset_clears_offline_and_comments(tmp_path: Path) -> None:
    fake = FakeQmgr()
    result = run(fake, tmp_path, diff=True, nodes_reset=True)
    assert applied(fake) == [
        "set node pbsh02 state -= offline",
        "unset node pbsh02 comment",
        "set node pbsh03[1] state -= offline",
    ]
    assert (
        "node pbsh02:\n    comment = disk replaced, back on monday\n    state = offline\n" in result["diff"]["before"]
    )


def test_nodes_reset_keeps_a_declared_comment_and_skips_deleted_nodes(tmp_path: Path) -> None:
    fake = FakeQmgr()
    nodes = {"pbsh02": {"comment": "disk replaced, back on monday"}, "pbsh03[1]": None}
    run(fake, tmp_path, nodes=nodes, nodes_reset=True)
    assert applied(fake) == ["delete node pbsh03[1]", "set node pbsh02 state -= offline"]


# --- hooks ----------------------------------------------------------------------------------


def test_hook_with_other_script_is_reimported_and_the_command_elides_it(tmp_path: Path) -> None:
    fake = FakeQmgr()
    script = RS_SCRIPT + "# v2\n"
    hooks = [{"name": "reliable_startup", "script": script, "config": RS_CONFIG}]
    result = run(fake, tmp_path, diff=True, hooks=hooks)
    size = len(script.encode())
    assert result["commands"] == [f"import hook reliable_startup application/x-python base64 -  # {size} bytes"]
    assert fake.scripts == [
        f"import hook reliable_startup application/x-python base64 -\n{b64_block(script)}\n",
    ]
    assert result["diff"]["before"].startswith("hook reliable_startup:\n    script = sha256:")
    assert f"({size} bytes)" in result["diff"]["after"]


def test_long_hook_script_is_cut_in_lines_qmgr_reads_whole(tmp_path: Path) -> None:
    fake = FakeQmgr(hooks="")
    script = "# long\n" + "x = 1  # " + "y" * 3000 + "\n"
    run(fake, tmp_path, hooks=[{"name": "big", "script": script}])
    lines = fake.scripts[0].splitlines()
    assert lines[:2] == ["create hook big", "import hook big application/x-python base64 -"]
    chunks = lines[2:-1]
    assert lines[-1] == ""  # a blank line ends the content, as in qmgr's print
    assert len(chunks) == 6
    assert {len(chunk) for chunk in chunks[:-1]} == {684}
    assert b"".join(base64.b64decode(chunk) for chunk in chunks).decode() == script
    assert pbs_qmgr.parse_print(fake.scripts[0])["hooks"]["big"]["content"]["application/x-python"] == script.encode()


def test_hook_config_null_leaves_the_installed_config(tmp_path: Path) -> None:
    fake = FakeQmgr()
    result = run(fake, tmp_path, hooks=[{"name": "reliable_startup", "script": RS_SCRIPT}])
    assert result["changed"] is False


def test_hook_config_change_imports_the_config_only(tmp_path: Path) -> None:
    fake = FakeQmgr()
    run(fake, tmp_path, hooks=[{"name": "reliable_startup", "script": RS_SCRIPT, "config": '{"increment": 2}\n'}])
    assert applied(fake) == ["import hook reliable_startup application/x-config base64 -"]


def test_new_hook_is_created_then_set_then_imported(tmp_path: Path) -> None:
    fake = FakeQmgr()
    hook = {
        "name": "tiny",
        "script": "import pbs\n",
        "attributes": {"event": ["queuejob"], "order": 5, "enabled": True},
    }
    run(fake, tmp_path, hooks=[hook])
    assert applied(fake) == [
        "create hook tiny",
        "set hook tiny event = queuejob",
        "set hook tiny order = 5",
        "set hook tiny enabled = True",
        "import hook tiny application/x-python base64 -",
    ]


def test_absent_hook_is_deleted(tmp_path: Path) -> None:
    fake = FakeQmgr()
    run(fake, tmp_path, hooks=[{"name": "reliable_startup", "state": "absent"}, {"name": "gone", "state": "absent"}])
    assert applied(fake) == ["delete hook reliable_startup"]


def test_prune_hooks_spares_hooks_keep(tmp_path: Path) -> None:
    fake = FakeQmgr()
    result = run(fake, tmp_path, check=True, prune_hooks=True)
    assert result["commands"] == ["delete hook reliable_startup"]  # pbs_cgroups is kept by default
    result = run(FakeQmgr(), tmp_path, check=True, prune_hooks=True, hooks_keep=[])
    assert result["commands"] == ["delete hook pbs_cgroups", "delete hook reliable_startup"]


def test_hook_script_that_does_not_compile_fails_before_qmgr(tmp_path: Path) -> None:
    fake = FakeQmgr()
    result = fail(fake, tmp_path, hooks=[{"name": "broken", "script": "def f(:\n"}])
    assert result["msg"].startswith("hook broken: the script does not compile on the server host:")
    assert fake.commands.calls == []


# --- server baseline ------------------------------------------------------------------------


def test_baseline_is_recorded_once_before_any_change(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    fake = FakeQmgr()
    result = run(fake, tmp_path, server={"flatuid": False}, server_baseline_file=str(path))
    assert result["baseline_recorded"] is True
    recorded = json.loads(path.read_text())
    assert recorded["flatuid"] == "True"  # the value before this run's change
    assert recorded["managers"] == ["pbsmgr@*", "root@pbsh01"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert list(tmp_path.glob(".baseline*")) == []
    again = run(FakeQmgr(), tmp_path, server={"flatuid": False}, server_baseline_file=str(path))
    assert again["baseline_recorded"] is False
    assert json.loads(path.read_text()) == recorded


def test_check_mode_records_no_baseline(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    result = run(FakeQmgr(), tmp_path, check=True, server={}, server_baseline_file=str(path))
    assert result["baseline_recorded"] is False
    assert not path.exists()


def test_server_unlisted_baseline_restores_and_unsets(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    pristine = pbs_qmgr.parse_print(PRINT_SERVER)["server"]
    pristine["acl_hosts"] = ["pbsh01", "pbsh02"]  # set in the pristine server, unset since
    pristine["log_events"] = "2047"  # changed since
    del pristine["job_history_enable"]  # set since
    del pristine["flatuid"]  # set since, but listed
    path.write_text(json.dumps(pristine))
    fake = FakeQmgr()
    result = run(fake, tmp_path, server={"flatuid": True}, server_unlisted="baseline", server_baseline_file=str(path))
    assert result["baseline_recorded"] is False
    assert applied(fake) == [
        "set server log_events = 2047",
        "unset server job_history_enable",
        'set server acl_hosts = "pbsh01,pbsh02"',
    ]


def test_server_unlisted_baseline_needs_a_file(tmp_path: Path) -> None:
    fake = FakeQmgr()
    result = fail(fake, tmp_path, server={}, server_unlisted="baseline")
    assert "server_unlisted is baseline but all of the following are missing: server_baseline_file" in result["msg"]
    assert fake.commands.calls == []


# --- errors ---------------------------------------------------------------------------------


def test_rejected_directive_fails_with_qmgr_message_and_commands(tmp_path: Path) -> None:
    err = "qmgr obj=workq svr=default: Illegal attribute or resource value\nqmgr: Error (15014) returned from server\n"
    fake = FakeQmgr(apply=(2, BANNER, "Max open servers: 49\n" + err))
    result = fail(fake, tmp_path, queues={"workq": {"max_running": "lots"}})
    assert result["msg"] == (
        "qmgr rejected a directive (rc=2): qmgr obj=workq svr=default: Illegal attribute or resource value\n"
        "qmgr: Error (15014) returned from server"
    )
    assert result["rc"] == 2
    assert result["commands"] == ["set queue workq max_running = lots"]


def test_rejected_directive_without_stderr_reports_stdout(tmp_path: Path) -> None:
    fake = FakeQmgr(apply=(1, BANNER + "qmgr: Illegal operation: sett\n", ""))
    result = fail(fake, tmp_path, server={"flatuid": False})
    assert result["msg"] == "qmgr rejected a directive (rc=1): qmgr: Illegal operation: sett"


def test_value_with_a_double_quote_fails_before_qmgr_a(tmp_path: Path) -> None:
    fake = FakeQmgr()
    result = fail(fake, tmp_path, queues={"workq": {"comment": 'the "main" queue'}})
    assert "qmgr values cannot contain a double quote" in result["msg"]
    assert fake.scripts == []


# --- a server without nodes -----------------------------------------------------------------
# qmgr's `print node @default` fails with PBSE_NONODES when the server has no node at all (a fresh
# `pbs_server -t create` whose host runs no mom, or after every node was deleted). Read from stdin,
# qmgr exits with the status of the last request only: alone or last, that request makes the read fail.


def test_server_without_nodes_is_an_empty_node_list(tmp_path: Path) -> None:
    fake = FakeQmgr(nodes=None)
    result = run(fake, tmp_path, server={"flatuid": True}, nodes={"pbsh01": {}, "pbsh02": {}}, prune_nodes=True)
    assert fake.reads() == ["print server\nprint node @default\n"]
    assert result["commands"] == ["create node pbsh01", "create node pbsh02"]
    assert applied(fake) == result["commands"]


def test_server_without_nodes_and_nodes_reset_is_no_change(tmp_path: Path) -> None:
    fake = FakeQmgr(nodes=None)
    assert run(fake, tmp_path, nodes_reset=True)["changed"] is False


def test_server_without_nodes_read_before_hooks(tmp_path: Path) -> None:
    """Not the last request: qmgr exits 0 and prints the error only."""
    fake = FakeQmgr(nodes=None)
    result = run(fake, tmp_path, check=True, nodes={"pbsh01": {}}, hooks=[])
    assert result["commands"] == ["create node pbsh01"]


def test_a_node_read_error_other_than_no_nodes_still_fails(tmp_path: Path) -> None:
    err = "qmgr obj= svr=default: Unauthorized Request \nqmgr: Error (15007) returned from server\n"
    fake = FakeQmgr(read=(1, BANNER, err))
    result = fail(fake, tmp_path, nodes={"pbsh01": {}})
    assert result["msg"] == (
        "qmgr could not read the server state (rc=1): qmgr obj= svr=default: Unauthorized Request \n"
        "qmgr: Error (15007) returned from server"
    )


def test_no_nodes_error_with_another_error_still_fails(tmp_path: Path) -> None:
    err = "qmgr obj= svr=default: Unauthorized Request \nqmgr: Error (15007) returned from server\n" + NO_NODES
    fake = FakeQmgr(read=(1, BANNER, err))
    assert "Unauthorized Request" in fail(fake, tmp_path, server={}, nodes={"pbsh01": {}})["msg"]


@pytest.mark.parametrize("value", ["first\nsecond", "ends with CR\r", ["ok", "two\nlines"]])
def test_value_with_a_line_break_fails_before_qmgr_a(tmp_path: Path, value: object) -> None:
    """qmgr reads one directive a line: a line break would cut the value and run the rest as a directive."""
    fake = FakeQmgr()
    result = fail(fake, tmp_path, server={"flatuid": False}, nodes={"pbsh01": {"comment": value}})
    assert "qmgr values cannot contain a double quote or a line break" in result["msg"]
    assert fake.scripts == []
