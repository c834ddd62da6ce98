"""Reliable job startup (spec: shared/specs/reliable-job-startup.txt; catalogue RJS-1..RJS-9,
RJS-case, RJS-draft), in two parts.

Layout and the standard job are described in ptl_tests/reliable_startup_helpers.py: the job asks
for three chunks, a queuejob hook pads it to five (the primary + four sisters), the prune hook brings it
back to three with release_nodes(keep_select=<saved select>). Expected pruned values are computed
from the job's own initial exec_vnode (its 'S' record) and the hosts that failed, with the shipped
rule, then compared with exec_vnode/exec_host/schedselect/Resource_List, the 's' record, the
primary mom's "pruned from/to" lines, $PBS_NODEFILE, pbsdsh and pbs_tmrsh inside the job.

Part A, padding_pruning/ (needs_moms(6): the multi-vnode host too): interfaces, padding and pruning, job
shapes, the site hook pack. Each fault test asserts that the failed sister WAS in the initial
assignment (the 'S' record and "pruned from exec_vnode=..."), so a pass proves tolerance was
exercised, and names the failure in the primary mom's log.

- test_failed_sisters.py: a sister failing before the start, pruned away (PTL t4, t5, t6)
- test_starter_races.py: the two primary/starter races, each made to happen (gdb holds) and pinned
- test_tolerance.py: tolerate_node_failures, every way of setting it, and what its value decides
- test_increment_chunks.py: increment_chunks, the spec's examples; the early draft's API
- test_release_nodes.py: release_nodes(keep_select) without failures, impossible, outside launch
- test_shapes.py: ncpus=0 chunks, mpiprocs/ompthreads, scatter:excl, place=free, job arrays
- test_site_hook_pack.py: the deployed rjs_pad/rjs_prune pair end to end

Part B, timers_and_faults/ (needs_moms(5)): sister failures AFTER the sister was assigned, the startup
timers, tolerance after start (spec interfaces 1, 3, 4, 5, 6, 9). Every job is the standard job;
which host takes which chunk is predicted from the server's vnode order (`chunk_hosts`), and a
test fails a sister by its chunk role, e.g. "the second 2-cpu one". Failures are real: a hook
(nemesis.reject_hook) rejects, raises or sleeps on the sister; a sister whose hook sleeps is then
SIGKILLed, SIGSTOPped or its whole host crashed. Each test asserts that the failed sister was in the
job's initial exec_vnode (read from the server while the job waits in substate 41, or from the 'S'
record). Timer windows are measured between the primary mom's own log lines (1 s stamps, so +-1 s):
the start is a marker hook's "started" line on the primary, the end the line the timer produces.

- test_timer_options.py: the timer options logged when read; their defaults from the hooks' alarms
- test_join_alarm.py: a sister that never acknowledges IM_JOIN_JOB; qrerun of a job waiting on it
- test_prologue_acks.py: prologue acknowledgements and $job_launch_delay
- test_tolerance_after_start.py: a kept sister's mom killed while the job runs
- test_launch_hook_rights.py: what an execjob_launch hook may set
- test_execjob_resize.py: the execjob_resize event and hook
- test_sister_host_crash.py: a sister host crashing while it joins

Each part's conftest.py gives its `roles` and `kit` (and part A's node order, part B's chunk hosts);
shared by them: conftest.py (`short_alarms`),
jobs.py and sister_faults.py (part A: start timeout, report job, sister faults before the start),
sister_waits.py (part B: timer tolerances, hooks under fresh names, a job waiting in R/41, the
primary's log lines, predicted chunk hosts), and ptl_tests/reliable_startup_helpers.py.
"""
