"""Benchmark (#33): each stage of a first run and of a warm rerun of the README's command, in one run.

Phases (both by default, `--phases` chooses):
  fresh  a clone of this checkout's HEAD, a new empty cache (PBS_HARNESS_CACHE_DIR: no image layer, no
         OpenPBS package set), no cluster up. `--import-packages FILE` puts an exported package set
         (`pbs-harness cache --export`) into that cache first: the run then builds the image layers but
         not the packages, and the report says so.
  warm   a second clone, the cache the fresh phase filled (or, without a fresh phase, `--cache-dir`, else
         this machine's cache), no cluster up.

Each phase runs the commands `./acceptance --dry-run` prints for the given settings — system packages,
venv, `pbs-harness test --judge-only` (PYTEST_ARGS judged), `pbs-harness up --idempotence`,
`pbs-harness test` — one by one in the clone, timing each, and
splits `up` into its stages (image layers, OpenPBS packages, hosts up, first deploy, idempotence gate,
verify) by the lines it prints, each stamped with its arrival time. `--scope up` leaves the suites out
(the report says "not run"). The clusters are taken down before each phase and at the end.

Writes reports/bench-fresh.json (`--out`): per phase the stages, the commands, their logs and the load
average before and after each; the issue's targets and, for each missed one, the stage that misses it.
A target is only judged where the run is the one it names (4 clusters for up + deploy, the whole
acceptance for the wall time); otherwise the report says why it is not judged.

  bench/bench_fresh.py --phases warm --scope up --clusters 1 --state-dir /var/lib/pbs-harness/pbsp \\
      --name-prefix pbsp --subnet 10.85.0.0/24 --openpbs ../shared/openpbs/openpbs-master-cd7ab5e.tar.gz
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE_ENV = "PBS_HARNESS_CACHE_DIR"  # pbs_harness/localcluster/containers/images.py
STATE_ENV = "PBS_HARNESS_STATE_DIR"  # pbs_harness/localcluster/state.py
# Issue #33's targets, in seconds.
SETTINGS = ("phase_list", "scope", "clusters", "openpbs", "state_dir", "name_prefix", "subnet", "pytest_args")
SETTINGS += ("cache_dir", "import_packages")
TARGETS = {"fresh_whole_s": 1200, "warm_up_deploy_4_clusters_s": 60, "warm_whole_s": 600}


@dataclass
class Line:
    t: float  # seconds since the command started
    text: str


@dataclass
class Command:
    name: str  # system-packages, venv, up, test
    argv: list[str]
    seconds: float = 0.0
    rc: int | None = None
    log: str = ""
    load_before: tuple[float, float, float] = (0.0, 0.0, 0.0)
    load_after: tuple[float, float, float] = (0.0, 0.0, 0.0)
    lines: list[Line] = field(default_factory=list, repr=False)


# ---------------------------------------------------------------- parsing (unit-tested)

_HARNESS = r"^(?:\[\d\d:\d\d:\d\d\] )?(?:\[(?P<cluster>[^\]]+)\] )?"
LAYER_MADE = re.compile(_HARNESS + r"image layer (?P<layer>\S+) made in (?P<s>\d+(?:\.\d+)?)s")
PACKAGES_BUILT = re.compile(_HARNESS + r"OpenPBS packages built in (?P<s>\d+(?:\.\d+)?)s")
PACKAGES_CACHED = re.compile(_HARNESS + r"OpenPBS \S+ packages of \S+: cached in ")
CLUSTER_UP = re.compile(_HARNESS + r"(?:local cluster up: .* in|(?P<n>\d+) local clusters up in) (?P<s>[\d.]+)s")
DEPLOYING = re.compile(_HARNESS + r"deploying OpenPBS to \d+ hosts")
DEPLOYED = re.compile(_HARNESS + r"deploy finished in (?P<s>[\d.]+)s, changed=(?P<changed>\d+)")
GATE_START = re.compile(_HARNESS + r"idempotence gate: deploying again")
GATE_DONE = re.compile(_HARNESS + r"idempotence gate: second deploy in (?P<s>[\d.]+)s, changed=0")
GATE_FAILED = re.compile(_HARNESS + r"idempotence gate FAILED")
VERIFYING = re.compile(_HARNESS + r"verifying hosts")
VERIFIED = re.compile(_HARNESS + r"verify: ")
PYTEST_SUMMARY = re.compile(r"^=+ (?P<counts>.*\b(?:passed|failed|error|skipped|xfailed|deselected)\b.*) in [\d.]+s")


def _first(lines: list[Line], pattern: re.Pattern) -> Line | None:
    return next((line for line in lines if pattern.search(line.text)), None)


def _last(lines: list[Line], pattern: re.Pattern) -> Line | None:
    return next((line for line in reversed(lines) if pattern.search(line.text)), None)


def _span(lines: list[Line], start: re.Pattern, end: re.Pattern) -> float | None:
    """Wall time from the first line matching `start` to the last matching `end` (all clusters together)."""
    first, last = _first(lines, start), _last(lines, end)
    if first is None or last is None or last.t < first.t:
        return None
    return round(last.t - first.t, 1)


def up_stages(lines: list[Line]) -> dict:
    """The stages of one `pbs-harness up --idempotence` run, from its timestamped lines.

    Image layers and the package build: the seconds the harness reports for each. Hosts up: the
    cluster(s)-up line's own figure less the image layers made inside it (the host and deps layers are
    made while the hosts come up; base and builder before the package build). Deploy, gate and verify:
    wall time from the first cluster's start line to the last cluster's end line, and each cluster's
    own reported figures. up_deploy_s: from the command's start to the end of the last first deploy."""
    layers = {}
    for line in lines:
        if m := LAYER_MADE.search(line.text):
            layers[m["layer"]] = float(m["s"])
    built = _first(lines, PACKAGES_BUILT)
    cached = _first(lines, PACKAGES_CACHED)
    up = _first(lines, CLUSTER_UP)
    packages_line = built or cached
    inside_up = 0.0
    if up is not None:
        after = packages_line.t if packages_line is not None else 0.0
        inside_up = sum(
            float(m["s"])
            for line in lines
            if after <= line.t <= up.t and (m := LAYER_MADE.search(line.text)) is not None
        )
    deploys = {
        m["cluster"] or "": {"seconds": float(m["s"]), "changed": int(m["changed"])}
        for line in lines
        if (m := DEPLOYED.search(line.text))
    }
    # The first "deploy finished" of each cluster is its first deploy; the gate prints no such line.
    gates = {m["cluster"] or "": float(m["s"]) for line in lines if (m := GATE_DONE.search(line.text))}
    last_deploy = _last(lines, DEPLOYED)
    return {
        "image_layers_s": round(sum(layers.values()), 1),
        "image_layers": layers,
        "openpbs_packages_s": float(PACKAGES_BUILT.search(built.text)["s"]) if built else 0.0,
        "openpbs_packages": "built" if built else ("cached" if cached else "not seen"),
        "hosts_up_s": round(float(CLUSTER_UP.search(up.text)["s"]) - inside_up, 1) if up else None,
        "deploy_s": _span(lines, DEPLOYING, DEPLOYED),
        "deploy_per_cluster": deploys,
        "idempotence_gate_s": _span(lines, GATE_START, GATE_DONE),
        "idempotence_gate_per_cluster_s": gates,
        "idempotence_gate": "failed" if _first(lines, GATE_FAILED) else ("passed" if gates else "not seen"),
        "verify_s": _span(lines, VERIFYING, VERIFIED),
        "up_deploy_s": round(last_deploy.t, 1) if last_deploy else None,
    }


def pytest_summary(lines: list[Line]) -> str | None:
    last = _last(lines, PYTEST_SUMMARY)
    return PYTEST_SUMMARY.search(last.text)["counts"] if last else None


def acceptance_commands(dry_run_output: str) -> list[Command]:
    """The commands `./acceptance --dry-run` prints, named by what they do."""
    names = {"install-system-packages.sh": "system-packages", "make": "venv", "up": "up", "test": "test"}
    names["--judge-only"] = "test-line"  # PYTEST_ARGS judged by pytest's parser before `up` (seconds)
    commands = []
    for text in dry_run_output.splitlines():
        argv = shlex.split(text)
        if not argv:
            continue
        tool = Path(argv[0]).name
        key = argv[1] if tool == "pbs-harness" and len(argv) > 1 else tool
        key = "--judge-only" if key == "test" and "--judge-only" in argv else key
        if key not in names:
            raise ValueError(f"./acceptance --dry-run printed a command this bench does not know: {text!r}")
        commands.append(Command(names[key], argv))
    return commands


def phase_stages(commands: list[Command]) -> dict:
    """A phase's stages: each command's wall time, `up` split into its own stages."""
    by_name = {c.name: c for c in commands}
    stages: dict = {
        "system_packages_s": round(by_name["system-packages"].seconds, 1) if "system-packages" in by_name else None,
        "venv_s": round(by_name["venv"].seconds, 1) if "venv" in by_name else None,
    }
    up = by_name.get("up")
    if up is not None:
        stages["up_command_s"] = round(up.seconds, 1)
        stages.update(up_stages(up.lines))
    test = by_name.get("test")
    stages["suites_s"] = round(test.seconds, 1) if test is not None else None
    stages["suites"] = pytest_summary(test.lines) if test is not None else "not run (--scope up)"
    return stages


def judge(phases: dict, clusters: int, scope: str) -> dict:
    """Each target of #33 against this run: met, missed (with the largest stage in it), or why not judged."""
    verdicts = {}
    stage_keys = ("system_packages_s", "venv_s", "image_layers_s", "openpbs_packages_s", "hosts_up_s",
                  "deploy_s", "idempotence_gate_s", "verify_s", "suites_s")  # fmt: skip

    def largest(stages: dict) -> str:
        return max((k for k in stage_keys if stages.get(k) is not None), key=lambda k: stages[k])

    def whole(name: str, target: str) -> None:
        phase = phases.get(name)
        if phase is None:
            verdicts[target] = f"not judged: no {name} phase in this run"
        elif scope != "acceptance":
            verdicts[target] = f"not judged: --scope {scope} leaves the suites out"
        elif phase["rc"] != 0:
            verdicts[target] = f"not judged: the {name} run failed (exit {phase['rc']})"
        else:
            met = phase["whole_s"] <= TARGETS[target]
            verdicts[target] = (
                "met" if met else f"missed: {phase['whole_s']}s, largest stage {largest(phase['stages'])}"
            )

    whole("fresh", "fresh_whole_s")
    whole("warm", "warm_whole_s")
    warm = phases.get("warm")
    target = "warm_up_deploy_4_clusters_s"
    if warm is None:
        verdicts[target] = "not judged: no warm phase in this run"
    elif clusters != 4:
        verdicts[target] = f"not judged: {clusters} cluster(s), the target is for 4"
    elif warm["stages"].get("up_deploy_s") is None:
        verdicts[target] = "not judged: the warm run printed no finished deploy"
    else:
        seconds = warm["stages"]["up_deploy_s"]
        verdicts[target] = (
            "met"
            if seconds <= TARGETS[target]
            else f"missed: {seconds}s, largest stage "
            + max(("hosts_up_s", "deploy_s"), key=lambda k: warm["stages"].get(k) or 0)
        )
    return verdicts


# ---------------------------------------------------------------- running


def _load() -> tuple[float, float, float]:
    return tuple(round(x, 2) for x in os.getloadavg())


def run_command(cmd: Command, cwd: Path, env: dict, log: Path) -> Command:
    """Run `cmd` in `cwd`, each output line stamped and echoed, all of it into `log`."""
    cmd.log, cmd.load_before = str(log), _load()
    print(f"bench-fresh: $ {shlex.join(cmd.argv)}  (load {cmd.load_before})", flush=True)
    start = time.monotonic()
    with (
        log.open("w") as out,
        subprocess.Popen(
            cmd.argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace"
        ) as proc,
    ):
        assert proc.stdout is not None
        for text in proc.stdout:
            cmd.lines.append(Line(time.monotonic() - start, text.rstrip("\n")))
            out.write(f"{cmd.lines[-1].t:8.1f} {text}")
            print(f"  {cmd.lines[-1].t:7.1f} {text}", end="", flush=True)
    cmd.seconds, cmd.rc, cmd.load_after = time.monotonic() - start, proc.returncode, _load()
    return cmd


def clone(dest: Path) -> str:
    """A clone of this checkout's HEAD commit at `dest` (committed work only, as a fresh clone has)."""
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
    subprocess.run(["git", "clone", "-q", "--no-checkout", str(ROOT), str(dest)], check=True)
    subprocess.run(["git", "-C", str(dest), "checkout", "-q", "--detach", commit.stdout.strip()], check=True)
    return commit.stdout.strip()


def down(checkout: Path, env: dict) -> None:
    harness = checkout / ".venv/bin/pbs-harness"
    if not harness.exists():
        harness = ROOT / ".venv/bin/pbs-harness"
    subprocess.run([str(harness), "down"], cwd=checkout, env=env, check=False, capture_output=True)


def run_phase(name: str, args: argparse.Namespace, env: dict) -> dict:
    workdir = Path(args.workdir) / name
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    checkout = workdir / "pbs-harness"
    commit = clone(checkout)
    down(ROOT, env)  # no cluster up: the phase starts from nothing running
    settings = [f"CLUSTERS={args.clusters}", f"OPENPBS={args.openpbs}", f"PYTHON={args.python}"]
    settings.append(f"UP_ARGS=--name-prefix {args.name_prefix} --subnet {args.subnet}")
    if args.pytest_args:
        settings.append(f"PYTEST_ARGS={args.pytest_args}")
    dry = subprocess.run(
        ["./acceptance", "--dry-run", *settings], cwd=checkout, env=env, capture_output=True, text=True, check=False
    )
    if dry.returncode != 0:
        sys.exit(f"bench-fresh: ./acceptance refused the settings:\n{dry.stderr}")
    commands = acceptance_commands(dry.stdout)
    if args.scope == "up":
        commands = [c for c in commands if c.name != "test"]
    start, load = time.monotonic(), _load()
    rc = 0
    for n, cmd in enumerate(commands):
        run_command(cmd, checkout, env, workdir / f"{n}-{cmd.name}.log")
        if cmd.rc != 0:
            rc = cmd.rc
            break
    whole = time.monotonic() - start
    return {
        "checkout": str(checkout),
        "commit": commit,
        "cache_dir": env.get(CACHE_ENV, "this machine's default (/var/cache/pbs-harness)"),
        "rc": rc,
        "whole_s": round(whole, 1),
        "load_start": load,
        "load_end": _load(),
        "commands": [
            {"name": c.name, "argv": c.argv, "seconds": round(c.seconds, 1), "rc": c.rc, "log": c.log}
            | {"load_before": c.load_before, "load_after": c.load_after}
            for c in commands
            if c.rc is not None
        ],
        "stages": phase_stages([c for c in commands if c.rc is not None]),
    }


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--phases", default="fresh,warm", help="fresh,warm (default), fresh, or warm")
    parser.add_argument("--scope", choices=("acceptance", "up"), default="acceptance",
                        help="acceptance: the README's whole command; up: without the suites")  # fmt: skip
    parser.add_argument("--clusters", type=int, default=4, help="local clusters (default 4, as #33 measures)")
    parser.add_argument("--openpbs", help="OPENPBS of ./acceptance (default: the archive CI builds)")
    parser.add_argument("--state-dir", default="/var/lib/pbs-harness/bench-fresh")
    parser.add_argument("--name-prefix", default="bf")
    parser.add_argument("--subnet", default="auto")
    parser.add_argument("--pytest-args", default="")
    parser.add_argument("--python", default="python3")
    parser.add_argument("--cache-dir", help="the cache: fresh needs it empty or absent (default: WORKDIR/cache "
                        "with a fresh phase, else this machine's)")  # fmt: skip
    parser.add_argument("--import-packages", help="an exported package set put into the fresh cache first")
    # Not /tmp: the clones' venvs and a fresh cache's image layers are large, and a bench is rerun.
    parser.add_argument("--workdir", default="/var/tmp/pbs-harness-bench-fresh", help="clones, cache, logs")  # noqa: S108
    parser.add_argument("--out", default=str(ROOT / "reports" / "bench-fresh.json"))
    args = parser.parse_args(argv)
    phases = [p for p in args.phases.split(",") if p]
    if not phases or set(phases) - {"fresh", "warm"}:
        parser.error(f"--phases {args.phases}: give fresh,warm, fresh or warm")
    args.phase_list = phases
    if args.import_packages and "fresh" not in phases:
        parser.error("--import-packages is for the fresh phase: add --phases fresh")
    if args.import_packages and not Path(args.import_packages).is_file():
        parser.error(f"--import-packages {args.import_packages}: no such file")
    if "fresh" in phases:
        args.cache_dir = args.cache_dir or str(Path(args.workdir) / "cache")
        cache = Path(args.cache_dir)
        if cache.exists() and any(cache.iterdir()):
            parser.error(
                f"--cache-dir {cache} is not empty: a fresh run needs an empty cache (remove it, or name another one)"
            )
    if not args.openpbs:
        found = subprocess.run(
            [str(ROOT / "scripts/ci/install-openpbs.sh"), "--source"], capture_output=True, text=True, check=False
        )
        if found.returncode != 0 or not found.stdout.strip():
            parser.error("no --openpbs given and the archive CI builds is not found: give --openpbs PATH")
        args.openpbs = found.stdout.strip()
    args.openpbs = str(Path(args.openpbs).resolve())
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if os.geteuid() != 0:
        sys.exit("bench-fresh: the local clusters need root: run it as root")
    env = {**os.environ, STATE_ENV: args.state_dir}
    if args.cache_dir:
        env[CACHE_ENV] = str(Path(args.cache_dir).resolve())
    report = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "cpus": os.cpu_count(),
        "settings": {k: getattr(args, k) for k in SETTINGS},
        "note": "fresh: new clone, empty cache; this machine's system packages were already installed, so "
        "system_packages_s is not a brand-new machine's. warm: second clone, cache filled, no cluster up.",
        "phases": {},
    }
    if args.import_packages:
        Path(args.cache_dir).mkdir(parents=True, exist_ok=True)
        harness = ROOT / ".venv/bin/pbs-harness"
        subprocess.run([str(harness), "cache", "--import", args.import_packages], env=env, check=True)
        report["note"] += f" The fresh cache got the package set {args.import_packages} imported: no package build."
    try:
        for name in args.phase_list:
            report["phases"][name] = run_phase(name, args, env)
            if report["phases"][name]["rc"] != 0:
                break
    finally:
        down(ROOT, env)
    report["targets"] = TARGETS
    report["verdicts"] = judge(report["phases"], args.clusters, args.scope)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps({n: p["stages"] for n, p in report["phases"].items()}, indent=2))
    print(json.dumps(report["verdicts"], indent=2))
    print(f"bench-fresh: written {out}")
    return max((p["rc"] for p in report["phases"].values()), default=0) and 1


if __name__ == "__main__":
    sys.exit(main())
