"""Site hooks on the server: create with attributes, import a body (and config), delete."""

from __future__ import annotations

import shlex
from collections.abc import Mapping

from pbs_harness.common.waits import WaitTimeout, wait_until
from pbs_harness.pbs.base import PbsCommands, qmgr_value
from pbs_harness.remote.transport import CommandError


class Hooks(PbsCommands):
    def __init__(self, cluster, host=None) -> None:
        super().__init__(cluster, host or cluster.server)

    def _qmgr(self, directive: str) -> None:
        self.check("qmgr", "-c", directive)

    def _upload(self, content: str) -> str:
        # mktemp on the server host: a private, unpredictable name.
        path = self.host.check(["mktemp", "-t", "pbs-harness-hook.XXXXXXXX"]).stdout.strip()
        self.host.check(f"cat > {shlex.quote(path)}", stdin=content)
        return path

    def create(self, name: str, body: str, attrs: Mapping[str, object], *, config: str | None = None) -> None:
        """Create (or replace) hook `name` with the given body, attributes (event, order, alarm...)."""
        if name in self.names():
            self.delete(name)
        self._create(name)
        self._fill(name, body, attrs, config)

    def _fill(self, name: str, body: str, attrs: Mapping[str, object], config: str | None = None) -> None:
        """Attributes, body and config of a just-created hook."""
        items = ",".join(f"{k}={qmgr_value(v)}" for k, v in attrs.items())
        if items:
            self._qmgr(f"set hook {name} {items}")
        self.import_file(name, body, "application/x-python")
        if config is not None:
            self.import_file(name, config, "application/x-config")

    def create_unless_pending(self, name: str, body: str, attrs: Mapping[str, object]) -> bool:
        """Create hook `name` like `create`, unless the server is still delivering a deletion of that
        name to the moms ("hook name 'X' is pending delete"): then nothing happens and it says False."""
        res = self.run("qmgr", "-c", f"create hook {name}")
        if not res.ok:
            if "pending delete" in res.stderr:
                return False
            raise CommandError(res)
        self._fill(name, body, attrs)
        return True

    def _create(self, name: str, timeout: float = 120) -> None:
        """`create hook NAME`, waiting while a deletion of that name is still pending: the server
        keeps a deleted mom hook until every mom acknowledged it, and a mom that was just paused or
        cut off acknowledges only after its next hook sync ("hook name 'X' is pending delete")."""

        def attempt() -> CommandError | None:
            try:
                self._qmgr(f"create hook {name}")
            except CommandError as exc:
                if "pending delete" not in exc.result.stderr:
                    raise
                return exc
            return None

        try:
            wait_until(attempt, lambda err: err is None, timeout=timeout, describe=f"hook {name} created")
        except WaitTimeout as exc:
            raise exc.last from exc  # type: ignore[misc]

    def import_file(self, name: str, content: str, content_type: str) -> None:
        path = self._upload(content)
        try:
            self._qmgr(f"import hook {name} {content_type} default {path}")
        finally:
            self.host.run(["rm", "-f", path])

    def delete(self, name: str) -> None:
        res = self.run("qmgr", "-c", f"delete hook {name}")
        if not res.ok and "No such hook" not in res.stderr + res.stdout:
            raise CommandError(res)

    def attributes(self) -> dict[str, dict[str, str]]:
        """Every site hook's attributes from `qmgr -c 'list hook'` (continuation lines joined)."""
        return parse_list_hook(self.check("qmgr", "-c", "list hook").stdout)

    def names(self) -> list[str]:
        out = self.check("qmgr", "-c", "list hook").stdout
        return [line.split(None, 1)[1].strip() for line in out.splitlines() if line.startswith("Hook ")]


def parse_list_hook(text: str) -> dict[str, dict[str, str]]:
    """`qmgr -c 'list hook'` output -> {hook: {attribute: value}}; tab-indented lines continue a value."""
    hooks: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    last = ""
    for line in text.splitlines():
        if line.startswith("Hook "):
            current = hooks.setdefault(line.split(None, 1)[1].strip(), {})
        elif current is not None and line.startswith("\t") and last:
            current[last] += line.strip()
        elif current is not None and " = " in line:
            key, value = line.strip().split(" = ", 1)
            current[key] = value
            last = key
    return hooks
