"""Hook bodies used as faults. Kept here, in one place, rather than pasted into tests."""

from __future__ import annotations

FAILING_HOOK = """\
import time

import pbs

e = pbs.event()
here = pbs.get_local_nodename()
if here in {hosts!r}:
    pbs.logmsg(pbs.LOG_WARNING, "pbs-harness fault hook: {how} on %s" % here)
    if "{how}" == "reject":
        e.reject("pbs-harness fault: rejected on %s" % here)
    elif "{how}" == "exception":
        raise RuntimeError("pbs-harness fault: exception on %s" % here)
    elif "{how}" == "late_exception":
        time.sleep({seconds})
        raise RuntimeError("pbs-harness fault: exception on %s after {seconds} s" % here)
    else:
        time.sleep({seconds})
e.accept()
"""


def failing_hook_body(hosts: tuple[str, ...], how: str, seconds: int) -> str:
    """A hook body that rejects, raises, raises after `seconds` (late_exception), or sleeps `seconds`, on
    the given hosts only."""
    return FAILING_HOOK.format(hosts=sorted(hosts), how=how, seconds=int(seconds))
