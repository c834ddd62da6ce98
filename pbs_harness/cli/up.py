"""`up`: bring up a cluster (local, a fleet of local ones, or --cloud) and deploy and verify OpenPBS on it.
The line's values judged here and by the services, then one call: pbs_harness/deploy/cluster.py's `up_local`,
or (--cloud, cli/cloud.py) hosts/cloud/lifecycle.py's `up_for_user`."""

from __future__ import annotations

import argparse

from pbs_harness.cli.cloud import cmd_cloud_up
from pbs_harness.cli.common import progress
from pbs_harness.cli.deploy import options_of
from pbs_harness.cli.local import planned
from pbs_harness.common import errors


def cmd_up(args: argparse.Namespace) -> int:
    return cmd_cloud_up(args) if args.cloud else cmd_local_up(args)


def cmd_local_up(args: argparse.Namespace) -> int:
    """`up` on this machine: the line judged (here, then by localcluster/bring_up.py's plan before the root
    and state-directory checks), then the cluster or fleet brought up, deployed and verified."""
    from pbs_harness.localcluster.spec import IMAGES

    if args.image not in IMAGES:
        raise errors.UsageError(f"--image {args.image} is a cloud image", f"give --cloud with it, or one of {IMAGES}")
    if args.inventory:
        # `up -i INV` used to bring up a local cluster, then deploy to INV: refused before anything is made.
        raise errors.UsageError(
            f"up brings up a local cluster and deploys to it; -i {args.inventory} names other hosts",
            f"deploy to those hosts with `pbs-harness deploy -i {args.inventory}`, or leave -i out of up",
        )
    from pbs_harness.deploy import cluster

    options = options_of(args)
    wanted = planned(args, deploys=True)
    return cluster.up_local(wanted, options, progress)
