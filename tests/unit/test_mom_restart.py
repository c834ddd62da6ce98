"""How the mom-kill fault's heal starts pbs_mom again (pbs_harness.suite.faults.start_mom_command), run by
bash against fakes: a /proc of our own (PID 1's name, the mounts), cgroup directories in tmp_path,
a `systemctl` script answering from a list of unit states and logging its calls, and a `pbs_mom`
script logging the cgroup.procs it finds its parent shell in. No systemd, no PBS."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from pbs_harness.suite.faults import start_mom_command

UNIT = "/system.slice/pbs.service"


def run_heal(tmp_path: Path, *, pid1: str, states: list[str]) -> list[str]:
    """The heal's command with PID 1 named `pid1` and `systemctl is-active` answering `states` in
    turn (the last one then on); returns the log of systemctl and pbs_mom calls."""
    proc, log = tmp_path / "proc", tmp_path / "log"
    (proc / "1").mkdir(parents=True)
    (proc / "1" / "comm").write_text(pid1 + "\n")
    unified, named = tmp_path / "cg" / "unified", tmp_path / "cg" / "systemd"
    for root in (unified, named):
        (root / UNIT.lstrip("/")).mkdir(parents=True)
        (root / UNIT.lstrip("/") / "cgroup.procs").write_text("")
    (proc / "mounts").write_text(
        f"tmpfs {tmp_path / 'cg'} tmpfs ro 0 0\n"
        f"cgroup {tmp_path / 'cg' / 'cpu'} cgroup ro,cpu 0 0\n"
        f"cgroup {unified} cgroup2 rw,nosuid 0 0\n"
        f"cgroup {named} cgroup rw,nosuid,name=systemd 0 0\n"
    )
    (tmp_path / "states").write_text("\n".join(states) + "\n")
    bin_dir, prefix = tmp_path / "bin", tmp_path / "pbs"
    bin_dir.mkdir()
    (prefix / "sbin").mkdir(parents=True)
    systemctl = bin_dir / "systemctl"
    systemctl.write_text(
        "#!/bin/bash\n"
        f'echo "systemctl $*" >> {log}\n'
        'case "$1" in\n'
        "  cat) exit 0;;\n"
        f"  is-active) s=$(head -1 {tmp_path}/states); "
        f'[ "$(wc -l < {tmp_path}/states)" -gt 1 ] && sed -i 1d {tmp_path}/states; echo "$s";;\n'
        f"  show) echo {UNIT};;\n"
        "esac\n"
    )
    mom = prefix / "sbin" / "pbs_mom"
    mom.write_text(
        "#!/bin/bash\n"
        f'in=""; for f in {unified}{UNIT}/cgroup.procs {named}{UNIT}/cgroup.procs; do '
        'grep -qx "$PPID" "$f" && in="$in ${f%/cgroup.procs}"; done\n'
        f'echo "pbs_mom in:${{in:- no unit}}" >> {log}\n'
    )
    for script in (systemctl, mom):
        script.chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}")
    subprocess.run(["bash", "-c", start_mom_command(str(prefix), proc=str(proc))], env=env, check=True, timeout=30)
    text = log.read_text().replace(str(tmp_path), "TMP") if log.exists() else ""
    return [line for line in text.splitlines() if not line.startswith("systemctl cat")]


def test_without_systemd_pbs_mom_is_started_directly(tmp_path) -> None:
    assert run_heal(tmp_path, pid1="tini", states=["active"]) == ["pbs_mom in: no unit"]


def test_an_active_unit_gets_the_new_mom_inside_its_cgroup(tmp_path) -> None:
    """Its other processes (the server, a dying job) keep it active: the mom joins them, so the unit's
    ExecStop, run when its last process exits, cannot come after the new mom."""
    assert run_heal(tmp_path, pid1="systemd", states=["active"]) == [
        "systemctl is-active pbs.service",
        "systemctl show -p ControlGroup --value pbs.service",
        f"pbs_mom in: TMP/cg/unified{UNIT} TMP/cg/systemd{UNIT}",
    ]


@pytest.mark.parametrize("states", [["inactive"], ["failed"], ["deactivating", "deactivating", "inactive"]])
def test_a_unit_that_stopped_or_is_stopping_is_started_once_it_stopped(tmp_path, states) -> None:
    log = run_heal(tmp_path, pid1="systemd", states=states)
    assert log == [
        *["systemctl is-active pbs.service"] * len(states),
        "systemctl reset-failed pbs.service",
        "systemctl start pbs.service",
    ]
