"""Accounting records (`PBS_HOME/server_priv/accounting/YYYYMMDD`) parsed into typed records.

A line is `MM/DD/YYYY HH:MM:SS;TYPE;ID;key=value key=value ...`. OpenPBS quotes a value that
contains spaces with double quotes, or with single quotes when the value holds a double quote.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from pbs_harness.pbs.evidence.pick import Attributes

TIME_FORMAT = "%m/%d/%Y %H:%M:%S"


@dataclass(frozen=True)
class AccountingRecord:
    time: datetime
    type: str
    id: str
    fields: dict[str, str]
    resource_list: dict[str, str] = field(default_factory=dict)
    resources_used: dict[str, str] = field(default_factory=dict)
    raw: str = ""

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.fields.get(key, default)


def split_fields(message: str) -> list[str]:
    """Split `k=v k="a b" k='say "x"'` on spaces outside quotes; quotes are removed."""
    items, cur, quote = [], [], ""
    for ch in message:
        if quote:
            if ch == quote:
                quote = ""
            else:
                cur.append(ch)
        elif ch in "\"'" and cur and cur[-1] == "=":
            quote = ch
        elif ch == " ":
            if cur:
                items.append("".join(cur))
                cur = []
        else:
            cur.append(ch)
    if cur:
        items.append("".join(cur))
    return items


def parse_line(line: str) -> AccountingRecord | None:
    parts = line.rstrip("\n").split(";", 3)
    if len(parts) < 3:
        return None
    try:
        when = datetime.strptime(parts[0], TIME_FORMAT)
    except ValueError:
        return None
    message = parts[3] if len(parts) > 3 else ""
    fields: dict[str, str] = {}
    for item in split_fields(message):
        key, sep, value = item.partition("=")
        if sep:
            fields[key] = value
    rl = {k.split(".", 1)[1]: v for k, v in fields.items() if k.startswith("Resource_List.")}
    ru = {k.split(".", 1)[1]: v for k, v in fields.items() if k.startswith("resources_used.")}
    raw = line.rstrip("\n")
    what = f"the '{parts[1]}' record of {parts[2]} ({raw})"
    return AccountingRecord(
        when,
        parts[1],
        parts[2],
        Attributes(fields, what=what),
        Attributes(rl, what=f"Resource_List of {what}"),
        Attributes(ru, what=f"resources_used of {what}"),
        raw,
    )


def parse(text: str) -> list[AccountingRecord]:
    return [r for r in (parse_line(line) for line in text.splitlines()) if r is not None]


def of(records: list[AccountingRecord], record_id: str, types: str | None = None) -> list[AccountingRecord]:
    """Records of one job/reservation id, optionally only the given type letters, in file order."""
    return [r for r in records if r.id == record_id and (types is None or r.type in types)]


def walltime_seconds(value: str) -> int:
    """`HH:MM:SS` (or plain seconds) to seconds."""
    total = 0
    for part in value.split(":"):
        total = total * 60 + int(part)
    return total


class AccountingReader:
    """The server's accounting file(s) on the server host, parsed."""

    def __init__(self, host, pbs_home: str) -> None:
        self.host = host
        self.dir = f"{pbs_home}/server_priv/accounting"

    def records(self, since: datetime) -> list[AccountingRecord]:
        from datetime import timedelta

        days, day = [], since.date()
        while day <= datetime.now().date():
            days.append(f"{self.dir}/{day:%Y%m%d}")
            day += timedelta(days=1)
        text = self.host.run("cat " + " ".join(days) + " 2>/dev/null").stdout
        return [r for r in parse(text) if r.time >= since.replace(microsecond=0)]

    def of(self, record_id: str, types: str, since: datetime) -> list[AccountingRecord]:
        return of(self.records(since), record_id, types)

    def wait_for(
        self, record_id: str, types: str, count: int, since: datetime, timeout: float
    ) -> list[AccountingRecord]:
        """Wait until `count` records of the given types exist for the id; returns them in order."""
        from pbs_harness.common.waits import wait_until

        return wait_until(
            lambda: self.of(record_id, types, since),
            lambda recs: len(recs) >= count,
            timeout=timeout,
            describe=f"{count} accounting record(s) of type {types!r} for {record_id}",
        )

    def expect(self, record_id: str, types: str, since: datetime, timeout: float) -> tuple[AccountingRecord, ...]:
        """The id's records of the type letters in `types`, exactly one per letter in that order
        (e.g. "uc": one 'u', then one 'c'), waiting up to `timeout` for them; fails (MissingEvidence)
        naming the records expected and those the accounting log held."""
        __tracebackhide__ = True
        from pbs_harness.common.waits import WaitTimeout
        from pbs_harness.pbs.evidence.pick import MissingEvidence

        try:
            found = self.wait_for(record_id, types, len(types), since, timeout)
        except WaitTimeout as exc:
            found = exc.last or []
        if "".join(r.type for r in found) != types:
            wanted = ", ".join(repr(t) for t in types)
            held = "; ".join(r.raw for r in found) or "none"
            raise MissingEvidence(
                f"expected accounting records {wanted} of {record_id} in that order since {since:%H:%M:%S}, "
                f"found: {held}"
            )
        return tuple(found)
