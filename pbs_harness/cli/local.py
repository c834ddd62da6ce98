"""Local-cluster verbs: `cluster up|down|status|ssh` and the host lifecycle verbs, for one cluster or
a fleet of them (`--clusters N`, pbs_harness.localcluster.fleet)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from pbs_harness.cli.common import check_state_dir, progress, require_root, use_state_dir
from pbs_harness.common import errors
from pbs_harness.common.errors import UsageError


def cmd_cluster_up(args: argparse.Namespace) -> int:
    from pbs_harness.localcluster import bring_up

    wanted = planned(args)
    bring_up.up(wanted, progress)
    return errors.EXIT_OK


def planned(args: argparse.Namespace, deploys: bool = False):
    """What `cluster up` (and `up`, which then `deploys` to it) brings up: the line's values judged by
    localcluster/bring_up.py before the root and state-directory checks, then those checks."""
    from pbs_harness.localcluster import bring_up

    use_state_dir(args)
    wanted = bring_up.plan(
        subnet=args.subnet,
        hosts=args.hosts,
        prefix=args.name_prefix,
        login_user=args.login_user,
        flavour=args.flavour,
        image=args.image,
        clusters=getattr(args, "clusters", None),
        openpbs=args.openpbs,
        write_inventory=args.write_inventory,
        deploys=deploys,
        report=progress,
    )
    require_root()
    check_state_dir()
    return wanted


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
