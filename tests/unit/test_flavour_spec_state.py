"""The flavour and image of a local cluster: validated in its spec, kept in state.json, and the
programs this machine needs for each flavour.

Faked: state directories are tmp folders (state.json written by the test where an old format is
wanted); `which` is a function of the test's (preflight.check_programs takes it), and run_all's other
checks are replaced by recorders — nothing is created on this machine.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pbs_harness.common.errors import PreconditionError
from pbs_harness.localcluster import cluster_kind, preflight, state
from pbs_harness.localcluster.spec import ClusterSpec

# --- spec ---------------------------------------------------------------------------------------


def test_a_system_cluster_says_so_in_its_description() -> None:
    system = ClusterSpec(prefix="sy", subnet="10.73.0.0/24", host_count=3, flavour="system", image="debian-11")
    assert cluster_kind.describe(system) == "3 debian-11 system hosts sy01.. on 10.73.0.0/24"
    assert cluster_kind.describe(ClusterSpec(host_count=3)) == "3 hosts pbsh01.. on 10.71.0.0/24"
    assert (ClusterSpec().flavour, ClusterSpec().image) == ("namespace", "debian-12")


@pytest.mark.parametrize(
    ("kwargs", "message", "hint"),
    [
        (
            {"flavour": "vm"},
            "host flavour 'vm' is not known",
            "use --flavour namespace or --flavour system",
        ),
        (
            {"flavour": "system", "image": "centos-9"},
            "image 'centos-9' is not known",
            "use --image debian-12 or --image debian-11",
        ),
    ],
)
def test_an_unknown_flavour_or_image_is_refused_with_the_fix(kwargs: dict, message: str, hint: str) -> None:
    with pytest.raises(PreconditionError) as err:
        ClusterSpec(**kwargs)
    assert (err.value.message, err.value.hint) == (message, hint)


# --- state.json ---------------------------------------------------------------------------------


def test_a_system_clusters_state_round_trips(tmp_path: Path) -> None:
    spec = ClusterSpec(prefix="sy", subnet="10.73.0.0/24", host_count=2, login_user="ops", flavour="system")
    st = state.ClusterState.from_spec(spec, owner="/work/wt/x")
    st.image_lowerdirs = ["/cache/images/debian-12-host-abc/tree"]
    st.packages_dir = "/cache/packages/0123-debian-12-builder-def"
    state.save(st, tmp_path)
    loaded = state.load(tmp_path)
    assert loaded == st
    assert loaded is not None
    assert loaded.spec == spec
    assert json.loads((tmp_path / "state.json").read_text())["flavour"] == "system"


def test_a_state_file_from_before_flavours_loads_as_a_namespace_cluster(tmp_path: Path) -> None:
    (tmp_path / "state.json").write_text(
        json.dumps({"subnet": "10.72.0.0/24", "host_count": 3, "prefix": "pbsh", "created_paths": ["/etc/pbs.conf"]})
    )
    loaded = state.load(tmp_path)
    assert loaded is not None
    assert (loaded.flavour, loaded.image, loaded.image_lowerdirs, loaded.packages_dir) == (
        "namespace",
        "debian-12",
        [],
        None,
    )
    assert loaded.spec == ClusterSpec(subnet="10.72.0.0/24", host_count=3)


def test_keys_a_later_version_adds_are_ignored(tmp_path: Path) -> None:
    record = {"subnet": "10.72.0.0/24", "host_count": 2, "prefix": "pbsh", "flavour": "system", "gpu_model": "x"}
    (tmp_path / "state.json").write_text(json.dumps(record))
    loaded = state.load(tmp_path)
    assert loaded is not None
    assert loaded.flavour == "system"


def test_a_state_file_with_an_unknown_flavour_is_refused_when_its_spec_is_read(tmp_path: Path) -> None:
    (tmp_path / "state.json").write_text(
        json.dumps({"subnet": "10.72.0.0/24", "host_count": 2, "prefix": "pbsh", "flavour": "vm"})
    )
    loaded = state.load(tmp_path)
    assert loaded is not None
    with pytest.raises(PreconditionError, match="host flavour 'vm' is not known"):
        _ = loaded.spec


# --- programs this machine needs, per flavour ---------------------------------------------------


def which_only(*known: str):
    return lambda prog: f"/usr/bin/{prog}" if prog in known else None


def test_system_hosts_need_nspawn_and_debootstrap_not_tini_or_sshd() -> None:
    preflight.check_programs(which_only(*preflight.SYSTEM_PROGRAMS), flavour="system")
    with pytest.raises(PreconditionError) as err:
        preflight.check_programs(which_only("ip", "ssh-keygen", "iptables", "mount"), flavour="system")
    assert err.value.message == (
        "missing programs: systemd-nspawn (Debian package systemd-container), debootstrap (Debian package debootstrap)"
    )
    assert err.value.hint == "install them: apt-get install -y debootstrap systemd-container"


def test_nothing_found_names_only_the_system_flavours_programs() -> None:
    with pytest.raises(PreconditionError) as err:
        preflight.check_programs(which_only(), flavour="system")
    for prog in ("systemd-nspawn", "debootstrap", "mount", "ip ", "iptables", "ssh-keygen"):
        assert prog in err.value.message
    for prog in ("tini", "sshd", "unshare", "sudo"):
        assert prog not in err.value.message


def test_namespace_hosts_need_tini_and_not_nspawn() -> None:
    namespace_only = [p for p in preflight.REQUIRED_PROGRAMS if p != "tini"]
    with pytest.raises(PreconditionError) as err:
        preflight.check_programs(which_only(*namespace_only), flavour="namespace")
    assert err.value.message == "missing programs: tini (Debian package tini)"
    preflight.check_programs(which_only(*preflight.REQUIRED_PROGRAMS), flavour="namespace")  # no nspawn needed


def test_run_all_checks_the_programs_of_the_clusters_flavour(monkeypatch: pytest.MonkeyPatch) -> None:
    checked: list[str] = []
    monkeypatch.setattr(preflight, "check_root", lambda: None)
    monkeypatch.setattr(preflight, "check_netns", lambda: None)
    monkeypatch.setattr(preflight, "check_other_clusters", lambda spec, root=None: None)
    monkeypatch.setattr(preflight, "check_subnet", lambda spec, ours: None)
    monkeypatch.setattr(preflight, "check_programs", lambda flavour="namespace": checked.append(flavour))
    preflight.run_all(ClusterSpec(flavour="system"), ours=False)
    preflight.run_all(ClusterSpec(), ours=False)
    assert checked == ["system", "namespace"]
