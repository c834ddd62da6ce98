"""Where PTL lives for a cluster, and how PTL on its server host reaches the other hosts: asked of the
inventory and of its hosts' kind (pbs_harness.hosts), never assumed.

PTL runs on the server host, as root (pbs_benchpress is PTL's client: it stats the local server and
reaches moms with `ssh HOST cmd` / `scp`). Three things come from the cluster:

- PTL itself (`pbs_benchpress`, `test/tests`): the inventory variable `ptl_prefix`, PTL installed on
  the hosts as OpenPBS's openpbs-ptl package lays it out (`<prefix>/bin`, `<prefix>/tests`); else, when
  the hosts' kind shares a directory with them (the namespace local cluster's state directory), PTL built by
  the harness from the cluster's OpenPBS source into `<shared dir>/ptl` (pbs_harness.ptl.install); else,
  when the kind takes copies into its hosts (system hosts, each with its own root: `staging_dir`), PTL
  built here in `<staging dir>/ptl` and copied into every host at the same path, with the harness's ssh
  directory for root's SSH among the hosts (`copy_to_hosts`; removed from the hosts after the run).
- Root SSH among the hosts: the inventory variable `ptl_ssh_config` (an ssh_config on the hosts), else
  the kind's (the local namespace cluster's own), else plain `ssh`, which the hosts must then allow, as
  upstream's PTL set-up assumes.
- Where a run writes its script, log and results: `<shared dir>/ptl/runs`, else `ptl_work_dir`
  (default /var/lib/pbs-harness-ptl on the server host); read back over SSH either way.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from pbs_harness.common.errors import PreconditionError
from pbs_harness.remote.inventory import Inventory

PTL_PREFIX_VAR = "ptl_prefix"
PTL_SSH_CONFIG_VAR = "ptl_ssh_config"
PTL_WORK_DIR_VAR = "ptl_work_dir"
DEFAULT_WORK_DIR = "/var/lib/pbs-harness-ptl"
HOST_PYTHON_VAR = "ansible_python_interpreter"  # the hosts' own Python, which a PTL virtualenv must use


@dataclass(frozen=True)
class PtlSite:
    server: str  # host name: pbs_benchpress runs there
    moms: tuple[str, ...]  # mom hosts in the order PTL's `-p moms=` gets them (the server host first)
    bin_dir: PurePosixPath  # on the hosts: pbs_benchpress
    tests_dir: PurePosixPath  # on the hosts: test/tests (pbs_benchpress runs from there)
    work_dir: PurePosixPath  # on the server host: run scripts, logs, results
    ssh_config: PurePosixPath | None  # on the hosts
    build_dir: Path | None  # on this machine: where the harness builds PTL (None: packaged PTL)
    host_python: str  # interpreter of the hosts (for the virtualenv the harness builds)
    copy_to_hosts: tuple[Path, ...] = ()  # directories of this machine each host needs at the same path

    def moms_for(self, count: int) -> tuple[str, ...]:
        if count > len(self.moms):
            raise PreconditionError(
                f"a PTL test needs {count} moms; the cluster has {len(self.moms)}",
                f"bring up a cluster with at least {count} hosts (pbs-harness up --hosts {count} ...)",
            )
        return self.moms[:count]


def of(inv: Inventory) -> PtlSite:
    server = inv.server
    moms = (server.name, *(h.name for h in inv.moms if h.name != server.name))
    shared = inv.kind.shared_dir(server.vars)
    staging = None if shared is not None else inv.kind.staging_dir(server.vars)
    prefix = server.vars.get(PTL_PREFIX_VAR)
    if prefix:
        bin_dir, tests_dir = PurePosixPath(prefix) / "bin", PurePosixPath(prefix) / "tests"
        build_dir = None
    elif shared is not None or staging is not None:
        build_dir = Path(shared or staging) / "ptl"  # type: ignore[arg-type]  # one of them is set
        bin_dir, tests_dir = PurePosixPath(build_dir / "venv" / "bin"), PurePosixPath(build_dir / "src/test/tests")
    else:
        raise PreconditionError(
            f"no PTL for the hosts of {inv.path}: they share no directory with this machine and the inventory "
            f"sets no {PTL_PREFIX_VAR}",
            f"install OpenPBS's openpbs-ptl package (or PTL from the same source) on the hosts and set "
            f"{PTL_PREFIX_VAR} to its prefix (e.g. /opt/ptl) in the inventory",
        )
    ssh_config = server.vars.get(PTL_SSH_CONFIG_VAR) or inv.kind.host_ssh_config(server.vars)
    work = server.vars.get(PTL_WORK_DIR_VAR) or (str(Path(shared) / "ptl" / "runs") if shared else DEFAULT_WORK_DIR)
    copies: tuple[Path, ...] = ()
    if staging is not None and build_dir is not None:
        copies = (build_dir, *([Path(str(ssh_config)).parent] if ssh_config else []))
    return PtlSite(
        server=server.name,
        moms=moms,
        bin_dir=bin_dir,
        tests_dir=tests_dir,
        work_dir=PurePosixPath(work),
        ssh_config=PurePosixPath(str(ssh_config)) if ssh_config else None,
        build_dir=build_dir,
        host_python=str(server.vars.get(HOST_PYTHON_VAR, "/usr/bin/python3")),
        copy_to_hosts=copies,
    )
