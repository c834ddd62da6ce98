"""Print one closing line over the JUnit files of a CI run: `ci: N passed, N failed, N skipped`."""

import sys
import xml.etree.ElementTree as ET
from pathlib import Path

passed = failed = skipped = 0
for path in sys.argv[1:]:
    if not Path(path).exists():
        continue
    root = ET.parse(path).getroot()
    for suite in root.iter("testsuite"):
        tests, fails = int(suite.get("tests", 0)), int(suite.get("failures", 0)) + int(suite.get("errors", 0))
        skips = int(suite.get("skipped", 0))
        passed += tests - fails - skips
        failed += fails
        skipped += skips
print(f"ci: {passed} passed, {failed} failed, {skipped} skipped")
