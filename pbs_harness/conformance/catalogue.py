"""Load and validate the conformance catalogue (catalogue.yaml next to this module).

The catalogue lists, per feature, every interface a design document promises, with a summary of the promise and
notes on where shipped OpenPBS differs. `load()` checks the file's shape and raises `ValueError` naming the file and
the offending entry, so a typo in the data fails loudly instead of silently dropping an interface.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

DEFAULT_PATH = Path(__file__).with_name("catalogue.yaml")

FEATURE_REQUIRED = ("title", "spec", "marker", "id_prefix")
FEATURE_OPTIONAL = ("drafts",)
INTERFACE_REQUIRED = ("id", "feature", "title", "source", "section", "summary")
INTERFACE_OPTIONAL = ("shipped_notes",)

# "<PREFIX>-<n>" for a numbered interface, "<PREFIX>-<word>" for another section (RJS-case, AS-misc).
_SUFFIX = r"(?:[1-9][0-9]*|[a-z][a-z0-9]*(?:-[a-z0-9]+)*)"
_PREFIX = re.compile(r"^[A-Z][A-Z0-9]*$")


@dataclass(frozen=True)
class Feature:
    key: str
    title: str
    spec: str
    marker: str
    id_prefix: str
    drafts: tuple[str, ...] = ()

    @property
    def sources(self) -> tuple[str, ...]:
        """Spec files an entry of this feature may cite: the spec, then its drafts."""
        return (self.spec, *self.drafts)


@dataclass(frozen=True)
class Interface:
    id: str
    feature: str
    title: str
    source: str
    section: str
    summary: str
    shipped_notes: str | None = None


@dataclass(frozen=True)
class Catalogue:
    path: Path
    features: dict[str, Feature] = field(default_factory=dict)
    interfaces: dict[str, Interface] = field(default_factory=dict)  # in file order

    def ids(self) -> list[str]:
        return list(self.interfaces)

    def by_feature(self, key: str) -> list[Interface]:
        if key not in self.features:
            raise KeyError(f"unknown feature {key!r}; known: {', '.join(self.features)}")
        return [i for i in self.interfaces.values() if i.feature == key]

    def __iter__(self) -> Iterator[Interface]:
        return iter(self.interfaces.values())

    def __len__(self) -> int:
        return len(self.interfaces)


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key repeated in one mapping (PyYAML would keep the last one silently)."""


def _construct_unique_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping", node.start_mark, f"found duplicate key {key!r}", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_unique_mapping)


def load(path: str | Path | None = None) -> Catalogue:
    """Read and validate a catalogue; the default is the one shipped with the package."""
    file = Path(path) if path is not None else DEFAULT_PATH
    try:
        data = yaml.load(file.read_text(encoding="utf-8"), Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise ValueError(f"{file.name}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise ValueError(f"{file.name}: top level must be a mapping with 'features' and 'interfaces'")
    _check_keys(file.name, "top level", data, required=("features", "interfaces"), optional=())
    features = _features(file.name, data["features"])
    return Catalogue(path=file, features=features, interfaces=_interfaces(file.name, data["interfaces"], features))


def _features(where: str, raw: Any) -> dict[str, Feature]:
    if not isinstance(raw, dict) or not raw:
        raise ValueError(f"{where}: 'features' must be a non-empty mapping of feature key to its description")
    features: dict[str, Feature] = {}
    prefixes: dict[str, str] = {}
    for key, body in raw.items():
        name = f"feature {key!r}"
        if not isinstance(body, dict):
            raise ValueError(f"{where}: {name}: must be a mapping with {', '.join(FEATURE_REQUIRED)}")
        _check_keys(where, name, body, FEATURE_REQUIRED, FEATURE_OPTIONAL)
        values = {k: _text(where, name, k, body[k]) for k in FEATURE_REQUIRED}
        drafts = body.get("drafts", [])
        if not isinstance(drafts, list) or not all(isinstance(d, str) and d.strip() for d in drafts):
            raise ValueError(f"{where}: {name}: 'drafts' must be a list of spec file names")
        prefix = values["id_prefix"]
        if not _PREFIX.match(prefix):
            raise ValueError(f"{where}: {name}: id_prefix {prefix!r} must be upper-case letters/digits, e.g. 'RJS'")
        if prefix in prefixes:
            raise ValueError(f"{where}: {name}: id_prefix {prefix!r} is already used by feature {prefixes[prefix]!r}")
        prefixes[prefix] = str(key)
        features[str(key)] = Feature(key=str(key), drafts=tuple(drafts), **values)
    return features


def _interfaces(where: str, raw: Any, features: dict[str, Feature]) -> dict[str, Interface]:
    if not isinstance(raw, list) or not raw:
        raise ValueError(f"{where}: 'interfaces' must be a non-empty list of entries")
    interfaces: dict[str, Interface] = {}
    for n, entry in enumerate(raw, start=1):
        ident = entry.get("id") if isinstance(entry, dict) else None
        name = f"entry {ident!r} (#{n})" if isinstance(ident, str) else f"entry #{n}"
        if not isinstance(entry, dict):
            raise ValueError(f"{where}: {name}: must be a mapping with {', '.join(INTERFACE_REQUIRED)}")
        _check_keys(where, name, entry, INTERFACE_REQUIRED, INTERFACE_OPTIONAL)
        values = {k: _text(where, name, k, entry[k]) for k in INTERFACE_REQUIRED}
        notes = entry.get("shipped_notes")
        if notes is not None:
            notes = _text(where, name, "shipped_notes", notes)
        ident = values["id"]
        if ident in interfaces:
            raise ValueError(
                f"{where}: {name}: duplicate id {ident!r} (first at entry #{_position(interfaces, ident)})"
            )
        feature = features.get(values["feature"])
        if feature is None:
            raise ValueError(f"{where}: {name}: unknown feature {values['feature']!r}; known: {', '.join(features)}")
        if not re.fullmatch(rf"{re.escape(feature.id_prefix)}-{_SUFFIX}", ident):
            raise ValueError(
                f"{where}: {name}: id must be '{feature.id_prefix}-<n>' or '{feature.id_prefix}-<word>'"
                f" for feature {feature.key!r}"
            )
        if values["source"] not in feature.sources:
            raise ValueError(
                f"{where}: {name}: source {values['source']!r} is not a spec of feature {feature.key!r}"
                f" ({', '.join(feature.sources)})"
            )
        interfaces[ident] = Interface(shipped_notes=notes, **values)
    return interfaces


def _check_keys(
    where: str, name: str, body: dict[Any, Any], required: tuple[str, ...], optional: tuple[str, ...]
) -> None:
    missing = [k for k in required if k not in body]
    if missing:
        raise ValueError(f"{where}: {name}: missing field(s) {', '.join(missing)}")
    unknown = [str(k) for k in body if k not in required and k not in optional]
    if unknown:
        allowed = ", ".join((*required, *optional))
        raise ValueError(f"{where}: {name}: unknown field(s) {', '.join(unknown)}; allowed: {allowed}")


def _text(where: str, name: str, key: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{where}: {name}: field {key!r} must be a non-empty string, got {value!r}")
    return value.strip()


def _position(interfaces: dict[str, Interface], ident: str) -> int:
    return list(interfaces).index(ident) + 1
