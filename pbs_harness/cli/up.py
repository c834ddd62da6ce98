"""`up`: bring up a cluster (local, a fleet of local ones, or --cloud) and deploy and verify OpenPBS on it.

Apart from cli/deploy.py, which cli/cloud.py imports for its deploy: `up` reaches both (issue #31: no
import runs in a circle, even lazily).
"""

from __future__ import annotations

import argparse

from pbs_harness.cli.cloud import cmd_cloud_up
from pbs_harness.cli.deploy import deploy_cluster, deploy_fleet
from pbs_harness.cli.local import cmd_cluster_up
from pbs_harness.common import errors, project


def cmd_up(args: argparse.Namespace) -> int:
    if args.cloud:
        return cmd_cloud_up(args)
    from pbs_harness.localcluster.spec import IMAGES

    if args.image not in IMAGES:
        raise errors.UsageError(f"--image {args.image} is a cloud image", f"give --cloud with it, or one of {IMAGES}")
    if args.inventory:
        # `up -i INV` used to bring up a local cluster, then deploy to INV: refused before anything is made.
        raise errors.UsageError(
            f"up brings up a local cluster and deploys to it; -i {args.inventory} names other hosts",
            f"deploy to those hosts with `pbs-harness deploy -i {args.inventory}`, or leave -i out of up",
        )
    args.deploys = True
    cmd_cluster_up(args)
    clusters = getattr(args, "fleet_inventories", [("", None)])
    if len(clusters) == 1:
        # A written inventory is the one that knows this cluster's names: deploy through it. Never
        # PBS_HARNESS_INVENTORY's hosts: up deploys to the cluster it brought up.
        return deploy_cluster(args, clusters[0][1] or str(project.inventory_path(None)))
    return deploy_fleet(args, clusters)
