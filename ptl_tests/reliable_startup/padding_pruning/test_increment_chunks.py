"""Part A, interface 7: increment_chunks, every example of the spec, from a real queuejob hook (PTL
t13), and the early draft's API that never shipped."""

from __future__ import annotations

import re

import pytest

from ptl_tests.hook_files import install_hooks
from ptl_tests.reliable_startup_helpers import select_probe_hook

pytestmark = [pytest.mark.acceptance, pytest.mark.reliable_startup, pytest.mark.needs_moms(6)]


# ---------------------------------------------------------------------------------------------
# Interface 7: increment_chunks, every example of the spec, from a real queuejob hook (PTL t13)

SPEC_SELECT = "ncpus=3:mem=1gb+1:ncpus=2:mem=2gb+2:ncpus=1:mem=3gb"
SPEC_SELECT_5 = "5:ncpus=3:mem=1gb+1:ncpus=2:mem=2gb+2:ncpus=1:mem=3gb"
INCREMENT_EXAMPLES = [
    (SPEC_SELECT, 2, "1:ncpus=3:mem=1gb+3:ncpus=2:mem=2gb+4:ncpus=1:mem=3gb"),
    (SPEC_SELECT, "3", "1:ncpus=3:mem=1gb+4:ncpus=2:mem=2gb+5:ncpus=1:mem=3gb"),
    (SPEC_SELECT, "23.5%", "1:ncpus=3:mem=1gb+2:ncpus=2:mem=2gb+3:ncpus=1:mem=3gb"),
    (SPEC_SELECT, {0: 0, 1: 4, 2: "50%"}, "1:ncpus=3:mem=1gb+5:ncpus=2:mem=2gb+3:ncpus=1:mem=3gb"),
    (SPEC_SELECT_5, "50%", "7:ncpus=3:mem=1gb+2:ncpus=2:mem=2gb+3:ncpus=1:mem=3gb"),
    (SPEC_SELECT_5, {0: "50%", 1: "50%", 2: "50%"}, "7:ncpus=3:mem=1gb+2:ncpus=2:mem=2gb+3:ncpus=1:mem=3gb"),
]


@pytest.mark.spec("RJS-7")
@pytest.mark.guards("RJS-7")
def test_increment_chunks_spec_examples(kit, conformance) -> None:
    cases = [
        (SPEC_SELECT, [spec for sel, spec, _ in INCREMENT_EXAMPLES if sel == SPEC_SELECT]),
        (SPEC_SELECT_5, [spec for sel, spec, _ in INCREMENT_EXAMPLES if sel == SPEC_SELECT_5]),
    ]
    zero = 'pbs.select("ncpus=1+ncpus=2").increment_chunks(0)'
    hook = select_probe_hook("incr", increment_probe=cases, draft_probe=[zero])
    install_hooks(kit.pbs, kit.cluster, {"incr": hook})
    job_id = kit.submit(args=["-h"])
    assert kit.pbs.jobs.status(job_id)["job_state"] == "H"  # the queuejob hook accepted it
    for select in (SPEC_SELECT, SPEC_SELECT_5):
        kit.server_log.expect(f"incr: sel={re.escape(select)}$", kit.since, timeout=20)
    for _, spec, want in INCREMENT_EXAMPLES:
        line = kit.server_log.expect(
            f"incr: sel.increment_chunks\\({re.escape(repr(spec))}\\)=", kit.since, timeout=20
        ).message
        got, _, kind = line.split(")=", 1)[1].rpartition(" [")
        assert got == want, line
        assert kind == "select]", line  # a pbs.select, also where the spec says "would return a string"
    # A plain 0 ("the amount to add") is refused; {0: 0} above is accepted.
    got = kit.server_log.expect(f"incr: draft {re.escape(zero)} -> ", kit.since, 20).message.split(" -> ", 1)[1]
    assert got == "ValueError: bad increment specs", got
    conformance.difference(
        "RJS-7",
        spec_says="if 'increment_spec' is a number (int or long), then it will be the amount to add",
        openpbs_does="increment_chunks(0) raises ValueError('bad increment specs')",
        evidence=got,
    )


@pytest.mark.spec("RJS-draft", "RJS-7")
@pytest.mark.guards("RJS-draft")
def test_early_draft_api_absent(kit, conformance) -> None:
    """select_reliable_startup, select_requested and increment_chunks(first_chunk=...) never shipped."""
    probes = [
        'j.Resource_List["select"].increment_chunks(1, first_chunk=True)',
        "j.select_requested",
        'j.Resource_List["select_reliable_startup"]',
    ]
    hook = select_probe_hook("draft", draft_probe=probes)
    install_hooks(kit.pbs, kit.cluster, {"draft": hook})
    kit.submit(args=["-h"])
    got = {
        p: kit.server_log.expect(f"draft: draft {re.escape(p)} -> ", kit.since, timeout=20).message.split(" -> ", 1)[1]
        for p in probes
    }
    assert got[probes[0]].startswith("TypeError:"), got
    assert "first_chunk" in got[probes[0]], got
    assert got[probes[1]] == "AttributeError: '_job' object has no attribute 'select_requested'", got
    assert got[probes[2]] == "AttributeError: 'pbs_resource' object has no attribute 'select_reliable_startup'", got
    res = kit.pbs.jobs.host.run(
        kit.pbs.jobs.line("qsub", "-l", "select_reliable_startup=ncpus=1", "--", "/bin/true"), user=kit.user
    )
    assert not res.ok
    assert "Unknown resource" in res.stderr, res.stderr
    conformance.difference(
        "RJS-draft",
        spec_says="increment_chunks(increment, first_chunk=False); select_requested attribute; "
        "select_reliable_startup resource",
        openpbs_does=f"increment_chunks(1, first_chunk=True) -> {got[probes[0]]}; "
        f"select_requested -> {got[probes[1]]}; qsub -l select_reliable_startup -> {res.stderr.strip()}",
        evidence=str(got),
    )
