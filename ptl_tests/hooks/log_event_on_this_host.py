"""Test hook of the ramp-down suite (any execjob_* event, on the moms): logs where it ran.

Config (JSON, pbs.hook_config_filename; ptl_tests/ramp_down_helpers.hook_log_event_on_this_host):
  tag    logs "<tag> <hook name> on <pbs.get_local_nodename()>" at LOG_DEBUG in the mom's log
  sleep  (optional) seconds the hook then runs on, then logs "<tag> <hook name> done on <host>": a hook
         still running while the test acts (an execjob_end hook runs in the mom's background)
"""

import json
import time

import pbs


def main(cfg):
    tag = cfg["tag"]
    e = pbs.event()
    pbs.logmsg(pbs.LOG_DEBUG, f"{tag} {e.hook_name} on {pbs.get_local_nodename()}")
    if cfg.get("sleep"):
        time.sleep(cfg["sleep"])
        pbs.logmsg(pbs.LOG_DEBUG, f"{tag} {e.hook_name} done on {pbs.get_local_nodename()}")
    e.accept()


if not pbs.hook_config_filename:
    raise RuntimeError("no hook config file (pbs.hook_config_filename is None)")
with open(pbs.hook_config_filename) as fh:  # the JSON config the suites import with the body
    main(json.load(fh))
