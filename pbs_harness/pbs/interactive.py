"""Interactive jobs (`qsub -I`) driven with pexpect over an SSH session with a terminal."""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

import pexpect

from pbs_harness.remote.cluster import Cluster
from pbs_harness.remote.transport import SSHTarget, wire_command

PROMPT = "PBSH-PROMPT> "
READY_RE = re.compile(r"qsub: job (\S+) ready")
# Terminal control sequences (e.g. bash's bracketed-paste toggles) are not output.
ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def ssh_argv(target: SSHTarget) -> list[str]:
    """OpenSSH's command line for the target: the inventory's own ssh arguments first (a ProxyJump, -F ...),
    as Ansible passes them, and the destination as the inventory names it (~/.ssh/config's Host blocks
    match it)."""
    argv = ["ssh", "-tt", "-o", "BatchMode=yes", *target.ssh_args, "-p", str(target.port)]
    if target.key_file:
        argv += ["-i", target.key_file, "-o", "IdentitiesOnly=yes"]
    if target.known_hosts:
        argv += ["-o", f"UserKnownHostsFile={target.known_hosts}"]
    argv += ["-o", f"StrictHostKeyChecking={'yes' if target.strict_host_keys else 'no'}"]
    return [*argv, f"{target.user}@{target.address}"]


class InteractiveJob:
    """`with InteractiveJob(cluster, "pbsuser1", ["-l", "select=2"]) as job: job.run("hostname")`."""

    def __init__(self, cluster: Cluster, user: str, qsub_args: Sequence[str], timeout: float = 60) -> None:
        self.cluster = cluster
        self.user = user
        self.qsub_args = list(qsub_args)
        self.timeout = timeout
        self.job_id = ""
        self.child: pexpect.spawn | None = None

    def __enter__(self) -> InteractiveJob:
        qsub = shlex.join([self.cluster.bin("qsub"), "-I", *self.qsub_args])
        target = self.cluster.inventory.clients[0].ssh_target()
        # runuser as root, through `sudo -n` when the login account is not root (as the transport does).
        remote = wire_command(target, qsub, user=self.user)
        self.child = pexpect.spawn(ssh_argv(target)[0], [*ssh_argv(target)[1:], remote], encoding="utf-8")
        self.child.expect(READY_RE, timeout=self.timeout)
        self.job_id = self.child.match.group(1)
        # A prompt of our own makes every command's output easy to cut out. It is set through a
        # split literal so that no echo of the command line (the terminal's, then readline's when
        # the line was typed before the shell was ready: one or two echoes) contains the prompt:
        # exactly one PROMPT follows each command.
        half = len(PROMPT) // 2
        self.child.sendline(f"export PS1='{PROMPT[:half]}''{PROMPT[half:]}'")
        self.child.expect_exact(PROMPT, timeout=self.timeout)
        return self

    def run(self, command: str, timeout: float = 30) -> str:
        """Run a command in the interactive job's shell and return its output."""
        assert self.child is not None
        self.child.sendline(command)
        self.child.expect_exact(PROMPT, timeout=timeout)
        lines = ANSI_RE.sub("", self.child.before).replace("\r\n", "\n").split("\n")
        # Drop the echoed command line (one echo or two, see __enter__).
        while lines and lines[0].strip() in ("", command.strip()):
            lines.pop(0)
        return "\n".join(lines).strip()

    def __exit__(self, *exc: object) -> None:
        if self.child is None:
            return
        try:
            self.child.sendline("exit")
            self.child.expect(pexpect.EOF, timeout=self.timeout)
        finally:
            self.child.close(force=True)
