"""How OpenSSH would reach a host, so that the harness's own SSH (paramiko) goes where Ansible's goes.

Ansible runs OpenSSH's `ssh` with the inventory's settings: ansible_host as the destination,
ansible_user/ansible_port/ansible_ssh_private_key_file when they are set, ansible_ssh_common_args and
ansible_ssh_extra_args; `ssh` adds ~/.ssh/config (or the file of `-F`) with its Host and Match blocks.
`ssh -G` prints the settings that result, without connecting; `resolve` reads them: the real address
and port (HostName, Port), the login user, the identity files, the known_hosts files and whether
host keys are checked, whether the ssh-agent may offer keys, and the way there (ProxyJump,
ProxyCommand). The paramiko layer (pbs_harness.remote.transport) follows that route; a ProxyJump goes
through OpenSSH's own `ssh -W`, as `ssh` itself does it, so the jump host's settings, keys and
agent are OpenSSH's too.

Without an OpenSSH client on this machine (Ansible could not run either), the route is the
inventory's own settings.
"""

from __future__ import annotations

import functools
import os
import pwd
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from pbs_harness.common.errors import PreconditionError


@dataclass(frozen=True)
class Route:
    """The settings `ssh` would use for one destination (`ssh -G`)."""

    hostname: str
    port: int
    user: str
    identity_files: tuple[str, ...] = ()  # those that exist on this machine, in ssh's order
    known_hosts_files: tuple[str, ...] = ()  # UserKnownHostsFile, then GlobalKnownHostsFile (existing ones)
    strict_host_keys: bool = True
    identities_only: bool = False
    proxy_jump: str | None = None
    proxy_command: str | None = None  # ProxyCommand with its %-tokens expanded, or the `ssh -W` of a ProxyJump
    resolved: bool = True  # False: no OpenSSH client here, the inventory's settings as given

    @property
    def through(self) -> str:
        """How the host is reached, for messages: `directly`, `through JUMP (ProxyJump)`, or the ProxyCommand."""
        if self.proxy_jump:
            return f"through {self.proxy_jump} (ProxyJump)"
        if self.proxy_command:
            return f"through ProxyCommand `{self.proxy_command}`"
        return "directly"


def _home() -> str:
    """The home OpenSSH expands `~` with: the account's, not $HOME."""
    return pwd.getpwuid(os.getuid()).pw_dir


def _expand(path: str) -> str:
    return _home() + path[1:] if path == "~" or path.startswith("~/") else path


def _options(text: str) -> dict[str, list[str]]:
    """`ssh -G` output: lower-case keyword -> its values, in order (IdentityFile repeats)."""
    found: dict[str, list[str]] = {}
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key:
            found.setdefault(key.lower(), []).append(value.strip())
    return found


def _config_file(ssh_args: tuple[str, ...]) -> str | None:
    """The -F FILE among ssh arguments (ssh reads only that file then, not ~/.ssh/config)."""
    for i, word in enumerate(ssh_args):
        if word == "-F" and i + 1 < len(ssh_args):
            return ssh_args[i + 1]
        if word.startswith("-F") and len(word) > 2:
            return word[2:]
    return None


def _expand_tokens(command: str, hostname: str, port: int, user: str, given: str) -> str:
    """ProxyCommand's %-tokens as ssh expands them (%h host, %p port, %r user, %n the name as given, %%)."""
    tokens = {"h": hostname, "p": str(port), "r": user, "n": given, "%": "%"}
    return re.sub(r"%(.)", lambda m: tokens.get(m.group(1), m.group(0)), command)


def jump_command(proxy_jump: str, hostname: str, port: int, config_file: str | None) -> str:
    """The command OpenSSH runs for ProxyJump (ssh.c): `ssh` to the last hop, the earlier hops as -J,
    forwarding stdin/stdout to the destination (-W); never prompting (BatchMode)."""
    *earlier, last = proxy_jump.split(",")
    argv = ["ssh", "-o", "BatchMode=yes"]
    if config_file:
        argv += ["-F", config_file]
    if earlier:
        argv += ["-J", ",".join(earlier)]
    user, host, hop_port = parse_hop(last)
    if user:
        argv += ["-l", user]
    if hop_port:
        argv += ["-p", str(hop_port)]
    return shlex.join([*argv, "-W", f"[{hostname}]:{port}", host])


def parse_hop(hop: str) -> tuple[str | None, str, int | None]:
    """A ProxyJump hop: `[user@]host[:port]` or `ssh://[user@]host[:port]` -> (user, host, port)."""
    hop = hop.strip().removeprefix("ssh://")
    user, _, rest = hop.rpartition("@")
    host, port = rest, None
    if rest.startswith("["):  # [v6 address]:port
        host, _, tail = rest[1:].partition("]")
        port = int(tail[1:]) if tail.startswith(":") else None
    elif rest.count(":") == 1:
        host, _, digits = rest.partition(":")
        port = int(digits)
    return user or None, host, port


@dataclass(frozen=True)
class Destination:
    """What the inventory says of a host's SSH: ansible_host, and ansible_port, ansible_user,
    ansible_ssh_private_key_file when set (None: ~/.ssh/config decides, as it does for Ansible), and the
    words of ansible_ssh_common_args + ansible_ssh_extra_args. `name` is the inventory host, for messages."""

    name: str
    address: str
    port: int | None = None
    user: str | None = None
    key_file: str | None = None
    ssh_args: tuple[str, ...] = ()

    def ssh_g(self) -> list[str]:
        argv = ["ssh", "-G", *self.ssh_args]
        argv += ["-p", str(self.port)] if self.port else []
        argv += ["-l", self.user] if self.user else []
        argv += ["-i", self.key_file] if self.key_file else []
        return [*argv, self.address]


@functools.lru_cache(maxsize=1024)
def resolve(dest: Destination) -> Route:
    """How `ssh` reaches the destination (`ssh -G`); the inventory's settings alone without an OpenSSH client."""
    if not shutil.which("ssh"):
        return Route(
            hostname=dest.address,
            port=dest.port or 22,
            user=dest.user or "root",
            identity_files=(dest.key_file,) if dest.key_file else (),
            resolved=False,
        )
    proc = subprocess.run(
        dest.ssh_g(), capture_output=True, text=True, timeout=30, check=False, stdin=subprocess.DEVNULL
    )
    if proc.returncode != 0:
        detail = " ".join(line for line in proc.stderr.splitlines() if "Pseudo-terminal" not in line).strip()
        raise PreconditionError(
            f"host {dest.name}: ssh cannot work out how to reach {dest.address}: {detail or proc.returncode}",
            "fix ansible_ssh_common_args / ansible_ssh_extra_args in the inventory, or ~/.ssh/config "
            f"(`ssh -G {dest.address}` with the same options shows the same error)",
        )
    opts = _options(proc.stdout)

    def one(key: str, default: str = "") -> str:
        return opts.get(key, [default])[0]

    address, key_file, ssh_args = dest.address, dest.key_file, dest.ssh_args
    hostname, ssh_port, ssh_user = one("hostname", address), int(one("port", "22")), one("user", "root")
    identity = [_expand(p) for p in opts.get("identityfile", [])]
    if key_file and key_file not in identity:
        identity.insert(0, key_file)  # ssh drops a -i file it cannot read; the harness says so when it connects
    known = [_expand(p) for key in ("userknownhostsfile", "globalknownhostsfile") for p in one(key).split()]
    jump = one("proxyjump", "none")
    command = one("proxycommand", "none")
    config_file = _config_file(ssh_args)
    if jump != "none":
        proxy: str | None = jump_command(jump, hostname, ssh_port, config_file)
    elif command != "none":
        proxy = _expand_tokens(command, hostname, ssh_port, ssh_user, address)
    else:
        proxy = None
    return Route(
        hostname=hostname,
        port=ssh_port,
        user=ssh_user,
        identity_files=tuple(p for p in dict.fromkeys(identity) if Path(p).is_file()),
        known_hosts_files=tuple(p for p in dict.fromkeys(known) if Path(p).is_file()),
        strict_host_keys=one("stricthostkeychecking", "ask").lower() not in ("false", "no", "off", "accept-new"),
        identities_only=one("identitiesonly", "no").lower() in ("yes", "true"),
        proxy_jump=None if jump == "none" else jump,
        proxy_command=proxy,
    )


def first_hop(route: Route, name: str, config_args: tuple[str, ...] = ()) -> tuple[str, int] | None:
    """The (address, port) a TCP probe of this host must reach: the host itself, the first jump host of a
    ProxyJump (resolved by ssh as well), or None for a ProxyCommand (only an SSH login can tell)."""
    if route.proxy_jump:
        user, host, port = parse_hop(route.proxy_jump.split(",")[0])
        config = _config_file(config_args)
        hop = resolve(Destination(f"{name}'s jump host", host, port, user, None, ("-F", config) if config else ()))
        return first_hop(hop, name, config_args)
    if route.proxy_command:
        return None
    return route.hostname, route.port
