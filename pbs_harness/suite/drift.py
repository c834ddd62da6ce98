"""Where the live server differs from its declared state (pbs_harness.suite.declared), and the repair.

`plan(declared, live)` compares and returns `Repair`s: what differs, in words for the report, and
the qmgr directives that put it back. `repair(pbs, declared)` reads the live state, plans and applies.
Values compare as role openpbs_server's pbs_qmgr module compares them: lists as sets, booleans in
any case, everything else as text.

reserve_retry_init (deprecated) is kept in the server's database after it disappears from view:
setting reserve_retry_time unsets it in memory only (action_reserve_retry_time in
src/server/svr_func.c: ATR_UNSET), and the server saves only attributes that are set (an unset one
encodes to nothing; the save merges into the stored attributes, `attributes || hstore(...)` in
src/lib/Libdb/pgsql/db_svr.c), so the old value stays stored. An `unset` of the invisible attribute
deletes nothing either (mgr_unset_attr deletes what it encodes). At the next pbs_server start the
stored value comes back, and its recovery action sets reserve_retry_time to it again. The one way
to delete it is to set it (now stored and visible) and unset it: `retry_init_reset`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pbs_harness.pbs.nodes import states
from pbs_harness.suite.declared import Declared, DeclaredHook

RETRY_INIT, RETRY_TIME = "reserve_retry_init", "reserve_retry_time"
RESV_RETRY_TIME_DEFAULT = 600  # src/include/pbs_internal.h
HOOK_TYPES = {"body": ("PY", "application/x-python"), "config": ("CF", "application/x-config")}
_QUOTE_CHARS = set(" \t,#;='\"()")


@dataclass(frozen=True)
class Repair:
    """One difference from the declared state (`what`; None: routine upkeep, not reported) and what
    puts it back: qmgr directives in order, or a hook file to import (hook, content type, text)."""

    what: str | None
    directives: tuple[str, ...] = ()
    hook_import: tuple[str, str, str] | None = None


@dataclass(frozen=True)
class Live:
    """What the server holds: `qmgr -c 'print server'` parsed (server attributes, queues, custom
    resources), `pbsnodes -av -F json` vnodes, `list hook` attributes and md5 of each hook file."""

    server: dict[str, Any]
    queues: dict[str, dict[str, Any]] = field(default_factory=dict)
    resources: frozenset[str] = frozenset()
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    hooks: dict[str, dict[str, str]] = field(default_factory=dict)
    hook_md5: dict[str, str] = field(default_factory=dict)  # "NAME.PY" -> md5


# --- values ------------------------------------------------------------------------------------


def _items(value: Any) -> list[str]:
    if isinstance(value, list | tuple):
        return sorted(_text(v) for v in value)
    return sorted(p.strip() for p in str(value).split(",") if p.strip())


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, list | tuple):
        return ",".join(_text(v) for v in value)
    return str(value)


def equal(wanted: Any, have: Any) -> bool:
    """Whether a declared value matches a printed one (pbs_qmgr.equal)."""
    if have is None:
        return wanted is None
    if wanted is None:
        return False
    if isinstance(wanted, list | tuple) or isinstance(have, list | tuple) or "," in str(have):
        return _items(wanted) == _items(have)
    if isinstance(wanted, bool) or str(have).lower() in ("true", "false"):
        return _text(wanted).lower() == str(have).lower()
    return _text(wanted) == str(have)


def render(value: Any) -> str:
    """A value in qmgr syntax, double-quoted when it holds a special character."""
    text = _text(value)
    return f'"{text}"' if not text or _QUOTE_CHARS & set(text) else text


def _shown(value: Any) -> str:
    return "unset" if value is None else _text(value)


# --- reading -----------------------------------------------------------------------------------


def parse_print_server(text: str) -> tuple[dict[str, Any], dict[str, dict[str, Any]], frozenset[str]]:
    """`qmgr -c 'print server'` -> (server attributes, {queue: attributes}, custom resource names).
    `+=` lines extend a list; a double-quoted value is unquoted."""
    server: dict[str, Any] = {}
    queues: dict[str, dict[str, Any]] = {}
    resources: set[str] = set()
    for raw in text.splitlines():
        words = raw.split()
        if len(words) >= 3 and words[:2] == ["create", "queue"]:
            queues.setdefault(words[2], {})
        elif len(words) >= 3 and words[:2] == ["create", "resource"]:
            resources.add(words[2])
        if len(words) < 5 or words[0] != "set" or words[1] not in ("server", "queue"):
            continue
        target = server if words[1] == "server" else queues.setdefault(words[2], {})
        name, op = (words[2], words[3]) if words[1] == "server" else (words[3], words[4])
        value = raw.split(f" {op} ", 1)[1].strip() if f" {op} " in raw else ""
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1]
        if op == "+=" and name in target:
            prev = target[name]
            target[name] = [*prev, value] if isinstance(prev, list) else [prev, value]
        elif op in ("=", "+="):
            target[name] = value
    return server, queues, frozenset(resources)


def read(pbs) -> Live:
    server, queues, resources = parse_print_server(pbs.server.qmgr("print server", check=True).stdout)
    hooks_dir = f"{pbs.cluster.pbs_home}/server_priv/hooks"
    sums = pbs.cluster.server.run(f"cd {hooks_dir} && md5sum -- *.PY *.CF 2>/dev/null").stdout
    md5 = {line.split()[1]: line.split()[0] for line in sums.splitlines() if len(line.split()) == 2}
    return Live(server, queues, resources, pbs.nodes.all(), pbs.hooks.attributes(), md5)


# --- planning ----------------------------------------------------------------------------------


def _attrs(
    target: str,
    wanted: Mapping[str, Any],
    have: Mapping[str, Any],
    skip: tuple[str, ...] = (),
    *,
    label: str = "",
    prefix: str = "",
) -> list[Repair]:
    """set/unset directives making `have` match `wanted` (exclusively: what `wanted` lacks is unset);
    each attribute is `prefix` + its key, and the report names the object as `label` (default: target)."""
    out = []
    for name in sorted(set(wanted) | set(have)):
        if name in skip or equal(wanted.get(name), have.get(name)):
            continue
        attr = prefix + name
        what = f"{label or target} {attr} = {_shown(have.get(name))} (declared: {_shown(wanted.get(name))})"
        if name in wanted:
            out.append(Repair(f"{what}: set", (f"set {target} {attr} = {render(wanted[name])}",)))
        else:
            out.append(Repair(f"{what}: unset", (f"unset {target} {attr}",)))
    return out


def retry_init_reset(declared: Mapping[str, Any], live: Mapping[str, Any], *, always: bool) -> Repair | None:
    """Set and unset reserve_retry_init, then reserve_retry_time as declared: deletes a value of
    reserve_retry_init the server keeps in its database out of view (see the module's note). Reported
    when the live server showed either attribute other than declared; with `always`, done anyway
    (unreported: nothing shows whether the database holds one). None when the inventory declares
    reserve_retry_init itself (then it is converged like any attribute). The `always` reset is a repair
    like any other and is reported as one (issue #30: every repair is in the conformance report)."""
    if RETRY_INIT in declared:
        return None
    seen = [
        f"server {name} = {_shown(live.get(name))} (declared: {_shown(declared.get(name))})"
        for name in (RETRY_INIT, RETRY_TIME)
        if not equal(declared.get(name), live.get(name))
    ]
    if not seen and not always:
        return None
    value = declared.get(RETRY_TIME, RESV_RETRY_TIME_DEFAULT)
    directives = (
        f"set server {RETRY_INIT} = {render(value)}",
        f"unset server {RETRY_INIT}",
        f"set server {RETRY_TIME} = {render(declared[RETRY_TIME])}"
        if RETRY_TIME in declared
        else f"unset server {RETRY_TIME}",
    )
    how = f"({RETRY_INIT} set and unset, so that the server's database keeps none)"
    if seen:
        return Repair("; ".join(seen) + f": reset {how}", directives)
    shown = f"{RETRY_TIME} = {_shown(live.get(RETRY_TIME))}"
    return Repair(f"server {RETRY_INIT}: reset although none shows ({shown}) {how}", directives)


def plan_server(
    declared: Mapping[str, Any], live: Mapping[str, Any], *, always_reset_retry: bool, skip: Iterable[str] = ()
) -> list[Repair]:
    """`skip`: attributes not compared (declared by a template this side cannot render)."""
    skipped = tuple(skip)
    live = {k: v for k, v in live.items() if k not in skipped}
    reset = (
        None if set(skipped) & {RETRY_INIT, RETRY_TIME} else retry_init_reset(declared, live, always=always_reset_retry)
    )
    skipped += (RETRY_INIT, RETRY_TIME) if reset is not None else ()
    return _attrs("server", declared, live, skipped) + ([reset] if reset is not None else [])


def _reservation_queue(name: str) -> bool:
    """R123, S123 (standing) and M123 (maintenance) queues belong to reservations, deleted with them."""
    return name[:1] in ("R", "S", "M") and name[1:].isdigit()


def plan_queues(declared: Mapping[str, Mapping[str, Any]], live: Mapping[str, Mapping[str, Any]]) -> list[Repair]:
    out = []
    for name in sorted(set(live) - set(declared)):
        if not _reservation_queue(name):
            out.append(Repair(f"queue {name} (not declared): deleted", (f"delete queue {name}",)))
    for name, attrs in declared.items():
        if name in live:
            out += _attrs(f"queue {name}", attrs, live[name])
            continue
        order = sorted(attrs, key=lambda a: a != "queue_type")  # the type first: it decides what else may be set
        sets = tuple(f"set queue {name} {a} = {render(attrs[a])}" for a in order)
        out.append(Repair(f"queue {name} (declared, missing): created", (f"create queue {name}", *sets)))
    return out


def plan_nodes(
    declared: Mapping[str, Mapping[str, Any]], nodes: Mapping[str, Mapping[str, Any]], custom: frozenset[str]
) -> list[Repair]:
    """Vnodes online, without priority or comment, with the custom resources the inventory gives them."""
    out = []
    for name, node in sorted(nodes.items()):
        target = f"node {name}"
        if "offline" in states(node):
            out.append(
                Repair(f"vnode {name} offline (declared: online): offline cleared", (f"set {target} state -= offline",))
            )
        for attr in ("Priority", "comment"):
            if node.get(attr) is not None:
                out.append(
                    Repair(
                        f"vnode {name} {attr.lower()} = {node[attr]} (declared: unset): unset",
                        (f"unset {target} {attr.lower()}",),
                    )
                )
        have = {k: v for k, v in (node.get("resources_available") or {}).items() if k in custom}
        wanted = {k: v for k, v in (declared.get(name) or {}).items() if k in custom}
        out.extend(_attrs(target, wanted, have, label=f"vnode {name}", prefix="resources_available."))
    return out


def _md5(text: str) -> str:
    return hashlib.md5(text.encode()).hexdigest()  # noqa: S324 - a checksum, not security


def _hook_attrs(hook: DeclaredHook) -> dict[str, str]:
    """Declared attributes as `list hook` prints them (event: comma-separated; booleans lower case)."""
    out = {}
    for name, value in hook.attrs.items():
        out[name] = _text(value).lower() if isinstance(value, bool) else _text(value)  # a list: comma-separated
    return out


def _hook_equal(name: str, wanted: str, have: str | None) -> bool:
    if have is None:
        return False
    if name == "event":
        return _items(wanted) == _items(have)
    return wanted.lower() == have.lower() if wanted.lower() in ("true", "false") else wanted == have


def plan_hooks(
    declared: Mapping[str, DeclaredHook],
    kept: frozenset[str],
    live: Mapping[str, Mapping[str, str]],
    md5: Mapping[str, str],
) -> list[Repair]:
    out = []
    for name in sorted(set(live) - set(declared) - kept):
        out.append(Repair(f"hook {name} (not declared): deleted", (f"delete hook {name}",)))
    for name, hook in sorted(declared.items()):
        attrs = _hook_attrs(hook)
        if name not in live:
            if hook.body is None:
                continue  # not here to import: the leak check reports it
            out.append(Repair(f"hook {name} (declared, missing): created", (f"create hook {name}",)))
        for attr, value in attrs.items():
            have = (live.get(name) or {}).get(attr)
            if not _hook_equal(attr, value, have):
                what = f"hook {name} {attr} = {_shown(have)} (declared: {value}): set" if name in live else None
                out.append(Repair(what, (f"set hook {name} {attr} = {render(value)}",)))
        for part, (suffix, content_type) in HOOK_TYPES.items():
            text = getattr(hook, part)
            if text is None or md5.get(f"{name}.{suffix}") == _md5(text):
                continue
            what = f"hook {name} {part} differs from its source: imported again" if name in live else None
            out.append(Repair(what, hook_import=(name, content_type, text)))
    return out


def plan(declared: Declared, live: Live, *, always_reset_retry: bool = False) -> list[Repair]:
    return (
        plan_server(declared.server, live.server, always_reset_retry=always_reset_retry, skip=declared.templated)
        + plan_queues(declared.queues, live.queues)
        + plan_nodes(declared.node_resources, live.nodes, live.resources)
        + plan_hooks(declared.hooks, declared.kept_hooks, live.hooks, live.hook_md5)
    )


# --- repairing ---------------------------------------------------------------------------------


def apply(pbs, repairs: list[Repair]) -> tuple[list[str], list[str]]:
    """Run each repair; returns (what was repaired, what could not be: with qmgr's own words)."""
    done, failed = [], []
    for rep in repairs:
        errors = []
        for directive in rep.directives:
            res = pbs.server.qmgr(directive)
            if not res.ok:
                errors.append(f"`qmgr -c '{directive}'`: {(res.stderr or res.stdout).strip()}")
        if rep.hook_import is not None:
            pbs.hooks.import_file(*rep.hook_import)
        if errors:
            failed.append(f"{rep.what or rep.directives}: " + "; ".join(errors))
        elif rep.what:
            done.append(rep.what)
    return done, failed


def repair(pbs, declared: Declared, *, always_reset_retry: bool = False) -> tuple[list[str], list[str]]:
    """Bring the server to its declared state; returns (repairs made, repairs that failed)."""
    return apply(pbs, plan(declared, read(pbs), always_reset_retry=always_reset_retry))


def repair_server(pbs, declared: Declared) -> tuple[list[str], list[str]]:
    """Server attributes only (what a test may change and the per-test restore puts back)."""
    server, _, _ = parse_print_server(pbs.server.qmgr("print server", check=True).stdout)
    return apply(pbs, plan_server(declared.server, server, always_reset_retry=False, skip=declared.templated))
