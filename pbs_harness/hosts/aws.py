"""AWS EC2 instances that a cloud run created (`pbs-harness up --cloud aws`): the cloud kind of host.

Everything AWS-specific is here and in playbooks/cloud/aws/: the request's checks before any API call
(region, image, instance type, credentials, endpoint), the playbooks' location, and the faults, which
the fault layer finds through the registry of host kinds (pbs_harness.hosts) and this class declares:

  crash      the instance's plug pulled through the API: StopInstances with Force (no guest shutdown;
             library/pbsh_ec2_power.py, as ec2_instance has no forced stop)
  boot       the instance started through the API, then its sshd waited for
  reboot     EC2's RebootInstances (the guest is asked, EC2 forces it after minutes), then sshd waited for
  pause      SIGSTOP of the PBS daemons and the test users' processes, over SSH (EC2 has no pause)
  partition  the instance's security groups swapped for the run's partition group (SSH from the
             controller only: no new connection reaches it) AND the SSH kind's iptables chain on the host:
             EC2 does not cut connections a security group already tracks (its connection tracking), so
             PBS's established TCP connections would survive a swap alone; the chain drops them at once
             and spares the harness's own session, which heals both

An endpoint other than AWS's (a moto server) hands out fake addresses: the kind then refuses every
connection to its hosts (check_network; the API actions above talk to the endpoint only), and `up`
refuses to go past provisioning.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import urlparse

from pbs_harness.common.errors import PreconditionError, UsageError
from pbs_harness.hosts.base import BOOT, CRASH, PARTITION, PAUSE, REBOOT, HostKind, HostVars

if TYPE_CHECKING:
    from pbs_harness.hosts.cloud.request import CloudRequest

AMI_RE = re.compile(r"^ami-(?:[0-9a-f]{8}|[0-9a-f]{17})$")
INSTANCE_TYPE_RE = re.compile(r"^[a-z][a-z0-9-]*\.[a-z0-9]+$")
IMAGES = ("debian-12",)  # by name: the newest Debian 12 amd64 AMI of Debian's own account
REAL_ENDPOINT_RE = re.compile(r"(^|\.)amazonaws\.com(\.cn)?$")
ENDPOINT_ENVS = ("AWS_ENDPOINT_URL_EC2", "AWS_ENDPOINT_URL")
# botocore would otherwise ask the instance metadata service (169.254.169.254) for credentials: never.
SAFE_ENV = {"AWS_EC2_METADATA_DISABLED": "true"}


def endpoint_is_real(url: str) -> bool:
    """AWS's own endpoints (no URL: the SDK's default) give real addresses; any other (moto) fake ones."""
    return not url or bool(REAL_ENDPOINT_RE.search(urlparse(url).hostname or ""))


def known_regions() -> set[str]:
    """Every EC2 region of the SDK's own endpoint data (offline: no API call)."""
    import botocore.session

    session = botocore.session.get_session()
    return {r for p in session.get_available_partitions() for r in session.get_available_regions("ec2", p)}


class AwsHost(HostKind):
    NAME = "aws"
    managed = True
    FAULTS = frozenset({CRASH, BOOT, PAUSE, PARTITION, REBOOT})
    MECHANISMS: ClassVar[Mapping[str, str]] = {
        "crash": "EC2 StopInstances with Force through the API (no guest shutdown)",
        "boot": "EC2 StartInstances through the API, then its sshd waited for",
        "reboot": "EC2 RebootInstances through the API, then its sshd waited for",
        "pause": "SIGSTOP of the PBS daemons and the test users' processes, over SSH",
        "partition": "security groups swapped for the run's partition group (SSH from the controller only), "
        "and an iptables chain on the host over SSH for the connections EC2 keeps tracking",
    }
    # The cloud-run interface (pbs_harness.hosts.cloud.lifecycle.CloudKind).
    PLAYBOOKS = "cloud/aws"
    DEFAULT_INSTANCE_TYPE = "t3.medium"
    DEFAULT_IMAGE = "debian-12"
    SAFE_ENV = SAFE_ENV
    REGION_ENVS = ("AWS_REGION", "AWS_DEFAULT_REGION")  # the SDK's own, in its order

    # -- a run's request, judged before any API call ------------------------------------------

    @classmethod
    def is_image_id(cls, value: str) -> bool:
        """`value` is meant as an image of this cloud (the command line lets it through to check_request)."""
        return value.startswith("ami-")

    @classmethod
    def endpoint_from_env(cls, environ: Mapping[str, str]) -> str:
        return next((environ[e] for e in ENDPOINT_ENVS if environ.get(e)), "")

    @classmethod
    def endpoint_is_real(cls, url: str) -> bool:
        return endpoint_is_real(url)

    @classmethod
    def check_request(cls, req: CloudRequest) -> None:
        """Refuse a request that cannot work, before any API call: UsageError (2) for the command line,
        PreconditionError (3) for this machine (credentials)."""
        if req.region not in known_regions():
            raise UsageError(
                f"--region {req.region!r} is not an AWS region",
                "give one such as eu-west-1 or us-east-1 (aws ec2 describe-regions lists yours)",
            )
        if req.image not in IMAGES and not AMI_RE.match(req.image):
            raise UsageError(
                f"--image {req.image!r} is neither an AMI id (ami- and 8 or 17 hex digits) nor one of "
                f"{', '.join(IMAGES)}",
                "give --image debian-12 or the id of an AMI in the region",
            )
        if not INSTANCE_TYPE_RE.match(req.instance_type):
            raise UsageError(f"--instance-type {req.instance_type!r} is not an EC2 instance type", "e.g. t3.medium")
        if req.endpoint_url and not urlparse(req.endpoint_url).hostname:
            raise UsageError(f"endpoint URL {req.endpoint_url!r} has no host", "e.g. http://127.0.0.1:5000")
        if not endpoint_is_real(req.endpoint_url) and not req.provision_only:
            raise UsageError(
                f"the EC2 endpoint {req.endpoint_url} is not AWS's (a stand-in such as moto): the addresses it hands "
                "out are fake, and pbs-harness never connects to them",
                f"at a stand-in only `pbs-harness up --cloud {cls.NAME} --provision-only` runs (create, tag, write the "
                "inventory, then stop before any SSH); a deploy or a test needs the real cloud",
            )
        cls.check_credentials()

    @classmethod
    def check_credentials(cls) -> None:
        import botocore.session

        if botocore.session.get_session().get_credentials() is None:
            raise PreconditionError(
                "no AWS credentials found (environment, ~/.aws/credentials, ~/.aws/config, SSO or a profile)",
                "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE), or on CI assume a role "
                "(docs/cloud.md#credentials); the instance metadata service is never asked",
            )

    # -- inventory facts ------------------------------------------------------------------------

    @classmethod
    def check_network(cls, server_vars: HostVars) -> None:
        if server_vars.get("cloud_endpoint_real") is not True:
            raise PreconditionError(
                f"the hosts of cloud run {server_vars.get('cloud_run_id')} were made by the EC2 endpoint "
                f"{server_vars.get('cloud_endpoint_url')!r}, which is not AWS's: their addresses are fake and "
                "pbs-harness never connects to them",
                "use a run made against AWS itself (no AWS_ENDPOINT_URL), or stop at provisioning",
            )

    @classmethod
    def unreachable_hint(cls, inventory_path: Path) -> str:
        return (
            f"check that the run's instances are running (`pbs-harness sweep --dry-run` lists them), that its "
            f"security group lets this machine's address in on port 22 (--ssh-from), and {inventory_path}"
        )

    @classmethod
    def cluster_name(cls, server_vars: HostVars) -> str | None:
        return str(server_vars.get("cloud_run_id") or "") or None

    # -- one host ------------------------------------------------------------------------------

    def _act(self, action: str) -> dict[str, Any]:
        """instance.yml on this host's instance; its state and security groups afterwards."""
        from pbs_harness.deploy import playbook as deploy

        # No check_network here: these calls go to the API endpoint only, never to the instance's address.
        v = self.host_vars
        with tempfile.TemporaryDirectory(prefix="pbsh-aws-") as tmp:
            out = Path(tmp) / "instance.json"
            extra = {
                "cloud_instance_id": v["cloud_instance_id"],
                "cloud_instance_action": action,
                "cloud_instance_file": str(out),
                "cloud_region": v["cloud_region"],
                "cloud_endpoint_url": v.get("cloud_endpoint_url", ""),
                "cloud_security_group": v["cloud_security_group"],
                "cloud_partition_group": v["cloud_partition_group"],
            }
            deploy.run_playbook(
                f"{self.PLAYBOOKS}/instance.yml",
                Path("localhost,"),
                ["-e", json.dumps(extra)],
                progress=lambda _line: None,
                log_dir=Path(tmp),
            )
            return json.loads(out.read_text())

    def _ssh(self):
        from pbs_harness.hosts.ssh import SshHost

        assert self.cluster is not None, "SSH-side faults need the cluster's connections"
        return SshHost(self.name, self.host_vars, self.cluster)

    def is_running(self) -> bool:
        return self._act("info")["state"] == "running"

    def is_paused(self) -> bool:
        return self._ssh().is_paused()

    def is_partitioned(self) -> bool:
        """Either half of the cut is in place (a heal must undo both)."""
        if self.host_vars["cloud_partition_group"] in self._act("info")["security_groups"]:
            return True
        return self._ssh().is_partitioned()

    def crash(self) -> None:
        self._act("force_stopped")

    def boot(self) -> None:
        self._act("running")
        self.wait_ready(timeout=300)

    def reboot(self) -> None:
        self._act("rebooted")

    def wait_ready(self, timeout: float = 300) -> None:
        from pbs_harness.common.errors import UnreachableError
        from pbs_harness.common.waits import wait_until
        from pbs_harness.remote import reachability

        self.check_network(self.host_vars)  # never a fake (moto) address
        where = {self.name: (str(self.host_vars["ansible_host"]), int(self.host_vars.get("ansible_port", 22)))}
        wait_until(
            lambda: reachability.probe(where, within=5),
            lambda failures: not failures,
            timeout=timeout,
            interval=5,
            max_interval=10,
            describe=f"{self.name}: sshd of instance {self.host_vars['cloud_instance_id']} answers",
            fail=lambda failures: UnreachableError(f"{self.name}: {failures}", self.unreachable_hint(Path("."))),
        )

    def pause(self) -> None:
        self._ssh().pause()

    def resume(self) -> None:
        self._ssh().resume()

    def partition(self) -> None:
        self._act("cut")  # first: no new connection from another host gets in meanwhile
        self._ssh().partition()

    def reconnect(self) -> None:
        self._ssh().reconnect()
        self._act("joined")

    def destroy(self) -> None:
        self._act("stopped")  # the run's teardown terminates it (pbs-harness down --run RUN)
