"""Deploy OpenPBS onto a cluster's hosts and verify them, for one cluster or each of a fleet: the service
behind `deploy`, `verify`, `up` (`up_local`: a local cluster or fleet brought up, then deployed; on cloud
hosts the deploy is the work hosts/cloud/lifecycle.py's `up_for_user` runs) and `test --cloud`.

Issue #31: this was cli/deploy.py and cli/up.py, so `up`'s and a deploy's data went back to cli/ between
the bring-up, the inventory's checks, the playbook and the verify; the command line now parses its options
into `Options` and makes one call. Each function says what it does through `say` (one line a call).
"""

from __future__ import annotations

import os
import re
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass

from pbs_harness.common import errors, project
from pbs_harness.common.errors import HarnessError
from pbs_harness.deploy import hookconfig
from pbs_harness.deploy import playbook as deploy
from pbs_harness.deploy import verify as checks
from pbs_harness.localcluster import bring_up
from pbs_harness.remote import inventory as inventories

Say = Callable[[str], None]
INVENTORY_ENV = "PBS_HARNESS_INVENTORY"  # the hosts of deploy, verify and test when no -i names them


@dataclass(frozen=True)
class Options:
    """A deploy's options (`deploy`, `up`, `test --cloud`)."""

    connect_timeout: float  # seconds the hosts' SSH ports have to answer
    check: bool = False  # ansible's --check --diff: nothing changes, and nothing is verified
    tags: str | None = None  # only the roles' tasks of these tags
    idempotence: bool = False  # deploy a second time: every host must report changed=0
    verify: bool = True  # run the testinfra checks after the deploy


def load_inventory(given: str | None, connect_timeout: float, *, hooks: bool = False, say: Say):
    """The inventory `given` (None: PBS_HARNESS_INVENTORY or the default), checked: its shape, OpenPBS here
    (local cluster), hook sources and configs, then that the hosts answer within `connect_timeout` s."""
    # As for `test`: the variable names the hosts when -i does not (deploy used to ignore it and deploy to
    # the local cluster, whose inventory is the default).
    from_env = not given and bool(os.environ.get(INVENTORY_ENV))
    path = project.inventory_path(os.environ[INVENTORY_ENV] if from_env else given)
    say(f"inventory {path}" + (f" (from {INVENTORY_ENV})" if from_env else ""))
    inv = inventories.load(path)
    inventories.check_openpbs_local(inv)
    inventories.check_ssh_keys(inv)
    if hooks:
        hookconfig.check(inv)
    inventories.check_reachable(inv, timeout=connect_timeout)
    return inv


def deploy_cluster(inventory: str | None, options: Options, say: Say, label: str = "") -> int:
    """Deploy (then verify) the cluster of `inventory` with `options`; `label` names a fleet member."""
    inv = load_inventory(inventory, options.connect_timeout, hooks=True, say=say)
    say(f"deploying OpenPBS to {len(inv.hosts)} hosts (server {inv.server.name})")
    extra = ["--check", "--diff"] if options.check else []
    if options.tags:
        extra += ["--tags", options.tags]
    # Each cluster of a fleet deploys at the same time as the others: logs of its own.
    log_dir = project.root() / "reports" / "deploy" / label if label else None
    run = deploy.run_playbook("site.yml", inv.path, extra, say, log_dir=log_dir)
    for recap in run.recap.values():
        say(f"  {recap.host:12} ok={recap.ok} changed={recap.changed} failed={recap.failed}")
    say(f"deploy finished in {run.seconds:.1f}s, changed={run.changed} (log: {run.log})")
    if options.idempotence and not options.check:
        rc = idempotence_gate(inv, log_dir, say)
        if rc != errors.EXIT_OK:
            return rc
    if options.check or not options.verify:
        return errors.EXIT_OK
    return verify_hosts(inv, say, label)


def idempotence_gate(inv, log_dir, say: Say) -> int:
    """Deploy the just-deployed cluster again: every host must report changed=0. A task that changes
    a converged host is a role defect (it would restart a daemon or rewrite a file on every deploy),
    so the gate fails and names each host's changing tasks; nothing is retried."""
    say("idempotence gate: deploying again, every host must report changed=0")
    # Its own log beside the first deploy's (which stays the one to read for what the deploy did).
    second_dir = (log_dir or project.root() / "reports") / "second-deploy"
    run = deploy.run_playbook("site.yml", inv.path, (), say, log_dir=second_dir)
    changed = {host: recap.changed for host, recap in run.recap.items() if recap.changed}
    if not changed:
        say(f"idempotence gate: second deploy in {run.seconds:.1f}s, changed=0 on all {len(run.recap)} hosts")
        return errors.EXIT_OK
    for host, count in sorted(changed.items()):
        tasks = "; ".join(run.changes.get(host, [])) or "see the log"
        say(f"idempotence gate: {host} changed={count}: {tasks}")
    say(f"idempotence gate FAILED: a second deploy changed {len(changed)} host(s) (log: {run.log})")
    return errors.EXIT_FAILED


def verify(inventory: str | None, connect_timeout: float, say: Say) -> int:
    """`verify`: the inventory's hosts checked (load_inventory), then the testinfra checks."""
    return verify_hosts(load_inventory(inventory, connect_timeout, say=say), say)


def verify_hosts(inv, say: Say, label: str = "") -> int:
    """The testinfra checks of the deployed hosts of `inv`; `label` names a fleet member's junit file."""
    say("verifying hosts (testinfra)")
    rc = checks.run(inv, junit_name=f"verify-junit-{label}.xml" if label else "verify-junit.xml")
    if rc in (2, -2, -15):  # pytest's "interrupted", or stopped by SIGINT/SIGTERM
        return errors.EXIT_INTERRUPTED
    say("verify: all checks passed" if rc == 0 else f"verify: checks failed (pytest rc={rc})")
    return errors.EXIT_OK if rc == 0 else errors.EXIT_FAILED


def up_local(wanted: bring_up.Plan, options: Options, say: Say) -> int:
    """`up` on this machine: the planned local cluster or fleet brought up (after the command line's root and
    state-directory checks), then each deployed and verified."""
    clusters = bring_up.up(wanted, say)
    return deploy_clusters(clusters, options, say)


def deploy_clusters(clusters: list[tuple[str, str | None]], options: Options, say: Say) -> int:
    """Deploy (then verify) the clusters `up` brought up, each (name, written inventory or None for the
    default one): one cluster, or a fleet (deploy_fleet). A written inventory is the one that knows the
    cluster's names: never PBS_HARNESS_INVENTORY's hosts, since `up` deploys to the cluster it brought up."""
    if len(clusters) == 1:
        return deploy_cluster(clusters[0][1] or str(project.inventory_path(None)), options, say)
    return deploy_fleet(clusters, options, say)


def deploy_fleet(clusters: list[tuple[str, str | None]], options: Options, say: Say) -> int:
    """Deploy every cluster (name, inventory) at once: most of a deploy waits on SSH round trips.
    Where the hosts share this machine's /etc (namespace hosts), the first cluster deploys alone, then
    the others at once. Returns the first failed cluster's code; the closing line repeats each failed
    cluster's reasons, since a log's tail (CI keeps only that) is where a reader looks."""
    codes: dict[str, int] = {}
    reasons: dict[str, list[str]] = {}

    def one(name: str, inventory: str | None) -> None:
        def say_of(text: str) -> None:
            if is_failure_line(text):
                reasons.setdefault(name, []).append(text.strip())
            say(f"[{name}] {text}")

        # Failed until it returns: a deploy that raised anything else (a bug of ours, an OSError) used to be
        # missing from codes, so the fleet said it was deployed and verified.
        codes[name] = errors.EXIT_FAILED
        try:
            codes[name] = deploy_cluster(inventory or str(project.inventory_path(None)), options, say_of, label=name)
        except HarnessError as exc:
            # Line by line: the message, then its fix (the log's path), each a reason of its own, so that
            # cutting a long message in the closing lines never cuts the log's path.
            for line in [f"error: {exc.message}", *([f"fix: {exc.hint}"] if exc.hint else [])]:
                say_of(line)
            codes[name] = exc.exit_code
        except Exception as exc:  # noqa: BLE001 - a bug of ours: its traceback, and the cluster failed
            traceback.print_exc()
            say_of(f"error: the deploy stopped on an unexpected {type(exc).__name__}: {exc}")

    rest = list(clusters)
    if len(rest) > 1 and shares_etc(rest[0][1]):
        # Every cluster's playbook would create the same accounts in the one /etc/passwd at once, and
        # useradd refuses while another holds its lock (throttle orders one playbook's hosts, not
        # several playbooks). The first cluster makes them; the others then find them made.
        say(f"the hosts share this machine's /etc: {rest[0][0]} deploys first, then the other {len(rest) - 1}")
        one(*rest.pop(0))
    threads = [threading.Thread(target=one, args=pair, daemon=True) for pair in rest]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    failed = {name: code for name, code in codes.items() if code != errors.EXIT_OK}
    if failed:
        say("deploy failed on: " + ", ".join(f"{name} (exit {code})" for name, code in failed.items()))
        for name in failed:
            for line in reasons.get(name, ["no failure line was printed: see its log under reports/deploy/"])[-6:]:
                say(f"  {name}: {line[:400]}")
        return next(iter(failed.values()))
    say(f"{len(clusters)} clusters deployed and verified: " + ", ".join(name for name, _ in clusters))
    return errors.EXIT_OK


# What a cluster's deploy says when it fails: ansible's failed tasks (run_playbook passes them on), the
# harness's errors, the idempotence gate's changed hosts and verdict, verify's verdict.
FAILURE_LINE = re.compile(
    r"^\s*(fatal:|failed:|\[ERROR\]:|error:|fix:|idempotence gate(?: FAILED|: \S+ changed=)|verify: checks failed)"
    r"|UNREACHABLE!"
)


def is_failure_line(text: str) -> bool:
    return bool(FAILURE_LINE.search(text))


def shares_etc(inventory: str | None) -> bool:
    """Whether the inventory's hosts share this machine's /etc (the role's openpbs_common_shared_etc)."""
    try:
        inv = inventories.load(project.inventory_path(inventory))
    except HarnessError:
        return False  # deploy_cluster reports a bad inventory itself
    return inv.var("openpbs_common_shared_etc", False) is True
