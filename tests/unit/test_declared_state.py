"""The declared state (pbs_harness.suite.declared) and its comparison with the live server (pbs_harness.suite.drift).

Plain data stands in for the cluster: `qmgr -c 'print server'` text as OpenPBS 23.06 prints it,
pbsnodes-shaped dicts, `list hook` attributes and md5 sums. Nothing talks to PBS here; the repairs
are run on a real server by the acceptance self-test test_harness.py::test_a_killed_run_...
"""

from __future__ import annotations

import hashlib

from pbs_harness.suite import declared, drift

PRINT_SERVER = """#
# Create resources and set their properties.
#
create resource localssd
set resource localssd type = long
set resource localssd flag = hn
create resource rd_bool
set resource rd_bool type = boolean
#
# Create queues and set their attributes.
#
create queue workq
set queue workq queue_type = Execution
set queue workq enabled = True
set queue workq started = True
set queue workq max_run = "[u:PBS_GENERIC=2]"
create queue asexpress
set queue asexpress queue_type = Execution
create queue R12
set queue R12 queue_type = Execution
#
# Set server attributes.
#
set server scheduling = True
set server managers = pbsmgr@*
set server managers += other@*
set server operators = pbsoper@*
set server log_events = 511
set server resources_default.ncpus = 1
set server reserve_retry_time = 7
set server reserve_retry_init = 7
set server mailer = /usr/sbin/sendmail
"""

PRISTINE = {"scheduling": "True", "log_events": "511", "resources_default.ncpus": "1", "mailer": "/usr/sbin/sendmail"}
INVENTORY = {"log_events": 2047, "managers": ["pbsmgr@*"], "operators": ["pbsoper@*"], "flatuid": True}


def test_declared_server_is_the_pristine_record_under_the_inventory() -> None:
    got = declared.server_attributes(PRISTINE, {**INVENTORY, "mailer": None})
    assert got == {
        "scheduling": "True",
        "log_events": 2047,
        "resources_default.ncpus": "1",
        "managers": ["pbsmgr@*"],
        "operators": ["pbsoper@*"],
        "flatuid": True,
    }


def test_print_server_is_parsed_into_server_queues_and_custom_resources() -> None:
    server, queues, resources = drift.parse_print_server(PRINT_SERVER)
    assert server["managers"] == ["pbsmgr@*", "other@*"]
    assert server["reserve_retry_init"] == "7"
    assert queues["workq"]["max_run"] == "[u:PBS_GENERIC=2]"
    assert sorted(queues) == ["R12", "asexpress", "workq"]
    assert resources == {"localssd", "rd_bool"}


def test_leftover_retry_attributes_are_reset_through_reserve_retry_init() -> None:
    """Both shown (a restart brought them back): one reset, reported, that leaves none stored."""
    server, _, _ = drift.parse_print_server(PRINT_SERVER)
    repairs = drift.plan_server(declared.server_attributes(PRISTINE, INVENTORY), server, always_reset_retry=True)
    by_what = {r.what: r.directives for r in repairs}
    reset = next(r for r in repairs if r.what and "reserve_retry" in r.what)
    assert reset.what == (
        "server reserve_retry_init = 7 (declared: unset); server reserve_retry_time = 7 (declared: unset): "
        "reset (reserve_retry_init set and unset, so that the server's database keeps none)"
    )
    assert reset.directives == (
        "set server reserve_retry_init = 600",
        "unset server reserve_retry_init",
        "unset server reserve_retry_time",
    )
    assert by_what["server log_events = 511 (declared: 2047): set"] == ("set server log_events = 2047",)
    assert by_what["server managers = pbsmgr@*,other@* (declared: pbsmgr@*): set"] == (
        "set server managers = pbsmgr@*",
    )
    assert by_what["server flatuid = unset (declared: True): set"] == ("set server flatuid = True",)
    assert len(repairs) == 4  # equal values (lists as sets, booleans in any case) are left alone


def test_the_reset_runs_and_is_reported_when_nothing_shows() -> None:
    """A value kept in the database out of view shows nowhere: the session start resets anyway, and
    says so (every repair is reported)."""
    live = {"scheduling": "True", "log_events": "2047"}
    wanted = {"scheduling": True, "log_events": 2047}
    assert drift.plan_server(wanted, live, always_reset_retry=False) == []
    (reset,) = drift.plan_server(wanted, live, always_reset_retry=True)
    assert reset.what == (
        "server reserve_retry_init: reset although none shows (reserve_retry_time = unset) "
        "(reserve_retry_init set and unset, so that the server's database keeps none)"
    )
    assert reset.directives[:2] == ("set server reserve_retry_init = 600", "unset server reserve_retry_init")


def test_a_declared_reserve_retry_time_is_set_again_after_the_reset() -> None:
    (reset,) = drift.plan_server({"reserve_retry_time": 30}, {"reserve_retry_time": "7"}, always_reset_retry=False)
    assert reset.directives == (
        "set server reserve_retry_init = 30",
        "unset server reserve_retry_init",
        "set server reserve_retry_time = 30",
    )


def test_queues_not_declared_are_deleted_except_reservation_queues() -> None:
    _, queues, _ = drift.parse_print_server(PRINT_SERVER)
    repairs = drift.plan_queues(declared.DEFAULT_QUEUES, queues)
    assert [(r.what, r.directives) for r in repairs] == [
        ("queue asexpress (not declared): deleted", ("delete queue asexpress",)),
        ("queue workq max_run = [u:PBS_GENERIC=2] (declared: unset): unset", ("unset queue workq max_run",)),
    ]


def test_vnodes_are_put_back_online_without_priority_comment_or_undeclared_custom_resources() -> None:
    nodes = {
        "h1": {"state": "free", "resources_available": {"ncpus": 2, "localssd": 1}},
        "h2": {"state": "offline", "Priority": 100, "resources_available": {"ncpus": 2, "rd_bool": "True"}},
        "h3": {"state": "free", "comment": "leaked", "resources_available": {"ncpus": 2}},
    }
    repairs = drift.plan_nodes(
        {"h1": {"localssd": 1}, "h3": {"localssd": 2}}, nodes, frozenset({"localssd", "rd_bool"})
    )
    assert [(r.what, r.directives) for r in repairs] == [
        ("vnode h2 offline (declared: online): offline cleared", ("set node h2 state -= offline",)),
        ("vnode h2 priority = 100 (declared: unset): unset", ("unset node h2 priority",)),
        (
            "vnode h2 resources_available.rd_bool = True (declared: unset): unset",
            ("unset node h2 resources_available.rd_bool",),
        ),
        ("vnode h3 comment = leaked (declared: unset): unset", ("unset node h3 comment",)),
        (
            "vnode h3 resources_available.localssd = unset (declared: 2): set",
            ("set node h3 resources_available.localssd = 2",),
        ),
    ]


def test_node_resources_come_from_node_attributes_and_vnode_layouts() -> None:
    server_vars = {"openpbs_server_node_attributes": {"h5": {"resources_available.localssd": 1, "priority": 5}}}
    layout = {"h6": {"natural": {"ncpus": 1}, "vnodes": {"h6[0]": {"ncpus": 1, "resources_available.ngpus": 2}}}}
    got = declared.node_resources(server_vars, {"h5": {}, "h6": {"openpbs_mom_vnode_layouts": layout}})
    assert got == {"h5": {"localssd": 1}, "h6": {"ncpus": 1}, "h6[0]": {"ncpus": 1, "ngpus": 2}}


def md5(text: str) -> str:
    return hashlib.md5(text.encode()).hexdigest()  # noqa: S324 - the server's md5sum, compared


def test_hooks_not_declared_go_and_declared_ones_get_their_attributes_body_and_config_back() -> None:
    pad = declared.DeclaredHook({"event": ["queuejob"], "order": 1, "alarm": 30, "enabled": False}, "body\n", "{}\n")
    live = {
        "rjs_pad": {"type": "site", "enabled": "true", "event": "queuejob", "order": "1", "alarm": "30"},
        "rd_stageout": {"type": "site", "enabled": "true", "event": "execjob_epilogue"},
        "pbs_cgroups": {"type": "site", "enabled": "false"},
    }
    md5s = {"rjs_pad.PY": md5("body\n"), "rjs_pad.CF": md5('{"increment": 2}\n')}
    repairs = drift.plan_hooks({"rjs_pad": pad}, frozenset({"pbs_cgroups"}), live, md5s)
    assert [(r.what, r.directives, r.hook_import) for r in repairs] == [
        ("hook rd_stageout (not declared): deleted", ("delete hook rd_stageout",), None),
        ("hook rjs_pad enabled = true (declared: false): set", ("set hook rjs_pad enabled = false",), None),
        (
            "hook rjs_pad config differs from its source: imported again",
            (),
            ("rjs_pad", "application/x-config", "{}\n"),
        ),
    ]


def test_hook_sources_resolve_the_inventory_dir_template(tmp_path) -> None:
    (tmp_path / "inv" / "hooks").mkdir(parents=True)
    given = {"openpbs_hooks_src_dir": "{{ inventory_dir }}/hooks", "inventory_dir": str(tmp_path / "inv")}
    assert declared.hook_sources(given) == tmp_path / "inv" / "hooks"
    assert declared.hook_sources({"openpbs_hooks_src_dir": "{{ other_var }}/hooks"}) is None


def test_the_pristine_record_is_where_the_role_writes_it_unless_the_inventory_moves_it(tmp_path) -> None:
    assert declared.pristine_record_path({}, tmp_path) == str(tmp_path / "server_priv/pbs_harness_baseline.json")
    assert declared.pristine_record_path({"openpbs_server_baseline_file": "/x.json"}, tmp_path) == "/x.json"


def test_templated_inventory_values_are_not_compared() -> None:
    """ansible-inventory --list shows a Jinja value unrendered: its attribute is left as the server has it."""
    got = declared.of_inventory(
        {"openpbs_server_attributes": {"acl_hosts": "{{ groups.all }}", "flatuid": True}}, {}, {}, ""
    )
    assert got.templated == {"acl_hosts"}
    assert "acl_hosts" not in got.server
    live = {"acl_hosts": "h1,h2", "flatuid": "True"}
    assert drift.plan_server(got.server, live, always_reset_retry=False, skip=got.templated) == []
