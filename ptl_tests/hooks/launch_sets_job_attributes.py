"""Test hook of the reliable-startup suite (execjob_launch, on the moms): on the primary, sets the
job's Execution_Time (an hour ahead), run_count and resources_used.cput, and may requeue the job.

Config (JSON, pbs.hook_config_filename; ptl_tests/reliable_startup_helpers.launch_sets_hook):
  tag        logs "<tag> set Execution_Time=<time.ctime of it> run_count=<run_count> cput=<cput>"
             (EVENT_DEBUG)
  run_count  the job's new run_count
  cput       resources_used.cput, as pbs.duration(<cput>)
  rerun      true: requeue the job (rerun) and reject "<tag> requeues the job"
"""

import json
import time

import pbs


def main(cfg):
    e = pbs.event()
    j = e.job
    if j.in_ms_mom():
        at = int(time.time()) + 3600
        j.Execution_Time = at
        j.run_count = cfg["run_count"]
        j.resources_used["cput"] = pbs.duration(cfg["cput"])
        pbs.logmsg(
            pbs.EVENT_DEBUG,
            f"{cfg['tag']} set Execution_Time={time.ctime(at)} run_count={cfg['run_count']} cput={cfg['cput']}",
        )
        if cfg["rerun"]:
            j.rerun()
            e.reject(f"{cfg['tag']} requeues the job")
    e.accept()


if not pbs.hook_config_filename:
    raise RuntimeError("no hook config file (pbs.hook_config_filename is None)")
with open(pbs.hook_config_filename) as fh:  # the JSON config the suites import with the body
    main(json.load(fh))
