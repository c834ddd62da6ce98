"""Which local host plays which part in the suites, by position, so host names stay free.

The local inventory (inventory/local/cluster.py) gives these variables to its groups, exactly as
a hand-written inventory would in its group_vars; pbs_harness.suite.topology reads the parts back:
  last host (not the server)      a multi-vnode host: openpbs_mom_vnode_layouts gives it a natural
                                  vnode and MULTI_VNODES more, 1 cpu / 1gb each (PTL's hostB layout)
  second-to-last (3+ hosts)       offers the custom resource `localssd` (openpbs_server_node_attributes)
"""

from __future__ import annotations

from typing import Any

MULTI_VNODES = 4
VNODE_SIZE = {"ncpus": 1, "mem": "1gb"}
SSD_RESOURCE = "localssd"


def multi_vnode_layout(host: str, count: int = MULTI_VNODES) -> dict[str, Any]:
    """The layout the openpbs_mom role deploys: natural vnode plus HOST[0..count-1]."""
    return {"natural": dict(VNODE_SIZE), "vnodes": {f"{host}[{i}]": dict(VNODE_SIZE) for i in range(count)}}


def group_vars(names: list[str]) -> dict[str, dict[str, Any]]:
    """Inventory group -> role variables for a local cluster whose hosts are `names` (server first)."""
    layouts: dict[str, Any] = {}
    node_attributes: dict[str, Any] = {}
    if len(names) >= 2:
        layouts[names[-1]] = multi_vnode_layout(names[-1])
    if len(names) >= 3:
        node_attributes[names[-2]] = {f"resources_available.{SSD_RESOURCE}": 1}
    return {
        "pbs_moms": {"openpbs_mom_vnode_layouts": layouts},
        "pbs_server": {"openpbs_server_node_attributes": node_attributes},
    }
