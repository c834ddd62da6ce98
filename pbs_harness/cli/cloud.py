"""Cloud runs on the command line: `up --cloud KIND ...`, `down --run RUN`, `sweep`. Only parsing and
printing: the work is pbs_harness.hosts.cloud.lifecycle's, the cloud's own part its kind of host's."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from pbs_harness.cli.common import progress
from pbs_harness.common import errors


class ImageChoices(tuple):
    """argparse choices for `up --image`: the local images, or (with --cloud) an image id, which the cloud's
    kind judges before any API call."""

    def __contains__(self, value: object) -> bool:
        if super().__contains__(value):
            return True
        if not isinstance(value, str):
            return False
        # Only for a value that is not a local image: lifecycle imports the third-party modules (paramiko),
        # and ./acceptance judges `up --image debian-12 ...` with this machine's bare Python before any venv.
        from pbs_harness.hosts.cloud import lifecycle

        return lifecycle.is_cloud_image(value)


def add_up_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("cloud hosts (docs/cloud.md)")
    g.add_argument("--cloud", metavar="KIND", help="create the hosts in a cloud instead of on this machine: aws")
    g.add_argument("--region", help="the cloud's region (default $AWS_REGION, $AWS_DEFAULT_REGION)")
    g.add_argument("--instance-type", metavar="T", help="instance type (aws default t3.medium)")
    g.add_argument("--ttl", default="2h", help="the run's lifetime: tags, and each VM powers off at it (default 2h)")
    g.add_argument(
        "--keep-on-failure", action="store_true", help="keep the VMs when up fails (prints how to remove them)"
    )
    g.add_argument(
        "--provision-only",
        action="store_true",
        help="create, tag and write the inventory, then stop before any SSH (required at a stand-in endpoint)",
    )
    g.add_argument("--owner", help="owner tag (default user@machine): sweep removes only its owner's runs")
    g.add_argument(
        "--run-id",
        metavar="ID",
        help="the run's id, [a-z0-9-]{6,40} (default PREFIX-date-time-random; CI: written down first)",
    )
    g.add_argument(
        "--ssh-from", metavar="CIDR", default="0.0.0.0/0", help="who may reach the VMs' port 22 (default anyone)"
    )


# `test --cloud`'s own options (cli/argv.py keeps them from pytest): name -> takes a value.
TEST_OPTIONS = {
    "--cloud": True, "--region": True, "--hosts": True, "--instance-type": True, "--image": True, "--ttl": True,
    "--owner": True, "--run-id": True, "--ssh-from": True, "--name-prefix": True, "--connect-timeout": True,
    "--keep-on-failure": False,
}  # fmt: skip


def add_test_options(p: argparse.ArgumentParser, host_count, default_hosts: int, prefix: str, seconds) -> None:
    """`test --cloud KIND ...`: the run is created, deployed, verified, tested and always removed."""
    g = p.add_argument_group(
        "a whole run on cloud hosts: create, deploy, verify, test, ALWAYS remove (docs/cloud.md#test---cloud)"
    )
    g.add_argument("--cloud", metavar="KIND", help="create the hosts in this cloud for this run only: aws")
    g.add_argument("--region", help="the cloud's region (default $AWS_REGION, $AWS_DEFAULT_REGION)")
    g.add_argument("--hosts", type=host_count, default=default_hosts, help=f"instances (default {default_hosts})")
    g.add_argument("--instance-type", metavar="T", help="instance type (aws default t3.medium)")
    g.add_argument("--image", metavar="AMI", help="an image id, or debian-12 (the default)")
    g.add_argument("--ttl", default="2h", help="the run's lifetime: tags, and each VM powers off at it (default 2h)")
    g.add_argument(
        "--keep-on-failure", action="store_true", help="keep the VMs when the run fails (prints how to remove them)"
    )
    g.add_argument("--owner", help="owner tag (default user@machine): sweep removes only its owner's runs")
    g.add_argument("--run-id", metavar="ID", help="the run's id, [a-z0-9-]{6,40} (default PREFIX-date-time-random)")
    g.add_argument("--ssh-from", metavar="CIDR", default="0.0.0.0/0", help="who may reach the VMs' port 22")
    g.add_argument("--name-prefix", default=prefix, metavar="PREFIX", help=f"host names PREFIX01.. (default {prefix})")
    g.add_argument(
        "--connect-timeout", type=seconds, default=10, help="seconds the hosts' SSH ports have to answer (default 10)"
    )
    p.set_defaults(check=False, tags=None, no_verify=False, idempotence=False)


def add_down_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("cloud runs (docs/cloud.md)")
    g.add_argument(
        "--run", metavar="RUN_ID", help="remove this cloud run (found by its tags) instead of a local cluster"
    )
    g.add_argument("--cloud", metavar="KIND", help="with --run and no record here: the run's cloud")
    g.add_argument("--region", help="with --run and no record here: the run's region")
    g.add_argument("--owner", help="with --run and no record here: the run's owner tag (default user@machine)")


def add_sweep(p: argparse.ArgumentParser) -> None:
    """`sweep`'s options, on the verb's parser."""
    from pbs_harness.hosts.cloud import records

    p.add_argument("--cloud", metavar="KIND", help="the cloud (default: the registry's one cloud kind)")
    p.add_argument("--region", help="the region (default $AWS_REGION, $AWS_DEFAULT_REGION)")
    p.add_argument("--older-than", metavar="AGE", help="also remove runs created longer ago than AGE (e.g. 3h)")
    p.add_argument("--owner", help="owner tag to sweep (default user@machine)")
    p.add_argument("--dry-run", action="store_true", help="list what would be removed, remove nothing")
    p.add_argument(
        "--state-dir", help=f"where this machine keeps its cloud runs' records (default ${records.ROOT_ENV}, "
        f"{records.DEFAULT_ROOT})"
    )  # fmt: skip
    p.set_defaults(func=cmd_sweep)


def _region(args: argparse.Namespace, cloud: str) -> str:
    from pbs_harness.hosts.cloud import lifecycle

    return lifecycle.region_of(cloud, args.region, os.environ)


def _state_root(args: argparse.Namespace) -> Path:
    from pbs_harness.hosts.cloud import records

    return records.root(getattr(args, "state_dir", None))


def _request(args: argparse.Namespace, provision_only: bool):
    """The run's request from the line (hosts/cloud/lifecycle.py judges it before any API call)."""
    from pbs_harness.hosts.cloud import lifecycle

    return lifecycle.request_of(
        cloud=args.cloud,
        region=args.region,
        hosts=args.hosts,
        instance_type=args.instance_type,
        image=args.image,
        ttl=args.ttl,
        name_prefix=args.name_prefix,
        owner=args.owner,
        ssh_from=args.ssh_from,
        keep_on_failure=args.keep_on_failure,
        provision_only=provision_only,
        run_id=args.run_id,
        environ=os.environ,
    )


def cmd_cloud_up(args: argparse.Namespace) -> int:
    """`up --cloud KIND`: the run's request and the deploy's options from the line; hosts/cloud/lifecycle.py's
    `up_for_user` creates the run and deploys and verifies it (pbs_harness/deploy/cluster.py)."""
    from pbs_harness.cli.deploy import options_of
    from pbs_harness.deploy import cluster
    from pbs_harness.hosts.cloud import lifecycle, records

    options = options_of(args)
    req = _request(args, args.provision_only)
    root = records.root(getattr(args, "state_dir", None))
    return lifecycle.up_for_user(
        req, root, progress, lambda rec: cluster.deploy_cluster(str(rec.inventory), options, progress)
    )


def cmd_cloud_test(args: argparse.Namespace, run_suites) -> int:
    """`test --cloud KIND`: create the run, deploy and verify, run the suites on it (`run_suites(args,
    inventory)`), and always remove it (lifecycle.session), unless it failed and --keep-on-failure."""
    from pbs_harness.cli.deploy import options_of
    from pbs_harness.deploy import cluster
    from pbs_harness.hosts.cloud import lifecycle

    options = options_of(args)
    req = _request(args, provision_only=False)
    root = _state_root(args)

    def work(rec) -> int:
        rc = cluster.deploy_cluster(str(rec.inventory), options, progress)
        if rc != errors.EXIT_OK:
            return rc
        return run_suites(args, str(rec.inventory))

    return lifecycle.session(req, root, progress, work)


def cmd_cloud_down(args: argparse.Namespace) -> int:
    from pbs_harness.hosts.cloud import lifecycle

    lifecycle.down(
        _state_root(args), args.run, progress, region=args.region or "", owner=args.owner or "", cloud=args.cloud or ""
    )
    return errors.EXIT_OK


def cmd_sweep(args: argparse.Namespace) -> int:
    from pbs_harness.hosts.cloud import lifecycle, request

    older = request.parse_duration(args.older_than, "--older-than") if args.older_than else None
    cloud = lifecycle.cloud_name(args.cloud)
    lifecycle.sweep(
        cloud,
        _region(args, cloud),
        args.owner or request.default_owner(),
        _state_root(args),
        progress,
        older_than=older,
        dry_run=args.dry_run,
    )
    return errors.EXIT_OK
