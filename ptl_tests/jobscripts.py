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
