"""MoM configuration (`PBS_HOME/mom_priv/config`): set/unset directives, then HUP the mom."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from datetime import datetime, timedelta

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

    def set_options(self, host: RemoteHost, options: Mapping[str, object], timeout: float = 20) -> datetime:
        """Set several directives ("$name": value) in one write + HUP; returns the time just before the
        HUP. Waits until the mom logged each value it read back (its own confirmation)."""
        from pbs_harness.evidence.logs import mom_log

        config = self.read(host)
        for key, value in options.items():
            config = edit_config(config, key, str(value))
        since = self.write(host, config) - timedelta(seconds=1)
        mom = mom_log(self.cluster, host.name)
        for key, value in options.items():
            # "<name>;<value>" (e.g. the join alarm) or, from set_int(), "<name>;setting <value>"
            mom.expect(f";{key.lstrip('$')};(setting )?{value}$", since, timeout=timeout)
        return since

    def hup(self, host: RemoteHost) -> datetime:
        stamp = datetime.now()
        host.check(["pkill", "-HUP", "-x", "pbs_mom"])
        return stamp
