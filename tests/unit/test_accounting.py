"""Accounting record parsing on lines shaped like OpenPBS's (quoting per accounting.c)."""

from datetime import datetime

from pbs_harness.pbs.evidence.accounting import of, parse, parse_line, split_fields, walltime_seconds

TEXT = """\
11/21/2026 16:20:00;Q;12.pbsh01;queue=workq
11/21/2026 16:20:01;S;12.pbsh01;user=pbsuser1 group=pbstest jobname="my job" exec_host=pbsh01/0+pbsh02/0 exec_vnode=(pbsh01:ncpus=1)+(pbsh02:ncpus=1) Resource_List.ncpus=2 Resource_List.select=2:ncpus=1
11/21/2026 16:20:09;u;12.pbsh01;user=pbsuser1 resources_used.walltime=00:00:08 resources_used.ncpus=2
11/21/2026 16:20:30;E;12.pbsh01;user=pbsuser1 Exit_status=0 resources_used.walltime=00:00:29 project='say "hi" there'
11/21/2026 16:21:00;Y;R5.pbsh01;requestor=Scheduler@pbsh01 start=1795000000 end=1795003600 nodes=(pbsh03:ncpus=1)
not a record
"""


def test_fields_and_groups() -> None:
    records = parse(TEXT)
    assert [r.type for r in records] == ["Q", "S", "u", "E", "Y"]
    s = records[1]
    assert s.time == datetime(2026, 11, 21, 16, 20, 1)
    assert s.fields["jobname"] == "my job"
    assert s.fields["exec_vnode"] == "(pbsh01:ncpus=1)+(pbsh02:ncpus=1)"
    assert s.resource_list == {"ncpus": "2", "select": "2:ncpus=1"}
    assert records[3].fields["project"] == 'say "hi" there'
    assert records[3].resources_used == {"walltime": "00:00:29"}


def test_query_by_id_and_type() -> None:
    records = parse(TEXT)
    assert [r.type for r in of(records, "12.pbsh01", "ue")] == ["u"]
    assert of(records, "R5.pbsh01")[0].fields["requestor"] == "Scheduler@pbsh01"


def test_helpers() -> None:
    assert split_fields("a=1  b=2") == ["a=1", "b=2"]
    assert parse_line("garbage") is None
    assert walltime_seconds("01:02:03") == 3723
