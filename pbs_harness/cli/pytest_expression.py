"""Whether a -m or -k expression of pytest parses, and the names it uses: a recursive-descent check of
pytest's documented grammar (docs "Marker/keyword expressions"), written here because pytest is not
importable where PYTEST_ARGS is judged (pbs_harness.cli.pytest_judge).

    expression: expr? EOF
    expr:       and_expr ('or' and_expr)*
    and_expr:   not_expr ('and' not_expr)*
    not_expr:   'not' not_expr | '(' expr ')' | ident kwargs?
    ident:      one or more letters, digits, _ : + - . [ ] / or backslashes
    kwargs:     '(' name '=' value (',' name '=' value)* ')'     (-m only)
    value:      a quoted string | an integer | True | False | None
"""

from __future__ import annotations

import re

_IDENT = re.compile(r"[\w:+\-.\[\]\\/]+")
_NAME = re.compile(r"[A-Za-z_]\w*\Z")
_VALUE = re.compile(r"-?\d+\Z|True\Z|False\Z|None\Z")
_KEYWORDS = ("and", "or", "not")


class ExpressionError(ValueError):
    """The expression does not parse; the text says where and what was expected."""


def _tokens(text: str) -> list[tuple[str, str, int]]:
    """(kind, text, column from 1): kinds '(', ')', ',', '=', 'string', 'ident', and 'end' last."""
    out: list[tuple[str, str, int]] = []
    pos = 0
    while pos < len(text):
        char = text[pos]
        if char.isspace():
            pos += 1
        elif char in "(),=":
            out.append((char, char, pos + 1))
            pos += 1
        elif char in "'\"":
            close = text.find(char, pos + 1)
            if close < 0:
                raise ExpressionError(f"at column {pos + 1}: the string opened with {char} is not closed")
            out.append(("string", text[pos : close + 1], pos + 1))
            pos = close + 1
        else:
            match = _IDENT.match(text, pos)
            if not match:
                raise ExpressionError(f"at column {pos + 1}: unexpected character {char!r}")
            out.append(("ident", match.group(), pos + 1))
            pos = match.end()
    out.append(("end", "end of input", len(text) + 1))
    return out


class _Parser:
    def __init__(self, text: str, with_kwargs: bool) -> None:
        self.tokens = _tokens(text)
        self.at = 0
        self.with_kwargs = with_kwargs
        self.names: list[str] = []

    def peek(self) -> tuple[str, str, int]:
        return self.tokens[self.at]

    def keyword(self, word: str) -> bool:
        kind, text, _ = self.peek()
        if kind == "ident" and text == word:
            self.at += 1
            return True
        return False

    def expect(self, kind: str, what: str) -> str:
        got_kind, text, column = self.peek()
        if got_kind != kind:
            raise ExpressionError(f"at column {column}: expected {what}; got {text!r}")
        self.at += 1
        return text

    def expression(self) -> None:
        if self.peek()[0] != "end":
            self.expr()
        self.expect("end", "'and', 'or' or the end")

    def expr(self) -> None:
        self.and_expr()
        while self.keyword("or"):
            self.and_expr()

    def and_expr(self) -> None:
        self.not_expr()
        while self.keyword("and"):
            self.not_expr()

    def not_expr(self) -> None:
        if self.keyword("not"):
            self.not_expr()
            return
        kind, text, column = self.peek()
        if kind == "(":
            self.at += 1
            self.expr()
            self.expect(")", "')'")
            return
        if kind != "ident" or text in _KEYWORDS:
            raise ExpressionError(f"at column {column}: expected not, '(' or a name; got {text!r}")
        self.at += 1
        self.names.append(text)
        if self.peek()[0] == "(":
            if not self.with_kwargs:
                raise ExpressionError(f"at column {self.peek()[2]}: -k takes names, not call parameters")
            self.kwargs()

    def kwargs(self) -> None:
        self.expect("(", "'('")
        while True:
            _, _, column = self.peek()
            name = self.expect("ident", "a parameter name")
            if not _NAME.match(name) or name in _KEYWORDS:
                raise ExpressionError(f"at column {column}: {name!r} is not a parameter name")
            self.expect("=", "'='")
            kind, value, column = self.peek()
            if kind != "string" and not (kind == "ident" and _VALUE.match(value)):
                raise ExpressionError(f"at column {column}: expected a quoted string, a number, True, False or None")
            self.at += 1
            if self.peek()[0] != ",":
                break
            self.at += 1
        self.expect(")", "',' or ')'")


def names(text: str, *, with_kwargs: bool) -> list[str]:
    """The names the expression uses (for -m, its markers), in order; ExpressionError if it does not parse.
    with_kwargs: -m's marker(param=value) form, which -k does not take."""
    parser = _Parser(text, with_kwargs)
    parser.expression()
    return parser.names
