#!/usr/bin/python
"""Ansible module: converge OpenPBS custom resources, server, queue, node and hook state through qmgr."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: pbs_qmgr
short_description: Converge OpenPBS custom resources, server, queue, node and hook state through qmgr
description:
  - Reads the current state with a single C(qmgr) call (C(print server), C(print node @default),
    C(print hook)), compares it with the wanted state and applies only the differences, again in a
    single C(qmgr -a) call that aborts on the first rejected directive.
  - Only the sections that are passed are managed; an omitted section is left untouched.
  - Supports check mode and diff mode. The diff lists the affected objects only.
  - Must run on a host where C(qmgr) reaches the server with manager rights (normally the server host, as root).
version_added: "0.1.0"
author: pbs-harness
options:
  qmgr:
    description: Path of the qmgr command.
    type: path
    default: /opt/pbs/bin/qmgr
  resources:
    description:
      - Custom resources, C(name => {type, flag}). C(type) is a qmgr resource type (C(long), C(float),
        C(size), C(boolean), C(string), C(string_array)); C(flag) the qmgr flag letters (for example
        C(nh)), compared as a set of letters; a missing, null or empty C(flag) means no flag.
      - A missing resource is created (with C(type) and C(flag)); one whose type or flag differs is
        changed with C(set resource) / C(unset resource), which PBS refuses while jobs request it.
        Resources are never deleted.
      - Their directives come first, so server, queue and node attributes may use them in the same run.
    type: dict
  server:
    description:
      - Server attributes, C(name => value). Resource attributes use dotted names
        (C(resources_default.ncpus)). A C(null) value means the attribute must be unset.
      - Lists are compared as sets and set as a comma-separated value.
    type: dict
  server_unlisted:
    description:
      - What to do with set server attributes that are not named in O(server).
      - C(keep) leaves them alone.
      - C(baseline) restores the pristine value recorded in O(server_baseline_file) and unsets
        attributes that were not set in the pristine server.
    type: str
    choices: [keep, baseline]
    default: keep
  server_baseline_file:
    description:
      - JSON file, on the managed host, holding the server attributes of the pristine server.
      - Recorded (before any change) when it does not exist yet and the module is not in check mode.
      - Required when O(server_unlisted=baseline).
    type: path
  queues:
    description:
      - Queues, C(name => attributes). A missing queue is created (C(queue_type) is set first).
        A C(null) attribute value unsets the attribute; a C(null) queue deletes the queue.
    type: dict
  queues_exclusive:
    description: Unset queue attributes that are set on a listed queue but not named for it.
    type: bool
    default: false
  prune_queues:
    description: Delete queues that are not listed in O(queues).
    type: bool
    default: false
  nodes:
    description:
      - Nodes, C(name => attributes). A missing node is created. A C(null) attribute value unsets
        the attribute; a C(null) node deletes the node.
    type: dict
  prune_nodes:
    description:
      - Delete nodes that are not listed in O(nodes), except the vnodes whose parent host
        (the part before C([)) is listed.
    type: bool
    default: false
  nodes_reset:
    description:
      - Bring every node back to its administrative baseline - clear the C(offline) state
        and unset C(comment).
    type: bool
    default: false
  hooks:
    description: Site hooks to manage.
    type: list
    elements: dict
    suboptions:
      name:
        description: Hook name.
        type: str
        required: true
      state:
        description: Whether the hook must exist.
        type: str
        choices: [present, absent]
        default: present
      script:
        description: The hook's Python source, imported when it differs from the installed one.
        type: str
      config:
        description: The hook's configuration file content, imported when it differs. C(null) leaves it alone.
        type: str
      attributes:
        description: Hook attributes (C(event), C(order), C(alarm), C(enabled), C(fail_action), ...).
        type: dict
        default: {}
  prune_hooks:
    description: Delete site hooks that are not listed in O(hooks) and not in O(hooks_keep).
    type: bool
    default: false
  hooks_keep:
    description: Site hooks that O(prune_hooks) never deletes (the ones PBS installs itself).
    type: list
    elements: str
    default: [pbs_cgroups]
notes:
  - Attribute values are compared as strings, booleans case-insensitively. Write values in the form
    PBS prints them (for example C(01:00:00), C(1gb)), or the attribute is set again on every run.
  - A value may not contain a double quote or a line break.
"""

EXAMPLES = r"""
- name: Converge custom resources, the server and its queues
  pbs_qmgr:
    resources:
      localssd: {type: long, flag: nh}
    server:
      job_history_enable: true
      flatuid: true
      managers: [pbsmgr@*]
      node_fail_requeue: null
    queues:
      workq:
        queue_type: Execution
        enabled: true
        started: true
    nodes:
      pbsh01: {}
      pbsh02: {resv_enable: true}

- name: Install a hook with its configuration file
  pbs_qmgr:
    hooks:
      - name: reliable_startup
        script: "{{ lookup('ansible.builtin.file', 'hooks/reliable_startup.py', rstrip=false) }}"
        config: '{"pad": 1}'
        attributes:
          event: [execjob_launch]
          order: 1
          enabled: true
"""

RETURN = r"""
commands:
  description: qmgr directives that were (or, in check mode, would be) run; hook contents are elided.
  returned: always
  type: list
  elements: str
baseline_recorded:
  description: Whether this run recorded the server baseline file.
  returned: always
  type: bool
"""

import base64
import hashlib
import json
import os
import re
import tempfile

from ansible.module_utils.basic import AnsibleModule

_SET_RE = re.compile(r"^set (server|resource \S+|queue \S+|node \S+|hook \S+) (\S+) (\+?=) (.*)$")
_IMPORT_RE = re.compile(r"^import hook (\S+) (\S+) base64 -$")
_CHUNK = 513  # bytes per base64 line (684 characters), as qmgr prints them: longer input lines are cut
_QUOTE_CHARS = set(" \t,#;='\"()")
_CONTENT_TYPES = {"script": "application/x-python", "config": "application/x-config"}
_RESOURCE_KEYS = ("type", "flag")


def _unquote(value):
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] == '"':
        return value[1:-1]
    return value


def _empty_state():
    return {"server": {}, "resources": {}, "queues": {}, "nodes": {}, "hooks": {}}


def _store(attrs, name, op, value):
    if op == "+=" and name in attrs:
        prev = attrs[name]
        attrs[name] = [*prev, value] if isinstance(prev, list) else [prev, value]
    else:
        attrs[name] = value


def _object_attrs(state, target):
    kind, _, name = target.partition(" ")
    if kind == "server":
        return state["server"]
    if kind == "resource":
        return state["resources"].setdefault(name, {})
    if kind == "queue":
        return state["queues"].setdefault(name, {})
    if kind == "node":
        return state["nodes"].setdefault(name, {})
    return state["hooks"].setdefault(name, {"attributes": {}, "content": {}})["attributes"]


def parse_print(text):
    """Parse `print server` (custom resources, queues, server), `print node @default` and `print hook` output."""
    state = _empty_state()
    importing = None
    for raw in text.splitlines():
        line = raw.strip()
        if importing is not None:
            # A block of base64 lines ends at a blank line or, as qmgr prints consecutive
            # imports, at the next directive (which is then parsed below).
            if line and not line.startswith(("#", "import ", "create ", "set ")):
                hook, ctype = importing
                content = state["hooks"][hook]["content"]
                content[ctype] = content.get(ctype, b"") + base64.b64decode(line)
                continue
            importing = None
        if not line or line.startswith("#"):
            continue
        match = _SET_RE.match(line)
        if match:
            target, attr, op, value = match.groups()
            _store(_object_attrs(state, target), attr, op, _unquote(value))
            continue
        match = _IMPORT_RE.match(line)
        if match:
            hook, ctype = match.groups()
            state["hooks"].setdefault(hook, {"attributes": {}, "content": {}})["content"][ctype] = b""
            importing = (hook, ctype)
            continue
        words = line.split()
        if len(words) >= 3 and words[0] == "create":
            _create(state, words)
    return state


def _create(state, words):
    """Record the object of a `create KIND NAME [...]` line."""
    kind, name = words[1], words[2]
    if kind == "queue":
        state["queues"].setdefault(name, {})
    elif kind == "node":
        state["nodes"].setdefault(name, {})
    elif kind == "hook":
        state["hooks"].setdefault(name, {"attributes": {}, "content": {}})
    elif kind == "resource":
        # qmgr prints a bare `create resource NAME`; this module creates with `type=T,flag=F`.
        attrs = state["resources"].setdefault(name, {})
        for part in " ".join(words[3:]).split(","):
            attr, sep, value = part.partition("=")
            if sep:
                attrs[attr.strip()] = _unquote(value)


def _items(value):
    if isinstance(value, list):
        return sorted(str(_scalar(v)) for v in value)
    return sorted(part.strip() for part in str(value).split(","))


def _scalar(value):
    if isinstance(value, bool):
        return "True" if value else "False"
    return value


def equal(wanted, current):
    """Whether a wanted attribute value matches the printed current one."""
    if current is None:
        return False
    if isinstance(wanted, list) or isinstance(current, list):
        return _items(wanted) == _items(current)
    if isinstance(wanted, bool):
        return str(current).lower() == str(wanted).lower()
    return str(wanted) == str(current)


def _show(value):
    if isinstance(value, list):
        return ",".join(str(_scalar(v)) for v in value)
    return str(_scalar(value))


def render(value):
    """A wanted value as qmgr syntax, quoted when needed."""
    text = _show(value)
    if '"' in text or "\n" in text or "\r" in text:
        raise ValueError(f"qmgr values cannot contain a double quote or a line break: {text!r}")
    if not text or _QUOTE_CHARS & set(text):
        return f'"{text}"'
    return text


class Plan:
    """The qmgr directives to run and the before/after views of the touched objects."""

    def __init__(self):
        self.directives = []
        self.shown = []
        self.before = {}
        self.after = {}

    def add(self, directive, shown=None):
        self.directives.append(directive)
        self.shown.append(shown or directive)

    def note(self, obj, attr, before, after):
        self.before.setdefault(obj, {})
        self.after.setdefault(obj, {})
        if before is not None:
            self.before[obj][attr] = before
        if after is not None:
            self.after[obj][attr] = after


def plan_attrs(plan, target, wanted, current, unlisted=None):
    """Set/unset directives that make `current` attributes match `wanted` (None value = unset)."""
    for attr, value in wanted.items():
        have = current.get(attr)
        if value is None:
            if have is not None:
                plan.add(f"unset {target} {attr}")
                plan.note(target, attr, have, None)
        elif not equal(value, have):
            plan.add(f"set {target} {attr} = {render(value)}")
            plan.note(target, attr, have, value)
    for attr, value in (unlisted or {}).items():
        have = current.get(attr)
        if value is None:
            plan.add(f"unset {target} {attr}")
            plan.note(target, attr, have, None)
        elif not equal(value, have):
            plan.add(f"set {target} {attr} = {render(value)}")
            plan.note(target, attr, have, value)


def server_unlisted(params, wanted, current, baseline):
    """Attributes outside `wanted` to restore to the baseline: name -> value (None = unset)."""
    if params["server_unlisted"] != "baseline":
        return {}
    todo = {}
    for attr, have in current.items():
        if attr in wanted:
            continue
        if attr not in baseline:
            todo[attr] = None
        elif not equal(baseline[attr], have):
            todo[attr] = baseline[attr]
    for attr, value in baseline.items():
        if attr not in wanted and attr not in current:
            todo[attr] = value
    return todo


def _delete(plan, kind, name):
    plan.add(f"delete {kind} {name}")
    plan.note(f"{kind} {name}", "exists", True, None)


def _existence(plan, kind, name, wanted, have, *, empty):
    """Plan create/delete of one object; returns its current attributes, or None when it is to go."""
    if not wanted:
        if have is not None:
            _delete(plan, kind, name)
        return None
    if have is None:
        plan.add(f"create {kind} {name}")
        plan.note(f"{kind} {name}", "exists", None, True)
        return empty
    return have


def _flag(value):
    return "".join(sorted(str(value or "")))


def plan_resources(plan, params, current):
    """Create missing custom resources and change the type or flag of those that differ."""
    for name, wanted in params["resources"].items():
        if not isinstance(wanted, dict) or set(wanted) - set(_RESOURCE_KEYS):
            raise ValueError(
                f"resource {name}: expected a dict with the keys {', '.join(_RESOURCE_KEYS)}, got {wanted!r}"
                " (resources are never deleted)"
            )
        target = f"resource {name}"
        have = current.get(name)
        if have is None:
            if not wanted.get("type"):
                raise ValueError(f"resource {name}: a new resource needs a type")
            attrs = f"type={render(wanted['type'])}" + (f",flag={render(wanted['flag'])}" if wanted.get("flag") else "")
            plan.add(f"create resource {name} {attrs}")
            plan.note(target, "exists", None, True)
            plan.note(target, "type", None, wanted["type"])
            if wanted.get("flag"):
                plan.note(target, "flag", None, wanted["flag"])
            continue
        if wanted.get("type") and str(wanted["type"]) != have.get("type"):
            plan.add(f"set {target} type = {render(wanted['type'])}")
            plan.note(target, "type", have.get("type"), wanted["type"])
        if _flag(wanted.get("flag")) != _flag(have.get("flag")):
            if wanted.get("flag"):
                plan.add(f"set {target} flag = {render(wanted['flag'])}")
            else:
                plan.add(f"unset {target} flag")
            plan.note(target, "flag", have.get("flag"), wanted.get("flag") or None)


def plan_queues(plan, params, current):
    wanted = params["queues"]
    for name, attrs in wanted.items():
        target = f"queue {name}"
        have = _existence(plan, "queue", name, attrs is not None, current.get(name), empty={})
        if have is None:
            continue
        ordered = dict(sorted(attrs.items(), key=lambda kv: kv[0] != "queue_type"))
        extra = {}
        if params["queues_exclusive"]:
            extra = {attr: None for attr in have if attr not in attrs}
        plan_attrs(plan, target, ordered, have, extra)
    if params["prune_queues"]:
        for name in sorted(set(current) - set(wanted)):
            _delete(plan, "queue", name)


def _parent(node):
    return node.split("[", 1)[0]


def plan_nodes(plan, params, current):
    wanted = params["nodes"] or {}
    for name, attrs in wanted.items():
        target = f"node {name}"
        have = _existence(plan, "node", name, attrs is not None, current.get(name), empty={})
        if have is None:
            continue
        plan_attrs(plan, target, attrs, have)
    kept = {n for n, a in wanted.items() if a is not None}
    pruned = set()
    if params["prune_nodes"]:
        pruned = {n for n in current if n not in wanted and _parent(n) not in kept}
        for name in sorted(pruned):
            _delete(plan, "node", name)
    if params["nodes_reset"]:
        deleted = pruned | {n for n, a in wanted.items() if a is None}
        for name in sorted(set(current) - deleted):
            _reset_node(plan, name, current[name], wanted.get(name) or {})


def _reset_node(plan, name, have, wanted):
    """Clear the offline state and the comment of one node (unless the comment is declared)."""
    if "offline" in _items(have.get("state", "")):
        plan.add(f"set node {name} state -= offline")
        plan.note(f"node {name}", "state", have["state"], "free")
    if "comment" in have and "comment" not in wanted:
        plan.add(f"unset node {name} comment")
        plan.note(f"node {name}", "comment", have["comment"], None)


def _import(plan, name, kind, text):
    data = text.encode("utf-8")
    chunks = [base64.b64encode(data[i : i + _CHUNK]).decode("ascii") for i in range(0, len(data), _CHUNK)]
    head = f"import hook {name} {_CONTENT_TYPES[kind]} base64 -"
    plan.add("\n".join([head, *chunks, ""]), f"{head}  # {len(data)} bytes")


def plan_hooks(plan, params, current):
    listed = set()
    for hook in params["hooks"]:
        name = hook["name"]
        listed.add(name)
        target = f"hook {name}"
        empty = {"attributes": {}, "content": {}}
        have = _existence(plan, "hook", name, hook["state"] != "absent", current.get(name), empty=empty)
        if have is None:
            continue
        plan_attrs(plan, target, hook["attributes"] or {}, have["attributes"])
        for kind, ctype in _CONTENT_TYPES.items():
            text = hook.get(kind)
            if text is None:
                continue
            old = have["content"].get(ctype)
            if old != text.encode("utf-8"):
                _import(plan, name, kind, text)
                plan.note(target, kind, _digest(old), _digest(text.encode("utf-8")))
    if params["prune_hooks"]:
        for name in sorted(set(current) - listed - set(params["hooks_keep"])):
            _delete(plan, "hook", name)


def _digest(data):
    if data is None:
        return None
    return f"sha256:{hashlib.sha256(data).hexdigest()[:16]} ({len(data)} bytes)"


def _clean(text):
    # qmgr announces its connection limit when reading directives from stdin.
    return "\n".join(line for line in text.splitlines() if not line.startswith("Max open servers:"))


# `print node @default` on a server without any node fails with PBSE_NONODES: an empty node list.
_NO_NODES = ("Server has no node list", "Error (15064) returned from server")


def _no_nodes_only(err):
    lines = [line.strip() for line in _clean(err).splitlines() if line.strip()]
    return bool(lines) and all(line.endswith(_NO_NODES) for line in lines)


def read_state(module, params):
    sections = []
    if params["server"] is not None or params["queues"] is not None or params["resources"] is not None:
        sections.append("print server")
    if params["nodes"] is not None or params["prune_nodes"] or params["nodes_reset"]:
        sections.append("print node @default")
    if params["hooks"] is not None:
        sections.append("print hook")
    if not sections:
        return _empty_state()
    rc, out, err = module.run_command([params["qmgr"]], data="\n".join(sections) + "\n")
    # qmgr exits with the status of the last request only: an empty node list fails the read when last.
    if rc != 0 and not ("print node @default" in sections and _no_nodes_only(err)):
        module.fail_json(msg=f"qmgr could not read the server state (rc={rc}): {_clean(err).strip()}", rc=rc)
    return parse_print(out)


def load_baseline(module, params, current):
    """Return (baseline attrs, recorded?)."""
    path = params["server_baseline_file"]
    if not path:
        if params["server_unlisted"] == "baseline":
            module.fail_json(msg="server_unlisted=baseline needs server_baseline_file")
        return {}, False
    if os.path.exists(path):
        with open(path, encoding="utf-8") as handle:
            return json.load(handle), False
    if module.check_mode:
        return dict(current), False
    directory = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".baseline")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(current, handle, indent=2, sort_keys=True)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)
    return dict(current), True


def build_plan(module, params, state):
    plan = Plan()
    recorded = False
    try:
        # Resources first: the attributes below may name them (resources_available.NAME).
        if params["resources"] is not None:
            plan_resources(plan, params, state["resources"])
        if params["server"] is not None:
            baseline, recorded = load_baseline(module, params, state["server"])
            wanted = params["server"]
            plan_attrs(
                plan, "server", wanted, state["server"], server_unlisted(params, wanted, state["server"], baseline)
            )
        if params["queues"] is not None:
            plan_queues(plan, params, state["queues"])
        if params["nodes"] is not None or params["prune_nodes"] or params["nodes_reset"]:
            plan_nodes(plan, params, state["nodes"])
        if params["hooks"] is not None:
            plan_hooks(plan, params, state["hooks"])
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    return plan, recorded


def _view(objects):
    lines = []
    for obj in sorted(objects):
        lines.append(f"{obj}:")
        lines.extend(f"    {attr} = {_show(value)}" for attr, value in sorted(objects[obj].items()))
    return "\n".join(lines) + ("\n" if lines else "")


def main():
    module = AnsibleModule(
        argument_spec={
            "qmgr": {"type": "path", "default": "/opt/pbs/bin/qmgr"},
            "resources": {"type": "dict"},
            "server": {"type": "dict"},
            "server_unlisted": {"type": "str", "choices": ["keep", "baseline"], "default": "keep"},
            "server_baseline_file": {"type": "path"},
            "queues": {"type": "dict"},
            "queues_exclusive": {"type": "bool", "default": False},
            "prune_queues": {"type": "bool", "default": False},
            "nodes": {"type": "dict"},
            "prune_nodes": {"type": "bool", "default": False},
            "nodes_reset": {"type": "bool", "default": False},
            "hooks": {
                "type": "list",
                "elements": "dict",
                "options": {
                    "name": {"type": "str", "required": True},
                    "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
                    "script": {"type": "str"},
                    "config": {"type": "str"},
                    "attributes": {"type": "dict", "default": {}},
                },
            },
            "prune_hooks": {"type": "bool", "default": False},
            "hooks_keep": {"type": "list", "elements": "str", "default": ["pbs_cgroups"]},
        },
        required_if=[("server_unlisted", "baseline", ["server_baseline_file"])],
        supports_check_mode=True,
    )
    params = module.params
    if params["prune_queues"] and params["queues"] is None:
        params["queues"] = {}
    if params["prune_hooks"] and params["hooks"] is None:
        params["hooks"] = []
    for hook in params["hooks"] or []:
        if hook["state"] == "present" and hook.get("script") is not None:
            try:
                compile(hook["script"], f"<hook {hook['name']}>", "exec")
            except SyntaxError as exc:
                module.fail_json(msg=f"hook {hook['name']}: the script does not compile on the server host: {exc}")

    state = read_state(module, params)
    plan, recorded = build_plan(module, params, state)
    result = {
        "changed": bool(plan.directives),
        "commands": plan.shown,
        "baseline_recorded": recorded,
    }
    if module._diff:
        result["diff"] = {"before": _view(plan.before), "after": _view(plan.after)}
    if plan.directives and not module.check_mode:
        script = "\n".join(plan.directives) + "\n"
        rc, out, err = module.run_command([params["qmgr"], "-a"], data=script)
        if rc != 0:
            module.fail_json(
                msg=f"qmgr rejected a directive (rc={rc}): {_clean(err).strip() or _clean(out).strip()}",
                rc=rc,
                commands=plan.shown,
            )
    module.exit_json(**result)


if __name__ == "__main__":
    main()
