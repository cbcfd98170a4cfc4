"""Exact certificates of the autocorrelation bounds C1, C2, C3 (the float verifiers: ``rewards/autocorrelation.py``).

Heights as integers over one power of ten, ``f_i = A_i / 10^D``; c = A * A exactly
(:func:`~discoverygym.rewards.certify.exact.integer_convolution`); every bound is scale invariant,
so the power of ten cancels:

* C1 = 2n · max_k c_k / (ΣA)²  (AlphaEvolve B.1; exact for step functions: the autoconvolution is
  piecewise linear with its maximum at a knot);
* C3 = 2n · max_k |c_k| / (ΣA)²  (AlphaEvolve B.3; dx = 1/(2n) cancels);
* C2 = T / (3 · Σc · max c) with T = Σ_i (y_i² + y_i y_{i+1} + y_{i+1}²), y = [0, c, 0]
  (AlphaEvolve B.2 as TTT-Discover computes it: L2² by the rule that is exact for the
  piecewise-linear interpolant of c on M + 2 equispaced points, h = 1/(M+1); L1 = Σ|c|·h,
  L∞ = max|c|; h cancels). Another quadrature gives a different number for the same f (TTT-Discover's
  50,000-piece construction: 0.959180 here, 0.959368 by the trapezoid rule on c², 0.959372 by
  Simpson's): the certificate names this one.
"""

from __future__ import annotations

from fractions import Fraction
from itertools import pairwise
from typing import Any

from discoverygym.errors import InvalidSolution
from discoverygym.rewards.autocorrelation import AC1_MIN_SUM, AC3_MIN_INTEGRAL_SQ
from discoverygym.rewards.certify.exact import affordable, exact_vector, integer_convolution, scaled_integers
from discoverygym.rewards.certify.result import Certified
from discoverygym.rewards.convolution import MAX_PIECES

#: the quadrature convention of C2, printed with every C2 value
C2_CONVENTION = ("L2² of the piecewise-linear interpolant of c on M + 2 equispaced points of [−1/2, 1/2] "
                 "(zeros at both ends; exact 'h/3 (y_i² + y_i y_{i+1} + y_{i+1}²)' rule), L1 = Σ|c|/(M+1), "
                 "L∞ = max|c| (TTT-Discover's and AlphaEvolve's formula)")


def _heights(f: Any, nonnegative: bool) -> tuple[list, list[int], int, str]:
    """``(exact values, integers, D, note)`` of heights ``f`` (read as float64 when exact integers
    would cost too much; ``note`` says so, else ``""``: :func:`.exact.affordable`).

    Raises:
        InvalidSolution: a bad entry, or a negative one when ``nonnegative``. CertifyLimit: too costly.
    """
    values, note = affordable(exact_vector(f, "f", MAX_PIECES), "f")
    ints, scale = scaled_integers(values)
    if nonnegative:
        bad = next((i for i, v in enumerate(ints) if v < 0), None)
        if bad is not None:
            raise InvalidSolution(f"f[{bad}] = {values[bad]} is negative; f must be nonnegative")
    return values, ints, scale, note


def _inputs(values: list) -> dict:
    return {"heights": [str(v) for v in values]}


def certify_ac1(f: Any) -> Certified:
    """Certify C1 = 2n · max(f * f) / (Σf)² of nonnegative heights f, exactly.

    Raises:
        InvalidSolution: non-numbers, negative heights, more than 100,000 pieces, Σf < 0.01.
    """
    values, a, scale, note = _heights(f, nonnegative=True)
    n, total = len(a), sum(a)
    if Fraction(total, 10**scale) < Fraction(str(AC1_MIN_SUM)):  # the decimal rule, 1/100
        raise InvalidSolution(f"Σf = {sum(values)} is below {AC1_MIN_SUM} (function too close to 0)")
    c = integer_convolution(a, a)
    top = max(c)
    return Certified.rational(
        Fraction(2 * n * top, total * total),
        formula="C1 = 2n · max_k (A * A)_k / (ΣA)², A_i = 10^D f_i",
        method=f"exact integer autoconvolution, all {2 * n - 1} entries (big-integer product)",
        convention=note,
        facts={"n": n, "argmax": c.index(top), "max_autoconvolution": str(top), "sum": str(total), "D": scale},
        inputs=_inputs(values))


def certify_ac3(f: Any) -> Certified:
    """Certify C3 = max|f * f · dx| / (Σf · dx)² (dx = 1/(2n)) of signed heights f, exactly.

    Raises:
        InvalidSolution: non-numbers, more than 100,000 pieces, (Σf · dx)² < 1e-12.
    """
    values, a, scale, note = _heights(f, nonnegative=False)
    n, total = len(a), sum(a)
    if Fraction(total, 10**scale * 2 * n) ** 2 < Fraction(str(AC3_MIN_INTEGRAL_SQ)):
        raise InvalidSolution(f"(Σf·dx)² is below {AC3_MIN_INTEGRAL_SQ}; the bound is undefined")
    c = integer_convolution(a, a)
    mags = [abs(v) for v in c]
    top = max(mags)
    return Certified.rational(
        Fraction(2 * n * top, total * total),
        formula="C3 = 2n · max_k |(A * A)_k| / (ΣA)², A_i = 10^D f_i",
        method=f"exact integer autoconvolution, all {2 * n - 1} entries (big-integer product)",
        convention=note,
        facts={"n": n, "argmax": mags.index(top), "max_abs_autoconvolution": str(top), "sum": str(total), "D": scale},
        inputs=_inputs(values))


def certify_ac2(f: Any) -> Certified:
    """Certify C2 = L2² / (L1 · L∞) of nonnegative heights f, exactly, with the quadrature :data:`C2_CONVENTION`.

    Raises:
        InvalidSolution: non-numbers, negative heights, more than 100,000 pieces, f identically 0.
    """
    values, a, scale, note = _heights(f, nonnegative=True)
    if not any(a):
        raise InvalidSolution("f is identically 0; C2 is undefined")
    c = integer_convolution(a, a)
    squares = sum(v * v for v in c)
    neighbours = sum(x * y for x, y in pairwise(c))
    t = 2 * squares + neighbours  # Σ over y = [0, c, 0] of y_i² + y_i y_{i+1} + y_{i+1}²
    top, total = max(c), sum(c)
    return Certified.rational(
        Fraction(t, 3 * total * top),
        formula="C2 = T / (3 · Σc · max c), c = A * A, T = 2 Σ c_k² + Σ c_k c_{k+1}, A_i = 10^D f_i",
        method=f"exact integer autoconvolution, all {len(c)} entries (big-integer product); sums in integers",
        convention=C2_CONVENTION + (f"; {note}" if note else ""),
        facts={"n": len(a), "points": len(c) + 2, "max_autoconvolution": str(top), "D": scale},
        inputs=_inputs(values))
