"""Several local clusters brought up together (`pbs-harness up --clusters N`): a fleet.

Member 1 is the cluster of the given shape and state directory (by default pbsh01.. on 10.71.0.0/24
in /var/lib/pbs-harness/local). Member k (2..N) appends the k-th letter to the prefix (pbshb01..,
pbshc01..), takes the subnet k-1 networks further on (10.71.1.0/24, 10.71.2.0/24, ...) and a state
directory named after its prefix beside member 1's (/var/lib/pbs-harness/pbshb). Each member is a
whole cluster of its own: bridge, names, state directory, session lock, OpenPBS server and datastore.

Member 1's state lists the others (`fleet`), so `down` and `status` of member 1 reach them all; a
member records member 1 (`member_of`).

Planning a fleet lives here too, not in the command line (issue #31: the CLI only parses and prints):
`auto_subnet` and `resolve_count` choose what `--subnet auto` and `--clusters auto` leave open, `check`
refuses a fleet the machine cannot hold before anything is created, `up` brings the members up (or
repairs them) and `down` takes them down. Each says what it does through `report` (one line a call).
"""

from __future__ import annotations

import dataclasses
import ipaddress
import string
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pbs_harness.common import project
from pbs_harness.common.errors import PreconditionError
from pbs_harness.localcluster import (
    capacity,
    cluster_kind,
    network,
    preflight,
    provider,
    registry,
    state,
    written_inventory,
)
from pbs_harness.localcluster.spec import MAX_CLUSTERS, ClusterSpec

Report = Callable[[str], None]

INVENTORY_DIR = "inventory"  # <state dir>/inventory: the written inventory of a member


@dataclass(frozen=True)
class Member:
    """One cluster of a fleet: its position (1-based), shape and state directory."""

    index: int
    spec: ClusterSpec
    root: Path

    @property
    def name(self) -> str:
        """Short name of the cluster in progress lines and reports: its host-name prefix."""
        return self.spec.prefix

    def written_inventory(self) -> Path:
        return self.root / INVENTORY_DIR


def member_spec(base: ClusterSpec, index: int) -> ClusterSpec:
    """The shape of member `index` (1-based) of the fleet whose first member is `base`."""
    if index == 1:
        return base
    if len(base.prefix) >= 8:
        raise PreconditionError(
            f"host name prefix {base.prefix!r} leaves no room for the other clusters' letter (8 characters at most)",
            "give --name-prefix of at most 7 characters with --clusters",
        )
    prefix = base.prefix + string.ascii_lowercase[index - 1]
    net = base.network
    try:
        first = net.network_address + net.num_addresses * (index - 1)
        subnet = ipaddress.IPv4Network(f"{first}/{net.prefixlen}")
    except (ValueError, ipaddress.AddressValueError):
        subnet = None
    if subnet is None or not subnet.is_private or not _same_private_range(net, subnet):
        raise PreconditionError(
            f"the subnets after {base.subnet} leave the private range before cluster {index}",
            "give a lower --subnet, e.g. --subnet 10.81.0.0/24",
        )
    return dataclasses.replace(base, subnet=str(subnet), prefix=prefix)


def _same_private_range(a: ipaddress.IPv4Network, b: ipaddress.IPv4Network) -> bool:
    ranges = [ipaddress.IPv4Network(r) for r in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16")]
    return any(a.subnet_of(r) and b.subnet_of(r) for r in ranges)


def members(base: ClusterSpec, base_root: Path, count: int) -> list[Member]:
    """The fleet's first `count` members, member 1 first."""
    if not 1 <= count <= MAX_CLUSTERS:
        raise PreconditionError(f"--clusters {count} is out of range", f"use between 1 and {MAX_CLUSTERS} clusters")
    base_root = state.state_dir(base_root)
    out = [Member(1, base, base_root)]
    for index in range(2, count + 1):
        spec = member_spec(base, index)
        out.append(Member(index, spec, base_root.parent / spec.prefix))
    return out


def recorded(base_root: Path | None = None) -> list[Member]:
    """The members that are up, as member 1's state records them (member 1 first); [] when none is up.

    A member whose state is gone (taken down alone) is left out."""
    first = state.load(base_root)
    if first is None:
        return []
    root = state.state_dir(base_root)
    out = [Member(1, first.spec, root)]
    for index, other in enumerate(first.fleet, start=2):
        st = state.load(Path(other))
        if st is not None:
            out.append(Member(index, st.spec, Path(other)))
    return out


def describe(member: Member) -> str:
    return f"cluster {member.index} ({member.name}): {cluster_kind.describe(member.spec)}, state {member.root}"


# --- planning: what `auto` leaves open, and what the machine can hold ------------------------------


def measured_clusters() -> dict[str, float]:
    """MiB used by the hosts of every running local cluster of this machine, by label."""
    out: dict[str, float] = {}
    for known in registry.known():
        st = state.load(Path(known.state_dir)) if known.state_dir else None
        mib = capacity.measure_cluster_mib(st.spec) if st else None
        if st is not None and mib:
            out[f"{st.spec.hosts[0].name}.."] = mib
    return out


def resolve_count(requested: int | str, spec: ClusterSpec, report: Report) -> int:
    """--clusters as a number; `auto` is chosen from the machine (cores, memory)."""
    if requested != "auto":
        return int(requested)
    need = capacity.need(spec.host_count, measured_clusters())
    count = capacity.default_count(capacity.cores(), capacity.available_mib(), need, MAX_CLUSTERS)
    report(
        f"--clusters auto: {count} clusters ({capacity.CLUSTERS_PER_CORE} per core on {capacity.cores()} cores, "
        f"{need.per_cluster_mib:.0f} MiB each, {capacity.available_mib():.0f} MiB available)"
    )
    return count


def free_base(base: ClusterSpec, count: int, others: list[registry.KnownCluster], machine: list) -> ClusterSpec | None:
    """A base subnet 10.X.0.0/24 whose `count` member subnets no cluster and no network of this machine uses."""
    if base.prefixlen != 24:
        return None
    for second in range(71, 255):
        cand = dataclasses.replace(base, subnet=f"10.{second}.0.0/24")
        try:
            specs = [member_spec(cand, k) for k in range(1, count + 1)]
        except PreconditionError:
            continue
        if not any(network.conflicts_in(s, machine) or any(o.overlaps(s) for o in others) for s in specs):
            return cand
    return None


def auto_subnet(base: ClusterSpec, clusters: int | str | None, report: Report) -> tuple[str, int | str | None]:
    """`--subnet auto` for a fleet shaped like `base` (its subnet unused): the subnet of the cluster already
    up in the state directory (a rerun keeps it), else the first base 10.X.0.0/24 whose member subnets are
    free; with --clusters resolved (`auto` becomes a number) where the choice needed it."""
    old = state.load()
    if old is not None:
        return old.spec.subnet, clusters
    count = 1 if clusters in (None, 1) else resolve_count(clusters, base, report)
    free = free_base(base, count, registry.known(), network.machine_networks())
    if free is None:
        raise PreconditionError(
            f"--subnet auto: no base 10.X.0.0/24 has {count} free subnets in a row on this machine",
            "take local clusters down (pbs-harness status lists them) or give --subnet explicitly",
        )
    report(f"--subnet auto: {free.subnet}" + (f" (through {member_spec(free, count).subnet})" if count > 1 else ""))
    return free.subnet, (count if clusters not in (None, 1) else clusters)


def check(members: list[Member]) -> None:
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
        nets = ", ".join(str(ipaddress.IPv4Network(member_spec(base, k).subnet)) for k in (1, len(members)))
        hint = f"the {len(members)} clusters take the subnets {nets.replace(', ', ' .. ')}; "
        hint += (
            f"free for {len(members)}: --subnet {free.subnet} (through {member_spec(free, len(members)).subnet})"
            if free
            else "no base 10.X.0.0/24 has that many free subnets in a row: take clusters down or ask for fewer"
        )
        hint += "; other names: --name-prefix and --state-dir"
        raise PreconditionError(f"{len(problems)} of the clusters cannot be made: " + " | ".join(problems), hint)


# --- up and down ---------------------------------------------------------------------------------


def up(
    spec: ClusterSpec,
    count: int | str,
    packages: Path | None,
    report: Report,
    write_inventory: Path | None = None,
) -> list[tuple[str, str | None]]:
    """Bring up (or repair) members 1..count of the fleet whose member 1 is `spec` in the state directory,
    after `check`; records them in member 1's state. Returns each member's (name, written inventory or
    None where inventory/local describes it); `write_inventory` is member 1's (--write-inventory)."""
    count = resolve_count(count, spec, report)
    group = members(spec, state.state_dir(), count)
    if write_inventory:
        written_inventory.check_target(write_inventory.resolve())
    check(group)
    start = time.monotonic()
    inventories: list[tuple[str, str | None]] = []
    for member in group:
        st = provider.up(member.spec, _prefixed(member, report), root=member.root, packages=packages)
        if member.index > 1:
            st.member_of = str(group[0].root)
            state.save(st, member.root)
        inventories.append((member.name, _write_inventory(member, write_inventory, report)))
    first = state.load(group[0].root)
    assert first is not None
    ours = [str(m.root) for m in group]
    first.fleet = ours[1:] + [p for p in first.fleet if p not in ours]  # members beyond N stay recorded
    state.save(first, group[0].root)
    report(f"{count} local clusters up in {time.monotonic() - start:.1f}s:")
    for member in group:
        report("  " + describe(member))
    beyond = recorded(group[0].root)[count:]
    if beyond:
        report(f"also up (left as they are): {', '.join(m.name for m in beyond)}; `pbs-harness down` removes all")
    return inventories


def _prefixed(member: Member, report: Report) -> Report:
    return lambda text: report(f"[{member.name}] {text}")


def _write_inventory(member: Member, given: Path | None, report: Report) -> str | None:
    """The member's inventory: `given` (--write-inventory) for member 1, <state dir>/inventory for
    every member inventory/local cannot describe (another state directory), None for inventory/local."""
    if member.index == 1 and given:
        target = given
    elif member.root != state.state_dir(state.DEFAULT_STATE_DIR):
        target = member.written_inventory()
    else:
        return None
    hosts = written_inventory.write(target, member.root, project.root())
    _prefixed(member, report)(f"inventory written: {hosts.parent}")
    return str(hosts.parent)


def down(report: Report) -> bool:
    """Take down the cluster of the state directory and, when it is member 1, every member it records
    (the others first); a member taken down alone leaves its fleet's record. False: none was up here."""
    own = state.load()
    for member in reversed(recorded()[1:]):
        report(f"removing {describe(member)}")
        provider.down(report, root=member.root)
    was_up = provider.down(report)
    if own is not None and own.member_of:
        _forget_member(Path(own.member_of), state.cluster_id())
    return was_up


def _forget_member(first_root: Path, member_root: str) -> None:
    """A member taken down alone leaves its fleet's record (member 1's state)."""
    first = state.load(first_root)
    if first is not None and member_root in first.fleet:
        first.fleet.remove(member_root)
        state.save(first, first_root)
