"""`up --clusters N` / `cluster up --clusters N`: N local clusters side by side (localcluster/fleet.py).

Everything is checked before anything is created: the machine's memory for the clusters to add,
each new member's names and subnet against the other clusters and this machine's networks (with a
base subnet whose N networks are free when one is taken), and the running members' owner and shape.
"""

from __future__ import annotations

import argparse
import ipaddress
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from pbs_harness.cli.common import progress
from pbs_harness.common import errors, project
from pbs_harness.common.errors import PreconditionError
from pbs_harness.localcluster import capacity, fleet, network, preflight, provider, registry, state, written_inventory
from pbs_harness.localcluster.spec import ClusterSpec


def measured_clusters() -> dict[str, float]:
    """MiB used by the hosts of every running local cluster of this machine, by label."""
    out: dict[str, float] = {}
    for known in registry.known():
        st = state.load(Path(known.state_dir)) if known.state_dir else None
        mib = capacity.measure_cluster_mib(st.spec) if st else None
        if st is not None and mib:
            out[f"{st.spec.hosts[0].name}.."] = mib
    return out


def resolve_count(requested: int | str, spec: ClusterSpec) -> int:
    """--clusters as a number; `auto` is chosen from the machine (cores, memory)."""
    if requested != "auto":
        return int(requested)
    need = capacity.need(spec.host_count, measured_clusters())
    count = capacity.default_count(capacity.cores(), capacity.available_mib(), need, fleet.MAX_CLUSTERS)
    progress(
        f"--clusters auto: {count} clusters ({capacity.CLUSTERS_PER_CORE} per core on {capacity.cores()} cores, "
        f"{need.per_cluster_mib:.0f} MiB each, {capacity.available_mib():.0f} MiB available)"
    )
    return count


def free_base(base: ClusterSpec, count: int, others: list[registry.KnownCluster], machine: list) -> ClusterSpec | None:
    """A base subnet 10.X.0.0/24 whose `count` member subnets no cluster and no network of this machine uses."""
    if base.prefixlen != 24:
        return None
    for second in range(71, 255):
        cand = replace(base, subnet=f"10.{second}.0.0/24")
        try:
            specs = [fleet.member_spec(cand, k) for k in range(1, count + 1)]
        except PreconditionError:
            continue
        if not any(network.conflicts_in(s, machine) or any(o.overlaps(s) for o in others) for s in specs):
            return cand
    return None


def auto_subnet(args: argparse.Namespace) -> tuple[str, int | str | None]:
    """`--subnet auto`: the subnet of the cluster already up in the state directory (a rerun keeps it),
    else the first base 10.X.0.0/24 whose member subnets are free; with the resolved --clusters."""
    old = state.load()
    if old is not None:
        return old.spec.subnet, args.clusters
    base = ClusterSpec(host_count=args.hosts, prefix=args.name_prefix, login_user=args.login_user)
    count = 1 if args.clusters in (None, 1) else resolve_count(args.clusters, base)
    free = free_base(base, count, registry.known(), network.machine_networks())
    if free is None:
        raise PreconditionError(
            f"--subnet auto: no base 10.X.0.0/24 has {count} free subnets in a row on this machine",
            "take local clusters down (pbs-harness status lists them) or give --subnet explicitly",
        )
    progress(
        f"--subnet auto: {free.subnet}" + (f" (through {fleet.member_spec(free, count).subnet})" if count > 1 else "")
    )
    return free.subnet, (count if args.clusters not in (None, 1) else args.clusters)


def check(members: list[fleet.Member]) -> None:
    """Refuse the fleet, before anything is created, when the machine cannot hold it (with the numbers)."""
    here = project.checkout()
    new = []
    for member in members:
        old = state.load(member.root)
        if old is None:
            new.append(member)
        else:
            provider.claim(old, member.spec, here, member.root)  # another checkout's, or another shape
    need = capacity.need(members[0].spec.host_count, measured_clusters())
    capacity.check_memory(len(members), len(new), need, capacity.available_mib())
    machine = network.machine_networks()
    ours = {str(m.root) for m in members}
    others = [o for o in registry.known() if o.state_dir not in ours]
    problems = []
    for member in new:
        try:
            preflight.check_other_clusters(member.spec, member.root)
        except PreconditionError as exc:
            problems.append(f"cluster {member.index} ({member.spec.prefix}, {member.spec.subnet}): {exc.message}")
            continue
        taken = network.conflicts_in(member.spec, machine)
        if taken:
            problems.append(f"cluster {member.index}: subnet {member.spec.subnet} is in use here: {'; '.join(taken)}")
    if problems:
        base = members[0].spec
        free = free_base(base, len(members), others, machine)
        nets = ", ".join(str(ipaddress.IPv4Network(fleet.member_spec(base, k).subnet)) for k in (1, len(members)))
        hint = f"the {len(members)} clusters take the subnets {nets.replace(', ', ' .. ')}; "
        hint += (
            f"free for {len(members)}: --subnet {free.subnet} (through {fleet.member_spec(free, len(members)).subnet})"
            if free
            else "no base 10.X.0.0/24 has that many free subnets in a row: take clusters down or ask for fewer"
        )
        hint += "; other names: --name-prefix and --state-dir"
        raise PreconditionError(f"{len(problems)} of the clusters cannot be made: " + " | ".join(problems), hint)


def _prefixed(member: fleet.Member) -> Callable[[str], None]:
    return lambda text: progress(f"[{member.name}] {text}")


def up(args: argparse.Namespace, spec: ClusterSpec, packages: Path | None = None) -> int:
    """Bring up (or repair) the fleet's members 1..N; records them in member 1's state."""
    count = resolve_count(args.clusters, spec)
    members = fleet.members(spec, state.state_dir(), count)
    if args.write_inventory:
        written_inventory.check_target(Path(args.write_inventory).resolve())
    check(members)
    start = time.monotonic()
    inventories: list[tuple[str, str | None]] = []
    for member in members:
        st = provider.up(member.spec, _prefixed(member), root=member.root, packages=packages)
        if member.index > 1:
            st.member_of = str(members[0].root)
            state.save(st, member.root)
        inventories.append((member.name, _write_inventory(args, member)))
    first = state.load(members[0].root)
    assert first is not None
    ours = [str(m.root) for m in members]
    first.fleet = ours[1:] + [p for p in first.fleet if p not in ours]  # members beyond N stay recorded
    state.save(first, members[0].root)
    progress(f"{count} local clusters up in {time.monotonic() - start:.1f}s:")
    for member in members:
        progress("  " + fleet.describe(member))
    beyond = fleet.recorded(members[0].root)[count:]
    if beyond:
        progress(f"also up (left as they are): {', '.join(m.name for m in beyond)}; `pbs-harness down` removes all")
    args.fleet_inventories = inventories
    return errors.EXIT_OK


def _write_inventory(args: argparse.Namespace, member: fleet.Member) -> str | None:
    """The member's inventory: --write-inventory for member 1 when given, <state dir>/inventory for
    every member inventory/local cannot describe (another state directory), None for inventory/local."""
    if member.index == 1 and args.write_inventory:
        target = Path(args.write_inventory)
    elif member.root != state.state_dir(state.DEFAULT_STATE_DIR):
        target = member.written_inventory()
    else:
        return None
    hosts = written_inventory.write(target, member.root, project.root())
    _prefixed(member)(f"inventory written: {hosts.parent}")
    return str(hosts.parent)
