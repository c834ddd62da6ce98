"""Ansible callback plugin: wall-clock time per task and per play, printed after the recap."""

from __future__ import annotations

import time

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = r"""
---
name: pbs_timing
type: aggregate
short_description: Print the slowest tasks and the total wall-clock time after the PLAY RECAP
description:
  - Records the wall-clock duration of every task (all hosts together) and prints the slowest ones
    and the playbook's total at the end, so that deployment timings can be measured run by run.
options:
  top:
    description: How many of the slowest tasks to list (0 lists none, only the total).
    type: int
    default: 8
    env:
      - name: PBS_TIMING_TOP
    ini:
      - section: pbs_timing
        key: top
"""


class CallbackModule(CallbackBase):
    """Collects task durations; prints them in v2_playbook_on_stats."""

    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "pbs_timing"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        self._start = time.monotonic()
        self._current = None
        self._durations = []

    def _close(self):
        if self._current is not None:
            name, began = self._current
            self._durations.append((time.monotonic() - began, name))
            self._current = None

    def _open(self, task, prefix=""):
        self._close()
        self._current = (prefix + (task.get_name() or task.action), time.monotonic())

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._open(task)

    def v2_playbook_on_handler_task_start(self, task):
        self._open(task, "handler: ")

    def v2_playbook_on_play_start(self, play):
        self._close()

    def v2_playbook_on_stats(self, stats):
        self._close()
        total = time.monotonic() - self._start
        top = self.get_option("top")
        if top > 0 and self._durations:
            self._display.banner("SLOWEST TASKS")
            for seconds, name in sorted(self._durations, reverse=True)[:top]:
                self._display.display(f"{seconds:7.2f}s  {name}")
        self._display.display(f"Playbook run took {total:.1f}s ({len(self._durations)} tasks)")
