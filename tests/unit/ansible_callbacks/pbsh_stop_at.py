"""Test-only ansible callback (tests/unit/test_cloud_kill_moto.py): the playbook stops itself (SIGSTOP) as the
task named by $PBSH_STOP_AT_TASK (a prefix) starts, before that task acts, after writing its pid to
$PBSH_STOP_AT_MARK; the test then SIGKILLs the whole process tree. So a run is killed between two steps
exactly, not wherever a timer happens to land. Loaded only where a test puts this folder on
ANSIBLE_CALLBACK_PLUGINS; inert without $PBSH_STOP_AT_TASK."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from ansible.plugins.callback import CallbackBase


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "pbsh_stop_at"
    CALLBACK_NEEDS_ENABLED = False

    def v2_playbook_on_task_start(self, task, is_conditional):
        stop_at = os.environ.get("PBSH_STOP_AT_TASK")
        if stop_at and task.get_name().startswith(stop_at):
            # Written whole, then renamed: the test polls for the mark and reads it at once, and could
            # otherwise find it created but still empty (seen once under load).
            mark = Path(os.environ["PBSH_STOP_AT_MARK"])
            part = mark.with_name(mark.name + ".part")
            part.write_text(f"{os.getpid()} {task.get_name()}\n")
            part.rename(mark)
            os.kill(os.getpid(), signal.SIGSTOP)
