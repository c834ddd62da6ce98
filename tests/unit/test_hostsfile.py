"""The marked /etc/hosts blocks: one per cluster, added, replaced, removed, nothing else touched.

Runs on temporary files only (never the machine's /etc/hosts)."""

from pathlib import Path

from pbs_harness.localcluster import hostsfile

ORIGINAL = "127.0.0.1 localhost\n10.0.0.5 other\n"
A = "/var/lib/pbs-harness/local"
B = "/var/lib/pbs-harness/vm"


def test_install_then_remove_restores_the_file(tmp_path: Path) -> None:
    path = tmp_path / "hosts"
    path.write_text(ORIGINAL)
    assert hostsfile.install(A, [("10.71.0.11", "pbsh01")], path)
    text = path.read_text()
    assert text.startswith(ORIGINAL)
    assert "10.71.0.11\tpbsh01" in text
    assert hostsfile.remove(A, path=path)
    assert path.read_text() == ORIGINAL


def test_install_is_idempotent_and_replaces_the_block(tmp_path: Path) -> None:
    path = tmp_path / "hosts"
    path.write_text(ORIGINAL)
    hostsfile.install(A, [("10.71.0.11", "pbsh01")], path)
    assert not hostsfile.install(A, [("10.71.0.11", "pbsh01")], path)
    hostsfile.install(A, [("10.71.0.12", "pbsh02")], path)
    text = path.read_text()
    assert "pbsh01" not in text
    assert text.count(hostsfile.end_line(A)) == 1


def test_two_clusters_keep_their_own_blocks(tmp_path: Path) -> None:
    path = tmp_path / "hosts"
    path.write_text(ORIGINAL)
    hostsfile.install(A, [("10.71.0.11", "pbsh01")], path)
    hostsfile.install(B, [("10.72.0.11", "vm01"), ("10.72.0.12", "vm02")], path)
    hostsfile.install(B, [("10.72.0.11", "vm01")], path)  # B changes: A's block stays as it was
    found = {b.cluster: b.entries for b in hostsfile.read_blocks(path)}
    assert found == {A: (("10.71.0.11", "pbsh01"),), B: (("10.72.0.11", "vm01"),)}
    hostsfile.remove(B, path=path)
    assert [b.cluster for b in hostsfile.read_blocks(path)] == [A]
    assert "pbsh01" in path.read_text()
    hostsfile.remove(A, path=path)
    assert path.read_text() == ORIGINAL


def test_legacy_block_is_a_clusters_own_only_when_it_names_only_its_hosts(tmp_path: Path) -> None:
    path = tmp_path / "hosts"
    legacy = f"{hostsfile.LEGACY_BEGIN} (managed)\n10.71.0.11\tpbsh01\n10.71.0.12\tpbsh02\n{hostsfile.LEGACY_END}\n"
    path.write_text(ORIGINAL + legacy)
    hostsfile.install(B, [("10.72.0.11", "vm01")], path)
    hostsfile.remove(B, ["vm01"], path)
    assert path.read_text() == ORIGINAL + legacy  # another cluster's legacy block is left alone
    hostsfile.install(A, [("10.71.0.11", "pbsh01"), ("10.71.0.12", "pbsh02")], path)
    assert [b.cluster for b in hostsfile.read_blocks(path)] == [A]  # replaced by the tagged block


def test_half_written_block_is_dropped_without_eating_the_next(tmp_path: Path) -> None:
    text = ORIGINAL + hostsfile.begin_line(A) + "\n10.71.0.11\tpbsh01\n"
    assert hostsfile.strip_block(text, A) == ORIGINAL
    other = hostsfile.with_block("", B, [("10.72.0.11", "vm01")])
    assert hostsfile.strip_block(text + other, A) == ORIGINAL + other


def test_file_without_trailing_newline(tmp_path: Path) -> None:
    path = tmp_path / "hosts"
    path.write_text("127.0.0.1 localhost")
    hostsfile.install(A, [("10.71.0.11", "pbsh01")], path)
    assert path.read_text().splitlines()[0] == "127.0.0.1 localhost"
    hostsfile.remove(A, path=path)
    assert path.read_text() == "127.0.0.1 localhost\n"


def test_concurrent_installs_keep_every_clusters_block(tmp_path) -> None:
    """Clusters of a fleet brought up at once: each read-modify-write holds the lock, so no block is
    lost (a temporary file stands in for /etc/hosts; real threads)."""
    from concurrent.futures import ThreadPoolExecutor

    path = tmp_path / "hosts"
    path.write_text("127.0.0.1\tlocalhost\n")
    clusters = [(f"/state/c{i}", [(f"10.9.{i}.11", f"c{i}n01")]) for i in range(12)]
    with ThreadPoolExecutor(max_workers=12) as pool:
        list(pool.map(lambda c: hostsfile.install(c[0], c[1], path), clusters))
    assert {b.cluster for b in hostsfile.read_blocks(path)} == {c for c, _ in clusters}
