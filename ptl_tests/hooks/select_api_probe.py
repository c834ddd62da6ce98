"""Test hook of the reliable-startup suite (queuejob, on the server): logs what the hook API
answers, for the tests of increment_chunks() and of the early draft API. The job is accepted as is.

Config (JSON, pbs.hook_config_filename; ptl_tests/reliable_startup_helpers.select_probe_hook):
  tag              prefix of every log line ("<tag>: ...", LOG_DEBUG)
  increment_probe  [[select, [spec, ...]], ...]: logs "sel=<pbs.select(select)>", then for each
                   spec "sel.increment_chunks(<repr of spec>)=<result> [<type name of the result>]"
                   (a spec object's keys are chunk indexes: ints again, as the test wrote them)
  draft_probe      [python expression, ...] evaluated with pbs, e (the event) and j (its job):
                   logs "draft <expr> -> <repr of the value>" or "draft <expr> -> <exception type>: <exception>"
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

    def log(msg):
        pbs.logmsg(pbs.LOG_DEBUG, f"{cfg['tag']}: {msg}")

    for select, specs in cfg.get("increment_probe", []):
        sel = pbs.select(select)
        log(f"sel={sel}")
        for raw in specs:
            spec = increment_spec(raw)
            got = sel.increment_chunks(spec)
            log(f"sel.increment_chunks({spec!r})={got} [{type(got).__name__}]")
    for expr in cfg.get("draft_probe", []):
        try:
            value = eval(expr, {"pbs": pbs, "e": e, "j": j})  # noqa: S307 - the test's own probe expressions
            log(f"draft {expr} -> {value!r}")
        except Exception as exc:  # noqa: BLE001 - the probe logs whatever the expression raises
            log(f"draft {expr} -> {type(exc).__name__}: {exc}")
    e.accept()


if not pbs.hook_config_filename:
    raise RuntimeError("no hook config file (pbs.hook_config_filename is None)")
with open(pbs.hook_config_filename) as fh:  # the JSON config the suites import with the body
    main(json.load(fh))
