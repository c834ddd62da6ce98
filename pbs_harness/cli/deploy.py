"""`deploy`, `verify` and `up` (cluster up + deploy + verify), for one cluster or each of a fleet."""

from __future__ import annotations

import argparse
import threading
from collections.abc import Callable

from pbs_harness import errors
from pbs_harness.cli.common import progress

Say = Callable[[str], None]


def load_inventory(args: argparse.Namespace, *, hooks: bool = False, say: Say = progress):
    """The inventory, checked: its shape, OpenPBS here (local cluster), hook sources and configs, then the hosts."""
    from pbs_harness import hookconfig, inventory, project

    path = project.inventory_path(args.inventory)
    say(f"inventory {path}")
    inv = inventory.load(path)
    inventory.check_openpbs_local(inv)
    inventory.check_ssh_keys(inv)
    if hooks:
        hookconfig.check(inv)
    inventory.check_reachable(inv, timeout=args.connect_timeout)
    return inv


def cmd_deploy(args: argparse.Namespace, say: Say = progress, label: str = "") -> int:
    from pbs_harness import deploy, project

    inv = load_inventory(args, hooks=True, say=say)
    say(f"deploying OpenPBS to {len(inv.hosts)} hosts (server {inv.server.name})")
    extra = ["--check", "--diff"] if args.check else []
    if args.tags:
        extra += ["--tags", args.tags]
    # Each cluster of a fleet deploys at the same time as the others: logs of its own.
    log_dir = project.root() / "reports" / "deploy" / label if label else None
    run = deploy.run_playbook("site.yml", inv.path, extra, say, log_dir=log_dir)
    for recap in run.recap.values():
        say(f"  {recap.host:12} ok={recap.ok} changed={recap.changed} failed={recap.failed}")
    say(f"deploy finished in {run.seconds:.1f}s, changed={run.changed} (log: {run.log})")
    if args.check or args.no_verify:
        return errors.EXIT_OK
    return cmd_verify(args, inv, say=say, label=label)


def cmd_verify(args: argparse.Namespace, inv=None, say: Say = progress, label: str = "") -> int:
    from pbs_harness import verify

    inv = inv or load_inventory(args, say=say)
    say("verifying hosts (testinfra)")
    rc = verify.run(inv, junit_name=f"verify-junit-{label}.xml" if label else "verify-junit.xml")
    if rc in (2, -2, -15):  # pytest's "interrupted", or stopped by SIGINT/SIGTERM
        return errors.EXIT_INTERRUPTED
    say("verify: all checks passed" if rc == 0 else f"verify: checks failed (pytest rc={rc})")
    return errors.EXIT_OK if rc == 0 else errors.EXIT_FAILED


def cmd_up(args: argparse.Namespace) -> int:
    from pbs_harness.cli.local import cmd_cluster_up

    args.deploys = True
    cmd_cluster_up(args)
    clusters = getattr(args, "fleet_inventories", [("", None)])
    if len(clusters) == 1:
        # A written inventory is the one that knows this cluster's names: deploy through it.
        args.inventory = args.inventory or clusters[0][1]
        return cmd_deploy(args)
    return deploy_fleet(args, clusters)


def deploy_fleet(args: argparse.Namespace, clusters: list[tuple[str, str | None]]) -> int:
    """Deploy every cluster (name, inventory) at once: most of a deploy waits on SSH round trips.
    Returns the first failed cluster's code."""
    from pbs_harness.errors import HarnessError

    codes: dict[str, int] = {}

    def one(name: str, inventory: str | None) -> None:
        def say(text: str) -> None:
            progress(f"[{name}] {text}")

        mine = argparse.Namespace(**{**vars(args), "inventory": inventory})
        try:
            codes[name] = cmd_deploy(mine, say=say, label=name)
        except HarnessError as exc:
            say(f"error: {exc}")
            codes[name] = exc.exit_code

    threads = [threading.Thread(target=one, args=pair, daemon=True) for pair in clusters]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    failed = {name: code for name, code in codes.items() if code != errors.EXIT_OK}
    if failed:
        progress("deploy failed on: " + ", ".join(f"{name} (exit {code})" for name, code in failed.items()))
        return next(iter(failed.values()))
    progress(f"{len(clusters)} clusters deployed and verified: " + ", ".join(name for name, _ in clusters))
    return errors.EXIT_OK
