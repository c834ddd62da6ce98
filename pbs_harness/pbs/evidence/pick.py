"""Picking evidence out of a list or a mapping, failing with a message that names what is missing.

A test that unpacks a list of accounting records or indexes a list of log lines dies with a
ValueError or an IndexError when OpenPBS wrote one record fewer, and says nothing of what it
expected or what was there. These helpers fail instead with `MissingEvidence` (an AssertionError:
pytest reports a failure), whose message names the evidence that was expected and shows what the
list held. `what` is said as in "expected <what>".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

T = TypeVar("T")
LIMIT = 2000  # characters of a shown list in a message


class MissingEvidence(AssertionError):
    """The evidence a test needs is not there (the message says what was expected and what was found)."""


def _show(items: list[Any], shown: Callable[[Any], str]) -> str:
    text = "; ".join(shown(i) for i in items) if items else "nothing"
    return text if len(text) <= LIMIT else text[:LIMIT] + " ..."


def _raw(item: Any) -> str:
    return str(getattr(item, "raw", None) or item)


class Attributes(dict):
    """A PBS object's attributes (qstat, pbsnodes, pbs_rstat -F; an accounting record's fields) that
    fails a lookup of a missing one with MissingEvidence naming the object and what it has, not with
    a bare KeyError. `.get` and `in` work as for any dict."""

    def __init__(self, *args: Any, what: str = "a PBS object's attributes", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.what = what

    def __missing__(self, key: str) -> Any:
        __tracebackhide__ = True
        raise MissingEvidence(f"expected {key} in {self.what}, found {_attrs_shown(self)}")


def _attrs_shown(mapping: Mapping[str, Any]) -> str:
    shown = ", ".join(f"{k}={v!r}" for k, v in mapping.items())
    return (shown if len(shown) <= LIMIT else shown[:LIMIT] + " ...") or "nothing"


def named(value: Any, what: str) -> Any:
    """`value` with every mapping in it an Attributes named after where it is ("Resource_List of job 1.s")."""
    if isinstance(value, Mapping):
        return Attributes({k: named(v, f"{k} of {what}") for k, v in value.items()}, what=what)
    return value


def exactly(items: Iterable[T], count: int, what: str, shown: Callable[[Any], str] = _raw) -> list[T]:
    """The items, which must be `count` of them."""
    __tracebackhide__ = True
    found = list(items)
    if len(found) != count:
        raise MissingEvidence(f"expected {what} ({count}), found {len(found)}: {_show(found, shown)}")
    return found


def one(items: Iterable[T], what: str, shown: Callable[[Any], str] = _raw) -> T:
    """The one item (exactly one)."""
    __tracebackhide__ = True
    return exactly(items, 1, what, shown)[0]


def first(items: Iterable[T], what: str, shown: Callable[[Any], str] = _raw) -> T:
    """The first item (at least one)."""
    __tracebackhide__ = True
    found = list(items)
    if not found:
        raise MissingEvidence(f"expected {what}, found nothing")
    return found[0]


def last(items: Iterable[T], what: str, shown: Callable[[Any], str] = _raw) -> T:
    """The last item (at least one)."""
    __tracebackhide__ = True
    found = list(items)
    if not found:
        raise MissingEvidence(f"expected {what}, found nothing")
    return found[-1]


def nth(items: Iterable[T], index: int, what: str, shown: Callable[[Any], str] = _raw) -> T:
    """The item at `index` (0-based; negative from the end)."""
    __tracebackhide__ = True
    found = list(items)
    if not -len(found) <= index < len(found):
        raise MissingEvidence(f"expected {what} (item {index}), found {len(found)}: {_show(found, shown)}")
    return found[index]


def field(mapping: Mapping[str, Any] | None, key: str, what: str) -> Any:
    """mapping[key], which must be there (`what` names the mapping, e.g. "job 12.sh01 (qstat -f)")."""
    __tracebackhide__ = True
    if not mapping or key not in mapping:
        raise MissingEvidence(f"expected {key} in {what}, found {_attrs_shown(mapping or {})}")
    return mapping[key]


def group(match: Any, index: int | str, what: str, text: str) -> str:
    """Group `index` of a regex match of `text`, which must have matched."""
    __tracebackhide__ = True
    if match is None:
        raise MissingEvidence(f"expected {what} in {text!r}")
    return match[index]
