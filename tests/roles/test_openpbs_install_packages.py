"""The packages method of roles/openpbs_install, run for real on this machine up to the install step.

What is real: ansible-playbook, the role's select and fetch stages (get_url over file://, unarchive,
copy, find, the dpkg-query probe), the preflight playbook. What is faked:
- the OpenPBS release: tiny .deb files built here with dpkg-deb, named and zipped like the official
  openpbs_<version>.ubuntu_20.04.zip (a top-level folder holding openpbs-{server,execution,client,devel}
  _<version>-1_amd64.deb), each holding one marker file. They are never installed;
- the hosts: inventory names with `ansible_connection: local` and a scratch download directory each;
- for the preflight test only, the facts of a SUSE and a Fedora host (a throwaway module sets them).
The install stage itself (apt/dnf/dnf5) is not run: it would change this machine's package database.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
ANSIBLE_PLAYBOOK = Path(sys.executable).parent / "ansible-playbook"
VERSION = "23.06.06"
RELEASE = f"openpbs_{VERSION}.ubuntu_20.04"
KINDS = ("server", "execution", "client", "devel")

pytestmark = pytest.mark.skipif(
    not (shutil.which("dpkg-deb") and shutil.which("dpkg-query") and shutil.which("unzip")),
    reason="needs dpkg-deb, dpkg-query and unzip (a Debian-family machine) to build and read the fixture packages",
)


def build_release(root: Path) -> Path:
    """A zip laid out like an official OpenPBS release, holding fixture packages (not OpenPBS)."""
    folder = root / "release" / RELEASE
    folder.mkdir(parents=True)
    for kind in KINDS:
        tree = root / "build" / kind
        (tree / "DEBIAN").mkdir(parents=True)
        (tree / "DEBIAN" / "control").write_text(
            f"Package: openpbs-{kind}\nVersion: {VERSION}-1\nArchitecture: amd64\n"
            "Maintainer: pbs-harness tests <nobody@invalid>\nDescription: pbs-harness test fixture, not OpenPBS\n"
        )
        (tree / "opt" / "pbs-harness-fixture").mkdir(parents=True)
        (tree / "opt" / "pbs-harness-fixture" / f"openpbs-{kind}.marker").write_text(f"fixture {kind}\n")
        deb = folder / f"openpbs-{kind}_{VERSION}-1_amd64.deb"
        subprocess.run(
            ["dpkg-deb", "--root-owner-group", "--build", str(tree), str(deb)], check=True, capture_output=True
        )
    archive = root / f"{RELEASE}.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for path in sorted(folder.rglob("*")):
            zf.write(path, path.relative_to(folder.parent))
    return archive


def run_playbook(root: Path, inventory: dict, playbook: str, *args: str) -> subprocess.CompletedProcess[str]:
    inv = root / "inventory.yml"
    inv.write_text(yaml.safe_dump(inventory))
    book = root / "playbook.yml"
    book.write_text(textwrap.dedent(playbook))
    env = {
        **os.environ,
        "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
        "ANSIBLE_ROLES_PATH": str(REPO / "roles"),
        "ANSIBLE_LIBRARY": f"{root / 'library'}:{REPO / 'library'}",
        "ANSIBLE_CACHE_PLUGIN": "memory",  # keep these fixture hosts out of the real fact cache
        "ANSIBLE_NOCOLOR": "1",
    }
    return subprocess.run(
        [str(ANSIBLE_PLAYBOOK), "-i", str(inv), str(book), *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def task_outcomes(output: str, task: str) -> dict[str, str]:
    """Each host's outcome line (ok, changed, skipping, fatal, failed) under the TASK header whose name
    ends with `task`. Hosts report in no fixed order, and a failure's message may quote the task's
    source (its name included), so the section runs from that header to the next TASK or PLAY
    header, not to the next mention of the name."""
    outcomes: dict[str, str] = {}
    inside = False
    for line in output.splitlines():
        header = re.match(r"(TASK|PLAY|RUNNING HANDLER) \[(.*)\]", line)
        if header:
            inside = header.group(1) == "TASK" and header.group(2).endswith(task)
            continue
        result = re.match(r"(ok|changed|skipping|fatal|failed): \[([^\]]+)\]", line)
        if inside and result:
            outcomes[result.group(2)] = result.group(1)
    return outcomes


def fixture_hosts(root: Path, hosts: dict[str, dict], server: str, moms: list[str], clients: list[str]) -> dict:
    common = {
        "ansible_connection": "local",
        "ansible_python_interpreter": sys.executable,
        "openpbs_install_method": "packages",
        "openpbs_install_download_dir": str(root / "hosts" / "{{ inventory_hostname }}" / "cache"),
        # Never the real /opt/pbs: the verify stage probes this scratch prefix only.
        "openpbs_install_prefix": str(root / "prefix"),
        "openpbs_install_init_script": str(root / "prefix" / "init.d-pbs"),
    }
    return {
        "all": {
            "vars": common,
            "hosts": hosts,
            "children": {
                "pbs_server": {"hosts": {server: None}},
                "pbs_moms": {"hosts": dict.fromkeys(moms)},
                "pbs_clients": {"hosts": dict.fromkeys(clients)},
            },
        }
    }


STAGES = """\
- name: Select and fetch stages of openpbs_install
  hosts: all
  gather_facts: false
  tasks:
    - name: Select
      ansible.builtin.include_role:
        name: openpbs_install
        tasks_from: packages_select
    - name: Fetch
      ansible.builtin.include_role:
        name: openpbs_install
        tasks_from: packages_fetch
      when: __openpbs_install_needed | bool
    - name: Record what was selected and fetched
      ansible.builtin.copy:
        dest: "{{ results }}/{{ inventory_hostname }}.json"
        content: "{{ {'package': __openpbs_install_package,
                      'file': __openpbs_install_file, 'needed': __openpbs_install_needed,
                      'path': __openpbs_install_package_path | default('')} | to_json }}"
        mode: "0644"
"""


def deb_package(path: str) -> str:
    return subprocess.run(
        ["dpkg-deb", "--field", path, "Package"], check=True, capture_output=True, text=True
    ).stdout.strip()


def installed_upstream_version(package: str) -> str:
    """The installed version of a package of this machine without its Debian revision (1.21.22-1 -> 1.21.22)."""
    query = ["dpkg-query", "--show", "--showformat=${Version}", package]
    return subprocess.run(query, check=True, capture_output=True, text=True).stdout.rsplit("-", 1)[0]


def recap(output: str, host: str) -> str:
    return next(line for line in output.splitlines() if line.startswith(host) and "ok=" in line)


def test_each_host_gets_its_kinds_package_from_each_source(tmp_path: Path) -> None:
    archive = build_release(tmp_path)
    sha256 = "sha256:" + hashlib.sha256(archive.read_bytes()).hexdigest()
    loose = tmp_path / "release" / RELEASE
    results = tmp_path / "results"
    results.mkdir()
    hosts = {
        # the release zip by URL (get_url + unarchive on the host), checksum checked
        "fx-server": {
            "openpbs_install_packages_archive": archive.as_uri(),
            "openpbs_install_packages_archive_checksum": sha256,
        },
        # the release zip as a controller path (unarchive from the controller), checksum checked
        "fx-mom": {
            "openpbs_install_packages_archive": str(archive),
            "openpbs_install_packages_archive_checksum": sha256,
        },
        # loose files from a controller directory, as before the zip
        "fx-client": {"openpbs_install_packages_dir": str(loose)},
        # a zip of another version than the inventory asks for
        "fx-wrong-version": {"openpbs_install_packages_archive": str(archive), "openpbs_install_version": "23.06.07"},
        # two sources at once
        "fx-two-sources": {
            "openpbs_install_packages_archive": str(archive),
            "openpbs_install_packages_dir": str(loose),
        },
        # a host that already has the wanted package: here dpkg itself stands in for openpbs-execution
        "fx-has-it": {
            "openpbs_install_packages_archive": str(archive),
            "openpbs_install_package_names": {
                "server": "openpbs-server",
                "execution": "dpkg",
                "client": "openpbs-client",
            },
            "openpbs_install_version": installed_upstream_version("dpkg"),
        },
    }
    moms = ["fx-server", "fx-mom", "fx-wrong-version", "fx-two-sources", "fx-has-it"]
    inventory = fixture_hosts(tmp_path, hosts, "fx-server", moms, ["fx-client"])

    first = run_playbook(tmp_path, inventory, STAGES, "-e", f"results={results}")

    out = first.stdout
    assert first.returncode == 2, out  # the two bad hosts fail, the others go on
    for host, kind in (("fx-server", "server"), ("fx-mom", "execution"), ("fx-client", "client")):
        got = json.loads((results / f"{host}.json").read_text())
        assert got["package"] == f"openpbs-{kind}", got
        assert got["needed"] is True, got  # no openpbs-* package is installed on this machine
        assert Path(got["path"]).is_file(), got
        assert Path(got["path"]).name == f"openpbs-{kind}_{VERSION}-1_amd64.deb"
        assert deb_package(got["path"]) == f"openpbs-{kind}"
        assert str(tmp_path / "hosts" / host / "cache") in got["path"]
    assert "failed=0" in recap(out, "fx-server")
    has_it = json.loads((results / "fx-has-it.json").read_text())
    assert has_it["needed"] is False, has_it  # nothing is fetched or installed there
    assert has_it["path"] == "", has_it
    assert not (tmp_path / "hosts" / "fx-has-it").exists()
    assert "has no openpbs-execution_23.06.07-1_amd64.deb" in out
    assert f"It holds: openpbs-client_{VERSION}-1_amd64.deb, openpbs-devel_{VERSION}-1_amd64.deb" in out
    assert "these are all set: openpbs_install_packages_archive, openpbs_install_packages_dir" in out


def test_check_mode_shows_the_download_and_changes_nothing(tmp_path: Path) -> None:
    archive = build_release(tmp_path)
    hosts = {
        "fx-server": {"openpbs_install_packages_archive": archive.as_uri()},
        "fx-mom": {"openpbs_install_packages_archive": str(archive)},
    }
    inventory = fixture_hosts(tmp_path, hosts, "fx-server", ["fx-server", "fx-mom"], [])
    book = """\
    - name: The whole role in check mode
      hosts: all
      gather_facts: false
      roles:
        - role: openpbs_install
    """

    run = run_playbook(tmp_path, inventory, book, "--check", "--diff")

    out = " ".join(run.stdout.split())
    assert run.returncode == 0, run.stdout
    assert f"Would install openpbs-server (openpbs-server_{VERSION}-1_amd64.deb) with apt" in out
    assert f"Would install openpbs-execution (openpbs-execution_{VERSION}-1_amd64.deb) with apt" in out
    assert "changed: [fx-server]" in out  # the download directory would be created
    assert "WARNING" not in run.stdout + run.stderr
    assert not (tmp_path / "hosts").exists()


FAKE_FACTS_MODULE = '''\
#!/usr/bin/python
"""Test-only: report the facts it is given, to stand in for hosts of other distributions."""
from ansible.module_utils.basic import AnsibleModule

module = AnsibleModule(argument_spec={"facts": {"type": "dict", "required": True}})
module.exit_json(changed=False, ansible_facts=module.params["facts"])
'''


def test_preflight_refuses_a_zypper_host_and_accepts_dnf5(tmp_path: Path) -> None:
    (tmp_path / "library").mkdir()
    (tmp_path / "library" / "fixture_facts.py").write_text(FAKE_FACTS_MODULE)
    hosts = {
        "fx-suse": {
            "fixture_facts": {"pkg_mgr": "zypper", "distribution": "openSUSE Leap", "distribution_version": "15.6"}
        },
        "fx-fedora": {"fixture_facts": {"pkg_mgr": "dnf5", "distribution": "Fedora", "distribution_version": "42"}},
    }
    inventory = fixture_hosts(tmp_path, hosts, "fx-fedora", ["fx-fedora", "fx-suse"], [])
    inventory["all"]["vars"]["openpbs_install_packages_archive"] = "https://example.invalid/openpbs.zip"
    book = f"""\
    - name: Pretend to be other distributions
      hosts: all
      gather_facts: false
      tasks:
        - name: Set the fixture facts
          fixture_facts:
            facts: "{{{{ fixture_facts }}}}"

    - name: Preflight
      ansible.builtin.import_playbook: {REPO / "playbooks" / "preflight.yml"}
    """

    run = run_playbook(tmp_path, inventory, book)

    assert run.returncode == 2, run.stdout
    assert (
        "fx-suse (openSUSE Leap 15.6) uses the package manager 'zypper'; openpbs_install_method: packages supports "
        "apt, dnf, dnf5" in " ".join(run.stdout.split())
    )
    assert "SUSE hosts are not supported" in run.stdout
    assert task_outcomes(run.stdout, "Check that the package manager is supported") == {
        "fx-fedora": "ok",
        "fx-suse": "fatal",
    }, run.stdout
