"""MoM configuration (`PBS_HOME/mom_priv/config`): set/unset directives, then HUP the mom.

Before the harness first changes a host's config it keeps a copy next to it (`config.pbs-harness-saved`);
putting a config back (`put_back`, the baseline restore) removes the copy. A copy found when a session
starts was left by a run killed before its restore: the baseline puts it back (pbs_harness.suite.baseline).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from datetime import datetime, timedelta

from pbs_harness.remote.cluster import Cluster
from pbs_harness.remote.transport import RemoteHost

SAVED_SUFFIX = ".pbs-harness-saved"


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

    def saved_path(self) -> str:
        return f"{self.path()}{SAVED_SUFFIX}"

    def read(self, host: RemoteHost) -> str:
        return host.check(["cat", self.path()]).stdout

    def saved(self, host: RemoteHost) -> str | None:
        """The copy kept before the harness's first change since the last `put_back`, if any."""
        res = host.run(["cat", self.saved_path()])
        return res.stdout if res.ok else None

    def write(self, host: RemoteHost, text: str) -> datetime:
        """Replace the config and HUP the mom; returns the time just before the HUP (for log waits).
        The config as it was is kept first, unless a copy is kept already."""
        path, saved = shlex.quote(self.path()), shlex.quote(self.saved_path())
        host.check(f"[ -e {saved} ] || cp -p {path} {saved}")
        return self._replace(host, text)

    def put_back(self, host: RemoteHost, text: str) -> datetime | None:
        """Make the config `text` again (HUP only if it changed) and drop the kept copy."""
        changed = self.read(host) != text
        stamp = self._replace(host, text) if changed else None
        host.check(["rm", "-f", self.saved_path()])
        return stamp

    def _replace(self, host: RemoteHost, text: str) -> datetime:
        host.check(f"cat > {shlex.quote(self.path())}", stdin=text)
        return self.hup(host)

    def set(self, host: RemoteHost, key: str, value: object) -> datetime:
        return self.write(host, edit_config(self.read(host), key, str(value)))

    def unset(self, host: RemoteHost, key: str) -> datetime:
        return self.write(host, edit_config(self.read(host), key, None))

    def set_options(self, host: RemoteHost, options: Mapping[str, object], timeout: float = 20) -> datetime:
        """Set several directives ("$name": value) in one write + HUP; returns the time just before the
        HUP. Waits until the mom logged each value it read back (its own confirmation)."""
        from pbs_harness.pbs.evidence.logs import mom_log

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
