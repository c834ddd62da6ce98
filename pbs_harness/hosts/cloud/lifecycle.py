"""A cloud run's lifecycle: up (record, keys, provision, inventory), down (by tag, retried), sweep.

The cloud's own part is its kind of host (found in the registry by the --cloud name): it judges the
request before any API call and names its playbooks. These functions only save records, make keys,
run the kind's playbooks (pbs_harness.deploy.playbook.run_playbook, whose output goes to the run's logs/) and
decide which runs a sweep removes. They never connect to a host.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import signal
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol, cast

from pbs_harness import hosts
from pbs_harness.common.errors import HarnessError, PreconditionError, UsageError
from pbs_harness.deploy import playbook as deploy
from pbs_harness.hosts.cloud import records, request
from pbs_harness.hosts.cloud.request import CloudRequest, default_owner, parse_stamp, stamp

Say = Callable[[str], None]
LOCALHOST = Path("localhost,")  # the playbooks act on the cloud's API from this machine
PREFLIGHT_MARK = "cloud preflight:"  # a provision refusal before anything was created (missing AMI, no VPC)


class CloudKind(Protocol):
    """What a cloud kind of host (pbs_harness.hosts) adds for cloud runs (AWS: hosts/aws.py)."""

    NAME: str
    PLAYBOOKS: str  # folder under playbooks/ with provision.yml, teardown.yml, list.yml, instance.yml
    DEFAULT_INSTANCE_TYPE: str
    DEFAULT_IMAGE: str
    SAFE_ENV: Mapping[str, str]  # set before any SDK call (e.g. never ask an instance metadata service)
    REGION_ENVS: tuple[str, ...]  # where the region comes from without --region, first set wins

    @classmethod
    def is_image_id(cls, value: str) -> bool: ...

    @classmethod
    def endpoint_from_env(cls, environ: Mapping[str, str]) -> str: ...

    @classmethod
    def endpoint_is_real(cls, url: str) -> bool: ...

    @classmethod
    def check_request(cls, req: CloudRequest) -> None: ...

    @classmethod
    def check_credentials(cls) -> None: ...


def cloud_kinds() -> list[str]:
    """The registry's kinds that can run cloud runs."""
    return [n for n in hosts.names() if hasattr(hosts.get_kind_class(n), "PLAYBOOKS")]


def is_cloud_image(value: str) -> bool:
    """`value` is an image id of one of the cloud kinds (`up --image`), which that kind judges before any API call."""
    return any(cast(CloudKind, hosts.get_kind_class(n)).is_image_id(value) for n in cloud_kinds())


def cloud_name(given: str | None) -> str:
    """--cloud, or when it is left out (`sweep`, `down`) the registry's one cloud kind."""
    if given:
        return given
    clouds = cloud_kinds()
    if len(clouds) != 1:
        raise UsageError("no --cloud given", f"give --cloud with one of: {', '.join(clouds)}")
    return clouds[0]


def region_of(cloud: str, given: str | None, environ: Mapping[str, str]) -> str:
    """--region, else the cloud's own region variables."""
    return request.region(given, environ, kind(cloud).REGION_ENVS)


def kind(name: str) -> CloudKind:
    if name not in cloud_kinds():
        raise UsageError(
            f"--cloud {name!r} is not a cloud this harness drives", f"use one of: {', '.join(cloud_kinds())}"
        )
    found = cast(CloudKind, hosts.get_kind_class(name))
    os.environ.update(found.SAFE_ENV)
    return found


def request_of(
    *,
    cloud: str,
    region: str | None,
    hosts: int,
    instance_type: str | None,
    image: str | None,
    ttl: str,
    name_prefix: str,
    owner: str | None,
    ssh_from: str,
    keep_on_failure: bool,
    provision_only: bool,
    run_id: str | None,
    environ: Mapping[str, str],
) -> CloudRequest:
    """The run's request from the command line's values, judged (the cloud, region, TTL) before any API
    call; what they leave out is the cloud kind's default (instance type, image, endpoint)."""
    k = kind(cloud)
    return CloudRequest(
        cloud=cloud,
        region=request.region(region, environ, k.REGION_ENVS),
        hosts=hosts,
        instance_type=instance_type or k.DEFAULT_INSTANCE_TYPE,
        image=image or k.DEFAULT_IMAGE,
        ttl=request.parse_ttl(ttl),
        name_prefix=name_prefix,
        owner=owner or default_owner(),
        ssh_from=ssh_from,
        endpoint_url=k.endpoint_from_env(environ),
        keep_on_failure=keep_on_failure,
        provision_only=provision_only,
        run_id=run_id or "",
    )


def _playbook(k: CloudKind, name: str, extra: Mapping[str, Any], log_dir: Path, say: Say) -> deploy.PlaybookRun:
    return deploy.run_playbook(
        f"{k.PLAYBOOKS}/{name}", LOCALHOST, ["-e", json.dumps(dict(extra))], progress=say, log_dir=log_dir
    )


def _write_keys(ssh_dir: Path) -> None:
    """The run's login key and the VMs' host key (given to them in user-data, so pinned before they boot)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    ssh_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    for name in ("id_ed25519", "host_ed25519"):
        if (ssh_dir / name).exists():
            continue  # a second `up` of the same run keeps its keys (idempotence)
        key = Ed25519PrivateKey.generate()
        private = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()
        )
        public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
        fd = os.open(ssh_dir / name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(private)
        (ssh_dir / f"{name}.pub").write_bytes(public + f" pbs-harness-{name}\n".encode())


def down_hint(rec: records.RunRecord, state_root: Path) -> str:
    opt = f" --state-dir {state_root}" if state_root != records.root() else ""
    later = f"pbs-harness sweep --cloud {rec.cloud} --region {rec.region}"
    return f"pbs-harness down --run {rec.run_id}{opt}   (or after its expiry: {later})"


def up(req: CloudRequest, state_root: Path, say: Say, then: str = "up") -> records.RunRecord:
    """Create the run: record and plan saved first, then the kind's provision.yml; the inventory is then in
    the run's inventory/. On any failure (Ctrl-C too) what was created is torn down, unless keep_on_failure.
    `then`: the record's status once created: `up` (handed to the user), or `deploying`/`testing` when this
    process goes on working on the run (so that it is never `up` while a killed controller left it)."""
    k = kind(req.cloud)
    k.check_request(req)  # before any API call
    records.check_writable(state_root)
    run_dir = state_root / req.run_id
    rec = records.find(state_root, req.run_id)
    if rec is not None and rec.status not in records.ENDED:
        req = _with_times_of(rec, req, say)
    else:
        rec = None  # a new run, or the id of a run that ended: the times are this request's
    rec = rec or records.RunRecord(
        run_id=req.run_id,
        cloud=req.cloud,
        region=req.region,
        endpoint_url=req.endpoint_url,
        owner=req.owner,
        created=stamp(req.created),
        expires=stamp(req.expires),
        dir=run_dir,
    )
    rec.set_status("provisioning")
    plan = req.plan(str(run_dir))
    (run_dir / "plan.json").write_text(json.dumps(plan, indent=2) + "\n")
    _write_keys(run_dir / "ssh")
    say(f"cloud run {rec.run_id}: record and plan saved in {run_dir} before anything is created")
    say(
        f"creating {req.hosts} {req.instance_type} instances ({req.image}) in {req.region}, expiring at "
        f"{rec.expires} (--ttl), owner {req.owner}"
        + ("" if k.endpoint_is_real(req.endpoint_url) else f", at the stand-in endpoint {req.endpoint_url}")
    )
    try:
        _playbook(k, "provision.yml", plan, run_dir / "logs", say)
    except BaseException as exc:
        _after_failed_up(k, rec, state_root, req.keep_on_failure, say)
        if isinstance(exc, HarnessError) and PREFLIGHT_MARK in exc.message:
            raise PreconditionError(exc.message.split(PREFLIGHT_MARK, 1)[1].strip(), exc.hint) from exc
        raise
    rec.set_status(then)
    say(f"cloud run {rec.run_id}: {req.hosts} instances up; inventory {rec.inventory}")
    return rec


def _with_times_of(rec: records.RunRecord, req: CloudRequest, say: Say) -> CloudRequest:
    """The request of a run that already exists, with that run's creation and expiry: a second `up` of the
    same run id then changes nothing (its tags, its VMs' power-off time and the record stay as they are)."""
    created, expires = parse_stamp(rec.created), parse_stamp(rec.expires)
    if created is None or expires is None:
        raise PreconditionError(
            f"cloud run record {rec.dir / records.RECORD} has no readable creation or expiry time",
            f"remove the run (pbs-harness down --run {rec.run_id}), then give another --run-id",
        )
    if expires - created != req.ttl:
        say(
            f"cloud run {rec.run_id} exists (created {rec.created}): it keeps its expiry {rec.expires}; "
            "--ttl applies to new runs only"
        )
    return replace(req, created=created, ttl=expires - created)


def _after_failed_up(k: CloudKind, rec: records.RunRecord, state_root: Path, keep: bool, say: Say) -> None:
    if keep:
        rec.set_status("kept")
        hint = down_hint(rec, state_root)
        say(f"cloud run {rec.run_id} failed; its resources are kept (--keep-on-failure). Remove them with: {hint}")
        return
    say(f"cloud run {rec.run_id} failed: tearing down what it created")
    rec.set_status("removing")  # before it acts: killed halfway, the run is still sweep's (controller gone)
    try:
        _teardown(
            k,
            [rec.run_id],
            owner=rec.owner,
            region=rec.region,
            endpoint_url=rec.endpoint_url,
            log_dir=rec.dir / "logs",
            say=say,
        )
        rec.set_status("failed")
    except HarnessError as exc:  # the run's own failure is the one to report; say how to finish
        say(f"teardown of {rec.run_id} failed too ({exc.message}); remove it with: {down_hint(rec, state_root)}")


def finish(rec: records.RunRecord, state_root: Path, ok: bool, keep_on_failure: bool, say: Say) -> None:
    """The always-step of a run on cloud hosts (up + deploy + test): down, unless it failed and is kept.
    A second Ctrl-C or SIGTERM while it tears down is ignored (and said): stopping the teardown halfway is
    what would leak; SIGKILL still stops it, and `sweep` then removes the run (its controller is gone)."""
    if not ok and keep_on_failure:
        rec.set_status("kept")
        say(f"kept after a failure (--keep-on-failure): {down_hint(rec, state_root)}")
        return
    with _shielded(say, f"tearing down cloud run {rec.run_id}"):
        down(state_root, rec.run_id, say)


@contextlib.contextmanager
def _shielded(say: Say, what: str) -> Iterator[None]:
    """Ctrl-C and SIGTERM ignored, with a line saying so, while `what` runs (main thread only: elsewhere
    Python cannot set handlers, and the signals go to the main thread anyway)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def ignore(signum: int, _frame: object) -> None:
        say(f"signal {signum} ignored: {what} (SIGKILL would leave the run to `pbs-harness sweep`)")

    previous = {signum: signal.signal(signum, ignore) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def work_on(
    rec: records.RunRecord,
    state_root: Path,
    say: Say,
    work: Callable[[records.RunRecord], int],
    *,
    keep_on_failure: bool,
    down_after: bool,
) -> int:
    """Run `work` on a created run (deploy, verify, the suites; its exit code), then: down after a failure,
    an exception, Ctrl-C or SIGTERM (which the CLI raises as KeyboardInterrupt), unless keep_on_failure;
    after a pass, down when `down_after` (`test --cloud`), else the run is handed to the user (`up`). A failed
    teardown after a failed run is said beside the run's own error, which is the one raised."""
    try:
        rc = work(rec)
    except BaseException:
        try:
            finish(rec, state_root, False, keep_on_failure, say)
        except HarnessError as exc:
            say(f"teardown of {rec.run_id} failed too ({exc.message}); remove it with: {down_hint(rec, state_root)}")
        raise
    if rc != 0 or down_after:
        finish(rec, state_root, rc == 0, keep_on_failure, say)
    else:
        rec.set_status("up")
    return rc


def up_for_user(req: CloudRequest, state_root: Path, say: Say, work: Callable[[records.RunRecord], int]) -> int:
    """`up --cloud`: up, then `work` (deploy and verify) unless req.provision_only; after a pass the run is
    handed to the user (status `up`), after a failure torn down unless req.keep_on_failure (work_on)."""
    rec = up(req, state_root, say, then="up" if req.provision_only else "deploying")
    if req.provision_only:
        say(f"--provision-only: stopped before any SSH. Remove the run with: {down_hint(rec, state_root)}")
        return 0
    rc = work_on(rec, state_root, say, work, keep_on_failure=req.keep_on_failure, down_after=False)
    if rc == 0:
        say(
            f"cloud run {rec.run_id} deployed; test it with -i {rec.inventory}; remove it with: "
            f"pbs-harness down --run {rec.run_id}"
        )
    return rc


def session(req: CloudRequest, state_root: Path, say: Say, work: Callable[[records.RunRecord], int]) -> int:
    """A whole run on cloud hosts (`test --cloud`): up, `work`, then ALWAYS down (work_on), unless it failed and
    req.keep_on_failure. While `work` runs the record says `testing` with this process's pid, so a run killed
    outright (SIGKILL, no `finally`) is removed by `sweep` (its controller is gone)."""
    rec = up(req, state_root, say, then="testing")  # tears down what it made when it fails
    return work_on(rec, state_root, say, work, keep_on_failure=req.keep_on_failure, down_after=True)


def _teardown(
    k: CloudKind, run_ids: list[str], *, owner: str, region: str, endpoint_url: str, log_dir: Path, say: Say
) -> None:
    extra = {"cloud_run_ids": run_ids, "cloud_owner": owner, "cloud_region": region, "cloud_endpoint_url": endpoint_url}
    _playbook(k, "teardown.yml", extra, log_dir, say)


def down(state_root: Path, run_id: str, say: Say, *, region: str = "", owner: str = "", cloud: str = "") -> None:
    """Remove every resource tagged with the run (found by tag, not from the record alone; retried by the
    playbook, which then checks nothing is left). Without a record, region/owner/cloud must be given."""
    rec = records.find(state_root, run_id)
    if rec is None and not (region and cloud):
        raise UsageError(
            f"no record of cloud run {run_id} in {state_root}",
            "give --state-dir where it was made, or --cloud and --region (and --owner when not this user@machine)",
        )
    cloud = rec.cloud if rec else cloud
    k = kind(cloud)
    k.check_credentials()
    region = region or (rec.region if rec else "")
    endpoint = rec.endpoint_url if rec else k.endpoint_from_env(os.environ)
    owner = owner or (rec.owner if rec else default_owner())
    say(f"removing cloud run {run_id} ({cloud}, {region}): every resource tagged with it, owner {owner}")
    log_dir = rec.dir / "logs" if rec else Path(tempfile.mkdtemp(prefix="pbsh-down-"))
    if rec:
        # Before anything is removed: a `down` killed halfway must not leave the record saying `up` (sweep
        # keeps a live `up` run until its expiry); `removing` with this pid is sweep's once the pid is gone,
        # and a second `down` finishes it.
        rec.set_status("removing")
    _teardown(k, [run_id], owner=owner, region=region, endpoint_url=endpoint, log_dir=log_dir, say=say)
    if rec:
        rec.set_status("down")
    say(f"cloud run {run_id}: nothing tagged with it is left")


# -- sweep ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TaggedRun:
    """The resources a listing found for one run id, with the tags they carry."""

    run_id: str
    created: dt.datetime | None
    expires: dt.datetime | None
    resources: tuple[str, ...]


def group_by_run(listing: Mapping[str, list[Mapping[str, Any]]]) -> list[TaggedRun]:
    """list.yml's output, by the run id tag (instances, security groups, key pairs)."""
    ids = {"instances": "instance_id", "security_groups": "group_id", "key_pairs": "key_name"}
    runs: dict[str, dict[str, Any]] = {}
    for what, id_key in ids.items():
        for item in listing.get(what, []):
            tags = item.get("tags") or {}
            run_id = tags.get("pbs-harness-run")
            if not run_id:
                continue  # never ours without the tag
            run = runs.setdefault(run_id, {"tags": tags, "resources": []})
            run["resources"].append(str(item[id_key]))
    return [
        TaggedRun(
            run_id,
            parse_stamp(r["tags"].get("pbs-harness-created", "")),
            parse_stamp(r["tags"].get("pbs-harness-expires", "")),
            tuple(r["resources"]),
        )
        for run_id, r in sorted(runs.items())
    ]


def why_remove(
    run: TaggedRun,
    rec: records.RunRecord | None,
    now: dt.datetime,
    older_than: dt.timedelta | None,
    records_here: bool = True,
) -> str | None:
    """Why a sweep removes this run, or None to leave it: its run is gone (no record here, or a record
    of a run that ended, or whose `up` was killed), it expired, or it is older than --older-than.
    `records_here`: this machine keeps the owner's records (the owner is this user@machine); for another
    owner (a CI repository's, shared by many runners) a missing record says nothing, and only expiry
    and age remove a run."""
    if run.expires is None or run.expires <= now:
        return "expired" if run.expires else "no readable expiry tag"
    if older_than is not None and (run.created is None or run.created <= now - older_than):
        return f"older than {older_than}"
    if rec is None:
        return "no record of the run on this machine" if records_here else None
    if rec.status in records.ENDED:
        return f"its run ended ({rec.status})"
    if rec.status in records.CONTROLLED and not rec.controller_alive:
        return f"its controller was killed while {rec.status} (pid {rec.pid} gone)"
    return None


def sweep(
    cloud: str,
    region: str,
    owner: str,
    state_root: Path,
    say: Say,
    *,
    older_than: dt.timedelta | None = None,
    dry_run: bool = False,
    now: dt.datetime | None = None,
) -> list[str]:
    """List the owner's tagged resources, remove the runs `why_remove` names; the run ids removed. A record
    here of this cloud, region and owner whose controller was killed, and of which nothing tagged is left (killed
    before it created anything, or after its teardown removed everything), is ended too."""
    k = kind(cloud)
    k.check_credentials()
    endpoint = k.endpoint_from_env(os.environ)
    now = now or dt.datetime.now(dt.UTC)
    with tempfile.TemporaryDirectory(prefix="pbsh-sweep-") as tmp:
        listing_file = Path(tmp) / "list.json"
        extra = {
            "cloud_owner": owner,
            "cloud_region": region,
            "cloud_endpoint_url": endpoint,
            "cloud_list_file": str(listing_file),
        }
        _playbook(k, "list.yml", extra, Path(tmp), lambda _line: None)
        runs = group_by_run(json.loads(listing_file.read_text()))
        doomed: list[str] = []
        say(f"sweep ({cloud}, {region}, owner {owner}): {len(runs)} tagged runs")
        for run in runs:
            rec = records.find(state_root, run.run_id)
            why = why_remove(run, rec, now, older_than, records_here=owner == default_owner())
            status = f"remove: {why}" if why else "keep: live"
            expires = stamp(run.expires) if run.expires else "?"
            say(f"  {run.run_id:32} expires {expires:20} {len(run.resources)} resources  {status}")
            if why:
                doomed.append(run.run_id)
        ended = _dead_records_without_resources(state_root, cloud, region, owner, {r.run_id for r in runs})
        for rec in ended:
            say(
                f"  record of {rec.run_id} ended: its controller was killed while {rec.status} (pid {rec.pid} gone) "
                "and nothing tagged with it is left" + (" (dry run: left as it is)" if dry_run else "")
            )
            if not dry_run:
                rec.set_status("down")
        if dry_run or not doomed:
            say("dry run: nothing removed" if dry_run and doomed else "nothing to remove")
            return [] if dry_run else doomed
        for run_id in doomed:
            rec = records.find(state_root, run_id)
            if rec:
                rec.set_status("removing")  # this sweep owns it now: killed halfway, the next sweep finishes it
        _teardown(k, doomed, owner=owner, region=region, endpoint_url=endpoint, log_dir=Path(tmp), say=say)
    for run_id in doomed:
        rec = records.find(state_root, run_id)
        if rec:
            rec.set_status("down")
    say(f"sweep removed {len(doomed)} runs: {', '.join(doomed)}")
    return doomed


def _dead_records_without_resources(
    state_root: Path, cloud: str, region: str, owner: str, tagged_runs: set[str]
) -> list[records.RunRecord]:
    """This machine's records of the swept cloud, region and owner that a killed controller left under way
    (provisioning, deploying, testing, removing) and that no tagged resource belongs to any more."""
    found = []
    for run_dir in sorted(state_root.iterdir()) if state_root.is_dir() else []:
        try:
            found.append(records.load(run_dir))
        except PreconditionError:
            continue  # not a record (or not readable): not this sweep's to end
    return [
        rec
        for rec in found
        if (rec.cloud, rec.region, rec.owner) == (cloud, region, owner)
        and rec.run_id not in tagged_runs
        and rec.status in records.CONTROLLED
        and not rec.controller_alive
    ]


def known_runs(state_root: Path) -> Iterable[records.RunRecord]:
    return [r for r in records.all_runs(state_root) if r.status != "down"]
