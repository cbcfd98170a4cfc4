"""Reading contest output text exactly as the official (Rust) tools do.

The official testers split text with Rust's ``str::split_whitespace`` / ``str::lines`` and parse
numbers with ``str::parse``; Python's ``str.split`` and ``int`` accept more (``"1_000"``, Arabic-
Indic digits, ``\\x1c`` as a separator), so these helpers reimplement the Rust rules:

* whitespace is Unicode ``White_Space`` (not the ASCII file/group/record/unit separators);
* an integer is ``[+-]?[0-9]+`` (ASCII digits only; ``-`` only for signed types) that fits its
  type (``i32``, ``i64``, ``usize``), otherwise a parse error; then its range is checked.
"""

from __future__ import annotations

import re

from discoverygym.errors import InvalidSolution

__all__ = ["AHCInvalid", "decode_output", "read_int", "split_lines", "split_tokens"]

_WS = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
_SPLIT = re.compile(f"[{_WS}]+")
_STRIP = "".join(chr(c) for c in range(0x2000, 0x200B)) + "\t\n\x0b\x0c\r \x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000"
_INT = re.compile(r"[+-]?[0-9]+\Z")
_BOUNDS = {"i32": (-(2**31), 2**31 - 1), "i64": (-(2**63), 2**63 - 1), "usize": (0, 2**64 - 1)}


class AHCInvalid(InvalidSolution):
    """An output breaks a rule of the statement (the official tester answers Wrong Answer).

    Args:
        rule: short rule id (``"parse"``, ``"range"``, ``"eof"``, ``"axis"``, ``"duplicate"``,
            ``"self_intersection"``, ``"perimeter"``, ``"too_many_tokens"``,
            ``"not_enough_actions"``, ``"insufficient_apples"``, ``"nonpositive_apples"``,
            ``"not_utf8"``, ``"output_size"``).
        message: what is wrong, with the offending value.
    """

    def __init__(self, rule: str, message: str) -> None:
        super().__init__(f"{rule}: {message}", metrics={"rule": rule})
        self.rule = rule


def decode_output(data: bytes) -> str:
    """UTF-8 text of a program's output.

    Raises:
        AHCInvalid: rule ``not_utf8`` (the testers refuse output that is not UTF-8).
    """
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise AHCInvalid("not_utf8", f"output is not UTF-8 (byte {exc.start})") from None


def split_tokens(text: str) -> list[str]:
    """Tokens separated by Unicode whitespace, as Rust's ``split_whitespace``."""
    return [t for t in _SPLIT.split(text) if t]


def split_lines(text: str) -> list[str]:
    """Lines as Rust's ``str::lines`` (``\\n`` separated, one trailing ``\\r`` dropped), trimmed."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [(line.removesuffix("\r")).strip(_STRIP) for line in lines]


def read_int(token: str | None, lo: int, hi: int, kind: str = "i64") -> int:
    """Parse one token as a Rust integer of type ``kind`` and check ``lo <= value <= hi``.

    Raises:
        AHCInvalid: ``eof`` (no token), ``parse`` (not an integer of that type), ``range``.
    """
    if token is None:
        raise AHCInvalid("eof", "unexpected end of output")
    low, high = _BOUNDS[kind]
    if not _INT.match(token) or (low == 0 and token.startswith("-")) or token in ("+", "-"):
        raise AHCInvalid("parse", f"cannot parse {token[:40]!r} as an integer")
    value = int(token)
    if not low <= value <= high:
        raise AHCInvalid("parse", f"{token[:40]!r} does not fit a {kind}")
    if not lo <= value <= hi:
        raise AHCInvalid("range", f"{value} is outside [{lo}, {hi}]")
    return value
