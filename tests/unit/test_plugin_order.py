"""The suites' plugins are registered before anything imports them, so pytest rewrites their asserts
(a plugin imported first by another one is not rewritten: PytestAssertRewriteWarning). Collection
only: no cluster is touched."""

import os
import subprocess
import sys

from pbs_harness.common import project


def test_collecting_the_suites_rewrites_every_plugin() -> None:
    root = project.root()
    res = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         "-W", "error::pytest.PytestAssertRewriteWarning", str(root / "ptl_tests")],
        cwd=root,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(root)},
        check=False,
        timeout=120,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "PytestAssertRewriteWarning" not in res.stdout + res.stderr
