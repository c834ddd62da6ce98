"""Fixtures shared by the bad-input tests (tests/unit/badinput.py)."""

from tests.unit.badinput import as_root, isolated, tmp_root  # noqa: F401 - pytest finds fixtures by name
