"""The kind of host a local cluster is made of (pbs_harness.hosts.namespace or .system), as the registry
of host kinds gives it for the spec's `--flavour`, and the cluster described with what its kind says.

Here, not on ClusterSpec: the local kinds (hosts/local.py) are built on the spec, state, network and
host processes of localcluster/, so those name no kind; the modules that run a cluster ask this one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from pbs_harness import hosts
from pbs_harness.localcluster.spec import ClusterSpec

if TYPE_CHECKING:
    from pbs_harness.hosts.local import LocalHostBase


def of(spec: ClusterSpec) -> type[LocalHostBase]:
    """The class of the cluster's kind of host (the registry's, for `spec.flavour`)."""
    return cast("type[LocalHostBase]", hosts.get_kind_class(spec.flavour))


def describe(spec: ClusterSpec) -> str:
    """The cluster in a line, e.g. `3 debian-11 system hosts sy01.. on 10.73.0.0/24, login user pbsadmin`."""
    login = f", login user {spec.login_user}" if spec.login_user else ""
    return f"{spec.host_count}{of(spec).describe_hosts(spec)} hosts {spec.hosts[0].name}.. on {spec.subnet}{login}"
