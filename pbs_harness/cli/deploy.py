"""`deploy` and `verify` on the command line: the options parsed into the deploy service's, then one call
of it (pbs_harness/deploy/cluster.py, which `up` and `test --cloud` deploy through too)."""

from __future__ import annotations

import argparse

from pbs_harness.cli.common import progress


def options_of(args: argparse.Namespace):
    """The deploy's options from a verb's parsed line (`deploy`, `up`, `test --cloud`)."""
    from pbs_harness.deploy.cluster import Options

    return Options(
        connect_timeout=args.connect_timeout,
        check=args.check,
        tags=args.tags,
        idempotence=getattr(args, "idempotence", False),
        verify=not args.no_verify,
    )


def cmd_deploy(args: argparse.Namespace) -> int:
    from pbs_harness.deploy import cluster

    return cluster.deploy_cluster(args.inventory, options_of(args), progress)


def cmd_verify(args: argparse.Namespace) -> int:
    from pbs_harness.deploy import cluster

    return cluster.verify(args.inventory, args.connect_timeout, progress)
