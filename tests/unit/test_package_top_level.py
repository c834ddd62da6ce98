"""pbs_harness/ keeps at most 12 entries at its top level (issue #31: folders that show the architecture;
docs/architecture.md, "Folders", names each). A new module goes into the folder that owns its concern."""

from pbs_harness.common import project

MAX_TOP_LEVEL = 12


def test_the_package_top_level_holds_at_most_12_entries() -> None:
    entries = sorted(p.name for p in (project.root() / "pbs_harness").iterdir() if p.name != "__pycache__")
    assert len(entries) <= MAX_TOP_LEVEL, entries
