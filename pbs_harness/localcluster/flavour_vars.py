"""The inventory variables in which the two flavours of local host differ, given per host by the
inventory script and by written inventories (host variables outrank every group_vars file).

Namespace hosts share this machine's /opt/pbs, /etc and /home: OpenPBS is the existing install,
names are in this machine's /etc/hosts (written by `up`), homes are shared, so job files are
copied locally ($usecp) and no user keys are needed. System hosts are separate systems, as VMs
are: OpenPBS comes from the packages `up --openpbs` named, the roles write name resolution, give
the test accounts SSH keys for PBS's scp staging, and $usecp is left out (no shared filesystem).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pbs_harness.common.errors import PreconditionError
from pbs_harness.deploy.openpbs_source import PROVENANCE_FILE
from pbs_harness.hosts.backend import FLAVOUR_VAR
from pbs_harness.localcluster.state import ClusterState

NAMESPACE = {
    "openpbs_install_method": "existing",
    "openpbs_common_shared_etc": True,
    "openpbs_common_hosts_file": False,
    "openpbs_common_user_ssh_keys": False,
    "openpbs_mom_usecp": ["*:/home /home"],
}


def host_vars(st: ClusterState) -> dict[str, Any]:
    if st.flavour != "system":
        return {FLAVOUR_VAR: "namespace", **NAMESPACE}
    return {FLAVOUR_VAR: "system", **_packages(st)}


def _packages(st: ClusterState) -> dict[str, Any]:
    folder = Path(st.packages_dir or "")
    record = folder / PROVENANCE_FILE
    if not st.packages_dir or not record.is_file():
        raise PreconditionError(
            f"the system hosts' OpenPBS packages are not where the cluster recorded them ({record})",
            "bring the cluster up again with --openpbs PATH (pbs-harness up --flavour system --openpbs ...)",
        )
    provenance = json.loads(record.read_text())
    files = {kind: provenance["package_kinds"][kind] for kind in ("server", "execution", "client")}
    return {
        "openpbs_install_method": "packages",
        "openpbs_install_packages_dir": str(folder),
        "openpbs_install_version": provenance["version"],
        "openpbs_install_package_files": {"apt": files},
        "openpbs_install_provenance_file": str(record),
        "openpbs_common_hosts_file": True,
        "openpbs_common_user_ssh_keys": True,
        "openpbs_mom_usecp": [],
    }
