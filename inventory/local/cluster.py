#!/usr/bin/env python3
"""Ansible inventory script: the hosts of the local cluster (`pbs-harness cluster up`).

Groups: pbs_server (first host), pbs_moms (every host, the server host too), pbs_clients.
Connection: root over SSH with the harness key; host keys checked against the harness's
known_hosts. Variables live in group_vars/ beside this script.
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from pbs_harness.localcluster.inventory import inventory

if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--host":
        print("{}")
    else:
        print(json.dumps(inventory(), indent=2))
