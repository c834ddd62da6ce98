"""Test hook of the reliable-startup suites (any execjob_* event, on the moms): a marker of where
and when it runs, which may sleep on some hosts, try to set attributes and hold the job. An
execjob_launch event of a task spawned by pbsdsh/tm_spawn (no PBS_NODEFILE) is accepted at once.

Every line is "<tag> <event> on <host>: <message>" at LOG_WARNING, <event> one of begin, prologue,
launch, resize (else the event type's number), <host> pbs.get_local_nodename().
Config (JSON, pbs.hook_config_filename; ptl_tests/reliable_startup_helpers.probe_hook writes it):
  tag              prefix of the log lines; "started" is logged first, wherever the hook runs
  sleep_on         {host: seconds}: on those hosts "sleeping <n> secs", sleeps, then "slept"
  try_set          ["server" | "job" | "vnode", ...]: sets that object's comment ("set by <tag>"),
                   logging "set <what> attribute: accepted" or "set <what> attribute: <exception type>: <exception>"
  hold_and_reject  on the primary: hold (s), requeue and reject ("held by <tag>")
"""

import json
import time

import pbs


def main(cfg):
    tag = cfg["tag"]
    e = pbs.event()
    here = pbs.get_local_nodename()
    events = {
        pbs.EXECJOB_BEGIN: "begin",
        pbs.EXECJOB_PROLOGUE: "prologue",
        pbs.EXECJOB_LAUNCH: "launch",
        pbs.EXECJOB_RESIZE: "resize",
    }
    event = events.get(e.type, str(e.type))

    def log(msg):
        pbs.logmsg(pbs.LOG_WARNING, f"{tag} {event} on {here}: {msg}")

    if e.type == pbs.EXECJOB_LAUNCH and "PBS_NODEFILE" not in e.env:
        e.accept()  # a task spawned by pbsdsh/tm_spawn, not the job's top-level launch
    log("started")
    sleep_on = cfg.get("sleep_on", {})
    if here in sleep_on:
        log(f"sleeping {sleep_on[here]:d} secs")
        time.sleep(sleep_on[here])
        log("slept")
    for what in cfg.get("try_set", []):
        try:
            if what == "server":
                pbs.server().comment = f"set by {tag}"
            elif what == "job":
                e.job.comment = f"set by {tag}"
            elif what == "vnode":
                e.vnode_list[here].comment = f"set by {tag}"
            log(f"set {what} attribute: accepted")
        except Exception as exc:  # noqa: BLE001 - the probe logs whatever PBS refuses the set with
            log(f"set {what} attribute: {type(exc).__name__}: {exc}")
    if cfg.get("hold_and_reject") and e.job.in_ms_mom():
        e.job.Hold_Types = pbs.hold_types("s")
        e.job.rerun()
        e.reject(f"held by {tag}")
    e.accept()


if not pbs.hook_config_filename:
    raise RuntimeError("no hook config file (pbs.hook_config_filename is None)")
with open(pbs.hook_config_filename) as fh:  # the JSON config the suites import with the body
    main(json.load(fh))
