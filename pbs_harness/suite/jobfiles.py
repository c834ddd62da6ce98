"""Files that jobs write into the test accounts' homes: made, read and removed where they are.

A job script runs on the job's primary host, its tasks (pbsdsh, pbs_tmrsh) on its other hosts, and
what each writes into the owner's home lands on the disk of the host it runs on. Where the homes are
one filesystem on every host (`Inventory.shared_home`: NFS, the namespace local cluster) the client
host sees all of it. Where they are not (VMs without NFS, system local hosts) each host holds only
what was written on it: a directory is made and removed on every host, and a file is read on every
host and the hosts' copies merged. Either way each line a job wrote is read exactly once, so records
that name their host (a pid record, a task's line) are never duplicated nor lost.

A host an active fault of the test has crashed, paused or partitioned (Nemesis.out_of_reach) is not
read: nothing runs there while the fault lasts, and SSH cannot reach it; removals there wait for the
heal (Nemesis.when_healed). Files PBS itself delivers to the submission host (a job's -o/-e output,
stageout) are not for this module: a test reads them on the client, since that delivery is what it
asserts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pbs_harness.common.fanout import each
from pbs_harness.remote.cluster import Cluster
from pbs_harness.remote.transport import CommandError
from pbs_harness.suite.faults import Nemesis

NO_SUCH_FILE = "No such file or directory"


def merge(parts: Mapping[str, str | None]) -> str:
    """The hosts' copies of one file (None: the host has none), one after the other in the given
    order, each ending with a newline so that no line runs into the next host's first."""
    return "".join(text if text.endswith("\n") else text + "\n" for text in parts.values() if text)


@dataclass
class JobFiles:
    """Job-written files of one test on `cluster`; `nemesis` (the test's) tells which hosts are out of reach."""

    cluster: Cluster
    nemesis: Nemesis | None = None

    @property
    def shared(self) -> bool:
        return self.cluster.inventory.shared_home

    def hosts(self, hosts: Iterable[str] | None = None) -> list[str]:
        """Where to look: the client alone on shared homes, else `hosts` (default every host of the
        cluster) less those out of reach."""
        if self.shared:
            return [self.cluster.client.name]
        out = self.nemesis.out_of_reach() if self.nemesis else set()
        return [h for h in (self.cluster.hosts if hosts is None else hosts) if h not in out]

    def make_dir(self, path: str, user: str) -> None:
        """`mkdir -p path` as `user` wherever a job of the cluster may write (every host, or the client)."""
        everywhere = [self.cluster.client.name] if self.shared else list(self.cluster.hosts)
        each(everywhere, lambda name: self.cluster.hosts[name].check(["mkdir", "-p", path], user=user))

    def read_each(self, path: str, hosts: Iterable[str] | None = None) -> dict[str, str | None]:
        """Host -> the file's text there (None: no such file), for every host `hosts()` gives."""
        names = self.hosts(hosts)
        found: dict[str, str | None] = {}
        # The hosts read at once (pbs_harness.common.fanout); the copies kept in the hosts' order.
        results = each(names, lambda name: self.cluster.hosts[name].run(["cat", "--", path]))
        for name, res in zip(names, results, strict=True):
            if not res.ok and NO_SUCH_FILE not in res.stderr:
                raise CommandError(res)
            found[name] = res.stdout if res.ok else None
        return found

    def read(self, path: str, hosts: Iterable[str] | None = None) -> str:
        """What jobs wrote into `path`, on whichever host they ran ("" when none wrote it yet)."""
        return merge(self.read_each(path, hosts))

    def where(self, hosts: Iterable[str] | None = None) -> str:
        """Where `read` looks, for wait descriptions and failure messages."""
        if self.shared:
            return f"on {self.cluster.client.name} (shared homes)"
        looked = self.hosts(hosts)
        skipped = [h for h in (self.cluster.hosts if hosts is None else hosts) if h not in looked]
        return f"on {', '.join(looked)}" + (f" (out of reach: {', '.join(skipped)})" if skipped else "")

    def remove(self, *paths: str) -> None:
        """`rm -rf` the paths wherever jobs may have written them; on a host out of reach, after the heal."""
        if not paths:
            return
        everywhere = [self.cluster.client.name] if self.shared else list(self.cluster.hosts)
        out = self.nemesis.out_of_reach() if self.nemesis else set()
        now = []
        for name in everywhere:
            host = self.cluster.hosts[name]
            if name in out and self.nemesis is not None:
                self.nemesis.when_healed(f"removing {' '.join(paths)} on {name}", lambda h=host: _rm(h, paths))
            else:
                now.append(host)
        each(now, lambda host: _rm(host, paths))


def _rm(host, paths: tuple[str, ...]) -> None:
    host.run(["rm", "-rf", "--", *paths])
