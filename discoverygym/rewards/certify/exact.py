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

import decimal
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


def exact_number(value: Any, where: str) -> Decimal:
    """An exact decimal for one JSON number: a ``Decimal`` as parsed, an ``int``, or a ``float``.

    A float is taken at its exact binary value (``Decimal(0.1)`` has 55 digits), so numbers that
    arrive as float64 are certified as those float64 values.

    Raises:
        InvalidSolution: a boolean, a non-number, or a NaN/infinity (named by ``where``).
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
        raise InvalidSolution(f"{where} = {value!r:.40} is not a number")
    out = Decimal(value)
    if not out.is_finite():
        raise InvalidSolution(f"{where} = {value!r} is not finite")
    return out


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


def scaled_integers(values: list[Decimal]) -> tuple[list[int], int]:
    """``(A, D)`` with ``values[i] == A[i] / 10**D`` exactly, D >= 0 the smallest such power.

    Raises:
        InvalidSolution: the integers would need more than :data:`MAX_PACKED_DIGITS` digits in all.
    """
    tuples = [v.as_tuple() for v in values]
    scale = max(0, -min(t.exponent for t in tuples))
    total = sum(len(t.digits) + t.exponent + scale for t in tuples)
    if total > MAX_PACKED_DIGITS:
        raise InvalidSolution(f"the exact inputs need {total} decimal digits (numbers spanning too many "
                              f"orders of magnitude); the limit is {MAX_PACKED_DIGITS}")
    out = []
    for t in tuples:
        mag = int("".join(map(str, t.digits)) or "0") * 10 ** (t.exponent + scale)
        out.append(-mag if t.sign else mag)
    return out, scale


def _pack(a: list[int], slot: int) -> Decimal:
    """``Σ a_i 10^{slot·i}`` for nonnegative ``a`` (each below ``10^slot``), built from its digits."""
    return Decimal("".join(str(v).zfill(slot) for v in reversed(a)))


def _nonnegative_convolution(a: list[int], b: list[int]) -> list[int]:
    """Exact ``a * b`` (length len(a) + len(b) − 1) of nonnegative integer vectors (module docstring)."""
    m = len(a) + len(b) - 1
    top = max(a) * max(b) * min(len(a), len(b))
    if top == 0:
        return [0] * m
    slot = len(str(top)) + 1
    if slot * max(len(a), len(b)) > MAX_PACKED_DIGITS:
        raise InvalidSolution(f"an exact convolution of {len(a)} x {len(b)} entries of up to {slot} digits "
                              f"exceeds the limit of {MAX_PACKED_DIGITS} packed digits")
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
        InvalidSolution: the operands are too large to pack (:data:`MAX_PACKED_DIGITS`).
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
