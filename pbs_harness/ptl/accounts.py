"""PTL's test accounts, created for a run and removed after it.

PTL refuses to start unless every account of its `PBS_ALL_USERS` exists (pbs_testsuite.py
`check_users_exist`). Upstream's CI makes them with the `groupadd`/`useradd` lines of
`ci/etc/install-system-packages` (pbsuser 4359, pbsuser1 4361, ..., groups tstgrp00..07, pbs, agt):
the list is read from that file of the same OpenPBS source, not copied here.

An account or group that already exists is used as it is and never changed or removed: the harness's
own accounts share names with PTL's (pbsuser1, pbsuser2, pbsoper, pbsmgr, with the harness's UIDs),
and PTL reads a user's UID from the passwd database, so it works with them. Only what the run created
is removed afterwards (users with their home directory, then groups); the record of it is kept in a
file, so that a run that was killed is cleaned up by the next one.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from pbs_harness.remote.transport import CommandResult

ACCOUNTS_FILE = "ci/etc/install-system-packages"  # in the OpenPBS source
_LINE = re.compile(r"^\s*(groupadd|useradd)\s+(.*?)\s*$")


@dataclass(frozen=True)
class Group:
    name: str
    gid: int


@dataclass(frozen=True)
class User:
    name: str
    uid: int
    group: str  # primary
    groups: tuple[str, ...] = ()  # supplementary


@dataclass(frozen=True)
class Accounts:
    groups: tuple[Group, ...]
    users: tuple[User, ...]


class AccountsError(ValueError):
    """The accounts file has no account lines, or a line this reader does not understand."""


def parse(text: str) -> Accounts:
    """The groupadd/useradd lines of upstream's install-system-packages."""
    groups: list[Group] = []
    users: list[User] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        m = _LINE.match(line)
        if not m:
            continue
        words = shlex.split(m[2])
        opts: dict[str, str] = {}
        rest: list[str] = []
        i = 0
        while i < len(words):
            if words[i] in ("-g", "-u", "-G", "-s"):
                opts[words[i]] = words[i + 1]
                i += 2
            elif words[i] == "-m":
                i += 1
            else:
                rest.append(words[i])
                i += 1
        if len(rest) != 1:
            raise AccountsError(f"line {lineno}: expected one account name: {line.strip()}")
        try:
            if m[1] == "groupadd":
                groups.append(Group(rest[0], int(opts["-g"])))
            else:
                extra = tuple(g for g in opts.get("-G", "").split(",") if g and g != opts["-g"])
                users.append(User(rest[0], int(opts["-u"]), opts["-g"], extra))
        except (KeyError, ValueError) as exc:
            raise AccountsError(f"line {lineno}: no numeric id or group: {line.strip()}") from exc
    if not users:
        raise AccountsError("no useradd lines")
    return Accounts(tuple(groups), tuple(users))


@dataclass
class Created:
    """What a run created (and so removes), saved as JSON next to the run."""

    groups: list[str] = field(default_factory=list)
    users: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # existing accounts used as they are

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self), indent=2) + "\n")

    @classmethod
    def load(cls, path: Path) -> Created | None:
        if not path.exists():
            return None
        data = json.loads(path.read_text())
        return cls(list(data.get("groups", [])), list(data.get("users", [])), list(data.get("kept", [])))


Run = Callable[[str], CommandResult]  # runs a shell command as root on a cluster host


def _exists(run: Run, database: str, key: str) -> bool:
    return run(f"getent {database} {shlex.quote(key)} >/dev/null").ok


def _id_taken(run: Run, database: str, number: int) -> str | None:
    res = run(f"getent {database} {number}")
    return res.stdout.split(":", 1)[0] if res.ok else None


def create(run: Run, accounts: Accounts, record: Path) -> Created:
    """Create the missing groups and users (never touching existing ones), recording each as made.

    `run` acts on one host; call it for every host whose /etc is its own (hosts that share /etc see
    the accounts made through the first one and create nothing)."""
    done = Created.load(record) or Created()
    for g in accounts.groups:
        if _exists(run, "group", g.name):
            continue
        holder = _id_taken(run, "group", g.gid)
        if holder:
            raise AccountsError(f"group {g.name} needs GID {g.gid}, which {holder} has")
        res = run(f"groupadd -g {g.gid} {shlex.quote(g.name)}")
        if not res.ok:
            raise AccountsError(f"groupadd {g.name} failed: {res.stderr.strip()}")
        done.groups.append(g.name)
        done.save(record)
    for u in accounts.users:
        if _exists(run, "passwd", u.name):
            if u.name not in done.users and u.name not in done.kept:
                done.kept.append(u.name)
            continue
        holder = _id_taken(run, "passwd", u.uid)
        if holder:
            raise AccountsError(f"user {u.name} needs UID {u.uid}, which {holder} has")
        groups = ",".join((u.group, *u.groups))
        res = run(f"useradd -m -s /bin/bash -u {u.uid} -g {u.group} -G {groups} {shlex.quote(u.name)}")
        if not res.ok:
            raise AccountsError(f"useradd {u.name} failed: {res.stderr.strip()}")
        done.users.append(u.name)
        done.save(record)
    # PTL's jobs run as these users and read each other's files under /home (upstream: chmod g+x,o+x /home/*).
    for name in done.users:
        run(f"chmod g+x,o+x ~{name}")
    done.save(record)
    return done


def remove(run: Run, record: Path) -> Created | None:
    """Remove what `create` recorded (users with their home, then groups). The record is deleted once
    everything in it is gone; what could not be removed (a user with processes left) stays in it for
    the next run, and is returned in `users`/`groups` of the result."""
    done = Created.load(record)
    if done is None:
        return None
    left = Created(kept=done.kept)
    for name in reversed(done.users):
        gone = not _exists(run, "passwd", name) or run(f"userdel -r {shlex.quote(name)}").ok
        if not gone and _exists(run, "passwd", name):
            left.users.insert(0, name)
    for name in reversed(done.groups):
        if _exists(run, "group", name) and not run(f"groupdel {shlex.quote(name)}").ok:
            left.groups.insert(0, name)
    if left.users or left.groups:
        left.save(record)
    else:
        record.unlink()
    return left
