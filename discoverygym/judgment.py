"""One answer to "did it beat the record?", for ``train``, ``search``, ``compare``, ``report``, ``records`` and ``certify``.

The judgment compares an *exact* value with the record's exact value
(:attr:`discoverygym.records.Record.exact`: the certified value of the record's public construction,
or its printed digits), never a float64 score with a 10-digit rounding:

* ``beats``: better than the record by more than :data:`TOLERANCE` (relative), proved;
* ``ties``: within the tolerance either way ("ties within the 1e-12 tolerance"): neither beaten nor short;
* ``short``: worse than the record by more than the tolerance.

Where a record of :data:`discoverygym.records.RECORDS` is known only to its printed digits (its
construction is not public), the record is the whole rounding interval (± half a unit of its last printed digit): a value beats it only when
it beats every number that rounds to the printed one.

A run's best state (a float64 score) is judged by
:func:`discoverygym.rewards.certify.state.judge_state`, which certifies its construction first
whenever the env has a certifier (a fraction of a second at 30,000 pieces, about 3 s for a
100,000-element set): the console's verdict is then the certificate's, the same that
``discoverygym certify`` prints for the file. A circle packing valid only within the 1e-12
containment/overlap tolerance is judged by its strictly valid lower bound (every radius shrunk by
1e-12), as ``certify`` does. Without a certifier (kernels, AtCoder, ...) the float64 score is compared
with the published float value, with the same tolerance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any

from discoverygym.types import Direction

__all__ = ["TOLERANCE", "TOLERANCE_TEXT", "Verdict", "judge", "judge_certificate", "verdict_of"]

#: relative tie tolerance of the judgment: values closer than this to the record tie with it
TOLERANCE = Fraction(1, 10**12)
#: how verdicts state it
TOLERANCE_TEXT = "1e-12 relative tolerance"


@dataclass(frozen=True)
class Verdict:
    """The answer to "did it beat the record?".

    Attributes:
        outcome: ``"beats"``, ``"ties"``, ``"short"``, or ``"none"`` (no valid value, no finite record,
            or a CPU-proxy score that is not comparable with a GPU record).
        value: the judged value as text (exact leading digits, or the float64 score).
        record: the record's value as judged (exact digits, or the printed value).
        source: who holds the record, with the date.
        kind: ``"record"`` (best known under the env's rules) or ``"reference"`` (our own variant: no
            published entry; beating the reference is not a record).
        gap: ``value − record`` as a float (:meth:`Direction.gap <discoverygym.types.Direction.gap>`
            convention), or ``None``.
        basis: ``"exact"`` (a certificate) or ``"float64"`` (a verifier's score, no certifier).
        note: what else the verdict depends on (the 1e-12 packing tolerance, the record's rounding).
        better: ``"lower"`` or ``"higher"`` (the problem's :class:`~discoverygym.types.Direction`).
    """

    outcome: str
    value: str
    record: str
    source: str
    kind: str = "record"
    gap: float | None = None
    basis: str = "exact"
    note: str = ""
    better: str = ""

    @property
    def beats(self) -> bool:
        """Whether the value beats the record (or the reference) beyond the tolerance, proved."""
        return self.outcome == "beats"

    @property
    def is_record(self) -> bool:
        """Whether the value is a new record: it beats the best known value under the same rules."""
        return self.beats and self.kind == "record"

    def text(self) -> str:
        """The verdict in one line, e.g. ``"does not beat the best known 0.380870310586219903338258036188
        (Together AI 2026-03); gap +2.309e-06 (lower is better); exact values, ties within the 1e-12
        relative tolerance"``."""
        if self.outcome == "none":
            return self.note or "not judged"
        what = "the reference" if self.kind == "reference" else "the best known"
        head = {"beats": f"beats {what}", "ties": f"ties {what}", "short": f"does not beat {what}"}[self.outcome]
        text = f"{head} {self.record} ({self.source})"
        if self.gap is not None:
            text += f"; gap {self.gap:+.3e} ({self.better} is better)"
        basis = "exact values" if self.basis == "exact" else "float64 score against the published value"
        text += f"; {basis}, ties within the {TOLERANCE_TEXT}"
        if self.kind == "reference" and self.beats:
            text += "; a value under our own variant, not a record (no published entry under these rules)"
        return text + (f"; {self.note}" if self.note else "")


def _record(env_id: str, sota: dict | None) -> tuple[Fraction, Fraction, str, str, str] | None:
    """``(low, high, shown, source, kind)`` of the record: the exact value (low = high), the rounding
    interval of a printed value of the records table, or an env's ``sota`` float as it is; ``None``
    without a finite record."""
    from discoverygym.records import RECORDS

    entry = RECORDS.get(env_id)
    if entry is not None:
        r = entry.record
        source, kind, printed = f"{r.source} {r.date}", r.kind, repr(r.value)
        if r.exact:
            q = Fraction(Decimal(r.exact.rstrip("…")))
            return q, q, r.exact, source, kind
    else:
        value = (sota or {}).get("value")
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
            return None
        q = Fraction(value)  # a published float of an env outside the records table: taken as it is
        return q, q, repr(value), str((sota or {}).get("source", "")), "record"
    d = Decimal(printed)
    half = Fraction(1, 2) * Fraction(Decimal(1).scaleb(d.as_tuple().exponent)) if d.as_tuple().exponent < 0 else 0
    q = Fraction(d)
    return q - half, q + half, printed, source, kind


def judge(env_id: str, direction: Any, low: Fraction, high: Fraction | None = None, *, shown: str | None = None,
          sota: dict | None = None, basis: str = "exact", note: str = "") -> Verdict:
    """Judge a value proved to lie in ``[low, high]`` (``high=None``: exactly ``low``) against ``env_id``'s record.

    Args:
        env_id: the env (its record comes from :data:`discoverygym.records.RECORDS`, else ``sota``).
        direction: ``"min"``/``"max"`` or a :class:`~discoverygym.types.Direction`.
        low, high: the value's rigorous enclosure (exact fractions).
        shown: the value as text for the verdict (default: ``low``'s 20 digits).
        sota: the env's ``sota`` dict, used when ``env_id`` has no row in the records table.
        basis: ``"exact"`` or ``"float64"``.
        note: appended to the verdict.

    Returns:
        :class:`Verdict`; outcome ``"none"`` when there is no finite record.
    """
    sense = Direction(direction)
    high = low if high is None else high
    shown = shown or _digits(low, 20)
    rec = _record(env_id, sota)
    if rec is None:
        return Verdict("none", shown, "", "", note="no published record to compare with")
    r_lo, r_hi, r_shown, source, kind = rec
    tol = TOLERANCE * max(abs(r_lo), abs(r_hi))
    if r_lo != r_hi:
        rounding = (f"the record is known to its printed digits only, so it is read as "
                    f"[{float(r_lo):.12g}, {float(r_hi):.12g}]")
        note = "; ".join(filter(None, [note, rounding]))
    if sense is Direction.MIN:
        outcome = "beats" if high < r_lo - tol else "short" if low > r_hi + tol else "ties"
    else:
        outcome = "beats" if low > r_hi + tol else "short" if high < r_lo - tol else "ties"
    mid = (low + high) / 2
    gap = float(mid - Fraction(Decimal(r_shown.rstrip("…"))))
    return Verdict(outcome, shown, r_shown, source, kind, gap, basis, note, sense.comparative)


def judge_certificate(cert: dict) -> Verdict:
    """The verdict of a certificate (:func:`discoverygym.rewards.certify.certify`'s dict).

    A packing valid only within the 1e-12 tolerance is judged by its strictly valid lower bound
    (``facts["strict_lower_bound"]``), so the slack cannot buy a record.
    """
    from discoverygym.records import RECORDS

    env_id = cert["env_id"]
    if not cert.get("valid"):
        return Verdict("none", "", "", "", note=f"invalid construction: {cert.get('error')}")
    direction = RECORDS[env_id].direction
    if cert.get("value_exact"):
        num, den = cert["value_exact"].split("/")
        low = high = Fraction(int(num), int(den))
    else:
        low, high = (Fraction(Decimal(v)) for v in cert["interval"])
    note = ""
    strict = (cert.get("facts") or {}).get("strict_lower_bound")
    if strict is not None:
        strict_q = Fraction(Decimal(strict.rstrip("…")))  # truncated digits: still a lower bound
        note = (f"valid only within the 1e-12 containment/overlap tolerance: judged by its strictly valid lower "
                f"bound {strict} (every radius shrunk by 1e-12), not by Σr = {cert['value']}")
        low = high = strict_q
    return judge(env_id, direction, low, high, shown=cert["value"], basis="exact", note=note)


def verdict_of(env_id: str, ours: Any) -> Verdict:
    """The one judgment (:func:`judge`) of ``ours`` (a :class:`discoverygym.records.Ours`) against ``env_id``'s record,
    from its stored digits: ``ours.value`` is a truncation of the certified value, so the value lies in
    ``[value, value + one unit of its last digit]`` and is judged as that interval.

    Returns:
        :class:`~discoverygym.judgment.Verdict` (the same outcome ``certify`` gives for the file,
        which ``tests/test_records.py`` checks).
    """
    from discoverygym.records import RECORDS

    d = Decimal(ours.value)
    low = Fraction(d)
    return judge(env_id, RECORDS[env_id].direction, low, low + Fraction(Decimal(1).scaleb(d.as_tuple().exponent)),
                 shown=ours.value)


def _digits(q: Fraction, digits: int = 20) -> str:
    """``q`` with ``digits`` significant digits, truncated toward zero (``…`` when inexact); the same text
    as :func:`discoverygym.rewards.certify.exact.fraction_text`, kept here so this module needs nothing above it."""
    import decimal

    with decimal.localcontext(decimal.Context(prec=digits, rounding=decimal.ROUND_DOWN)):
        d = Decimal(q.numerator) / Decimal(q.denominator)
    return f"{d:f}" + ("" if Fraction(d) == q else "…")
