"""reserve_retry_time and its relatives on the server (RV-1..RV-4): the 600 s default, who may set
and see reserve_retry_time and a reservation's reserve_retry, the deprecated reserve_retry_init and
the removed reserve_retry_cutoff."""

from __future__ import annotations

import time
from datetime import datetime

import pytest

from pbs_harness.pbs.base import parse_json
from pbs_harness.pbs.evidence import pick
from pbs_harness.pbs.parsers import vnodes_of
from ptl_tests.resv_reconfirm_helpers import (
    DEFAULT_RETRY,
    DEGRADED,
    FAR,
    LONG,
    retry_epoch,
    retry_line,
    submit_resv,
)

pytestmark = [pytest.mark.acceptance, pytest.mark.resv_reconfirm, pytest.mark.requires_feature("reserve_retry_time")]


def server_attrs(pbs, user: str | None) -> dict:
    res = pbs.server.run("qstat", "-Bf", "-F", "json", user=user)
    assert res.ok, res.stderr
    return pick.one(parse_json(res.stdout)["Server"].values(), f"one server in qstat -Bf as {user or 'root'}", str)


class StaleRetryTime(AssertionError):
    """The server retries on a schedule other than the reserve_retry_time it shows."""


@pytest.mark.spec("RV-1", "RV-2", "RV-6")
@pytest.mark.guards("RV-1", "RV-2", "RV-6")
def test_unset_reserve_retry_time_means_600_seconds_before_the_first_attempt(rv) -> None:
    pbs = rv.pbs
    (host,) = rv.topology.plain_hosts(1, ncpus=2)
    assert "reserve_retry_time" not in pbs.server.status()  # unset at the baseline
    rv.steer.prefer(host)
    resv = submit_resv(pbs, "1:ncpus=2", start_in=FAR, duration=LONG, user=rv.owner)
    since = datetime.now()

    seen, before, after, _ = rv.degrade("offline", resv, host, DEGRADED)

    retry = retry_epoch(seen)
    assert before + DEFAULT_RETRY <= retry <= after + DEFAULT_RETRY, (before, seen["reserve_retry"], after)
    retry_line(rv.cluster, resv.id, retry, since, first=True)
    # Nothing is attempted before the retry time: still degraded on the offline node.
    assert vnodes_of(rv.status(resv)["resv_nodes"]) == [host]


@pytest.mark.spec("RV-2")
def test_reserve_retry_of_a_degraded_reservation_is_shown_to_every_role(rv, conformance) -> None:
    """The spec says "Perms: Manager read"; shipped, pbs_rstat -F of a degraded reservation lists
    reserve_retry for a manager, an operator and the reservation's owner alike (the attribute's
    flags are READ_WRITE, src/lib/Libattr/master_resv_attr_def.xml). Default retry time: the
    reservation stays degraded for the whole test."""
    pbs = rv.pbs
    (host,) = rv.topology.plain_hosts(1, ncpus=2)
    rv.steer.prefer(host)
    resv = submit_resv(pbs, "1:ncpus=2", start_in=FAR, duration=LONG, user=rv.owner)
    rv.degrade("offline", resv, host, DEGRADED)
    accounts = {
        "manager": rv.topology.users.account("manager"),
        "operator": rv.topology.users.account("operator"),
        "owner": rv.owner,
    }
    seen = {role: pbs.resv.status(resv.id, user=account) for role, account in accounts.items()}
    assert all(seen.values()), f"pbs_rstat -F {resv.id} listed nothing for {[r for r, s in seen.items() if not s]}"
    values = {role: attrs.get("reserve_retry") for role, attrs in seen.items()}
    assert values["manager"] is not None, seen["manager"]
    assert retry_epoch(seen["manager"]) > int(time.time())  # the next attempt lies ahead
    assert values == dict.fromkeys(accounts, values["manager"]), values
    conformance.difference(
        "RV-2",
        spec_says="Reservation attribute reserve_retry: Perms: Manager read",
        openpbs_does="pbs_rstat -F shows reserve_retry to operators and to the reservation's owner as well",
        evidence=f"pbs_rstat -F {resv.id} reserve_retry by role ({accounts}): {values}",
    )


@pytest.mark.spec("RV-1")
@pytest.mark.guards("RV-1")
def test_reserve_retry_time_is_set_by_managers_only_and_shown_to_managers_only(pbs, topology, conformance) -> None:
    # The accounts by role (root is the superuser on every cluster, not a test account).
    user = {
        "root": "root",
        "manager": topology.users.account("manager"),
        "operator": topology.users.account("operator"),
        "owner": topology.users.owner,
    }
    ok = pbs.server.set({"reserve_retry_time": 42}, user=user["manager"])
    assert ok.ok, ok.stderr
    refused = {r: pbs.server.set({"reserve_retry_time": 7}, user=user[r]).stderr for r in ("operator", "owner")}
    assert refused == {
        # An operator may use qmgr but not write a manager-only attribute (PBSE_ATTRRO) ...
        "operator": "qmgr obj= svr=default: Cannot set attribute, read only or insufficient permission "
        " reserve_retry_time\nqmgr: Error (15003) returned from server\n",
        # ... a user may not manage the server at all (PBSE_PERM).
        "owner": "qmgr obj= svr=default: Unauthorized Request \nqmgr: Error (15007) returned from server\n",
    }
    seen = {r: server_attrs(pbs, user[r]).get("reserve_retry_time") for r in ("root", "manager", "operator", "owner")}
    # master_svr_attr_def.xml: ATR_DFLAG_MGWR | ATR_DFLAG_MGRD.
    assert seen == {"root": 42, "manager": 42, "operator": None, "owner": None}
    conformance.difference(
        "RV-1",
        spec_says="Perms: Manager write / Everyone read",
        openpbs_does="only managers see reserve_retry_time (qstat -Bf as an operator or a user does not list it)",
        evidence=f"reserve_retry_time seen by role: {seen} (accounts {user})",
    )
    # The value must be > 0 (action_reserve_retry_time: PBSE_BADATVAL, whose reply names no attribute).
    rejected = {bad: pbs.server.set({"reserve_retry_time": bad}).stderr for bad in (0, -5)}
    illegal = "qmgr obj= svr=default: Illegal attribute or resource value\nqmgr: Error (15014) returned from server\n"
    assert rejected == {0: illegal, -5: illegal}
    assert server_attrs(pbs, None)["reserve_retry_time"] == 42


@pytest.mark.spec("RV-3", "RV-1")
@pytest.mark.guards("RV-3")
@pytest.mark.requires_feature("reserve_retry_init")  # deprecated: a later release may drop it
def test_deprecated_reserve_retry_init_still_sets_reserve_retry_time(rv) -> None:
    pbs = rv.pbs
    res = pbs.server.set({"reserve_retry_init": 7})
    assert res.ok, res.stderr
    status = pbs.server.status()
    assert (status.get("reserve_retry_init"), status.get("reserve_retry_time")) == (7, 7)
    # The copy drives the retry schedule: the first attempt comes 7 s after the node goes.
    (host,) = rv.topology.plain_hosts(1, ncpus=2)
    rv.steer.prefer(host)
    resv = submit_resv(pbs, "1:ncpus=2", start_in=FAR, duration=LONG, user=rv.owner)
    seen, before, after, _ = rv.degrade("offline", resv, host, DEGRADED)
    assert before + 7 <= retry_epoch(seen) <= after + 7, (before, seen["reserve_retry"], after)

    # Setting reserve_retry_time unsets the deprecated attribute.
    res = pbs.server.set({"reserve_retry_time": 9})
    assert res.ok, res.stderr
    status = pbs.server.status()
    assert (status.get("reserve_retry_init"), status.get("reserve_retry_time")) == (None, 9)


@pytest.mark.xfail(
    strict=True,
    raises=StaleRetryTime,
    reason="OpenPBS (master, 23.06.06, 22.05.11): "
    "'unset server reserve_retry_init' resets the server's retry interval to 600 s "
    "(req_manager.c) but leaves reserve_retry_time showing the value init had copied into it (7): the "
    "reservation's reserve_retry is then 600 s away while qstat -Bf says reserve_retry_time = 7",
)
@pytest.mark.spec("RV-3", "RV-1")
@pytest.mark.guards("RV-3", "RV-1")
@pytest.mark.requires_feature("reserve_retry_init")
def test_unsetting_reserve_retry_init_leaves_the_shown_reserve_retry_time_in_force(rv) -> None:
    pbs = rv.pbs
    assert pbs.server.set({"reserve_retry_init": 7}).ok
    assert pbs.server.unset("reserve_retry_init").ok
    status = pbs.server.status()
    assert (status.get("reserve_retry_init"), status.get("reserve_retry_time")) == (None, 7)
    (host,) = rv.topology.plain_hosts(1, ncpus=2)
    rv.steer.prefer(host)
    resv = submit_resv(pbs, "1:ncpus=2", start_in=FAR, duration=LONG, user=rv.owner)

    seen, before, after, _ = rv.degrade("offline", resv, host, DEGRADED)

    retry = retry_epoch(seen)
    if before + DEFAULT_RETRY <= retry <= after + DEFAULT_RETRY:
        raise StaleRetryTime(
            f"reserve_retry_time shows 7 but the retry is {retry - before} s after the fault: {seen['reserve_retry']}"
        )
    assert before + 7 <= retry <= after + 7, (before, seen["reserve_retry"], after)


@pytest.mark.spec("RV-4")
@pytest.mark.guards("RV-4")
def test_reserve_retry_cutoff_is_gone(pbs) -> None:
    # qmgr checks attribute names itself: the obsolete name is refused like any unknown word.
    outputs = {}
    for name in ("reserve_retry_cutoff", "reserve_retry_cutofx"):  # same length: the caret column matches
        directive = f"set server {name}=7200"
        res = pbs.server.qmgr(directive)
        lines = res.stderr.splitlines()
        caret = [line.strip() for line in lines[2:3]]
        assert (res.ok, lines[:2], caret) == (False, ["qmgr: Syntax error", directive], ["^"]), res.stderr
        outputs[name] = res.stderr.replace(name, "NAME")
    assert outputs["reserve_retry_cutoff"] == outputs["reserve_retry_cutofx"]
    assert "reserve_retry_cutoff" not in pbs.server.status()
