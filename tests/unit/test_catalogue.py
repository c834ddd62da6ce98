"""Conformance catalogue: the shipped data loads and covers every spec interface; bad catalogues are refused."""

from collections import Counter
from pathlib import Path

import pytest
import yaml

from pbs_harness.conformance import catalogue
from pbs_harness.suite.markers import MARKERS

FEATURES = {"reliable_startup", "ramp_down", "admin_suspend", "resv_reconfirm"}


def test_shipped_catalogue_loads_with_the_four_features() -> None:
    cat = catalogue.load()
    assert set(cat.features) == FEATURES
    assert {f.marker for f in cat.features.values()} == FEATURES
    assert all(f.marker in MARKERS for f in cat.features.values())
    assert cat.ids() == list(cat.interfaces)
    assert len(cat) == len(cat.ids())


def test_every_feature_has_entries() -> None:
    cat = catalogue.load()
    for key in cat.features:
        assert cat.by_feature(key), key
    assert sum(len(cat.by_feature(k)) for k in cat.features) == len(cat)


def test_ids_in_the_file_are_unique() -> None:
    raw = yaml.safe_load(catalogue.DEFAULT_PATH.read_text(encoding="utf-8"))
    counts = Counter(entry["id"] for entry in raw["interfaces"])
    assert [i for i, n in counts.items() if n > 1] == []


def test_numbered_spec_interfaces_and_sections_are_present() -> None:
    ids = set(catalogue.load().ids())
    expected = {f"RJS-{n}" for n in range(1, 10)} | {f"RD-{n}" for n in range(1, 8)} | {f"AS-{n}" for n in range(1, 5)}
    expected |= {"RJS-case", "RJS-draft", "AS-interactions", "AS-misc", "RV-1", "RV-5"}
    assert expected <= ids


def test_entries_are_consistent_with_their_feature() -> None:
    cat = catalogue.load()
    for entry in cat:
        feature = cat.features[entry.feature]
        assert entry.id.startswith(feature.id_prefix + "-"), entry.id
        assert entry.source in feature.sources, entry.id
    assert cat.interfaces["RJS-draft"].source == "reliable-job-startup-early-draft.txt"
    assert "select_requested" in (cat.interfaces["RJS-draft"].shipped_notes or "")
    assert "primary execution host" in (cat.interfaces["RD-1"].shipped_notes or "")


def test_unknown_feature_lookup_names_the_known_ones() -> None:
    with pytest.raises(KeyError, match="ramp_down"):
        catalogue.load().by_feature("rampdown")


HEADER = """\
features:
  ramp_down:
    title: Node ramp down
    spec: node-ramp-down.txt
    marker: ramp_down
    id_prefix: RD
interfaces:
"""
GOOD = """\
  - id: RD-1
    feature: ramp_down
    title: pbs_release_nodes
    source: node-ramp-down.txt
    section: Interface 1
    summary: Releases sister nodes.
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "catalogue.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_small_good_catalogue_loads(tmp_path: Path) -> None:
    cat = catalogue.load(_write(tmp_path, HEADER + GOOD))
    assert cat.ids() == ["RD-1"]
    entry = cat.interfaces["RD-1"]
    assert entry.shipped_notes is None
    assert entry.section == "Interface 1"
    assert cat.features["ramp_down"].sources == ("node-ramp-down.txt",)


@pytest.mark.parametrize(
    ("entries", "words"),
    [
        (GOOD + GOOD, r"entry 'RD-1' \(#2\): duplicate id 'RD-1'"),
        (GOOD.replace("feature: ramp_down", "feature: rampdown"), r"'RD-1' \(#1\): unknown feature 'rampdown'"),
        (GOOD.replace("    summary: Releases sister nodes.\n", ""), r"'RD-1' \(#1\): missing field\(s\) summary"),
        (GOOD.replace("id: RD-1", "id: RJS-1"), r"'RJS-1' \(#1\): id must be 'RD-<n>'"),
        (GOOD.replace("id: RD-1", "id: RD-01"), r"'RD-01' \(#1\): id must be"),
        (GOOD.replace("source: node-ramp-down.txt", "source: other.txt"), "source 'other.txt' is not a spec"),
        (GOOD + "    shiped_notes: typo\n", r"unknown field\(s\) shiped_notes"),
        (GOOD.replace("title: pbs_release_nodes", "title: ''"), "field 'title' must be a non-empty string"),
        (GOOD + "    summary: again\n", "duplicate key 'summary'"),
        (GOOD.replace("  - id: RD-1\n    feature", "  - feature"), r"entry #1: missing field\(s\) id"),
        ("  - just a string\n", "entry #1: must be a mapping"),
        ("  []\n", "'interfaces' must be a non-empty list"),
    ],
)
def test_bad_catalogue_is_refused_naming_the_entry(tmp_path: Path, entries: str, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        catalogue.load(_write(tmp_path, HEADER + entries))


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("features: [\n", "not valid YAML"),
        ("- a\n", "top level must be a mapping"),
        ("interfaces: []\n", r"top level: missing field\(s\) features"),
        (HEADER.replace("    marker: ramp_down\n", "") + GOOD, r"feature 'ramp_down': missing field\(s\) marker"),
        (HEADER.replace("id_prefix: RD", "id_prefix: rd") + GOOD, "id_prefix 'rd' must be upper-case"),
        (HEADER + GOOD + "features_extra: 1\n", r"top level: unknown field\(s\) features_extra"),
    ],
)
def test_bad_top_level_or_feature_is_refused(tmp_path: Path, text: str, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        catalogue.load(_write(tmp_path, text))


def test_two_features_may_not_share_an_id_prefix(tmp_path: Path) -> None:
    text = HEADER.replace(
        "interfaces:\n",
        "  other:\n    title: x\n    spec: x.txt\n    marker: x\n    id_prefix: RD\ninterfaces:\n",
    )
    with pytest.raises(ValueError, match="feature 'other': id_prefix 'RD' is already used by feature 'ramp_down'"):
        catalogue.load(_write(tmp_path, text + GOOD))
