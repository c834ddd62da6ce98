"""The unprivileged login account of a cluster (`--login-user`): hosts reachable only as it, with sudo.

/etc and /home are shared between the namespaced hosts and this machine, so the account lives in
this machine's /etc/passwd: created by `up` with a fixed UID and no usable password, tagged in its
GECOS field, and removed by `down` only when that tag says `up` created it and no other cluster of
this machine logs in with it. Its sudo rule exists only inside the hosts: each host mounts its own
sudoers.d (hosts/<host>/sudoers.d) over /etc/sudoers.d, so this machine never grants it anything.
"""

from __future__ import annotations

import grp
import os
import pwd
import stat
from pathlib import Path

from pbs_harness.common import shell
from pbs_harness.common.errors import PreconditionError
from pbs_harness.localcluster import state

# UID of a created login account: the first free one from here (the test accounts use 20000-20004),
# so clusters with different login users can coexist.
LOGIN_UID = 20100
LOGIN_UID_LAST = 20199
# GECOS of an account `up` created; `down` removes only accounts carrying it.
MARKER = "pbs-harness login user"
SUDOERS_FILE = "pbs-harness-login"


def account(user: str) -> pwd.struct_passwd | None:
    try:
        return pwd.getpwnam(user)
    except KeyError:
        return None


def created_by_harness(user: str) -> bool:
    entry = account(user)
    return entry is not None and entry.pw_gecos == MARKER


def _free_uid() -> int:
    def free(n: int) -> bool:
        try:
            pwd.getpwuid(n)
        except KeyError:
            try:
                grp.getgrgid(n)
            except KeyError:
                return True
        return False

    found = next((n for n in range(LOGIN_UID, LOGIN_UID_LAST + 1) if free(n)), None)
    if found is None:
        raise PreconditionError(
            f"no free UID/GID between {LOGIN_UID} and {LOGIN_UID_LAST} for a login account",
            "remove unused accounts there, or give --login-user an account that already exists",
        )
    return found


def ensure_account(user: str) -> bool:
    """Create the account unless it exists; True when created now."""
    if account(user) is not None:
        return False
    uid = _free_uid()
    res = shell.run(
        ["useradd", "--uid", str(uid), "--user-group", "--create-home", "--shell", "/bin/bash",
         "--comment", MARKER, user]
    )  # fmt: skip
    if not res.ok:
        raise PreconditionError(
            f"cannot create the login account {user} (UID {uid}): {res.stderr.strip()}",
            f"free the group name {user}, or pick another --login-user",
        )
    # No usable password, but not the '!' lock: sshd without PAM refuses '!'-locked accounts
    # even for key logins, while '*' only rules out password logins.
    shell.check(["usermod", "--password", "*", user])
    return True


def remove_account(user: str, still_used: bool) -> bool:
    """Remove the account if `up` created it and no other cluster uses it; True when removed."""
    if still_used or not created_by_harness(user):
        return False
    shell.check(["userdel", "--remove", user])
    return True


def sudoers_dir(host_name: str, root: Path | None = None) -> Path:
    return state.host_dir(host_name, root) / "sudoers.d"


def write_sudoers(host_name: str, user: str, root: Path | None = None) -> None:
    """The host's private /etc/sudoers.d: passwordless sudo for the login user (sudo wants root:root, 0440)."""
    d = sudoers_dir(host_name, root)
    d.mkdir(mode=0o750, parents=True, exist_ok=True)
    d.chmod(0o750)
    rule = d / SUDOERS_FILE
    rule.write_text(
        f"# written by pbs-harness: the login user, inside this host only\n{user} ALL=(ALL:ALL) NOPASSWD: ALL\n"
    )
    rule.chmod(0o440)


def check_key_path(path: Path, user: str) -> None:
    """sshd reads authorized_keys as the user, with StrictModes: the file and every directory
    above it must be owned by root or the user and not group/world-writable, and the user must be
    able to reach it."""
    entry = account(user)
    uid = entry.pw_uid if entry else -1
    for part in [path, *path.parents]:
        st = part.stat()
        if st.st_uid not in (0, uid) or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            raise PreconditionError(
                f"sshd would refuse the login user's key: {part} is not owned by root or {user}, or is "
                "group/world-writable (sshd StrictModes)",
                "put the state directory under a root-owned path such as /var/lib/pbs-harness/NAME "
                f"({state.STATE_DIR_MEANS})",
            )
        if part != path and not st.st_mode & stat.S_IXOTH and st.st_uid != uid:
            raise PreconditionError(
                f"the login user {user} cannot reach its authorized_keys: {part} is not searchable by others",
                f"chmod o+x {part}, or choose a state directory under /var/lib/pbs-harness",
            )


def open_key_path(root: Path | None = None) -> None:
    """Let the login user reach (not list) the state dir and ssh/, and read authorized_keys."""
    base = state.state_dir(root)
    for d in (base, state.ssh_dir(root)):
        os.chmod(d, 0o711)  # noqa: S103 - search only (no listing): sshd reads the key file as the user
    os.chmod(state.ssh_dir(root) / "authorized_keys", 0o644)
