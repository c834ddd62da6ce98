"""Closing lines of a CI run over its JUnit files.

`summary.py FILE...` prints `ci: N passed, N failed, N skipped` over all of them, and how many of the
passed are xfails (known OpenPBS bugs: pbs-harness writes them as passes with an `xfail` property).
`summary.py --require-run FILE` exits 1, saying so, when FILE is missing or no test in it ran
(every one skipped): a CI run on a machine with OpenPBS must not be green having tested nothing.
`summary.py --why OUTPUT JUNIT` prints why a failed acceptance job failed, for the end of its log (CI keeps
only the tail): the lines of OUTPUT (make acceptance's output) that say so, then the ids of JUNIT's failed
and errored tests.
"""

import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def xfails(paths: list[str]) -> int:
    """Testcases with an `xfail` property (pbs_harness.conformance.junit)."""
    found = 0
    for path in paths:
        if Path(path).exists():
            root = ET.parse(path).getroot()
            found += sum(p.get("name") == "xfail" for p in root.iter("property"))
    return found


def counts(paths: list[str]) -> tuple[int, int, int]:
    passed = failed = skipped = 0
    for path in paths:
        if not Path(path).exists():
            continue
        root = ET.parse(path).getroot()
        for suite in root.iter("testsuite"):
            tests, fails = int(suite.get("tests", 0)), int(suite.get("failures", 0)) + int(suite.get("errors", 0))
            skips = int(suite.get("skipped", 0))
            passed += tests - fails - skips
            failed += fails
            skipped += skips
    return passed, failed, skipped


# Lines of make acceptance's output that say why it failed: deploy_fleet's closing lines ("deploy failed on",
# then "  NAME: reason"), a deploy's failed tasks and errors, the idempotence gate's and verify's verdicts,
# pytest's FAILED/ERROR lines, the harness's and ./acceptance's exit lines.
WHY = re.compile(
    r"deploy failed on|^\[[0-9:]+\]   [^ ]+: |^(FAILED|ERROR) |^pbs-harness: (error|tests failed)|error: |FAIL — "
    r"|idempotence gate(?: FAILED|: \S+ changed=)|verify: checks failed|exit [0-9]+ \(README"
)
# A single cluster's deploy progress has the same shape as deploy_fleet's "  NAME: reason" lines: never a reason.
PROGRESS = re.compile(r"^\[[0-9:]+\]   (play|task|running handler): ")
WHY_LINES = 30  # of the output; the failed tests come after them
WHY_TESTS = 10


def failed_tests(path: str) -> list[str]:
    """classname::name of each failed or errored testcase of a JUnit file (none when it is missing)."""
    if not Path(path).exists():
        return []
    root = ET.parse(path).getroot()
    return [
        f"{case.get('classname', '')}::{case.get('name', '')}"
        for case in root.iter("testcase")
        if case.find("failure") is not None or case.find("error") is not None
    ]


def why(output: str, junit: str) -> list[str]:
    text = Path(output).read_text(errors="replace").splitlines() if Path(output).exists() else []
    lines = [f"  {line}" for line in text if WHY.search(line) and not PROGRESS.match(line)][-WHY_LINES:]
    tests = failed_tests(junit)
    lines += [f"  failed: {name}" for name in tests[:WHY_TESTS]]
    if len(tests) > WHY_TESTS:
        lines.append(f"  ... and {len(tests) - WHY_TESTS} more failed tests ({junit})")
    return lines or ["  (no line of the output says so: read it above)"]


def main(argv: list[str]) -> int:
    if argv[:1] == ["--why"]:
        print("\n".join(why(argv[1], argv[2])))
        return 0
    if argv[:1] == ["--require-run"]:
        path = argv[1]
        if not Path(path).exists():
            print(f"ci: FAILED: OpenPBS is installed but the acceptance run left no results ({path} is missing)")
            return 1
        passed, failed, _ = counts([path])
        if passed + failed == 0:
            print(f"ci: FAILED: OpenPBS is installed but no acceptance test ran (all skipped, see {path})")
            return 1
        return 0
    passed, failed, skipped = counts(argv)
    known = xfails(argv)
    of_them = f" ({known} of them xfailed: known OpenPBS bugs)" if known else ""
    print(f"ci: {passed} passed{of_them}, {failed} failed, {skipped} skipped")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
