"""Exact arithmetic for certificates: decimal inputs as integers, integer convolution, decimal intervals.

A construction file's numbers are read as exact decimals (``json.loads(..., parse_float=Decimal)``):
the certified value is that of the numbers as written, with no float64 rounding anywhere. A list of
decimals becomes one integer vector and a common power of ten (``x_i = A_i / 10^D``).

Integer convolution: ``(a * b)_k = Σ_i a_i b_{k−i}`` for nonnegative integers is read off one
big-integer product. With ``K`` decimal digits per slot (more than the largest possible entry of
the result), ``Σ a_i 10^{K i} · Σ b_j 10^{K j} = Σ_k (a * b)_k 10^{K k}`` has no carries between
slots, so the product's digits, cut in K-digit slots, are the convolution (Kronecker substitution;
Schönhage & Strassen 1971, §1). The product is taken with ``decimal`` (libmpdec multiplies long
operands by a number-theoretic transform, exact integer arithmetic), so a 30,000-piece
autoconvolution costs about a quarter of a second. Signed vectors are split into positive and
negative parts.

Irrational quantities (a logarithm, a square root) are enclosed in an interval from ``decimal``'s
correctly rounded ``ln``/``sqrt`` (error at most half a unit in the last place, Python's ``decimal``
documentation) widened by a margin far above the accumulated rounding.
"""

from __future__ import annotations

import contextlib
import decimal
import math
import sys
from collections.abc import Iterator
from decimal import Decimal
from fractions import Fraction
from typing import Any

from discoverygym.errors import InvalidSolution

#: most decimal digits of one packed convolution operand (about 2.5 s and 0.5 GB at the cap);
#: 100,000 pieces of 17-digit floats need about 4 million.
MAX_PACKED_DIGITS = 40_000_000
#: working precision (significant digits) of interval enclosures, and their relative half-width
INTERVAL_PREC = 60
INTERVAL_REL = Decimal("1e-50")

_BIG = decimal.Context(prec=decimal.MAX_PREC, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN,
                       traps=[decimal.InvalidOperation, decimal.Overflow, decimal.Inexact])


#: largest finite float64 (what the env's JSON reader gives ``inf`` beyond)
_FLOAT_MAX = Decimal(sys.float_info.max)
#: most digits one scaled input integer may have, and the most "conversion cost" (Σ digits² over
#: the inputs: CPython's int/str conversions are quadratic) an exact reading may take; beyond either
#: the inputs are read as the float64 values the env reads (:func:`affordable`). 4e9 is about a
#: second of conversions on one core; a 100,000-piece construction of 17-digit floats costs 3e7.
MAX_INPUT_DIGITS = 40_000
MAX_CONVERSION_COST = 4_000_000_000


class CertifyLimit(ValueError):
    """The certificate would cost more than certify's limits (a usage error, exit 2): the inputs
    need too many digits even when read as the float64 values the env reads."""


def exact_number(value: Any, where: str) -> Decimal:
    """An exact decimal for one JSON number: a ``Decimal`` as parsed, an ``int``, or a ``float``.

    A float is taken at its exact binary value (``Decimal(0.1)`` has 55 digits), so numbers that
    arrive as float64 are certified as those float64 values. Finiteness is the env's: a number
    beyond the float64 range (``1e400``), which the env's JSON reader turns into ``inf``, is refused
    as the env refuses it (issue 52, #3).

    Raises:
        InvalidSolution: a boolean, a non-number, a NaN/infinity, or a number beyond float64's range
            (named by ``where``).
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
        raise InvalidSolution(f"{where} = {value!r:.40} is not a number")
    out = Decimal(value)
    if not out.is_finite():
        raise InvalidSolution(f"{where} = {value!r} is not finite")
    if out.adjusted() >= 308 and abs(out) > _FLOAT_MAX and math.isinf(float(out)):
        raise InvalidSolution(f"{where} = {_short(out)} is not finite as a float64 (the env reads it as inf)")
    return out


def _short(value: Decimal) -> str:
    """``value`` for a message: its leading digits and exponent, at most about 30 characters."""
    t = value.as_tuple()
    return str(value) if len(t.digits) <= 20 else f"{'-' if t.sign else ''}{t.digits[0]}.{''.join(map(str, t.digits[1:8]))}…E{value.adjusted():+d}"


def exact_vector(values: Any, name: str, limit: int) -> list[Decimal]:
    """A flat list of exact decimals from a JSON list (see :func:`exact_number`).

    Raises:
        InvalidSolution: not a non-empty flat list, more than ``limit`` entries, or a bad entry.
    """
    if not isinstance(values, list) or not values:
        raise InvalidSolution(f"{name} must be a non-empty list of numbers")
    if len(values) > limit:
        raise InvalidSolution(f"{name} has {len(values)} entries, more than the limit of {limit}")
    return [exact_number(v, f"{name}[{i}]") for i, v in enumerate(values)]


def _costs(values: list[Decimal]) -> tuple[int, int, int]:
    """``(largest digits, Σ digits, Σ digits²)`` of the integers :func:`scaled_integers` would build;
    read off the decimals' exponents, nothing is converted."""
    tuples = [v.as_tuple() for v in values]
    scale = max(0, -min(t.exponent for t in tuples))
    sizes = [len(t.digits) + t.exponent + scale if any(t.digits) else 1 for t in tuples]
    return max(sizes), sum(sizes), sum(d * d for d in sizes)


def affordable(values: list[Decimal], name: str, pairwise_cost: int = 1) -> tuple[list[Decimal], str]:
    """The inputs an exact certificate can afford: ``(values, "")`` when their exact integers fit the
    limits, else the float64 values the env reads (each taken exactly) with a note saying so.

    Exact decimals that span hundreds of thousands of orders of magnitude (a height of ``1e-5000``
    beside 1, a radius of ``1e-490000``) are valid for the env, which reads them as float64 (``0.0``),
    but exact integers of that many digits cost minutes (issue 52, #4, #5). Then the certificate is
    of the construction as the env reads it, which is exact arithmetic on those float64 values, and
    the note (``"h read as float64: ..."``) says which numbers changed.

    Args:
        values: the exact decimals (:func:`exact_vector`).
        name: the input's name in the note (``"h"``, ``"circles"``).
        pairwise_cost: how many times each digit is worked on beyond the conversions (circles:
            the number of pairs compared, so that the squared distances stay cheap).

    Returns:
        ``(values or their float64 values, note)``; the note is ``""`` when nothing changed.

    Raises:
        CertifyLimit: even the float64 values need more than the limits (one line, with the figure).
    """
    def fits(vals: list[Decimal]) -> tuple[bool, str]:
        top, total, cost = _costs(vals)
        cost *= max(1, pairwise_cost)
        ok = top <= MAX_INPUT_DIGITS and total <= MAX_PACKED_DIGITS and cost <= MAX_CONVERSION_COST
        return ok, f"{top} digits at most, {total} in all, cost {cost:.2g}"

    ok, _ = fits(values)
    if ok:
        return values, ""
    floats = [Decimal(float(v)) for v in values]
    changed = [i for i, (v, f) in enumerate(zip(values, floats)) if v != f]
    ok, figures = fits(floats)
    if not ok:
        raise CertifyLimit(f"not certified: {name}'s exact integers need {figures} even as float64 values, over "
                           f"certify's limits ({MAX_INPUT_DIGITS} digits a number, {MAX_PACKED_DIGITS} in all, "
                           f"cost {MAX_CONVERSION_COST:.0e})")
    shown = ", ".join(f"{name}[{i}] = {_short(values[i])} -> {_short(floats[i])}" for i in changed[:3])
    note = (f"{name} read as float64, as the env reads it: its exact decimals span too many orders of magnitude "
            f"for exact integers ({len(changed)} number(s) changed: {shown}{', …' if len(changed) > 3 else ''}); "
            "the value is exact for these float64 values")
    return floats, note


def scaled_integers(values: list[Decimal]) -> tuple[list[int], int]:
    """``(A, D)`` with ``values[i] == A[i] / 10**D`` exactly, D >= 0 the smallest such power.

    Call :func:`affordable` first: the conversions are quadratic in the digits.

    Raises:
        CertifyLimit: the integers would need more than :data:`MAX_PACKED_DIGITS` digits in all.
    """
    tuples = [v.as_tuple() for v in values]
    scale = max(0, -min(t.exponent for t in tuples))
    total = sum(len(t.digits) + t.exponent + scale for t in tuples)
    if total > MAX_PACKED_DIGITS:
        raise CertifyLimit(f"not certified: the exact inputs need {total} decimal digits (numbers spanning too "
                           f"many orders of magnitude); the limit is {MAX_PACKED_DIGITS}")
    out = []
    with unlimited_int_digits():
        for t in tuples:
            mag = int("".join(map(str, t.digits)) or "0") * 10 ** (t.exponent + scale)
            out.append(-mag if t.sign else mag)
    return out, scale


@contextlib.contextmanager
def unlimited_int_digits() -> Iterator[None]:
    """Lift CPython's int/str conversion limit (4,300 digits) for a bounded exact computation.

    The limit guards against unbounded inputs; certify bounds its own (:func:`affordable`,
    :data:`MAX_PACKED_DIGITS`), and a 5,000-digit integer of a valid construction must not become
    a usage error (issue 52, #4). The old limit is restored on exit.
    """
    get = getattr(sys, "get_int_max_str_digits", None)
    if get is None:  # Python without the limit
        yield
        return
    old = get()
    sys.set_int_max_str_digits(0)
    try:
        yield
    finally:
        sys.set_int_max_str_digits(old)


def _pack(a: list[int], slot: int) -> Decimal:
    """``Σ a_i 10^{slot·i}`` for nonnegative ``a`` (each below ``10^slot``), built from its digits."""
    return Decimal("".join(str(v).zfill(slot) for v in reversed(a)))


def _nonnegative_convolution(a: list[int], b: list[int]) -> list[int]:
    """Exact ``a * b`` (length len(a) + len(b) − 1) of nonnegative integer vectors (module docstring)."""
    m = len(a) + len(b) - 1
    top = max(a) * max(b) * min(len(a), len(b))
    if top == 0:
        return [0] * m
    with unlimited_int_digits():
        slot = len(str(top)) + 1
    if slot * max(len(a), len(b)) > MAX_PACKED_DIGITS:
        raise CertifyLimit(f"not certified: an exact convolution of {len(a)} x {len(b)} entries of up to {slot} digits "
                              f"exceeds the limit of {MAX_PACKED_DIGITS} packed digits")
    with unlimited_int_digits():  # bounded: at most MAX_PACKED_DIGITS digits in all
        product = _BIG.multiply(_pack(a, slot), _pack(b, slot))
        digits = f"{product:f}"
        end = len(digits)
        out = []
        for k in range(m):
            hi = end - k * slot
            out.append(int(digits[max(hi - slot, 0) : hi]) if hi > 0 else 0)
    return out


def integer_convolution(a: list[int], b: list[int]) -> list[int]:
    """Exact linear convolution ``c_k = Σ_i a_i b_{k−i}`` of two integer vectors (any signs).

    Args:
        a, b: non-empty lists of Python ints.

    Returns:
        list of ``len(a) + len(b) − 1`` Python ints, equal to ``numpy.convolve(a, b)`` in exact arithmetic.

    Raises:
        CertifyLimit: the operands are too large to pack (:data:`MAX_PACKED_DIGITS`).
    """
    ap, an = [max(v, 0) for v in a], [max(-v, 0) for v in a]
    bp, bn = [max(v, 0) for v in b], [max(-v, 0) for v in b]
    out = _nonnegative_convolution(ap, bp)
    for x, y, sign in ((ap, bn, -1), (an, bp, -1), (an, bn, 1)):
        if any(x) and any(y):
            for k, v in enumerate(_nonnegative_convolution(x, y)):
                out[k] += sign * v
    return out


def fraction_text(q: Fraction, digits: int = 20) -> str:
    """``q`` as a decimal string with ``digits`` significant digits, truncated toward zero (``…`` when inexact)."""
    with decimal.localcontext(decimal.Context(prec=digits, rounding=decimal.ROUND_DOWN)):
        d = Decimal(q.numerator) / Decimal(q.denominator)
    exact = Fraction(d) == q
    return f"{d:f}" + ("" if exact else "…")


def enclose(value: Decimal) -> tuple[Decimal, Decimal]:
    """A rigorous interval around a quantity computed to :data:`INTERVAL_PREC` digits with a few
    correctly rounded operations: ``value · (1 ∓ INTERVAL_REL)`` (the rounding is below 1e-58)."""
    with decimal.localcontext(decimal.Context(prec=INTERVAL_PREC + 10)):
        lo, hi = value * (1 - INTERVAL_REL), value * (1 + INTERVAL_REL)
    return (lo, hi) if lo <= hi else (hi, lo)


def precise(context_prec: int = INTERVAL_PREC) -> decimal.Context:
    """The decimal context used for interval enclosures (round half even, correctly rounded ``ln``/``sqrt``)."""
    return decimal.Context(prec=context_prec, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)
