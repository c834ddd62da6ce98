"""baseline.repair_kept_jobs with stand-ins (FAKED: each mom's mom_priv/jobs listing, pkill/pgrep and the
start command, the server's job list). A fake mom started again drops the job files, as a real pbs_mom
does at start for a sister's job (catch_child.c init_abort_jobs); one that keeps them plays a mom that
did not. What it proves: only moms that keep a job are restarted, the repair says what it found and
whether it is gone, and a job still kept is reported, never hidden."""

from pathlib import Path
from types import SimpleNamespace

from pbs_harness.suite import baseline


class FakeMom:
    def __init__(self, name: str, jobs: set[str], drops_on_start: bool = True) -> None:
        self.name, self.jobs, self.drops, self.running = name, set(jobs), drops_on_start, True
        self.calls: list[str] = []

    def run(self, cmd):
        text = cmd if isinstance(cmd, str) else " ".join(cmd)
        self.calls.append(text.split()[0] + (" " + cmd[1] if isinstance(cmd, list) and len(cmd) > 1 else ""))
        if text.startswith("ls "):
            return SimpleNamespace(ok=True, stdout="\n".join(f"{j}.JB" for j in sorted(self.jobs)))
        if text.startswith("pkill -KILL"):
            self.running = False
            return SimpleNamespace(ok=True, stdout="")
        if text.startswith("pgrep"):
            return SimpleNamespace(ok=self.running, stdout="")
        self.running = True  # the start command
        if self.drops:
            self.jobs.clear()
        return SimpleNamespace(ok=True, stdout="")

    check = run


def fake_pbs(moms: list[FakeMom], server_jobs: tuple[str, ...] = ()) -> SimpleNamespace:
    cluster = SimpleNamespace(moms=moms, pbs_home=Path("/var/spool/pbs"), prefix=Path("/opt/pbs"))
    return SimpleNamespace(cluster=cluster, jobs=SimpleNamespace(all=lambda history=False: dict.fromkeys(server_jobs)))


def test_only_the_mom_that_keeps_a_job_is_restarted_and_the_job_goes() -> None:
    keeper, clean = FakeMom("lk03", {"7.lk01"}), FakeMom("lk02", set())
    repair = baseline.repair_kept_jobs(fake_pbs([clean, keeper]), timeout=2)
    assert repair is not None
    assert (repair.kept, repair.still_there) == ({"lk03": ["7.lk01"]}, {})
    assert "pkill -KILL" in keeper.calls
    assert not any(c.startswith("pkill") for c in clean.calls)
    assert repair.describe() == (
        "jobs moms kept that the server no longer has (lk03: 7.lk01): pbs_mom killed and started again there, gone"
    )


def test_a_job_the_server_still_has_is_not_kept_and_nothing_restarts() -> None:
    mom = FakeMom("lk03", {"8.lk01"})
    assert baseline.repair_kept_jobs(fake_pbs([mom], server_jobs=("8.lk01",)), timeout=1) is None
    assert not any(c.startswith("pkill") for c in mom.calls)


def test_a_job_still_kept_after_the_restart_is_reported() -> None:
    mom = FakeMom("lk03", {"7.lk01"}, drops_on_start=False)
    repair = baseline.repair_kept_jobs(fake_pbs([mom]), timeout=0.5)
    assert repair is not None
    assert repair.still_there == {"lk03": ["7.lk01"]}
    assert repair.describe().endswith("still there: {'lk03': ['7.lk01']}")
