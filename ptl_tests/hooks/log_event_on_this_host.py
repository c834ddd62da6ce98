"""Test hook of the ramp-down suite (any execjob_* event, on the moms): logs where it ran.

Config (JSON, pbs.hook_config_filename; ptl_tests/ramp_down_helpers.hook_log_event_on_this_host):
  tag  logs "<tag> <hook name> on <pbs.get_local_nodename()>" at LOG_DEBUG in the mom's log
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
    tag = load_config()["tag"]
    e = pbs.event()
    pbs.logmsg(pbs.LOG_DEBUG, f"{tag} {e.hook_name} on {pbs.get_local_nodename()}")
    e.accept()


main()
