"""The marked /etc/hosts block: added, replaced, removed, and nothing else touched."""

from pathlib import Path

from pbs_harness.localcluster import hostsfile

ORIGINAL = "127.0.0.1 localhost\n10.0.0.5 other\n"


def test_install_then_remove_restores_the_file(tmp_path: Path) -> None:
    path = tmp_path / "hosts"
    path.write_text(ORIGINAL)
    assert hostsfile.install([("10.71.0.11", "pbsh01")], path)
    text = path.read_text()
    assert text.startswith(ORIGINAL)
    assert "10.71.0.11\tpbsh01" in text
    assert hostsfile.remove(path)
    assert path.read_text() == ORIGINAL


def test_install_is_idempotent_and_replaces_the_block(tmp_path: Path) -> None:
    path = tmp_path / "hosts"
    path.write_text(ORIGINAL)
    hostsfile.install([("10.71.0.11", "pbsh01")], path)
    assert not hostsfile.install([("10.71.0.11", "pbsh01")], path)
    hostsfile.install([("10.71.0.12", "pbsh02")], path)
    text = path.read_text()
    assert "pbsh01" not in text
    assert text.count(hostsfile.END) == 1


def test_half_written_block_is_dropped(tmp_path: Path) -> None:
    text = ORIGINAL + hostsfile.BEGIN + "\n10.71.0.11\tpbsh01\n"
    assert hostsfile.strip_block(text) == ORIGINAL


def test_file_without_trailing_newline(tmp_path: Path) -> None:
    path = tmp_path / "hosts"
    path.write_text("127.0.0.1 localhost")
    hostsfile.install([("10.71.0.11", "pbsh01")], path)
    assert path.read_text().splitlines()[0] == "127.0.0.1 localhost"
    hostsfile.remove(path)
    assert path.read_text() == "127.0.0.1 localhost\n"
