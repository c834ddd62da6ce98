"""A job's exec_vnode as chunks of vnode slices (Assignment), and a job checked against them: all its
assignment values after a release (assert_job_matches), or nothing changed (unchanged)."""

from __future__ import annotations

from dataclasses import dataclass

from pbs_harness.pbs.parsers import VnodeSlice, parse_exec_host, parse_exec_vnode, parse_select, size_kb


@dataclass(frozen=True)
class Assignment:
    """A job's exec_vnode as chunks of vnode slices, and what follows from it."""

    chunks: tuple[tuple[VnodeSlice, ...], ...]

    @classmethod
    def of(cls, exec_vnode: str) -> Assignment:
        return cls(tuple(tuple(chunk) for chunk in parse_exec_vnode(exec_vnode)))

    def without(self, vnodes: set[str]) -> Assignment:
        kept = (tuple(s for s in chunk if s.vnode not in vnodes) for chunk in self.chunks)
        return Assignment(tuple(chunk for chunk in kept if chunk))

    def only(self, vnodes: set[str]) -> Assignment:
        return self.without(self.vnodes() - vnodes)

    def hosts(self) -> list[str]:
        return list(dict.fromkeys(s.host for chunk in self.chunks for s in chunk))

    def vnodes(self) -> set[str]:
        return {s.vnode for chunk in self.chunks for s in chunk}

    def per_chunk(self) -> list[tuple[int, int]]:
        """(ncpus, mem kb) of each chunk."""
        return [
            (sum(int(s.resources.get("ncpus", 0)) for s in c), sum(size_kb(s.resources.get("mem", 0)) for s in c))
            for c in self.chunks
        ]


def chunk_totals(select: str) -> list[tuple[int, int]]:
    """(ncpus, mem kb) of each single chunk of a select/schedselect value."""
    out = []
    for chunk in parse_select(select):
        out += [(int(chunk.resources.get("ncpus", 0)), size_kb(chunk.resources.get("mem", 0)))] * chunk.count
    return out


def assert_job_matches(job: dict, expected: Assignment) -> None:
    """exec_vnode, exec_host, Resource_List and schedselect all describe `expected`."""
    __tracebackhide__ = True
    got = Assignment.of(job["exec_vnode"])
    assert got == expected, f"exec_vnode {job['exec_vnode']}: expected {expected}"
    hosts = [e.host for e in parse_exec_host(job["exec_host"])]
    assert hosts == expected.hosts(), f"exec_host {job['exec_host']}: expected the hosts {expected.hosts()}"
    rl = job["Resource_List"]
    ncpus = sum(c for c, _ in expected.per_chunk())
    assert int(rl["ncpus"]) == ncpus, f"Resource_List.ncpus {rl['ncpus']}: expected {ncpus}"
    mem_kb = sum(m for _, m in expected.per_chunk())
    if mem_kb:
        assert size_kb(rl["mem"]) == mem_kb, f"Resource_List.mem {rl['mem']}: expected {mem_kb}kb"
    else:  # no kept chunk asks for memory: OpenPBS drops Resource_List.mem altogether
        assert "mem" not in rl, f"Resource_List.mem {rl.get('mem')}: expected none (no kept chunk asks for memory)"
    nodect = len(expected.chunks)
    assert int(rl["nodect"]) == nodect, f"Resource_List.nodect {rl['nodect']}: expected {nodect}"
    per_chunk = expected.per_chunk()
    assert chunk_totals(job["schedselect"]) == per_chunk, f"schedselect {job['schedselect']}: expected {per_chunk}"
    assert chunk_totals(rl["select"]) == per_chunk, f"Resource_List.select {rl['select']}: expected {per_chunk}"


def unchanged(pbs, job_id: str, before: dict) -> None:
    __tracebackhide__ = True
    now = pbs.jobs.status(job_id)
    for key in ("exec_vnode", "exec_host", "schedselect", "Resource_List"):
        assert now[key] == before[key], f"{key} of {job_id} changed: before {before[key]}, now {now[key]}"
