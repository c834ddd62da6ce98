#!/usr/bin/python
"""Ansible module: manage one pbs_mom Version 2 (vnode definition) configuration file."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: pbs_mom_vnodedef
short_description: Manage a pbs_mom Version 2 configuration file (vnode definitions)
description:
  - Compares the wanted content with C(pbs_mom -s show NAME) and, only when it differs, replaces
    the file with C(pbs_mom -s remove NAME) and C(pbs_mom -s insert NAME FILE).
  - With O(state=absent) removes the file when it exists.
  - Does not signal pbs_mom; notify a handler that restarts or HUPs it.
  - Returns the vnode IDs defined before and after, so that vnodes that are no longer defined can be
    deleted on the server.
  - Supports check mode and diff mode.
version_added: "0.1.0"
author: pbs-harness
options:
  name:
    description: Name of the Version 2 file. Names starting with C(PBS) are reserved by PBS.
    type: str
    required: true
  content:
    description: Wanted file content; must start with C($configversion 2). Required when O(state=present).
    type: str
  state:
    description: Whether the file must exist.
    type: str
    choices: [present, absent]
    default: present
  pbs_mom:
    description: Path of the pbs_mom executable.
    type: path
    default: /opt/pbs/sbin/pbs_mom
"""

EXAMPLES = r"""
- name: Define two vnodes on this host
  pbs_mom_vnodedef:
    name: harness_vnodes
    content: |
      $configversion 2
      pbsh03: resources_available.ncpus = 0
      pbsh03[0]: resources_available.ncpus = 1
      pbsh03[1]: resources_available.ncpus = 1
  notify: Restart pbs_mom
"""

RETURN = r"""
vnodes_before:
  description: Vnode IDs defined by the file before the change.
  returned: always
  type: list
  elements: str
vnodes_after:
  description: Vnode IDs defined by the file after the change.
  returned: always
  type: list
  elements: str
vnodes_removed:
  description: IDs defined before and not after (candidates for deletion on the server).
  returned: always
  type: list
  elements: str
"""

import os

from ansible.module_utils.basic import AnsibleModule


def vnode_ids(content):
    """The vnode IDs a Version 2 file defines (lines `ID : attribute = value`)."""
    ids = []
    for line in (content or "").splitlines():
        text = line.strip()
        if not text or text.startswith(("#", "$")) or ":" not in text:
            continue
        vnode = text.split(":", 1)[0].strip()
        if vnode and vnode not in ids:
            ids.append(vnode)
    return ids


def _same(left, right):
    return (left or "").rstrip("\n") == (right or "").rstrip("\n")


def main():
    module = AnsibleModule(
        argument_spec={
            "name": {"type": "str", "required": True},
            "content": {"type": "str"},
            "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
            "pbs_mom": {"type": "path", "default": "/opt/pbs/sbin/pbs_mom"},
        },
        required_if=[("state", "present", ["content"])],
        supports_check_mode=True,
    )
    name, content, state, pbs_mom = (module.params[k] for k in ("name", "content", "state", "pbs_mom"))
    if name.startswith("PBS"):
        module.fail_json(msg=f"{name}: Version 2 file names starting with PBS are reserved by PBS")
    if state == "present" and not content.lstrip().startswith("$configversion 2"):
        module.fail_json(msg=f"{name}: the content must start with '$configversion 2'")

    rc, out, _ = module.run_command([pbs_mom, "-s", "show", name])
    current = out if rc == 0 else None
    wanted = content if state == "present" else None
    if (current is None and wanted is None) or (current is not None and wanted is not None and _same(current, wanted)):
        changed = False
    else:
        changed = True

    result = {
        "changed": changed,
        "vnodes_before": vnode_ids(current),
        "vnodes_after": vnode_ids(wanted) if changed else vnode_ids(current),
    }
    result["vnodes_removed"] = [v for v in result["vnodes_before"] if v not in result["vnodes_after"]]
    if module._diff:
        result["diff"] = {
            "before": current or "",
            "after": wanted or "",
            "before_header": f"pbs_mom -s show {name}",
            "after_header": f"pbs_mom -s show {name}",
        }
    if changed and not module.check_mode:
        if current is not None:
            rc, out, err = module.run_command([pbs_mom, "-s", "remove", name])
            if rc != 0:
                module.fail_json(msg=f"pbs_mom -s remove {name} failed (rc={rc}): {err.strip() or out.strip()}")
        if wanted is not None:
            path = os.path.join(module.tmpdir, "vnodedef")
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(wanted.rstrip("\n") + "\n")
            rc, out, err = module.run_command([pbs_mom, "-s", "insert", name, path])
            if rc != 0:
                module.fail_json(msg=f"pbs_mom -s insert {name} failed (rc={rc}): {err.strip() or out.strip()}")
    module.exit_json(**result)


if __name__ == "__main__":
    main()
