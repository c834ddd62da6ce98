"""Test hook of the reliable-startup suites (execjob_launch, execjob_prologue or execjob_begin, on
the moms): logs the event's vnode lists, offlines the failed vnodes and prunes the job on the
primary with release_nodes(keep_select). An execjob_launch event of a task spawned by
pbsdsh/tm_spawn (no PBS_NODEFILE in its environment) is accepted at once.

Config (JSON, pbs.hook_config_filename; ptl_tests/reliable_startup_helpers.prune_hook writes it).
Every line is "<tag>: <message>" at LOG_DEBUG:
  tag             prefix of the log lines
  phase           word of the reject message "unsuccessful at <phase>" (default "HOOK")
  log_lists       logs "found vnode_list[<vnode>]" and "found vnode_list_fail[<vnode>]", sorted
  offline_failed  sets every vnode of vnode_list_fail offline: "offlined vnode_list_fail[<vnode>]"
  prune           on the primary: release_nodes(keep_select=<keep>), then
                  "release_nodes(keep_select=<keep>) returned None|a job", and for a job
                  "job.exec_vnode=...", "job.exec_host=...", "job.schedselect=..."
  keep            the keep_select; null: the select the queuejob hook saved in Resource_List.site
  on_failure      when release_nodes returned None: "hold_rerun" (hold s, requeue) or "delete", then
                  reject "unsuccessful at <phase>"; null: only the log line, the job goes on
"""

import json

import pbs

# OpenPBS 23.06 hands back release_nodes()'s job without a reference of its own: dropping the
# result frees the event's job and pbs_python dies as the hook ends (hooks/reliable_startup.md).
# Every result stays referenced until the process exits.
_RELEASED_JOBS = []


def main(cfg):
    e = pbs.event()

    def log(msg):
        pbs.logmsg(pbs.LOG_DEBUG, f"{cfg['tag']}: {msg}")

    if e.type == pbs.EXECJOB_LAUNCH and "PBS_NODEFILE" not in e.env:
        e.accept()  # a task spawned by pbsdsh/tm_spawn, not the job's top-level launch
    j = e.job
    phase = cfg.get("phase", "HOOK")
    if cfg.get("log_lists"):
        for vn in sorted(e.vnode_list):
            log(f"found vnode_list[{vn}]")
        for vn in sorted(e.vnode_list_fail):
            log(f"found vnode_list_fail[{vn}]")
    if cfg.get("offline_failed"):
        for vn in sorted(e.vnode_list_fail):
            e.vnode_list_fail[vn].state = pbs.ND_OFFLINE
            log(f"offlined vnode_list_fail[{vn}]")
    if cfg.get("prune") and j.in_ms_mom():
        keep = cfg.get("keep") or j.Resource_List["site"]
        pj = j.release_nodes(keep_select=keep)
        _RELEASED_JOBS.append(pj)
        log(f"release_nodes(keep_select={keep}) returned {'None' if pj is None else 'a job'}")
        if pj is None:
            if cfg.get("on_failure") == "delete":
                j.delete()
            elif cfg.get("on_failure") == "hold_rerun":
                j.Hold_Types = pbs.hold_types("s")
                j.rerun()
            if cfg.get("on_failure"):
                e.reject(f"unsuccessful at {phase}")
        else:
            log(f"job.exec_vnode={pj.exec_vnode}")
            log(f"job.exec_host={pj.exec_host}")
            log(f"job.schedselect={pj.schedselect}")
    e.accept()


if not pbs.hook_config_filename:
    raise RuntimeError("no hook config file (pbs.hook_config_filename is None)")
with open(pbs.hook_config_filename) as fh:  # the JSON config the suites import with the body
    main(json.load(fh))
