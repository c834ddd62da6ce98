"""Where the OpenPBS under test came from: its pbs_version plus its source, read on the server host.

`pbs_version` alone cannot tell builds apart (master and the v23.06.06 tag both say 23.06.06), so
the conformance report names the source too, from the first of these the host has:

  PREFIX/.pbs-harness-source.json   written by the packages build next to its packages and copied
                                    to each host by the deploy (format: SOURCE_JSON_FORMAT below)
  PREFIX/.pbs-harness-source        written by scripts/install-openpbs-from-source.sh: a first line
                                    `archive:<sha256>` or `tree:<sha256>`, then `name:<archive file>`
                                    and `commit:<upstream commit>` lines when known
  dpkg-query / rpm                  the installed openpbs* packages and their versions
  nothing                           "installed in PREFIX (unknown source)"

`found_in` says which one answered. Everything here but `collect` is pure, for unit tests.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from pbs_harness.deploy.openpbs_source import SOURCE_FORMAT

STAMP = ".pbs-harness-source"  # scripts/install-openpbs-from-source.sh
SOURCE_JSON = ".pbs-harness-source.json"  # the packages build's openpbs-source.json, copied by the deploy
SOURCE_JSON_FORMAT = SOURCE_FORMAT  # written by pbs_harness.deploy.openpbs_source.Provenance
# openpbs-source.json, written next to the packages (all but `format` and `packages` may be empty):
#   {"format": "pbs-harness/openpbs-source/1",
#    "archive": "openpbs-v23.06.06.tar.gz",            the source archive's file name
#    "sha256": "934b2cd0...",                           of that archive
#    "commit": "be361a18ef37652bece0811ec709f0fe4fc52710",   upstream commit (git get-tar-commit-id)
#    "build_image": "debian-11-builder-...",            the image layer the packages were built in
#    "packages": ["openpbs-server_23.06.06-1_amd64.deb", ...]}   the package files built
# (pbs_harness.deploy.openpbs_source.Provenance writes it, with more: form, version, package_kinds.)

UNKNOWN = "unknown"
_SECTIONS = ("json", "stamp", "dpkg", "rpm")


@dataclass(frozen=True)
class Package:
    name: str
    version: str


@dataclass(frozen=True)
class Provenance:
    """One OpenPBS build as the cluster tells it; JSON-able with dataclasses.asdict."""

    pbs_version: str
    kind: str  # "archive", "tree" (a source folder), "packages" or "unknown"
    found_in: str  # the file or command that said so ("" when nothing did)
    prefix: str = ""
    archive: str = ""  # the source archive's file name
    sha256: str = ""  # of the archive, or of the tree's files
    commit: str = ""  # upstream commit
    build_image: str = ""  # where the packages were built
    package_files: list[str] = field(default_factory=list)  # as the packages build named them
    packages: list[Package] = field(default_factory=list)  # installed on the server host

    def describe(self) -> str:
        """One line for a report header."""
        if self.kind == "unknown":
            return f"installed in {self.prefix or '?'} (unknown source)"
        parts = []
        if self.kind == "tree":
            parts.append(f"a source tree (files sha256 {self.sha256[:12]})")
        elif self.archive or self.sha256:
            parts.append(
                f"archive {self.archive or '(name not recorded)'}"
                + (f" (sha256 {self.sha256[:12]})" if self.sha256 else "")
            )
        if self.commit:
            parts.append(f"upstream commit {self.commit}")
        if self.packages:
            parts.append("packages " + ", ".join(f"{p.name} {p.version}" for p in self.packages))
        elif self.package_files:
            parts.append("package files " + ", ".join(self.package_files))
        if self.build_image:
            parts.append(f"built on {self.build_image}")
        how = "packages" if self.kind == "packages" else "built from source"
        return f"{how}: {'; '.join(parts)} [{self.found_in}]"

    def identity(self) -> str:
        """What tells two builds apart: the commit, else the source's sha256, else the package versions."""
        if self.commit:
            return f"commit {self.commit}"
        if self.sha256:
            return f"sha256 {self.sha256}"
        if self.packages:
            return "packages " + ",".join(f"{p.name}={p.version}" for p in self.packages)
        return ""

    def short(self) -> str:
        """A column head's words: the version and a short source."""
        if self.commit:
            return f"{self.pbs_version} @ {self.commit[:10]}"
        if self.sha256:
            return f"{self.pbs_version} ({self.kind} {self.sha256[:10]})"
        if self.packages:
            versions = sorted({p.version for p in self.packages})
            return f"{self.pbs_version} (packages {', '.join(versions)})"
        return f"{self.pbs_version} (unknown source)"


def script(prefix: str) -> str:
    """One shell command printing every record of the host, each after a `--- <section>` line."""
    return (
        # `echo` after each file: a record without a final newline must not run into the next header.
        f"echo '--- json'; cat {prefix}/{SOURCE_JSON} 2>/dev/null; echo; "
        f"echo '--- stamp'; cat {prefix}/{STAMP} 2>/dev/null; echo; "
        "echo '--- dpkg'; dpkg-query -W -f '${Package}\\t${Version}\\t${db:Status-Status}\\n' 'openpbs*' 2>/dev/null; "
        "echo '--- rpm'; rpm -qa --qf '%{NAME}\\t%{VERSION}-%{RELEASE}\\tinstalled\\n' 'openpbs*' 2>/dev/null; "
        "true"
    )


def sections(output: str) -> dict[str, str]:
    """The output of `script` split by section."""
    found: dict[str, list[str]] = {}
    current = None
    for line in output.splitlines():
        if line.startswith("--- ") and line[4:] in _SECTIONS:
            current = line[4:]
            found[current] = []
        elif current is not None:
            found[current].append(line)
    return {name: "\n".join(lines).strip() for name, lines in found.items()}


def parse_stamp(text: str) -> dict[str, str]:
    """`archive:<sha256>` or `tree:<sha256>`, then optional `name:` and `commit:` lines."""
    lines = [line.strip() for line in text.splitlines() if ":" in line]
    if not lines:
        return {}
    kind, _, digest = lines[0].partition(":")
    if kind not in ("archive", "tree"):
        return {}
    out = {"kind": kind, "sha256": digest}
    for line in lines[1:]:
        key, _, value = line.partition(":")
        if key in ("name", "commit") and value:
            out["archive" if key == "name" else key] = value
    return out


def parse_source_json(text: str) -> dict[str, Any]:
    """openpbs-source.json, or {} when it is not one (its fields kept only when they are strings)."""
    try:
        data = json.loads(text)
    except ValueError:
        return {}
    if not isinstance(data, dict) or data.get("format") != SOURCE_JSON_FORMAT:
        return {}
    out: dict[str, Any] = {
        k: data[k] for k in ("archive", "sha256", "commit", "build_image") if isinstance(data.get(k), str)
    }
    files = data.get("packages")
    out["package_files"] = [f for f in files if isinstance(f, str)] if isinstance(files, list) else []
    return out


def parse_packages(text: str) -> list[Package]:
    """Installed packages from `name<TAB>version<TAB>status` lines (dpkg lists removed ones too)."""
    found = []
    for line in text.splitlines():
        name, version, status = ([*line.split("\t"), "", ""])[:3]
        if name and version and status == "installed":
            found.append(Package(name, version))
    return sorted(found, key=lambda p: p.name)


def build(pbs_version: str, prefix: str, output: str) -> Provenance:
    """The provenance from the output of `script` run on the server host."""
    parts = sections(output)
    packages = parse_packages(parts.get("dpkg", "")) or parse_packages(parts.get("rpm", ""))
    manager = "dpkg-query" if parse_packages(parts.get("dpkg", "")) else "rpm"
    base = {"pbs_version": pbs_version, "prefix": prefix, "packages": packages}
    recorded = parse_source_json(parts.get("json", ""))
    if recorded:
        kind = "packages" if packages or recorded["package_files"] else "archive"
        return Provenance(kind=kind, found_in=f"{prefix}/{SOURCE_JSON}", **base, **recorded)
    stamp = parse_stamp(parts.get("stamp", ""))
    if stamp:
        return Provenance(found_in=f"{prefix}/{STAMP}", **base, **stamp)
    if packages:
        return Provenance(kind="packages", found_in=manager, **base)
    return Provenance(kind="unknown", found_in="", **base)


def collect(pbs_version: str, prefix: str, run: Callable[[str], str]) -> Provenance:
    """Read on the server host: `run` runs a shell command there and returns its stdout."""
    return build(pbs_version, prefix, run(script(prefix)))


def from_dict(data: Any) -> Provenance | None:
    """A provenance read back from a results or report file (None when there is none)."""
    if not isinstance(data, dict) or not isinstance(data.get("kind"), str):
        return None
    fields = {
        k: str(data.get(k) or "")
        for k in ("pbs_version", "kind", "found_in", "prefix", "archive", "sha256", "commit", "build_image")
    }
    files = data.get("package_files") if isinstance(data.get("package_files"), list) else []
    packages = [
        Package(str(p.get("name", "")), str(p.get("version", "")))
        for p in (data.get("packages") if isinstance(data.get("packages"), list) else [])
        if isinstance(p, dict)
    ]
    return Provenance(**fields, package_files=[str(f) for f in files], packages=packages)


def to_dict(prov: Provenance) -> dict[str, Any]:
    return asdict(prov)


def unknown(pbs_version: str = UNKNOWN) -> Provenance:
    return Provenance(pbs_version=pbs_version, kind="unknown", found_in="")
