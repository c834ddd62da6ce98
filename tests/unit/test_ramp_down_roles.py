"""The ramp-down suite's roles (ptl_tests/ramp_down_helpers.py: Roles and the select strings built
from them) over topologies built from a fake inventory listing and a canned `pbsnodes` answer
(tests/unit/test_topology.py's helpers; no PBS is involved)."""

import pytest

from ptl_tests.ramp_down_helpers import Roles, extra_select, standard_select
from tests.unit.test_topology import NAMES, build


def test_roles_of_the_six_host_layout() -> None:
    roles = Roles.of(build(NAMES))
    assert (roles.primary, roles.plain, roles.multi) == ("vm01", "vm02", "vm06")
    assert (
        roles.owner,
        roles.other,
        roles.topology.users.account("operator"),
        roles.topology.users.account("manager"),
    ) == (
        "alice",
        "bob",
        "oper",
        "mgr",
    )
    assert roles.plain_hosts(4) == ["vm02", "vm03", "vm04", "vm05"]  # the localssd host last
    assert roles.ssd_host() == "vm05"
    assert standard_select(roles) == "ncpus=1:host=vm01+ncpus=3:mem=2gb:host=vm06+ncpus=2:mem=2gb:host=vm02"
    assert [chunk.split(":")[-1] for chunk in extra_select(roles).split("+")] == ["host=vm01", "host=vm06", "host=vm02"]


def test_needs_beyond_the_standard_job_skip_only_when_asked() -> None:
    """Three hosts carry the standard job; more plain hosts or a localssd host apart from them are
    asked for by the tests that need them, which then skip naming the need."""
    roles = Roles.of(build(["head", "node", "fat"]))  # `node` is the plain host and offers localssd
    assert (roles.primary, roles.plain, roles.multi) == ("head", "node", "fat")
    with pytest.raises(pytest.skip.Exception, match=r"needs 2 single-vnode execution hosts with ncpus=2"):
        roles.plain_hosts(2)
    with pytest.raises(pytest.skip.Exception, match=r"localssd besides the primary and the plain host"):
        roles.ssd_host()
