"""Test hook of the ramp-down suite (queuejob or modifyjob, on the server): sets the job's
release_nodes_on_stageout.

Config (JSON, pbs.hook_config_filename; ptl_tests/ramp_down_helpers.hook_set_release_nodes_on_stageout):
  value  true or false: set on the job, then logged at LOG_DEBUG as
         "ramp_down hook set release_nodes_on_stageout=True|False"
"""

import json

import pbs


def main(cfg):
    value = cfg["value"]
    e = pbs.event()
    e.job.release_nodes_on_stageout = value
    pbs.logmsg(pbs.LOG_DEBUG, f"ramp_down hook set release_nodes_on_stageout={value}")
    e.accept()


if not pbs.hook_config_filename:
    raise RuntimeError("no hook config file (pbs.hook_config_filename is None)")
with open(pbs.hook_config_filename) as fh:  # the JSON config the suites import with the body
    main(json.load(fh))
