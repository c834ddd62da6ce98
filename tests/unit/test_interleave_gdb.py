"""The interleaving fault (pbs_harness.suite.faults.interleave) with real gdb, on this machine, against two
toy processes that stand in for the primary mom and its job starter: a writer that sends a record as two
writes (an 8-byte size, then a name) and a reader that polls 1 s for the size, then reads the name with a
zero timeout (the shape of OpenPBS's failed-host pipe; no PBS code, no PBS process).

What is faked: the host (commands run here through a local runner instead of SSH) and PBS (the toys).
What this proves: the hold stops the writer at the return of its size write and only there, keeps it
until the reader has drained the pipe and is back in its 1 s poll, then lets it go and detaches; so the
toy reader, like OpenPBS's starter, finds no name with its zero-timeout read. And the heal leaves no
process stopped or traced. The acceptance tests (test_starter_races.py) do the same against real OpenPBS.
"""

from __future__ import annotations

import platform
import shutil
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from pbs_harness.suite.faults.interleave import READER_PAST_ZERO_TIMEOUT_READ, HoldNotEngaged, SyscallHold

pytestmark = [
    pytest.mark.skipif(shutil.which("gdb") is None, reason="needs gdb (scripts/ci/install-system-packages.sh)"),
    pytest.mark.skipif(platform.machine() != "x86_64", reason="the holds read x86_64 registers"),
]

TOYS = textwrap.dedent(
    """
    import os, select, struct, sys, time
    out, go = sys.argv[1], sys.argv[2]
    r, w = os.pipe()
    if os.fork() == 0:  # the reader: 1 s polls for a size, then the name with no wait; then it drains
        os.close(w)
        p = select.poll(); p.register(r, select.POLLIN)
        for _ in range(30):
            if p.poll(1000):
                size = struct.unpack("<Q", os.read(r, 8))[0]
                got = os.read(r, size) if p.poll(0) else None
                open(out, "w").write(f"size {size}, name {got!r}")
                while p.poll(1000):
                    if not os.read(r, 64):
                        break
                os._exit(0)
        os._exit(1)
    os.close(r)
    while not os.path.exists(go):
        time.sleep(0.01)
    os.write(w, struct.pack("<Q", 5))
    os.write(w, b"lv03\\0")
    os.wait()
    """
)


@dataclass
class Result:
    rc: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.rc == 0


class LocalRunner:
    """Runs a host's commands on this machine (the fake of the SSH transport)."""

    def run(self, cmd, *, stdin=None, timeout=120, user=None):
        done = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=timeout, check=False)
        return Result(done.returncode, done.stdout, done.stderr)

    def check(self, cmd, **kwargs):
        result = self.run(cmd, **kwargs)
        assert result.ok, result
        return result


@dataclass
class Here:
    hosts: dict


def test_the_writer_is_held_between_its_two_writes_until_the_reader_gave_up_on_the_name(tmp_path: Path) -> None:
    out, go = tmp_path / "reader.txt", tmp_path / "go"
    writer = subprocess.Popen([sys.executable, "-c", TOYS, str(out), str(go)])
    hold = SyscallHold(
        Here({"here": LocalRunner()}),  # type: ignore[arg-type]
        "here",
        "write",
        "$rax == 8 && $rdx == 8 && *(unsigned long *)$rsi == 5",
        READER_PAST_ZERO_TIMEOUT_READ,
        pid=writer.pid,
    )
    try:
        hold.start()
        go.touch()
        released = hold.released(timeout=30)
        call = released["reader_syscall"].split()  # poll(fds, 1, 1000)
        assert (call[0], call[3]) == ("7", "0x3e8")
        held = [e for e in hold.events() if e["event"] == "held"]
        assert [(e["call"], e["readers"] != []) for e in held] == [("write", True)]
    finally:
        hold.heal()
    assert writer.wait(timeout=30) == 0
    assert out.read_text() == "size 5, name None"  # the name came after the reader's zero-timeout read
    assert not Path(hold.directory).exists()


def test_a_hold_whose_call_never_comes_is_not_engaged_and_heals(tmp_path: Path) -> None:
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    hold = SyscallHold(
        Here({"here": LocalRunner()}),  # type: ignore[arg-type]
        "here",
        "write",
        "$rdx == 12345",
        READER_PAST_ZERO_TIMEOUT_READ,
        pid=sleeper.pid,
    )
    try:
        hold.start()
        with pytest.raises(HoldNotEngaged, match="did not release the process within 1"):
            hold.released(timeout=1)
    finally:
        hold.heal()
        time.sleep(0.1)
        state = Path(f"/proc/{sleeper.pid}/status").read_text()
        sleeper.kill()
        sleeper.wait()
    assert "State:\tS" in state, state  # sleeping again: neither stopped nor traced


def test_an_unknown_release_is_refused_before_anything_acts() -> None:
    with pytest.raises(ValueError, match="release must be one of"):
        SyscallHold(Here({}), "here", "write", "1", "whenever")  # type: ignore[arg-type]
