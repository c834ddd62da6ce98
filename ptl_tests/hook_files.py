"""The suites' own test hooks and the one way to install them.

Each test hook is a real Python file in ptl_tests/hooks/ that reads its JSON configuration from
`pbs.hook_config_filename`; a test gives the configuration, never a hook body. `SuiteHook(file,
attrs, config)` names the file, the hook's attributes (event, enabled, alarm...) and the
configuration; each suite's helpers have a factory per hook (reliable_startup_helpers.pad_hook,
ramp_down_helpers.hook_log_event_on_this_host, ...). The hook files are only read here, never
imported (they need the pbs module of a PBS daemon; ptl_tests/hooks has no __init__.py and pytest
collects none of them); tests/unit/test_ptl_hooks.py runs them against tests/unit/fakepbs.py.

`create_hook` creates one hook on the server: body, attributes, and the configuration imported as
application/x-config (the server keeps it as server_priv/hooks/NAME.CF and sends it to the moms as
mom_priv/hooks/NAME.CF with the body NAME.PY). `install_hooks` creates several, then waits until
every mom holds exactly the server's mom hooks with those bodies AND configurations
(`wait_mom_hooks`): the server sends hook files to the moms asynchronously, one file at a time, so
a job started in between runs with the moms' old hooks, or with a new body and an old (or no)
configuration. Queuejob hooks run on the server, which has both once `create_hook` returns.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pbs_harness.common.waits import wait_until
from pbs_harness.pbs.client import Pbs
from pbs_harness.remote.cluster import Cluster
from pbs_harness.suite.faults.hookbodies import failing_hook_body

HOOKS_DIR = Path(__file__).resolve().parent / "hooks"
MOM_EVENTS = ("execjob_", "exechost_")


@dataclass(frozen=True)
class SuiteHook:
    """A hook file of ptl_tests/hooks/ with its attributes and its JSON configuration."""

    file: str  # file name in ptl_tests/hooks/, e.g. "event_probe.py"
    attrs: Mapping[str, object]  # qmgr hook attributes: event, enabled, alarm, ...
    config: Mapping[str, Any] = field(default_factory=dict)  # JSON-serialisable

    def __post_init__(self) -> None:
        if not self.path.is_file():
            raise ValueError(f"no hook file {self.path}")

    @property
    def path(self) -> Path:
        return HOOKS_DIR / self.file

    @property
    def body(self) -> str:
        """The hook file's text: what the server imports as application/x-python."""
        return self.path.read_text()

    @property
    def config_text(self) -> str:
        """The configuration as the hook reads it (application/x-config): JSON, keys sorted.
        JSON object keys are strings: a hook that takes int keys (chunk indexes) converts them back."""
        return json.dumps(self.config, sort_keys=True) + "\n"


def create_hook(pbs: Pbs, name: str, hook: SuiteHook) -> None:
    """Create (or replace) hook `name` on the server with the file's body, attributes and config."""
    pbs.hooks.create(name, hook.body, hook.attrs, config=hook.config_text)


def md5(text: str) -> str:
    return hashlib.md5(text.encode()).hexdigest()  # noqa: S324 - a checksum, not security


@dataclass(frozen=True)
class MomHook:
    """What a mom holds of one site hook in PBS_HOME/mom_priv/hooks: `enabled` as NAME.HK says it
    (a .HK file leaves it out when true), md5 of the body NAME.PY and of the config NAME.CF ("":
    no such file)."""

    enabled: str
    body_md5: str
    config_md5: str


# Expected files of a hook on the moms: (body, config); None: not checked (e.g. no config).
HookFiles = tuple[str | None, str | None]


def parse_mom_hook_view(text: str) -> dict[str, MomHook]:
    """`NAME ENABLED PY_MD5 CF_MD5` lines ("-": no such file) -> {name: MomHook}."""
    view: dict[str, MomHook] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 4:
            name, enabled, body, config = (p if p != "-" else "" for p in parts)
            view[name] = MomHook(enabled, body, config)
    return view


def mom_hook_view(cluster: Cluster, host: str) -> dict[str, MomHook]:
    """Site hooks a mom holds (PBS_* hooks left out): {name: MomHook}."""
    script = (
        'digest() { if [ -f "$1" ]; then md5sum < "$1" | cut -c1-32; else echo -; fi; }; '
        f'cd {cluster.pbs_home}/mom_priv/hooks && for f in *.HK; do [ -e "$f" ] || continue; n=${{f%.HK}}; '
        'case $n in PBS_*) continue;; esac; e=$(sed -n "s/^enabled=//p" "$f"); '
        'echo "$n ${e:-true} $(digest "$n.PY") $(digest "$n.CF")"; done'
    )
    return parse_mom_hook_view(cluster.hosts[host].run(script).stdout)


def server_mom_hooks(pbs: Pbs) -> dict[str, str]:
    """{name: enabled ("true"/"false")} of the server's site hooks with a mom event."""
    return {
        name: str(attrs.get("enabled", "")).lower()
        for name, attrs in pbs.hooks.attributes().items()
        if any(ev.strip().startswith(MOM_EVENTS) for ev in attrs.get("event", "").split(","))
    }


def mom_holds(view: Mapping[str, MomHook], server: Mapping[str, str], digests: Mapping[str, HookFiles]) -> bool:
    """The mom holds exactly the server's mom hooks, enabled as there, and each hook in `digests`
    with that body md5 and config md5 (None: not checked)."""
    if {n: h.enabled for n, h in view.items()} != dict(server):
        return False
    return all(
        (body is None or view[n].body_md5 == body) and (config is None or view[n].config_md5 == config)
        for n, (body, config) in digests.items()
    )


def wait_mom_hooks(
    pbs: Pbs, cluster: Cluster, files: Mapping[str, HookFiles] | None = None, timeout: float = 180
) -> None:
    """Wait until every mom holds exactly the server's mom hooks, enabled as on the server, with
    the given (body, config) texts (None: either not checked). The server sends hook files to the
    moms asynchronously (body and config separately, deletions late when a mom was unreachable):
    a job started before that runs with the moms' old hooks or an old configuration."""
    server = server_mom_hooks(pbs)
    digests = {  # mom hooks only: queuejob hooks stay on the server
        n: (None if body is None else md5(body), None if config is None else md5(config))
        for n, (body, config) in (files or {}).items()
        if n in server
    }
    for mom in cluster.moms:
        wait_until(
            lambda mom=mom: mom_hook_view(cluster, mom.name),
            lambda view: mom_holds(view, server, digests),
            timeout=timeout,
            describe=f"mom hooks on {mom.name} = the server's {server}, (body, config) md5 {digests}",
        )


def install_hooks(pbs: Pbs, cluster: Cluster, hooks: Mapping[str, SuiteHook], faults: Iterable[Any] = ()) -> None:
    """Create the named test hooks, then wait until every mom has them with their configs (and the
    nemesis fault hooks `faults`, which have no config, and no stale hook); the baseline restore
    deletes them afterwards."""
    files: dict[str, HookFiles] = {}
    for name, hook in hooks.items():
        create_hook(pbs, name, hook)
        files[name] = (hook.body, hook.config_text)
    for fault in faults:
        files[fault.name] = (failing_hook_body(fault.hosts, fault.how, fault.seconds), None)
    wait_mom_hooks(pbs, cluster, files)
