"""Local cluster shape: names, addresses, interface names, and rejected input."""

import pytest

from pbs_harness.common.errors import PreconditionError
from pbs_harness.localcluster.spec import ClusterSpec


def test_default_shape_is_one_server_and_five_sisters() -> None:
    spec = ClusterSpec()
    assert [h.name for h in spec.hosts] == ["pbsh01", "pbsh02", "pbsh03", "pbsh04", "pbsh05", "pbsh06"]
    assert spec.server.name == "pbsh01"
    assert spec.bridge_ip == "10.71.0.1"
    assert [h.ip for h in spec.hosts][:2] == ["10.71.0.11", "10.71.0.12"]


def test_sixteen_hosts_fit_and_interface_names_stay_short() -> None:
    spec = ClusterSpec(host_count=16, subnet="192.168.77.0/24")
    assert spec.hosts[-1].name == "pbsh16"
    assert spec.hosts[-1].ip == "192.168.77.26"
    assert all(len(h.veth_outer) <= 15 for h in spec.hosts)
    assert len(spec.bridge) <= 15


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"subnet": "8.8.8.0/24"}, "not a private range"),
        ({"subnet": "10.71.0.5/24"}, "not an IPv4 network"),
        ({"subnet": "bogus"}, "not an IPv4 network"),
        ({"subnet": "10.71.0.0/29"}, "too small"),
        ({"host_count": 0}, "out of range"),
        ({"host_count": 33}, "out of range"),
        ({"prefix": "Bad-Name"}, "prefix"),
    ],
)
def test_bad_shapes_are_rejected_with_a_fix(kwargs: dict, words: str) -> None:
    with pytest.raises(PreconditionError, match=words) as err:
        ClusterSpec(**kwargs)
    assert err.value.hint


def test_unknown_host_names_the_known_ones() -> None:
    with pytest.raises(PreconditionError, match="pbsh07") as err:
        ClusterSpec().host("pbsh07")
    assert "pbsh01" in err.value.hint
