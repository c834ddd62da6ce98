"""Test hook of the reliable-startup suites (queuejob, on the server): pads the job's select and
makes the job tolerate node failures.

Config (JSON, pbs.hook_config_filename; ptl_tests/reliable_startup_helpers.pad_hook writes it):
  tag        prefix of the hook's log lines ("<tag>: ..."); it logs nothing itself
  increment  null: the select is left alone; otherwise the original select is saved in
             Resource_List.site and the select padded with increment_chunks(<increment>): an int,
             a numeric or percent string, or an object {chunk index: increment}
  tolerance  a tolerate_node_failures value set on the job; null or "": left alone
"""

import json

import pbs


def increment_spec(value):
    """JSON object keys are strings: a per-chunk increment's keys are chunk indexes (ints)."""
    if isinstance(value, dict):
        return {int(key): inc for key, inc in value.items()}
    return value


def main(cfg):
    e = pbs.event()
    j = e.job
    if cfg.get("increment") is not None:
        j.Resource_List["site"] = str(j.Resource_List["select"])
        j.Resource_List["select"] = j.Resource_List["select"].increment_chunks(increment_spec(cfg["increment"]))
    if cfg.get("tolerance"):
        j.tolerate_node_failures = cfg["tolerance"]
    e.accept()


if not pbs.hook_config_filename:
    raise RuntimeError("no hook config file (pbs.hook_config_filename is None)")
with open(pbs.hook_config_filename) as fh:  # the JSON config the suites import with the body
    main(json.load(fh))
