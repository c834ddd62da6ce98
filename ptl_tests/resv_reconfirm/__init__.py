"""Reconfirming degraded reservations, running or not
(spec: shared/specs/reconfirm-running-degraded-reservations.txt, catalogue RV-1..RV-9).

Each test is one scenario on the real cluster: a reservation is placed on known hosts (vnode
priorities, see resv_reconfirm_helpers), one of its nodes becomes unavailable for real (offline,
mom killed, host crashed or partitioned, admin-suspend maintenance) and the evidence is the
reservation's `pbs_rstat -F` state, substate, resv_nodes and reserve_retry, the server's
"An/Next attempt to reconfirm reservation will be made on <ctime>" lines, the scheduler's
"PBS Failed to confirm resv: ..." lines, the jobs' exec_vnode and the 'Y' accounting records.
reserve_retry_time is set short (RETRY) except where the default is the point. The PTL scenarios
map to these tests in docs/suites/resv_reconfirm.md.
"""
