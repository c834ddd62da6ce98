"""A cloud run's request, judged before any API call: sizes, TTL, owner, run id (provider-neutral;
the kind judges its own parts: region, image, credentials)."""

from __future__ import annotations

import datetime as dt
import getpass
import re
import secrets
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field

from pbs_harness.common.errors import UsageError

# A run id: tag value, resource-name part and directory name at once.
RUN_ID_RE = re.compile(r"^[a-z0-9][a-z0-9-]{5,39}$")
TTL_RE = re.compile(r"^(?:(?P<h>\d+)h)?(?:(?P<m>\d+)m)?$")
# Long enough for boot, deploy and a suite; short enough that a forgotten run costs little.
MIN_TTL = dt.timedelta(minutes=15)
MAX_TTL = dt.timedelta(hours=72)
DEFAULT_TTL = "2h"
TAG_SAFE_RE = re.compile(r"[^A-Za-z0-9@._-]")


def parse_duration(text: str, what: str) -> dt.timedelta:
    """`2h`, `90m`, `1h30m`: a duration, or UsageError naming `what` and the accepted forms."""
    m = TTL_RE.match(text.strip()) if text else None
    if not m or not (m["h"] or m["m"]):
        raise UsageError(
            f"{what} {text!r} does not parse as a duration",
            f"give hours and/or minutes, e.g. {what} 2h, {what} 90m or {what} 1h30m",
        )
    return dt.timedelta(hours=int(m["h"] or 0), minutes=int(m["m"] or 0))


def parse_ttl(text: str) -> dt.timedelta:
    ttl = parse_duration(text, "--ttl")
    if not MIN_TTL <= ttl <= MAX_TTL:
        raise UsageError(
            f"--ttl {text} is out of range",
            f"give between {_show(MIN_TTL)} (boot, deploy, a suite) and {_show(MAX_TTL)}",
        )
    return ttl


def _show(td: dt.timedelta) -> str:
    minutes = int(td.total_seconds() // 60)
    return f"{minutes // 60}h" if minutes % 60 == 0 else f"{minutes}m"


def region(given: str | None, environ: Mapping[str, str], envs: tuple[str, ...]) -> str:
    """--region, else the first of the cloud's region variables `envs` that is set; none is a bad command line."""
    found = given or next((environ[e] for e in envs if environ.get(e)), "")
    if not found:
        raise UsageError("no region given", f"give --region R (or set {' or '.join(envs) or 'it'})")
    return found


def default_owner() -> str:
    """user@machine: sweep removes only the runs whose owner tag is this one."""
    return TAG_SAFE_RE.sub("-", f"{getpass.getuser()}@{socket.gethostname()}")[:120]


def stamp(when: dt.datetime) -> str:
    return when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_stamp(text: str) -> dt.datetime | None:
    try:
        return dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC)
    except (TypeError, ValueError):
        return None


def new_run_id(prefix: str, now: dt.datetime) -> str:
    return f"{prefix}-{now.astimezone(dt.UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"


@dataclass(frozen=True)
class CloudRequest:
    """What `up --cloud` was asked for, checked. Times are UTC."""

    cloud: str
    region: str
    hosts: int
    instance_type: str
    image: str
    ttl: dt.timedelta
    name_prefix: str
    owner: str
    ssh_from: str
    endpoint_url: str = ""
    keep_on_failure: bool = False
    provision_only: bool = False
    created: dt.datetime = field(default_factory=lambda: dt.datetime.now(dt.UTC).replace(microsecond=0))
    run_id: str = ""

    def __post_init__(self) -> None:
        if self.hosts < 1:
            raise UsageError(f"--hosts {self.hosts}: a cloud run needs at least one host", "give --hosts 1 or more")
        if not self.owner or TAG_SAFE_RE.search(self.owner):
            raise UsageError(f"--owner {self.owner!r}: use letters, digits and @._- only", "e.g. --owner me@laptop")
        if not self.run_id:
            object.__setattr__(self, "run_id", new_run_id(self.name_prefix, self.created))
        if not RUN_ID_RE.match(self.run_id):
            raise UsageError(f"run id {self.run_id!r} is not [a-z0-9-]{{6,40}}", "use a shorter --name-prefix")

    @property
    def expires(self) -> dt.datetime:
        return self.created + self.ttl

    def plan(self, state_dir: str) -> dict[str, object]:
        """The playbook variables of this run (saved as plan.json before anything is created)."""
        return {
            "cloud_run_id": self.run_id,
            "cloud_owner": self.owner,
            "cloud_created_at": stamp(self.created),
            "cloud_expires_at": stamp(self.expires),
            "cloud_region": self.region,
            "cloud_endpoint_url": self.endpoint_url,
            "cloud_hosts": self.hosts,
            "cloud_name_prefix": self.name_prefix,
            "cloud_instance_type": self.instance_type,
            "cloud_image": self.image,
            "cloud_ssh_from": self.ssh_from,
            "cloud_state_dir": state_dir,
        }
