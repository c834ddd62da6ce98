"""Closing lines of a CI run over its JUnit files.

`summary.py FILE...` prints `ci: N passed, N failed, N skipped` over all of them, and how many of the
passed are xfails (known OpenPBS bugs: pbs-harness writes them as passes with an `xfail` property).
`summary.py --require-run FILE` exits 1, saying so, when FILE is missing or no test in it ran
(every one skipped): a CI run on a machine with OpenPBS must not be green having tested nothing.
"""

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


def main(argv: list[str]) -> int:
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
