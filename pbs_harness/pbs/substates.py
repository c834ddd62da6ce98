"""OpenPBS job substates the suites wait for and assert (src/include/job.h JOB_SUBSTATE_*)."""

QUEUED = 10  # JOB_SUBSTATE_QUEUED
HELD = 20  # JOB_SUBSTATE_HELD
WAITING = 30  # JOB_SUBSTATE_WAITING: Execution_Time in the future
PRERUN = 41  # JOB_SUBSTATE_PRERUN: sent to the moms, no session id yet
RUNNING = 42  # JOB_SUBSTATE_RUNNING
SUSPENDED = 43  # JOB_SUBSTATE_SUSPEND: suspended by qsig (suspend or admin-suspend)
SCHED_SUSPENDED = 45  # JOB_SUBSTATE_SCHSUSP: suspended by the scheduler (preemption), or 'resume' pending
