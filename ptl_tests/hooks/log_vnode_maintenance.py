"""Test hook of the admin-suspend suite (queuejob, on the server): logs what hooks see of a
vnode's admin-suspend state, tagged with the submitted job's name.

Config (JSON, pbs.hook_config_filename; ptl_tests/admin_suspend_helpers.hook_log_vnode_maintenance):
  vnode  logs "admin_suspend probe <job name>: <vnode> maintenance_jobs=<value> maintenance=True|False"
         at LOG_DEBUG, maintenance being the vnode's state bit ND_STATE_MAINTENANCE
"""

import json

import pbs


def main(cfg):
    vnode = cfg["vnode"]
    e = pbs.event()
    vn = pbs.server().vnode(vnode)
    in_maintenance = bool(vn.state & pbs.ND_STATE_MAINTENANCE)
    seen = f"maintenance_jobs={vn.maintenance_jobs} maintenance={in_maintenance}"
    pbs.logmsg(pbs.LOG_DEBUG, f"admin_suspend probe {e.job.Job_Name}: {vnode} {seen}")
    e.accept()


if not pbs.hook_config_filename:
    raise RuntimeError("no hook config file (pbs.hook_config_filename is None)")
with open(pbs.hook_config_filename) as fh:  # the JSON config the suites import with the body
    main(json.load(fh))
