"""Job script bodies shared by the suites, in one place. Each takes the PBS prefix."""

from __future__ import annotations


def nodefile_and_pbsdsh(prefix: str) -> str:
    """Print the job's distinct hosts from $PBS_NODEFILE, then `hostname` run by pbsdsh on each chunk."""
    return f"""#!/bin/bash
echo "== nodefile"
sort -u "$PBS_NODEFILE"
echo "== pbsdsh"
{prefix}/bin/pbsdsh -- /bin/hostname
echo "== end"
"""


def section(output: str, name: str) -> list[str]:
    """Lines of one `== name` section of a job's output."""
    lines = output.splitlines()
    start = lines.index(f"== {name}") + 1
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("== "))
    return [line.strip() for line in lines[start:end] if line.strip()]


def sleep_on_every_chunk(prefix: str, seconds: int) -> str:
    """Start `sleep SECONDS` as a task on every chunk (pbsdsh) and on the primary: each host of the
    job then runs a process that is visible with ps and must die when that host is released."""
    return f"""#!/bin/bash
{prefix}/bin/pbsdsh -- /bin/sleep {seconds} &
/bin/sleep {seconds}
"""
