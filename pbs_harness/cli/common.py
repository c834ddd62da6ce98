"""What every verb of the command line shares: progress lines, the root and state-directory checks,
and the argument types that judge a value before anything runs."""

from __future__ import annotations

import argparse
import ipaddress
import math
import os
import re
import tempfile
import time
from pathlib import Path

from pbs_harness.common.errors import HarnessError, PreconditionError

DEBUG_ENV = "PBS_HARNESS_DEBUG"  # set to 1: show the traceback of an operating-system error


def progress(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def require_root() -> None:
    """The local cluster's verbs create namespaces, a bridge and mounts: root only, said before anything."""
    if os.geteuid() != 0:
        raise PreconditionError(
            "the local cluster needs root (it creates network namespaces, a bridge and mounts)",
            "run it as root, e.g. `sudo pbs-harness cluster up`",
        )


def check_state_dir() -> None:
    """The state directory can hold the cluster's record, and any record there is readable."""
    from pbs_harness.localcluster import state

    where = state.state_dir()
    named = state.describe_dir()
    hint = f"give a directory root can write ({state.STATE_DIR_MEANS})"
    if where.exists() and not where.is_dir():
        raise PreconditionError(f"the state directory {named} is not a directory", hint)
    existing = next(p for p in (where, *where.parents) if p.exists())
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        raise PreconditionError(f"the state directory {named} cannot be created or written ({existing})", hint)
    state.load_checked()


def use_state_dir(args: argparse.Namespace) -> None:
    """--state-dir selects the cluster, for this process and the tools it starts (ansible-inventory)."""
    from pbs_harness.localcluster import state

    if getattr(args, "state_dir", None):
        os.environ[state.STATE_DIR_ENV] = os.path.abspath(args.state_dir)
        state.named_by_option(True)


def host_count(text: str) -> int:
    from pbs_harness.localcluster.spec import MAX_HOSTS

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of hosts (1 to {MAX_HOSTS})") from None
    if not 1 <= value <= MAX_HOSTS:
        raise argparse.ArgumentTypeError(f"{value} is out of range: use between 1 and {MAX_HOSTS} hosts")
    return value


def cluster_count(text: str) -> int | str:
    """--clusters: a number of clusters, or `auto` (chosen from the machine, or the clusters that are up)."""
    from pbs_harness.localcluster.spec import MAX_CLUSTERS

    if text == "auto":
        return text
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a number of clusters: give 1 to {MAX_CLUSTERS}, or auto"
        ) from None
    if not 1 <= value <= MAX_CLUSTERS:
        raise argparse.ArgumentTypeError(f"{value} is out of range: use between 1 and {MAX_CLUSTERS} clusters, or auto")
    return value


# --connect-timeout's range: below a tenth of a second no SSH handshake completes (1e-9 was taken and every
# host then "did not answer"); above an hour the socket and thread waits overflow (1e9 was an OverflowError
# traceback) and no one waits that long for a port to answer.
MIN_SECONDS, MAX_SECONDS = 0.1, 3600.0


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text} is not a positive number of seconds (e.g. 10)")
    if not MIN_SECONDS <= value <= MAX_SECONDS:
        raise argparse.ArgumentTypeError(
            f"{text} is out of range: give between {MIN_SECONDS:g} and {MAX_SECONDS:g} seconds (e.g. 10)"
        )
    return value


def directory(text: str) -> str:
    """--state-dir: a path. An empty one used to fall back to $PBS_HARNESS_STATE_DIR or the default cluster,
    which in a script (`--state-dir "$DIR"` with DIR unset) acts on a cluster nobody named."""
    if not text.strip():
        raise argparse.ArgumentTypeError(
            "an empty path names no state directory (is a variable in the command line unset?): give the "
            "directory, or leave --state-dir out for $PBS_HARNESS_STATE_DIR or the default"
        )
    return text


# The ranges RFC 1918 reserves for private networks: the local cluster's /24 lies in one of them
# (is_private alone also takes loopback, link-local and 0.0.0.0/8, which would route nowhere sane).
PRIVATE_RANGES = tuple(ipaddress.IPv4Network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"))


def subnet(text: str) -> ipaddress.IPv4Network | str:
    """A private IPv4 /24 (README: "the cluster uses a private /24"), or `auto` (the first free 10.X.0.0/24,
    chosen by `up`)."""
    if text == "auto":
        return text
    try:
        net = ipaddress.IPv4Network(text, strict=True)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an IPv4 network with its host bits zero, such as 10.71.0.0/24 ({exc})"
        ) from None
    if not any(net.subnet_of(r) for r in PRIVATE_RANGES):
        raise argparse.ArgumentTypeError(
            f"{text} is not a private range: use a /24 in 10/8, 172.16/12 or 192.168/16, such as 10.71.0.0/24"
        )
    if net.prefixlen != 24:
        raise argparse.ArgumentTypeError(
            f"{text} is a /{net.prefixlen}: the local cluster takes one private /24, such as "
            f"{ipaddress.IPv4Network((int(net.network_address), 24), strict=False)} (or auto)"
        )
    return net


def known_tags(root: Path) -> set[str]:
    """Tags used in the project's playbooks and roles (what --tags can select)."""
    found: set[str] = set()
    for path in [*root.glob("playbooks/*.yml"), *root.glob("roles/*/tasks/*.yml")]:
        for m in re.finditer(r"^\s*-?\s*tags:\s*\[([^\]]*)\]", path.read_text(), re.M):
            found.update(t.strip().strip("'\"") for t in m[1].split(","))
    return found - {"always", ""}


def tags(text: str) -> str:
    from pbs_harness.common import project

    try:
        known = known_tags(project.root())
    except HarnessError:
        return text  # no checkout to read them from: ansible-playbook judges
    if any(not t.strip() for t in text.split(",")):
        raise argparse.ArgumentTypeError(
            f"{text!r} holds an empty tag name (an empty value, or a comma with nothing beside it): "
            f"use one or more of {', '.join(sorted(known))}, separated by commas"
        )
    unknown = [t for t in text.split(",") if t.strip() not in known]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown tag(s) {', '.join(unknown)}: use {', '.join(sorted(known))}")
    return text


def read_only(folder: Path) -> bool:
    """`folder` (which exists) is on a file system mounted read-only."""
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def cannot_write(folder: Path) -> str | None:
    """Why no file can be made in `folder`, or None. A file is made and removed: os.access alone says yes to
    root on a read-only mount or in /proc or /sys, where the report's first write then failed with a raw
    [Errno ...] after the results were read (issue #34). A read-only mount is named as such: os.access says no
    there even to root, and "this user may not write it" sent root looking at permissions."""
    if read_only(folder):
        return "it is on a read-only file system"
    if not os.access(folder, os.W_OK | os.X_OK):
        return "this user may not write it"
    try:
        fd, probe = tempfile.mkstemp(prefix=".pbs-harness-write-check.", dir=folder)
    except OSError as exc:
        return f"a file cannot be made in it: {exc.strerror}"
    os.close(fd)
    os.unlink(probe)
    return None
