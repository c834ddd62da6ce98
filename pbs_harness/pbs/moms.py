"""MoM configuration (`PBS_HOME/mom_priv/config`): set/unset directives, then HUP the mom."""

from __future__ import annotations

import shlex
from datetime import datetime

from pbs_harness.cluster import Cluster
from pbs_harness.transport import RemoteHost


def edit_config(text: str, key: str, value: str | None) -> str:
    """Config text with every `key ...` line removed and, if value is given, `key value` appended."""
    lines = [ln for ln in text.splitlines() if ln.split()[:1] != [key]]
    if value is not None:
        lines.append(f"{key} {value}")
    return "\n".join(lines) + "\n"


class MomConfig:
    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster

    def path(self) -> str:
        return f"{self.cluster.pbs_home}/mom_priv/config"

    def read(self, host: RemoteHost) -> str:
        return host.check(["cat", self.path()]).stdout

    def write(self, host: RemoteHost, text: str) -> datetime:
        """Replace the config and HUP the mom; returns the time just before the HUP (for log waits)."""
        host.check(f"cat > {shlex.quote(self.path())}", stdin=text)
        return self.hup(host)

    def set(self, host: RemoteHost, key: str, value: object) -> datetime:
        return self.write(host, edit_config(self.read(host), key, str(value)))

    def unset(self, host: RemoteHost, key: str) -> datetime:
        return self.write(host, edit_config(self.read(host), key, None))

    def hup(self, host: RemoteHost) -> datetime:
        stamp = datetime.now()
        host.check(["pkill", "-HUP", "-x", "pbs_mom"])
        return stamp
