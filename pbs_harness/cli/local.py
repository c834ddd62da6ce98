"""Local-cluster verbs: `cluster up|down|status|ssh` and the host lifecycle verbs, for one cluster or
a fleet of them (`--clusters N`, pbs_harness.localcluster.fleet)."""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from pbs_harness.cli.common import check_state_dir, progress, require_root, use_state_dir
from pbs_harness.common import errors
from pbs_harness.common.errors import PreconditionError, UsageError


def _flavour(args: argparse.Namespace) -> str:
    """--flavour, else the flavour of the cluster recorded in the state directory (a rerun repairs it as it
    is), else system hosts, as ./acceptance makes (issue #34: up used to default to namespace hosts)."""
    from pbs_harness.common.errors import HarnessError
    from pbs_harness.localcluster import state
    from pbs_harness.localcluster.spec import CLI_DEFAULT_FLAVOUR

    if args.flavour:
        return args.flavour
    try:
        old = state.load()
    except HarnessError:  # an unreadable record is reported by the state-directory check
        old = None
    return old.spec.flavour if old is not None else CLI_DEFAULT_FLAVOUR


def _spec(args: argparse.Namespace):
    from pbs_harness.localcluster.spec import ClusterSpec

    args.flavour = _flavour(args)
    try:
        return ClusterSpec(
            subnet=str(args.subnet),
            host_count=args.hosts,
            prefix=args.name_prefix,
            login_user=args.login_user,
            flavour=args.flavour,
            image=args.image,
        )
    except PreconditionError as exc:  # values the argument types cannot judge alone (subnet size for --hosts)
        raise UsageError(exc.message, exc.hint) from exc


def _inventory_to_write(args: argparse.Namespace) -> str | None:
    """Where `up` writes the cluster's inventory: --write-inventory, else, for a cluster outside the
    default state directory (which inventory/local does not read), <state dir>/inventory."""
    from pbs_harness.localcluster import state

    if args.write_inventory:
        return args.write_inventory
    outside = state.state_dir() != state.state_dir(state.DEFAULT_STATE_DIR)
    if outside and getattr(args, "deploys", False) and not getattr(args, "inventory", None):
        return str(state.state_dir() / "inventory")
    return None


def cmd_cluster_up(args: argparse.Namespace) -> int:
    from pbs_harness.common import project
    from pbs_harness.deploy import packages
    from pbs_harness.localcluster import cluster_kind, provider, written_inventory

    use_state_dir(args)
    if args.write_inventory:  # a path that cannot be written is refused before anything is looked at or made
        written_inventory.check_target(Path(args.write_inventory).resolve())
    if args.subnet == "auto":
        from pbs_harness.localcluster import fleet
        from pbs_harness.localcluster.spec import ClusterSpec

        base = ClusterSpec(host_count=args.hosts, prefix=args.name_prefix, login_user=args.login_user)
        args.subnet, args.clusters = fleet.auto_subnet(base, args.clusters, progress)
    spec = _spec(args)
    packages.check_wanted(spec.flavour, args.openpbs)  # a bad command line, said before the root check
    require_root()
    check_state_dir()
    found = openpbs_packages(args, spec)
    if getattr(args, "clusters", None) not in (None, 1):
        from pbs_harness.localcluster import fleet

        given = Path(args.write_inventory) if args.write_inventory else None
        args.fleet_inventories = fleet.up(spec, args.clusters, found, progress, write_inventory=given)
        return errors.EXIT_OK
    target = _inventory_to_write(args)
    if target:
        written_inventory.check_target(Path(target).resolve())  # refuse before anything is created
    start = time.monotonic()
    st = provider.up(spec, progress, packages=found)
    progress(f"local cluster up: {cluster_kind.describe(st.spec)} in {time.monotonic() - start:.1f}s")
    if target:
        hosts = written_inventory.write(Path(target), None, project.root())
        args.written_inventory = str(hosts.parent)
        progress(f"inventory written: {hosts.parent} (use it with -i {hosts.parent})")
    args.fleet_inventories = [(spec.prefix, getattr(args, "written_inventory", None))]
    return errors.EXIT_OK


def openpbs_packages(args: argparse.Namespace, spec) -> Path | None:
    """System hosts: the packages --openpbs names, or those the running cluster recorded (deploy/packages.py)."""
    from pbs_harness.deploy import packages
    from pbs_harness.localcluster import state

    old = state.load()
    return packages.for_cluster(spec.flavour, spec.image, args.openpbs, old.packages_dir if old else None, progress)


def cmd_cluster_down(args: argparse.Namespace) -> int:
    from pbs_harness.localcluster import fleet, state

    use_state_dir(args)
    require_root()
    check_state_dir()
    if not fleet.down(progress):
        progress(f"no local cluster was up in {state.state_dir()}; nothing to remove")
    return errors.EXIT_OK


def cmd_cache(args: argparse.Namespace) -> int:
    """The system hosts' cache: each image layer and package set with its size and status; --prune
    removes the stale ones (made by older recipes, used by no recorded cluster)."""
    from pbs_harness.deploy import package_transfer
    from pbs_harness.localcluster.containers import image_cache, images

    images.check_cache_dir(writable=bool(args.prune or args.import_file))
    if args.export or args.import_file:
        return _cache_transfer(args, package_transfer)
    found = image_cache.entries()
    print(f"cache {images.cache_dir()} (${images.CACHE_ENV} moves it)")
    if not found:
        print("  empty: system hosts make their images and packages on their first up")
    for e in found:
        print(f"  {e.kind:8} {e.path.name:50} {e.size / 2**20:7.0f} MiB  {e.status:7}  {e.about}")
    stale = [e for e in found if e.status == "stale"]
    mib = sum(e.size for e in stale) / 2**20
    if not args.prune:
        print(f"{len(stale)} stale ({mib:.0f} MiB)" + (": pbs-harness cache --prune removes them" if stale else ""))
        return errors.EXIT_OK
    require_root()
    removed = image_cache.prune(found)
    print(f"removed {len(removed)} stale ({mib:.0f} MiB)")
    return errors.EXIT_OK


def _cache_transfer(args: argparse.Namespace, transfer) -> int:
    """`cache --export FILE [--packages NAME]` and `cache --import FILE`: a package set out of or into the cache."""
    if args.export and args.import_file:
        raise UsageError("--export and --import are two runs", "give one of them")
    if args.export:
        folder = transfer.choose(args.packages)
        size = transfer.export(folder, Path(args.export))
        print(f"exported package set {folder.name} to {args.export} ({size / 2**20:.0f} MiB)")
        print(f"on the other machine: pbs-harness cache --import {Path(args.export).name}")
        return errors.EXIT_OK
    require_root()
    folder, added = transfer.import_(Path(args.import_file))
    print(f"{'imported' if added else 'already in the cache:'} package set {folder.name} ({folder})")
    return errors.EXIT_OK


def cmd_cluster_status(args: argparse.Namespace) -> int:
    from pbs_harness.localcluster import fleet, provider

    use_state_dir(args)
    require_root()
    check_state_dir()
    members = fleet.recorded()
    ok = True
    for member in members or [None]:
        if len(members) > 1:
            assert member is not None
            print(fleet.describe(member))
        rows = provider.status(member.root if member else None)
        for row in rows:
            print(f"{row.name:10} {row.ip:15} {row.summary}")
        ok = ok and all(r.ssh for r in rows)
    return errors.EXIT_OK if ok else errors.EXIT_FAILED


def cmd_cluster_ssh(args: argparse.Namespace) -> int:
    from pbs_harness.localcluster import provider, sshkeys

    args.remote_command = _leading_state_dir(args, list(args.remote_command))
    use_state_dir(args)
    require_root()
    check_state_dir()
    host = provider.host(args.host)
    argv = ["ssh", "-F", str(sshkeys.ssh_config()), host.name, *args.remote_command]
    os.execvp("ssh", argv)  # noqa: S606 - replaces this process with the user's ssh session
    return errors.EXIT_FAILED  # not reached


def _leading_state_dir(args: argparse.Namespace, command: list[str]) -> list[str]:
    """`cluster ssh HOST --state-dir DIR [command]`: a --state-dir right after HOST is the harness's option,
    not the start of the remote command (what follows it is the command)."""
    while command and command[0].split("=", 1)[0] == "--state-dir":
        if "=" in command[0]:
            args.state_dir = command.pop(0).split("=", 1)[1]
        elif len(command) > 1:
            args.state_dir = command[1]
            del command[:2]
        else:
            raise UsageError("cluster ssh: --state-dir needs a directory", "cluster ssh HOST --state-dir DIR [command]")
    return command


# `cluster heal HOST` undoes a partition: the backend calls that reconnecting.
VERB_METHODS = {"heal": "reconnect"}


def lifecycle(verb: str):
    def handler(args: argparse.Namespace) -> int:
        from pbs_harness.localcluster import provider

        use_state_dir(args)
        require_root()
        check_state_dir()
        host = provider.host(args.host)
        getattr(host, VERB_METHODS.get(verb, verb))()
        progress(f"{verb} {host.name}: done")
        return errors.EXIT_OK

    return handler
