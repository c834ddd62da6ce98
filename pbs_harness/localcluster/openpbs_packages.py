"""The OpenPBS packages a local cluster's system hosts install (`up --openpbs PATH`): the source or
packages PATH names, judged (openpbs_source), then built or taken from the cache (openpbs_build); or,
when --openpbs is left out, the packages a running cluster recorded (a rerun repairs it with them).

Asked by bring_up.py when it brings a cluster up: here, beside the cluster that records the packages it
was given, not in deploy/ (issue #31: `up`'s data climbed to deploy/ and back for it). Everything is
refused before a package is built or a host is made.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from pbs_harness import hosts
from pbs_harness.common.errors import PreconditionError, UsageError
from pbs_harness.deploy import openpbs_build, openpbs_source
from pbs_harness.localcluster.containers import images

Report = Callable[[str], None]

# Namespace hosts run the OpenPBS installed on this machine (they share its /opt). Its qstat is the first
# program the deploy's check of an installed OpenPBS runs (roles/openpbs_install/tasks/verify.yml).
THIS_MACHINES_OPENPBS = Path("/opt/pbs")


def _installs_packages(flavour: str) -> bool:
    """The hosts of the kind `flavour` install OpenPBS packages (a capability of the kind, not its name)."""
    return hosts.get_kind_class(flavour).installs_openpbs_packages


def check_wanted(flavour: str, openpbs: str | None) -> None:
    """--openpbs is for system hosts: a bad command line, said as one before the root check."""
    if openpbs and not _installs_packages(flavour):
        raise UsageError(
            "--openpbs is for system hosts: namespace hosts run this machine's /opt/pbs",
            "add --flavour system, or leave --openpbs out",
        )


def check_this_machines_openpbs() -> None:
    """Namespace hosts need OpenPBS installed on this machine: refused before any host is made (issue #34: it
    was found only by the deploy, after the hosts were up)."""
    qstat = THIS_MACHINES_OPENPBS / "bin" / "qstat"
    if not (qstat.is_file() and os.access(qstat, os.X_OK)):
        raise PreconditionError(
            f"namespace hosts run this machine's OpenPBS, and {qstat} is not there: the deploy would fail "
            "after the hosts were up",
            f"install OpenPBS here first (in {THIS_MACHINES_OPENPBS}; scripts/ci/install-openpbs.sh does it), or use "
            "system hosts, which install OpenPBS themselves: --flavour system --openpbs PATH (./acceptance's default)",
        )


def for_cluster(flavour: str, image: str, openpbs: str | None, recorded: str | None, report: Report) -> Path | None:
    """The folder of .deb packages the hosts of a cluster of `flavour` on `image` install: built from (or
    cached for) the `openpbs` the command line names, else the cluster's `recorded` packages; None for
    namespace hosts (they run this machine's /opt/pbs)."""
    check_wanted(flavour, openpbs)
    if not _installs_packages(flavour):
        check_this_machines_openpbs()
        return None
    if not openpbs:
        if recorded:
            return Path(recorded)
        raise UsageError(
            "system hosts install OpenPBS from packages, and --openpbs names none",
            "give --openpbs PATH (make acceptance OPENPBS=PATH): a release zip, a folder of .deb files, or an "
            "OpenPBS source archive or tree (e.g. ../shared/openpbs/openpbs-master-cd7ab5e.tar.gz); "
            "or --flavour namespace to use the OpenPBS installed in this machine's /opt/pbs",
        )
    source = openpbs_source.judge(Path(openpbs))
    images.check_cache_dir(writable=True)
    packages = openpbs_build.ensure(source, images.distribution(image), report)
    if not packages.file("server").endswith(".deb"):
        raise PreconditionError(
            f"--openpbs {openpbs} holds .rpm packages, and system hosts run {image} (apt)",
            "name the .deb packages (the zip for Debian or Ubuntu), or a source to build them from",
        )
    return packages.path
