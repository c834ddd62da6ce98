"""Reliable job startup (the spec's "Case of Reliable Job Startup") as one hook source.

Deployed twice from this one file (see inventory openpbs_hooks_list):
  * a queuejob hook: makes matching jobs tolerate node failures, saves the original select in a
    builtin resource (default "site") and pads the select with increment_chunks();
  * an execjob_launch hook (or execjob_prologue, e.g. for job arrays): on the primary mom, for the
    top-level launch only ('PBS_NODEFILE' in the environment), optionally offlines the vnodes in
    vnode_list_fail and prunes the job back with release_nodes(keep_select=<saved select>); when that
    fails it holds + requeues or deletes the job, as configured, with a clear reason.

Configuration: a JSON hook config file (pbs.hook_config_filename), keys documented in
hooks/reliable_startup.md. An invalid configuration is logged at LOG_ERROR and the hook does
nothing (the job is accepted unchanged): a bad config never crashes the server or kills a job.
"""

import json
import re

import pbs

PREFIX = "reliable_startup"
DEFAULTS = {
    "enabled": True,
    "tolerance": "job_start",
    "increment": 1,
    "min_chunks": 1,
    "skip_interactive": True,
    "respect_user_tolerance": True,
    "save_select_in": "site",
    "offline_failed_vnodes": False,
    "on_prune_failure": "hold_rerun",
}
TOLERANCES = ("job_start", "all")
FAILURE_ACTIONS = ("hold_rerun", "delete")
# OpenPBS 23.06 returns the job from release_nodes() without taking a reference for the caller
# (pbs_python_svr_internal.c: `py_return = py_job;`, no Py_INCREF). Dropping the result frees
# the event's job, and pbs_python dies by a signal when the hook ends ("execv of pbs_python
# resulted in nonzero exit status=-4", "Skipping hook"): the prune is lost. Keep every result
# referenced until the process exits, as PTL's module-level hook bodies do by accident.
_RELEASED_JOBS = []
_COUNT_RE = re.compile(r"^\d+$")
_PERCENT_RE = re.compile(r"^\d+(\.\d+)?%$")


class ConfigError(ValueError):
    """The hook configuration is unusable; the message names the key and the accepted values."""


def _check_increment_value(where, value):
    if isinstance(value, bool):
        raise ConfigError(f"{where}: {value!r} is a boolean; use an integer, a numeric string or a percent string")
    if isinstance(value, int):
        if value < 0:
            raise ConfigError(f"{where}: {value!r} is negative")
        return value
    if isinstance(value, str) and (_COUNT_RE.match(value) or _PERCENT_RE.match(value)):
        return value
    raise ConfigError(
        f'{where}: {value!r} is not an increment; use an integer >= 0, a numeric string like "3", '
        'a percent string like "23.5%", or a per-chunk object'
    )


def parse_increment(value):
    """The increment in the form pbs.select.increment_chunks() takes (int, str or {int: ...})."""
    if isinstance(value, dict):
        if not value:
            raise ConfigError("increment: the per-chunk object is empty")
        out = {}
        for key, inc in value.items():
            if not (isinstance(key, int) or (isinstance(key, str) and _COUNT_RE.match(key))):
                raise ConfigError(f"increment: chunk index {key!r} is not a non-negative integer")
            out[int(key)] = _check_increment_value(f"increment[{key}]", inc)
        return out
    if value in (0, "0"):
        # Observed on OpenPBS 23.06: increment_chunks(0) raises "ValueError: bad increment specs",
        # so the queuejob hook would refuse every job.
        raise ConfigError(
            'increment: 0 pads nothing and increment_chunks(0) is refused by PBS; use 1 or more, or "enabled": false'
        )
    return _check_increment_value("increment", value)


def parse_config(text):
    """Validated configuration from the hook config file's text (empty text = defaults)."""
    raw = json.loads(text) if text and text.strip() else {}
    if not isinstance(raw, dict):
        raise ConfigError("the configuration must be a JSON object")
    unknown = sorted(set(raw) - set(DEFAULTS))
    if unknown:
        raise ConfigError(f"unknown keys {unknown}; known keys: {sorted(DEFAULTS)}")
    cfg = dict(DEFAULTS)
    cfg.update(raw)
    for key in ("enabled", "skip_interactive", "respect_user_tolerance", "offline_failed_vnodes"):
        if not isinstance(cfg[key], bool):
            raise ConfigError(f"{key}: {cfg[key]!r} must be true or false")
    if cfg["tolerance"] not in TOLERANCES:
        raise ConfigError("tolerance: {!r} must be one of {}".format(cfg["tolerance"], list(TOLERANCES)))
    if cfg["on_prune_failure"] not in FAILURE_ACTIONS:
        raise ConfigError(
            "on_prune_failure: {!r} must be one of {}".format(cfg["on_prune_failure"], list(FAILURE_ACTIONS))
        )
    if isinstance(cfg["min_chunks"], bool) or not isinstance(cfg["min_chunks"], int) or cfg["min_chunks"] < 1:
        raise ConfigError("min_chunks: {!r} must be an integer >= 1".format(cfg["min_chunks"]))
    if not isinstance(cfg["save_select_in"], str) or not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", cfg["save_select_in"]):
        raise ConfigError("save_select_in: {!r} must be a resource name".format(cfg["save_select_in"]))
    cfg["increment"] = parse_increment(cfg["increment"])
    return cfg


def chunk_count(select_text):
    """Total number of chunks of a select spec, e.g. '2:ncpus=1+ncpus=2' -> 3."""
    total = 0
    for part in str(select_text).split("+"):
        first = part.split(":", 1)[0]
        total += int(first) if _COUNT_RE.match(first) else 1
    return total


def log(level, message):
    pbs.logmsg(level, f"{PREFIX}: {message}")


def load_config():
    path = getattr(pbs, "hook_config_filename", None)
    text = ""
    if path:
        with open(path) as fh:
            text = fh.read()
    return parse_config(text)


def on_queuejob(event, cfg):
    job = event.job
    if cfg["skip_interactive"] and job.interactive:
        log(pbs.LOG_DEBUG, "interactive job: left as submitted")
        return
    if cfg["respect_user_tolerance"] and job.tolerate_node_failures is not None:
        log(pbs.LOG_DEBUG, f"job sets tolerate_node_failures={job.tolerate_node_failures} itself: left as submitted")
        return
    select = job.Resource_List["select"]
    if select is None:
        log(pbs.LOG_DEBUG, "job has no select: left as submitted")
        return
    if chunk_count(select) < cfg["min_chunks"]:
        log(pbs.LOG_DEBUG, f"select {select} has fewer than {cfg['min_chunks']} chunks: left as submitted")
        return
    original = str(select)
    job.Resource_List[cfg["save_select_in"]] = original
    job.Resource_List["select"] = select.increment_chunks(cfg["increment"])
    job.tolerate_node_failures = cfg["tolerance"]
    log(
        pbs.LOG_DEBUG,
        "padded select {} to {} (tolerate_node_failures={})".format(
            original, job.Resource_List["select"], cfg["tolerance"]
        ),
    )


def on_start(event, cfg, top_level):
    """execjob_launch / execjob_prologue on the primary mom: offline failed vnodes, prune."""
    job = event.job
    if not top_level or not job.in_ms_mom():
        return
    keep = job.Resource_List[cfg["save_select_in"]]
    if keep is None:
        return  # not a job this hook padded
    if cfg["offline_failed_vnodes"]:
        for name in event.vnode_list_fail:
            event.vnode_list_fail[name].state = pbs.ND_OFFLINE
            log(pbs.LOG_DEBUG, f"offlined failed vnode {name}")
    pruned = job.release_nodes(keep_select=str(keep))
    _RELEASED_JOBS.append(pruned)
    if pruned is not None:
        log(pbs.LOG_DEBUG, f"pruned to exec_vnode={pruned.exec_vnode}")
        return
    if cfg["on_prune_failure"] == "delete":
        job.delete()
        event.reject(f"{PREFIX}: could not prune the job to its original select {keep}; job deleted")
    job.Hold_Types = pbs.hold_types("s")
    job.rerun()
    event.reject(f"{PREFIX}: could not prune the job to its original select {keep}; job held (s) and requeued")


def main():
    event = pbs.event()
    try:
        cfg = load_config()
    except (ConfigError, ValueError, OSError) as exc:
        log(pbs.LOG_ERROR, f"invalid hook configuration, doing nothing: {exc}")
        event.accept()
        return
    if not cfg["enabled"]:
        event.accept()
        return
    if event.type == pbs.QUEUEJOB:
        on_queuejob(event, cfg)
    elif event.type == pbs.EXECJOB_LAUNCH:
        on_start(event, cfg, top_level="PBS_NODEFILE" in event.env)
    elif event.type == pbs.EXECJOB_PROLOGUE:
        on_start(event, cfg, top_level=True)
    event.accept()


main()
