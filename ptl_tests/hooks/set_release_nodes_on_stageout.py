"""Test hook of the ramp-down suite (queuejob or modifyjob, on the server): sets the job's
release_nodes_on_stageout.

Config (JSON, pbs.hook_config_filename; ptl_tests/ramp_down_helpers.hook_set_release_nodes_on_stageout):
  value  true or false: set on the job, then logged at LOG_DEBUG as
         "ramp_down hook set release_nodes_on_stageout=True|False"
"""

import json

import pbs


def load_config():
    """The hook's JSON config (imported as application/x-config); the suites always give one."""
    path = pbs.hook_config_filename
    if not path:
        raise RuntimeError("no hook config file (pbs.hook_config_filename is None)")
    with open(path) as fh:
        return json.load(fh)


def main():
    value = load_config()["value"]
    e = pbs.event()
    e.job.release_nodes_on_stageout = value
    pbs.logmsg(pbs.LOG_DEBUG, f"ramp_down hook set release_nodes_on_stageout={value}")
    e.accept()


main()
