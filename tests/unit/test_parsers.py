"""exec_host / exec_vnode / select parsing, on values of the shapes OpenPBS prints."""

from pbs_harness.pbs.parsers import (
    ExecHostEntry,
    SelectChunk,
    exec_vnode_hosts,
    format_select,
    parse_exec_host,
    parse_exec_vnode,
    parse_select,
    size_kb,
    vnodes_of,
)


def test_exec_host() -> None:
    assert parse_exec_host("hA/0*0+hB/0*3+hC/1") == [
        ExecHostEntry("hA", 0, 0),
        ExecHostEntry("hB", 0, 3),
        ExecHostEntry("hC", 1, 1),
    ]


def test_exec_vnode_with_super_chunks_and_bracketed_vnodes() -> None:
    value = (
        "(hA[0]:mem=1048576kb:ncpus=1+hA[1]:mem=1048576kb:ncpus=1+hA[2]:ncpus=1)"
        "+(hB:ncpus=3:mem=2097152kb)+(hC[0]:ncpus=1)"
    )
    chunks = parse_exec_vnode(value)
    assert len(chunks) == 3
    assert [s.vnode for s in chunks[0]] == ["hA[0]", "hA[1]", "hA[2]"]
    assert chunks[0][0].resources == {"mem": "1048576kb", "ncpus": "1"}
    assert chunks[1][0].resources == {"ncpus": "3", "mem": "2097152kb"}
    assert exec_vnode_hosts(value) == ["hA", "hB", "hC"]


def test_exec_vnode_without_parentheses() -> None:
    assert parse_exec_vnode("h1:ncpus=1")[0][0].vnode == "h1"


def test_vnodes_of_keeps_the_order_and_the_repeats() -> None:
    value = "(hB:ncpus=1+hA[1]:ncpus=1)+(hA[0]:ncpus=1)+(hB:ncpus=1)"
    assert vnodes_of(value) == ["hB", "hA[1]", "hA[0]", "hB"]
    assert vnodes_of("(hA:ncpus=1)") == ["hA"]
    assert vnodes_of("") == []


def test_vnodes_of_one_host() -> None:
    value = "(hA[2]:ncpus=1+hA[0]:ncpus=1+hB:ncpus=2)+(hA:ncpus=1)+(hC[0]:ncpus=1)"
    assert vnodes_of(value, "hA") == ["hA[2]", "hA[0]", "hA"]
    assert vnodes_of(value, host="hB") == ["hB"]
    assert vnodes_of(value, "hA[0]") == []  # a host name, not a vnode name
    assert vnodes_of(value, "hD") == []


def test_select_round_trip() -> None:
    chunks = parse_select("1:ncpus=3:mem=2gb+2:ncpus=3:mem=2gb+ncpus=2")
    assert chunks == [
        SelectChunk(1, {"ncpus": "3", "mem": "2gb"}),
        SelectChunk(2, {"ncpus": "3", "mem": "2gb"}),
        SelectChunk(1, {"ncpus": "2"}),
    ]
    assert format_select(chunks) == "1:ncpus=3:mem=2gb+2:ncpus=3:mem=2gb+1:ncpus=2"


def test_sizes_in_kb() -> None:
    assert size_kb("2gb") == 2097152
    assert size_kb("1048576kb") == 1048576
    assert size_kb("512mb") == 524288
    assert size_kb("2048") == 2
    assert size_kb("24684092kb") == 24684092
