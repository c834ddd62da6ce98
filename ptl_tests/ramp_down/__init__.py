"""Node ramp-down: pbs_release_nodes on real OpenPBS (spec: node-ramp-down.txt).

Hosts by role, from the cluster topology (`Roles` in ptl_tests/ramp_down_helpers.py): the primary (the
server host), a plain 2-cpu host, and the multi-vnode host (on inventory/local: natural vnode + 4 vnodes,
1 cpu / 1gb each). The standard job pins one chunk to each, so the middle chunk is a super-chunk
over three vnodes of the multi-vnode host:

    select = ncpus=1:host=<primary> + ncpus=3:mem=2gb:host=<multi-vnode host> + ncpus=2:mem=2gb:host=<plain host>

Expected values after a release are computed from the job's own exec_vnode before the release
(the spec's rule: the released vnodes' slices leave exec_vnode, an emptied chunk leaves the job),
then compared with what OpenPBS reports.

The suite's modules (marker `ramp_down`; docs/suites/ramp_down.md), by section:

- test_release_vnodes.py: a whole sister host, part of a super-chunk, successive releases, -a,
  vnodes of several hosts in one call, a host shared with another job
- test_release_accounting.py: the u/c/e/E records of a release and the usage they carry
- test_release_errors.py: refused releases and usage errors (nothing changes), --version
- test_stageout.py: release_nodes_on_stageout (RD-2)
- test_keep_select.py: pbs_release_nodes -k (a select, a node count)
- test_inside_a_job.py: pbs_release_nodes inside a batch or interactive job ($PBS_JOBID, $PBS_NODEFILE)
- test_not_running.py: jobs that are not running, arrays
- test_hidden_attributes.py: show_hidden_attribs (RD-7)
- test_faults.py: a stopped or crashed sister, reruns, server restarts
- test_cleanup.py: cleanup on the released host (epilogue and end hooks)
- test_suspend_and_reservations.py: a suspended job, a job in a reservation

Shared by them: conftest.py (the fixtures roles, running_job, task_env_report, blocked_stageout),
assignment.py (a job's exec_vnode as chunks, and a job checked against them), jobs.py (the suite's
jobs and their tasks, the mpiprocs/ompthreads job), evidence.py (accounting records, the logs of a
released host), and ptl_tests/ramp_down_helpers.py (roles, select strings, hook bodies, the blocked
stageout, custom resources, the server's -k rules).
"""
