"""Part B, interfaces 3 and 4: $sister_join_job_alarm and $job_launch_delay are logged when the mom
reads its config; without them, the defaults come from the enabled hooks' alarms (PTL t3) or are 30."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from pbs_harness.pbs.evidence.logs import mom_log
from ptl_tests.reliable_startup.sister_waits import (
    JOIN_EARLY,
    JOIN_SLACK,
    LAUNCH_EARLY,
    LAUNCH_SLACK,
    install,
    marker,
    wait_prerun_on,
)
from ptl_tests.reliable_startup_helpers import (
    JOIN_ALARM,
    JOIN_ALARM_UPDATED,
    LAUNCH_DELAY,
    LAUNCH_DELAY_UPDATED,
    PBSEVENT_SYSTEM,
    PROLOGUES_INCOMPLETE,
    hosts_of,
    pad_hook,
    probe_hook,
    seconds_between,
    set_mom_options,
)

pytestmark = [pytest.mark.acceptance, pytest.mark.reliable_startup, pytest.mark.needs_moms(5)]


# ---------------------------------------------------------------------------------------------
# Interfaces 3 and 4: the options are logged when the mom reads its config


@pytest.mark.spec("RJS-3", "RJS-4")
@pytest.mark.parametrize("read_at", ["hup", "mom start"])
def test_timer_options_are_logged_when_the_mom_reads_its_config(pbs, cluster, nemesis, roles, read_at: str) -> None:
    host = roles.sister(1)  # any mom logs them; a sister's restart disturbs nothing else
    since = set_mom_options(pbs, cluster, host, {JOIN_ALARM: 11, LAUNCH_DELAY: 13})
    if read_at == "mom start":
        fault = nemesis.kill_mom(host)
        pbs.nodes.wait_state([host], "down", timeout=30, exact=False)
        since = datetime.now() - timedelta(seconds=1)
        nemesis.heal(fault)  # starts pbs_mom again
        pbs.nodes.wait_state([host], "free", timeout=60)
    mom = mom_log(cluster, host)
    for name, value in (("sister_join_job_alarm", "11"), ("job_launch_delay", "13")):
        line = mom.expect(f";{name};{value}$", since, timeout=30)
        # PBSEVENT_SYSTEM, as the spec says; the "object" field is the option's name.
        assert line.event & PBSEVENT_SYSTEM, line.raw
        assert (line.obj, line.message) == (name, value), line.raw


# ---------------------------------------------------------------------------------------------
# Interfaces 3 and 4: defaults from the enabled hooks' alarms (real time: about 30 s each)


@pytest.mark.spec("RJS-3", "RJS-4", "RJS-1")
@pytest.mark.guards("RJS-3", "RJS-4")
@pytest.mark.usefixtures("primary_timers_reset")
def test_default_timers_are_the_sums_of_enabled_hook_alarms(pbs, cluster, nemesis, kit) -> None:
    """No $sister_join_job_alarm / $job_launch_delay in the config: two execjob_begin hooks with
    alarms 6 and 7 make the join alarm 13, two execjob_prologue hooks with alarms 5 and 6 make the
    launch delay 11 (PTL t3). The first 2-cpu sister is SIGSTOPped before the job (it never joins),
    the second is SIGSTOPped while its prologue hook sleeps (it never acknowledges)."""
    join_silent, prologue_silent = kit.chunk_hosts[1], kit.chunk_hosts[2]
    begin_alarms, prologue_alarms = (6, 7), (5, 6)
    hooks = {f"fb_b{i}": probe_hook(f"fb{i}", "execjob_begin", alarm=a) for i, a in enumerate(begin_alarms)}
    hooks |= {
        f"fb_p{i}": probe_hook(f"fb{i}", "execjob_prologue", alarm=a, sleep_on={prologue_silent: 3})
        for i, a in enumerate(prologue_alarms)
    }
    hooks["fb_pad"] = pad_hook()
    install(pbs, cluster, hooks)
    join_alarm, launch_delay = sum(begin_alarms), sum(prologue_alarms)
    kit.mom.expect(JOIN_ALARM_UPDATED.format(secs=join_alarm), kit.since, timeout=30)
    kit.mom.expect(LAUNCH_DELAY_UPDATED.format(secs=launch_delay), kit.since, timeout=30)
    nemesis.stop_mom(join_silent)

    job_id = kit.submit()
    kit.mom_of(prologue_silent).expect(f"fb0 prologue on {prologue_silent}: sleeping", kit.since, timeout=60)
    waiting = wait_prerun_on(kit, job_id, prologue_silent)
    assert join_silent in hosts_of(waiting["exec_vnode"]), waiting["exec_vnode"]
    nemesis.stop_mom(prologue_silent)

    begun = marker(kit, "fb0", "begin")
    exceeded, used = kit.join_alarm_exceeded(job_id, kit.since, timeout=60)
    assert used == join_alarm, f"the primary's join alarm: expected {join_alarm}s, it used {used}s: {exceeded.raw}"
    waited = seconds_between(begun.time, exceeded.time)
    assert join_alarm - JOIN_EARLY <= waited <= join_alarm + JOIN_SLACK, (
        f"join wait {waited}s, default alarm {join_alarm}s"
    )
    prologue = marker(kit, "fb0", "prologue")
    incomplete = kit.mom.expect(f"Job;{job_id};{PROLOGUES_INCOMPLETE}", kit.since, timeout=60)
    waited = seconds_between(prologue.time, incomplete.time)
    assert launch_delay - LAUNCH_EARLY <= waited <= launch_delay + LAUNCH_SLACK, (
        f"launch wait {waited}s, default {launch_delay}s"
    )
    kit.started(job_id, timeout=30)


@pytest.mark.spec("RJS-3", "RJS-1")
@pytest.mark.guards("RJS-3")
@pytest.mark.parametrize("begin_hooks", ["none", "alarms 6+7, then HUP"])
@pytest.mark.usefixtures("primary_timers_reset")
def test_default_join_alarm_is_30(pbs, nemesis, kit, conformance, begin_hooks: str) -> None:
    """With no enabled execjob_begin hook the join alarm is 30 s. A HUP also brings it back to 30
    although enabled begin hooks' alarms add up to 13: the mom sums them only when a hook file
    arrives (and at start), while a HUP re-reads the config and falls back to 30."""
    silent, default = kit.chunk_hosts[1], 30
    hooks = {"fb_pad": pad_hook()}
    if begin_hooks != "none":
        hooks |= {f"fb_b{a}": probe_hook("fb", "execjob_begin", alarm=a) for a in (6, 7)}
    install(pbs, kit.cluster, hooks)
    if begin_hooks != "none":
        kit.mom.expect(JOIN_ALARM_UPDATED.format(secs=13), kit.since, timeout=30)
    pbs.mom_config.hup(kit.cluster.hosts[kit.primary])  # also clears a sum an earlier test's hooks left behind
    kit.mom.expect(";pbs_mom;n/a;process_hup;reset$", kit.since, timeout=30)
    nemesis.stop_mom(silent)

    job_id = kit.submit()
    waiting = wait_prerun_on(kit, job_id, silent)
    run = kit.server_log.expect(f"Job;{job_id};Job Run at request of", kit.since, timeout=10)
    exceeded, used = kit.join_alarm_exceeded(job_id, kit.since, timeout=90)
    assert used == default, f"the primary's join alarm: expected {default}s, it used {used}s: {exceeded.raw}"
    waited = seconds_between(run.time, exceeded.time)
    assert default <= waited <= default + JOIN_SLACK, f"join wait {waited}s"
    assert silent in hosts_of(waiting["exec_vnode"])
    kit.started(job_id, timeout=30)
    if begin_hooks != "none":
        conformance.difference(
            "RJS-3",
            spec_says="default $sister_join_job_alarm = the sum of the enabled execjob_begin hooks' alarms",
            openpbs_does=(
                "the sum is taken at mom start and when a hook file arrives; after a kill -HUP the mom uses 30"
                " although enabled execjob_begin hooks with alarms 6 and 7 exist (sum 13)"
            ),
            evidence=exceeded.raw,
        )


@pytest.mark.spec("RJS-4", "RJS-1")
@pytest.mark.guards("RJS-4")
@pytest.mark.usefixtures("primary_timers_reset")
def test_default_launch_delay_is_30_after_a_hup(pbs, nemesis, kit, conformance) -> None:
    """The launch delay's fallback, 30 s: enabled execjob_prologue hooks with alarms 5 and 6 make it
    11 when their files arrive, and a HUP brings it back to 30 (the mom re-reads its config and sums
    the hooks' alarms only when a hook file arrives, as for the join alarm). A 2-cpu sister is stopped
    while its prologue hook sleeps (it never acknowledges): the primary launches 30 s after its
    own prologue. Without an enabled prologue hook the primary waits for nothing (test_join_alarm.py),
    so this is where the 30 shows."""
    silent, default = kit.chunk_hosts[2], 30
    hooks = {"fb_pad": pad_hook()}
    hooks |= {
        f"fb_p{i}": probe_hook(f"fb{i}", "execjob_prologue", alarm=a, sleep_on={silent: 3})
        for i, a in enumerate((5, 6))
    }
    install(pbs, kit.cluster, hooks)
    kit.mom.expect(LAUNCH_DELAY_UPDATED.format(secs=11), kit.since, timeout=30)
    pbs.mom_config.hup(kit.cluster.hosts[kit.primary])
    kit.mom.expect(";pbs_mom;n/a;process_hup;reset$", kit.since, timeout=30)

    job_id = kit.submit()
    kit.mom_of(silent).expect(f"fb0 prologue on {silent}: sleeping", kit.since, timeout=60)
    wait_prerun_on(kit, job_id, silent)
    nemesis.stop_mom(silent)
    prologue = marker(kit, "fb0", "prologue")
    incomplete = kit.mom.expect(f"Job;{job_id};{PROLOGUES_INCOMPLETE}", kit.since, timeout=default + 60)
    waited = seconds_between(prologue.time, incomplete.time)
    assert default - LAUNCH_EARLY <= waited <= default + LAUNCH_SLACK, f"launch wait {waited}s, default {default}s"
    kit.started(job_id, timeout=30)
    conformance.difference(
        "RJS-4",
        spec_says="default $job_launch_delay = the sum of the enabled execjob_prologue hooks' alarms",
        openpbs_does=(
            "the sum is taken at mom start and when a hook file arrives; after a kill -HUP the mom uses 30"
            " although enabled execjob_prologue hooks with alarms 5 and 6 exist (sum 11)"
        ),
        evidence=f"{prologue.raw} / {incomplete.raw}",
    )
