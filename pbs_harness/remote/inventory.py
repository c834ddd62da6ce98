"""The cluster as the Ansible inventory describes it (`ansible-inventory --list`).

The inventory is the single source of truth: host addresses, SSH settings, roles (server,
moms, clients) and PBS variables all come from it, for deploy, verify and the test suites.
What depends on where the hosts come from (the local cluster, cloud VMs) is asked of the
inventory's kind of host (pbs_harness.hosts, the registry, from the server host's variables).
"""

from __future__ import annotations

import fnmatch
import functools
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pbs_harness import hosts
from pbs_harness.common import project, shell
from pbs_harness.common.errors import PreconditionError, UnreachableError
from pbs_harness.remote import reachability, sshconfig
from pbs_harness.remote.transport import SSHTarget

INSTALL_METHODS = ("existing", "packages")
SERVER_GROUP = "pbs_server"
MOM_GROUP = "pbs_moms"
CLIENT_GROUP = "pbs_clients"
# Where OpenPBS is installed on the cluster's hosts (PBS_EXEC): role openpbs_install's variable and its
# default (roles/openpbs_install/defaults/main.yml). The other roles' *_exec variables point at it.
OPENPBS_PREFIX_VAR = "openpbs_install_prefix"
OPENPBS_PREFIX_DEFAULT = "/opt/pbs"
# Where the test accounts' homes are (role openpbs_common's variable and default), and the moms'
# $usecp lines (role openpbs_mom): a line mapping the homes onto themselves for every host is how
# an inventory says they are one filesystem on every host (NFS, the namespace local cluster).
HOME_BASE_VAR = "openpbs_common_home_base"
HOME_BASE_DEFAULT = "/home"
USECP_VAR = "openpbs_mom_usecp"

_INVENTORY_DIR_RE = re.compile(r"\{\{\s*inventory_dir\s*\}\}")


@dataclass(frozen=True)
class InventoryHost:
    name: str
    vars: dict[str, Any]
    groups: frozenset[str]

    @property
    def address(self) -> str:
        return str(self.vars.get("ansible_host", self.name))

    @property
    def port(self) -> int:
        return int(self.vars.get("ansible_port", 22))

    def describe(self) -> str:
        return f"{self.name} ({self.address}:{self.port})"

    def ssh_args(self) -> tuple[str, ...]:
        """ansible_ssh_common_args and ansible_ssh_extra_args as words, as Ansible hands them to ssh."""
        args = f"{self.vars.get('ansible_ssh_common_args', '')} {self.vars.get('ansible_ssh_extra_args', '')}"
        # The one template an inventory's SSH settings commonly hold, rendered as Ansible would.
        args = _INVENTORY_DIR_RE.sub(lambda _: str(self.vars.get("inventory_dir", "")), args)
        return tuple(shlex.split(args))

    def route(self) -> sshconfig.Route:
        """How OpenSSH reaches this host with the inventory's settings and ~/.ssh/config (`ssh -G`)."""
        key = self.vars.get("ansible_ssh_private_key_file") or self.vars.get("ansible_private_key_file")
        port = self.vars.get("ansible_port")
        user = self.vars.get("ansible_user")
        return sshconfig.resolve(
            sshconfig.Destination(
                self.name,
                self.address,
                int(port) if port is not None else None,
                str(user) if user is not None else None,
                str(Path(str(key)).expanduser()) if key else None,
                self.ssh_args(),
            )
        )

    def ssh_target(self) -> SSHTarget:
        route = self.route()
        args = self.ssh_args()
        opts = _ssh_options(shlex.join(args))
        key = self.vars.get("ansible_ssh_private_key_file") or self.vars.get("ansible_private_key_file")
        return SSHTarget(
            name=self.name,
            address=self.address,
            user=route.user,
            port=route.port,
            key_file=str(Path(str(key)).expanduser()) if key else None,
            known_hosts=opts.get("userknownhostsfile") or next(iter(route.known_hosts_files), None),
            strict_host_keys=route.strict_host_keys if route.resolved else _strict(opts),
            become=_boolean(self.vars.get("ansible_become", False)),
            become_user=str(self.vars.get("ansible_become_user") or "root"),
            hostname=route.hostname,
            identity_files=route.identity_files,
            known_hosts_files=route.known_hosts_files,
            # The agent offers its keys as it does to ssh, unless IdentitiesOnly limits ssh to the named keys.
            allow_agent=bool(os.environ.get("SSH_AUTH_SOCK")) and not route.identities_only,
            proxy_command=route.proxy_command,
            through=route.through,
            ssh_args=args,
        )

    def probe_endpoint(self) -> tuple[str, int] | None:
        """Where a TCP probe of this host goes: its SSH port, or its first jump host's (None: a ProxyCommand)."""
        return sshconfig.first_hop(self.route(), self.name, self.ssh_args())


@dataclass(frozen=True)
class Inventory:
    path: Path
    hosts: dict[str, InventoryHost]
    groups: dict[str, list[str]] = field(default_factory=dict)

    @property
    def server(self) -> InventoryHost:
        return self.hosts[self.groups[SERVER_GROUP][0]]

    @property
    def moms(self) -> list[InventoryHost]:
        return [self.hosts[n] for n in self.groups.get(MOM_GROUP, [])]

    @property
    def clients(self) -> list[InventoryHost]:
        return [self.hosts[n] for n in self.groups.get(CLIENT_GROUP, [])] or [self.server]

    def var(self, name: str, default: Any = None) -> Any:
        return self.server.vars.get(name, default)

    @property
    def kind(self) -> type[hosts.HostKind]:
        """The kind of the inventory's hosts (pbs_harness.hosts), as the server host's variables name it:
        what only the kind knows (checks, advice, what it shares with this machine) is asked of it."""
        return hosts.kind_of(self.server.vars)

    @property
    def openpbs_prefix(self) -> Path:
        """Where OpenPBS is installed on the cluster's hosts (as the server host's variables say)."""
        return openpbs_prefix_of(self.server.vars)

    @property
    def home_base(self) -> str:
        """Parent directory of the test accounts' homes (openpbs_common_home_base)."""
        return str(self.var(HOME_BASE_VAR) or HOME_BASE_DEFAULT).rstrip("/") or "/"

    def home(self, user: str) -> str:
        """A test account's home directory, the same path on every host."""
        return f"{self.home_base.rstrip('/')}/{user}"

    @property
    def shared_home(self) -> bool:
        """The accounts' homes are one filesystem on every host: every mom's $usecp (openpbs_mom_usecp)
        maps home_base onto itself for every host of the cluster. Then what a job writes there on any
        host is seen on all; otherwise each host has its own (PBS copies job files with scp)."""
        names = list(self.hosts)
        return bool(self.moms) and all(
            usecp_shares(m.vars.get(USECP_VAR) or [], self.home_base, names) for m in self.moms
        )


def cluster_name(inv: Any) -> str:
    """The name the cluster goes by in reports: a local cluster's host-name prefix (pa, pab, pbsh), else
    the server host's name (the suites' `cluster` property, the conformance report's header)."""
    return inv.kind.cluster_name(inv.server.vars) or str(inv.server.name)


def openpbs_prefix_of(host_vars: Mapping[str, Any]) -> Path:
    """The OpenPBS install prefix a host's variables give: openpbs_install_prefix, else the role default."""
    return Path(str(host_vars.get(OPENPBS_PREFIX_VAR, OPENPBS_PREFIX_DEFAULT)))


def usecp_shares(lines: list[str], path: str, hosts: list[str]) -> bool:
    """The $usecp lines ("HOST:FROM TO", HOST may start with a * wildcard) map `path` (FROM is it or
    a parent directory) onto the same path (TO == FROM) for every one of `hosts`."""
    maps = []
    for line in lines:
        words = str(line).split()
        if len(words) != 2 or ":" not in words[0]:
            continue
        pattern, src = words[0].split(":", 1)
        src, dest = src.rstrip("/") or "/", words[1].rstrip("/") or "/"
        if dest == src and (path == src or path.startswith(src.rstrip("/") + "/")):
            maps.append(pattern.lower())
    return all(any(fnmatch.fnmatchcase(h.lower(), p) for p in maps) for h in hosts)


def declared_openpbs_prefix(path: Path) -> Path:
    """The OpenPBS install prefix an inventory directory's group_vars for all hosts declare, read without
    ansible-inventory (inventory/local cannot be listed while its cluster is down); the role default when
    none does or the value is a template."""
    vars_dir = path / "group_vars"
    files = [vars_dir / "all.yml", vars_dir / "all.yaml", *sorted((vars_dir / "all").glob("*.y*ml"))]
    value = None
    for f in files:  # in Ansible's order: a later file wins
        try:
            data = yaml.safe_load(f.read_text()) if f.is_file() else None
        except (OSError, yaml.YAMLError):
            continue
        if isinstance(data, dict) and data.get(OPENPBS_PREFIX_VAR) is not None:
            value = data[OPENPBS_PREFIX_VAR]
    return openpbs_prefix_of({} if value is None or _templated(value) else {OPENPBS_PREFIX_VAR: value})


def _boolean(value: Any) -> bool:
    """An Ansible boolean as inventories write it (true, "yes", "True", 1, ...)."""
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on", "y", "t")
    return bool(value)


def _strict(opts: dict[str, str]) -> bool:
    """Host keys are checked unless the ssh options turn it off (used without an OpenSSH client to ask)."""
    return opts.get("stricthostkeychecking", "yes").lower() not in ("no", "off", "false")


def _ssh_options(args: str) -> dict[str, str]:
    """`-o Key=Value` pairs of an ssh argument string, keys lower-cased."""
    opts: dict[str, str] = {}
    words = shlex.split(args)
    for i, word in enumerate(words):
        item = None
        if word == "-o" and i + 1 < len(words):
            item = words[i + 1]
        elif word.startswith("-o") and len(word) > 2:
            item = word[2:]
        if item and "=" in item:
            key, value = item.split("=", 1)
            opts[key.strip().lower()] = value.strip()
    return opts


def _ansible_inventory() -> str:
    exe = Path(sys.executable).parent / "ansible-inventory"
    return str(exe) if exe.exists() else (shutil.which("ansible-inventory") or "ansible-inventory")


def parse(data: dict[str, Any], path: Path) -> Inventory:
    """Build the model from `ansible-inventory --list` JSON and validate its shape."""
    hostvars: dict[str, dict[str, Any]] = data.get("_meta", {}).get("hostvars", {})
    groups: dict[str, list[str]] = {}

    def walk(group: str, seen: set[str]) -> list[str]:
        if group in seen:
            return []
        seen.add(group)
        entry = data.get(group, {})
        members = list(entry.get("hosts", []))
        for child in entry.get("children", []):
            members += [h for h in walk(child, seen) if h not in members]
        return members

    for group in data:
        if group != "_meta":
            groups[group] = walk(group, set())
    names = set(hostvars) | {h for members in groups.values() for h in members}
    hosts = {
        name: InventoryHost(
            name,
            # Ansible's magic variable, which `ansible-inventory --list` leaves out.
            {"inventory_dir": str(path if path.is_dir() else path.parent), **hostvars.get(name, {})},
            frozenset(g for g, members in groups.items() if name in members and g != "all"),
        )
        for name in sorted(names)
    }
    inv = Inventory(path, hosts, groups)
    validate(inv)
    return inv


def validate(inv: Inventory) -> None:
    servers = inv.groups.get(SERVER_GROUP, [])
    if len(servers) != 1:
        found = ", ".join(servers) or "none"
        raise PreconditionError(
            f"inventory {inv.path}: group {SERVER_GROUP} must hold exactly one host (found: {found})",
            f"put the PBS server host, and only it, under `{SERVER_GROUP}:` (see inventory/cloud.example/)",
        )
    if not inv.groups.get(MOM_GROUP):
        raise PreconditionError(
            f"inventory {inv.path}: group {MOM_GROUP} has no hosts",
            f"list every execution host (the server host too, if it runs jobs) under `{MOM_GROUP}:`",
        )
    if inv.server.name not in inv.groups[MOM_GROUP]:
        raise PreconditionError(
            f"inventory {inv.path}: the server host {inv.server.name} is not in group {MOM_GROUP}",
            f"add {inv.server.name} to `{MOM_GROUP}:` too (the harness expects a mom on the server host)",
        )
    method = inv.var("openpbs_install_method", "existing")
    if method not in INSTALL_METHODS:
        raise PreconditionError(
            f"inventory {inv.path}: unknown openpbs_install_method {method!r}",
            "set openpbs_install_method to 'existing' (OpenPBS already installed under the prefix) "
            "or 'packages' (official .deb/.rpm from the release zip openpbs_install_packages_archive, "
            "or loose files from openpbs_install_packages_url or openpbs_install_packages_dir)",
        )
    for host in inv.hosts.values():
        _validate_host(inv.path, host)


@functools.cache
def _boolean_vars() -> tuple[str, ...]:
    """The settings preflight.yml requires to be real booleans (one list for both checks)."""
    plays = yaml.safe_load((project.root() / "playbooks" / "preflight.yml").read_text())
    return tuple(plays[0]["vars"]["preflight_boolean_vars"])


def _templated(value: object) -> bool:
    """A Jinja expression: Ansible renders it at run time, so its type is only known there."""
    return isinstance(value, str) and "{{" in value


# A host's inventory name becomes its PBS node name (qmgr, the moms' config, hostnames): DNS labels joined by
# dots (underscores taken, as Ansible takes them). `a;rm -rf x` and `$(touch f)` used to be accepted.
_NODE_NAME_RE = re.compile(r"^(?!-)[A-Za-z0-9_-]{1,63}(?<!-)(?:\.(?!-)[A-Za-z0-9_-]{1,63}(?<!-))*$")


def _validate_host(path: Path, host: InventoryHost) -> None:
    if len(host.name) > 253 or not _NODE_NAME_RE.match(host.name):
        raise PreconditionError(
            f"inventory {path}: host name {host.name!r} cannot be a PBS node name (letters, digits, '-', '_' "
            "and '.' between labels of 1 to 63 characters)",
            "name the host by its hostname (e.g. node01 or node01.example.org) and put its address in ansible_host",
        )
    port = host.vars.get("ansible_port", 22)
    if isinstance(port, bool) or not str(port).isdigit() or not 1 <= int(port) <= 65535:
        raise PreconditionError(
            f"inventory {path}: host {host.name}: ansible_port {port!r} is not a port number",
            "set ansible_port to the host's SSH port, an integer from 1 to 65535 (default 22)",
        )
    bad = [
        f"{name} is {host.vars[name]!r}"
        for name in _boolean_vars()
        if name in host.vars and not isinstance(host.vars[name], bool) and not _templated(host.vars[name])
    ]
    if bad:
        raise PreconditionError(
            f"inventory {path}: host {host.name}: not booleans: " + "; ".join(bad),
            "write them as true or false, unquoted (not 'yes' or \"True\" strings)",
        )


_ORIGIN_RE = re.compile(r"^Origin: (?P<where>[^<].*?)(?::(?P<line>\d+):(?P<column>\d+))?$")


def parse_failure(stderr: str) -> str:
    """The parse error of an inventory source from ansible-inventory's stderr, with file, line and column.

    ansible-inventory tries several plugins and reports each one's error as a cause followed by an
    `Origin:` line; the first one that names a line and column (the YAML parser's) is the useful one.
    """
    lines = [line.strip() for line in stderr.splitlines()]
    first = None
    for i, line in enumerate(lines):
        m = _ORIGIN_RE.match(line)
        if not m or i == 0:
            continue
        cause = next((c for c in reversed(lines[:i]) if c), "")
        if m["line"]:
            return f"{cause} ({m['where']} line {m['line']}, column {m['column']})"
        first = first or f"{cause} ({m['where']})"
    if first:
        return first
    errors = [line for line in lines if line.startswith("[ERROR]")]
    return (errors[-1] if errors else stderr.strip()[-600:]) or "no message"


_VARS_DIRS = ("group_vars", "host_vars")


class _AnyTagLoader(yaml.SafeLoader):
    """Ansible's tags (!vault, !unsafe) read as plain values: only the YAML syntax is judged here."""


_AnyTagLoader.add_multi_constructor("!", lambda loader, _suffix, node: None)


def _vars_file_problem(path: Path) -> str | None:
    """The first group_vars/host_vars file beside the inventory that is not valid YAML, with its line and
    column (ansible-inventory names neither the file nor the line of those)."""
    base = path if path.is_dir() else path.parent
    for vars_dir in _VARS_DIRS:
        for file in sorted(p for p in (base / vars_dir).rglob("*") if p.is_file()):
            if file.suffix not in ("", ".yml", ".yaml", ".json"):
                continue
            try:
                yaml.load(file.read_text(), Loader=_AnyTagLoader)  # noqa: S506 - a SafeLoader
            except yaml.YAMLError as exc:
                mark = getattr(exc, "problem_mark", None)
                where = f" line {mark.line + 1}, column {mark.column + 1}" if mark else ""
                what = getattr(exc, "problem", None) or str(exc).splitlines()[0]
                return f"{file}{where}: {what}"
            except (OSError, UnicodeDecodeError) as exc:
                return f"{file}: cannot be read ({exc})"
    return None


def _check_holds_an_inventory(path: Path) -> None:
    """A folder with no inventory file in it (an empty one used to get "fix: fix that file")."""
    if not path.is_dir():
        return
    sources = [p for p in path.iterdir() if p.name not in _VARS_DIRS and not p.name.startswith(".")]
    if not sources:
        raise PreconditionError(
            f"inventory {path} is a folder with no inventory file in it",
            "put a hosts.yml in it with groups pbs_server and pbs_moms (inventory/cloud.example/hosts.yml "
            "shows the layout), or pass -i the file itself",
        )


def with_this_python(path_var: str) -> str:
    """PATH with this interpreter's folder first: inventory scripts (inventory/local/cluster.py) start with
    `#!/usr/bin/env python3` and import pbs_harness and PyYAML, which only this environment has. On a bare
    Debian 12 the system python3 has neither, and the local inventory failed to parse (issue #34)."""
    here = str(Path(sys.executable).parent)
    return here + (os.pathsep + path_var if path_var else "")


def load(path: Path) -> Inventory:
    # E.g. the local inventory without a running cluster: stop before anything connects anywhere.
    hosts.kind_of_path(path).check_listable(path)
    _check_holds_an_inventory(path)
    # Without this ansible-inventory reports a source it cannot parse as a warning, exits 0 and
    # lists an empty inventory, which reads as "no pbs_server host" instead of the parse error.
    # A host listed twice in one YAML mapping is an error too (Ansible warns and keeps the last one).
    env = dict(os.environ, ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED="True", ANSIBLE_DUPLICATE_YAML_DICT_KEY="error")
    env["PATH"] = with_this_python(env.get("PATH", ""))
    argv = [_ansible_inventory(), "-i", str(path), "--list"]
    try:
        res = shell.run(argv, timeout=120, env=env)
    except FileNotFoundError as exc:
        raise PreconditionError(
            f"ansible-inventory is not installed ({argv[0]} not found)",
            "install the project's requirements (`make venv`, or pip install -r requirements.txt) and run "
            "pbs-harness from that environment",
        ) from exc
    except subprocess.TimeoutExpired as exc:
        raise PreconditionError(
            f"ansible-inventory did not list {path} within 120s", "check the inventory's scripts and plugins"
        ) from exc
    if not res.ok:
        vars_problem = _vars_file_problem(path)
        if vars_problem:
            raise PreconditionError(
                f"inventory {path}: a variables file is not valid YAML: {vars_problem}",
                "fix that file at that line (`ansible-inventory -i PATH --graph` fails on it too)",
            )
        raise PreconditionError(
            f"inventory {path} cannot be parsed: {parse_failure(res.stderr)}",
            "fix the file and line named (`ansible-inventory -i PATH --graph` shows the same error)",
        )
    return parse(json.loads(res.stdout), path)


def check_reachable(inv: Inventory, timeout: float = 10) -> None:
    """Every host's SSH port answers within `timeout` seconds (all at once), or an error naming the hosts.
    A host reached through a jump host (ProxyJump) is probed at its first jump host; one behind a
    ProxyCommand only by the SSH login that follows."""
    # The kind's refusal first: e.g. a local cluster whose bridge is gone (its addresses would route
    # off-box), or a cloud run made at a stand-in endpoint, whose addresses are fake, is never probed.
    inv.kind.check_network(inv.server.vars)
    endpoints = {h.name: h.probe_endpoint() for h in inv.hosts.values()}
    probed = {name: end for name, end in endpoints.items() if end is not None}
    failures = reachability.probe(probed, timeout)
    if failures:

        def described(name: str) -> str:
            host, (address, port) = inv.hosts[name], probed[name]
            if (address, port) == (host.address, host.port):
                return host.describe()
            return f"{name} (its way there, {address}:{port}, {host.route().through})"

        named = "; ".join(f"{described(n)}: {why}" for n, why in sorted(failures.items()))
        raise UnreachableError(f"did not answer on their SSH port within {timeout:g}s: {named}", unreachable_hint(inv))


def check_ssh_keys(inv: Inventory) -> None:
    """The SSH private keys the inventory names exist on this machine (before anything connects)."""
    for host in inv.hosts.values():
        key = host.vars.get("ansible_ssh_private_key_file") or host.vars.get("ansible_private_key_file")
        if key and not _templated(key) and not Path(str(key)).expanduser().is_file():
            raise PreconditionError(
                f"inventory {inv.path}: host {host.name}: SSH key {key} does not exist on this machine",
                "point ansible_ssh_private_key_file at the private key that logs in to the hosts",
            )


def unreachable_hint(inv: Inventory) -> str:
    """What to check when hosts do not answer: the local cluster repairs itself, VMs do not."""
    return inv.kind.unreachable_hint(inv.path)


def check_openpbs_local(inv: Inventory) -> None:
    """On the local cluster /opt is shared with this machine: OpenPBS must be installed here."""
    if not inv.kind.shares_controller_files or inv.var("openpbs_install_method", "existing") != "existing":
        return
    prefix = inv.openpbs_prefix
    if not (prefix / "bin" / "qstat").exists() or not Path("/etc/init.d/pbs").exists():
        raise PreconditionError(
            f"OpenPBS is not installed under {prefix} on this machine (the local cluster shares it)",
            "install OpenPBS on this machine first and keep openpbs_install_method=existing: the server package "
            "of the official release zip (apt-get install ./openpbs-server_<version>-1_amd64.deb, or dnf install "
            "./openpbs-server-<version>-0.x86_64.rpm), or the INSTALL steps of the OpenPBS source + pbs_postinstall",
        )
