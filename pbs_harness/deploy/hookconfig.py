"""The site hooks the inventory deploys (openpbs_hooks_list), checked on this machine before a deploy.

A hook configuration PBS cannot use is not refused by qmgr: the hook loads it at run time, and
hooks/reliable_startup.py then logs the error and does nothing. So the deploy checks first that
every listed source exists and compiles, and that every configuration is valid JSON and, when the
hook's source defines `parse_config(text)`, is accepted by it.
"""

from __future__ import annotations

import json
import re
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pbs_harness.common import project
from pbs_harness.common.errors import PreconditionError
from pbs_harness.remote.inventory import Inventory

HINT_LIST = "see the item format in roles/openpbs_hooks/defaults/main.yml"


class _StopAtEvent(Exception):
    """Raised by the stub pbs.event(): the hook's module-level code stops before touching an event."""


def _refuse_event() -> None:
    raise _StopAtEvent


def source_dir(inv: Inventory) -> Path:
    """openpbs_hooks_src_dir with the two variables it is written with rendered (else the repository's hooks/)."""
    raw = str(inv.var("openpbs_hooks_src_dir", "{{ playbook_dir }}/../hooks"))
    inventory_dir = inv.path if inv.path.is_dir() else inv.path.parent
    text = re.sub(r"\{\{\s*inventory_dir\s*\}\}", str(inventory_dir), raw)
    text = re.sub(r"\{\{\s*playbook_dir\s*\}\}", str(project.root() / "playbooks"), text)
    return project.root() / "hooks" if "{{" in text else Path(text).resolve()


def config_validator(source: Path) -> Callable[[str], Any] | None:
    """The hook's own parse_config(text), loaded with a stub `pbs` module, or None if it has none.

    Only sources that define parse_config are loaded; their module-level code runs until it asks
    for the event (pbs.event()), which the stub refuses.
    """
    text = source.read_text()
    if "def parse_config(" not in text:
        return None
    stub = types.ModuleType("pbs")
    stub.event = _refuse_event  # type: ignore[attr-defined]
    stub.__getattr__ = lambda name: 0  # type: ignore[attr-defined]  # pbs.LOG_DEBUG and friends
    namespace: dict[str, Any] = {"__name__": f"hookcheck_{source.stem}", "__file__": str(source)}
    saved = sys.modules.get("pbs")
    sys.modules["pbs"] = stub
    try:
        exec(compile(text, str(source), "exec"), namespace)  # noqa: S102 - our own hook source, stub pbs
    except _StopAtEvent:
        pass
    except Exception:  # noqa: BLE001 - a hook that cannot load here keeps the generic checks only
        return None
    finally:
        if saved is None:
            sys.modules.pop("pbs", None)
        else:
            sys.modules["pbs"] = saved
    validate = namespace.get("parse_config")
    return validate if callable(validate) else None


def _json_error(path: Path, exc: json.JSONDecodeError) -> str:
    return f"{path} is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"


# The hook events OpenPBS knows (src/include/hook.h, HOOKSTR_*, master cd7ab5e; an older server refuses the
# newer ones itself), and the order a site hook may take (qmgr: 1 to 1000).
EVENTS = frozenset(
    {
        *("queuejob", "postqueuejob", "modifyjob", "resvsub", "modifyresv", "movejob", "runjob", "provision"),
        *("periodic", "resv_confirm", "resv_begin", "resv_end", "management", "jobobit", "modifyvnode"),
        *("execjob_begin", "execjob_prologue", "execjob_epilogue", "execjob_end", "execjob_preterm"),
        *("execjob_launch", "execjob_attach", "execjob_resize", "execjob_abort", "execjob_postsuspend"),
        *("execjob_preresume", "exechost_periodic", "exechost_startup"),
    }
)
ORDER_RANGE = (1, 1000)


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_attributes(name: str, item: dict[str, Any], where: str) -> None:
    """events, order, alarm and enabled of a hook item: each judged here, before any host is contacted
    (`events: [no_such_event]`, `order: -5`, `alarm: banana` and `enabled: maybe` used to reach qmgr)."""
    events = item.get("events")
    if events is not None:
        listed = [events] if isinstance(events, str) else events
        if not isinstance(listed, list) or not listed:
            raise PreconditionError(
                f"{where}: hook {name}: events {events!r} is not an event or a list of them", HINT_LIST
            )
        unknown = [e for e in listed if e not in EVENTS]
        if unknown:
            raise PreconditionError(
                f"{where}: hook {name}: unknown event(s) {', '.join(map(repr, unknown))}",
                "use OpenPBS hook events, e.g. execjob_begin, execjob_launch, queuejob "
                f"(all: {', '.join(sorted(EVENTS))})",
            )
    order = item.get("order")
    if order is not None and not (_whole(order) and ORDER_RANGE[0] <= order <= ORDER_RANGE[1]):
        raise PreconditionError(
            f"{where}: hook {name}: order {order!r} is not a whole number from {ORDER_RANGE[0]} to {ORDER_RANGE[1]}",
            "give a site hook's run order among the hooks of its event, 1 to 1000",
        )
    alarm = item.get("alarm")
    if alarm is not None and not (_whole(alarm) and alarm >= 1):
        raise PreconditionError(
            f"{where}: hook {name}: alarm {alarm!r} is not a whole number of seconds (1 or more)",
            "give the seconds the hook may run, e.g. alarm: 30",
        )
    enabled = item.get("enabled")
    if enabled is not None and not isinstance(enabled, bool):
        raise PreconditionError(
            f"{where}: hook {name}: enabled {enabled!r} is not true or false",
            "write enabled: true or enabled: false, unquoted",
        )


def check_hook(name: str, item: dict[str, Any], src: Path, where: str) -> None:
    state = item.get("state", "present")
    if state not in ("present", "absent"):
        raise PreconditionError(f"{where}: hook {name}: state {state!r} is not present or absent", HINT_LIST)
    if state == "absent":
        return
    check_attributes(name, item, where)
    if not item.get("file"):
        raise PreconditionError(f"{where}: hook {name} has no 'file' (its Python source in {src})", HINT_LIST)
    source = src / str(item["file"])
    if not source.is_file():
        raise PreconditionError(
            f"{where}: hook {name}: source {source} does not exist",
            f"put the hook's source in {src} or fix its 'file' (or openpbs_hooks_src_dir)",
        )
    try:
        compile(source.read_text(), str(source), "exec")
    except SyntaxError as exc:
        raise PreconditionError(
            f"hook {name}: {source} does not compile: {exc.msg} (line {exc.lineno})", "fix the hook's source"
        ) from exc
    if not item.get("config"):
        return
    config = src / str(item["config"])
    if not config.is_file():
        raise PreconditionError(
            f"{where}: hook {name}: configuration {config} does not exist",
            f"put it in {src} or fix the hook's 'config'",
        )
    text = config.read_text()
    doc = source.with_suffix(".md")
    fix = f"fix it (keys and values: {doc})" if doc.is_file() else "fix it"
    if config.suffix == ".json":
        try:
            json.loads(text)
        except json.JSONDecodeError as exc:
            raise PreconditionError(f"hook {name}: configuration {_json_error(config, exc)}", fix) from exc
    validate = config_validator(source)
    if validate is None:
        return
    try:
        validate(text)
    except ValueError as exc:
        raise PreconditionError(
            f"hook {name}: configuration {config} is refused by {source.name}: {exc}",
            f"{fix}; with it the hook would log the error and do nothing on the cluster",
        ) from exc


def check(inv: Inventory) -> None:
    """Every hook in the inventory's openpbs_hooks_list can be deployed as listed."""
    hooks = inv.var("openpbs_hooks_list", [])
    where = f"inventory {inv.path}: openpbs_hooks_list"
    if isinstance(hooks, str) and "{{" in hooks:
        return  # rendered by Ansible only
    if not isinstance(hooks, list):
        raise PreconditionError(f"{where} is {type(hooks).__name__}, not a list", HINT_LIST)
    src = source_dir(inv)
    for index, item in enumerate(hooks):
        if not isinstance(item, dict) or not item.get("name"):
            raise PreconditionError(f"{where}[{index}] is not an item with a 'name'", HINT_LIST)
        check_hook(str(item["name"]), item, src, where)
