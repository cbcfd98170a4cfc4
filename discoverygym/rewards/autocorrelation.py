"""Autocorrelation inequalities AC1, AC2, AC3 (AlphaEvolve B.1-B.3; TTT-Discover §4.1; problems.md).

Each construction is a step function with n equal pieces given by its heights.

* AC1 (minimise): f >= 0 on [-1/4, 1/4]; C1 <= 2n · max(f * f) / (Σf)^2. Exact for step functions
  (the autoconvolution is piecewise linear with its maximum at a knot).
* AC2 (maximise): f >= 0; c = f * f (M = 2n - 1 entries), y = [0, c, 0] on M + 2 equispaced
  points of [-1/2, 1/2], h = 1/(M+1); L2² = Σ (h/3)(y_i² + y_i y_{i+1} + y_{i+1}²) (exact for the
  piecewise-linear interpolant), L1 = Σ|c| / (M+1), L∞ = max|c|; C2 >= L2² / (L1 · L∞).
* AC3 (minimise): f may be negative; dx = 0.5/n; C3 <= max|f * f · dx| / (Σf · dx)^2.

Speed: maxima use :func:`~discoverygym.rewards.convolution.max_abs_convolution` (FFT to find
candidates, direct recomputation of every candidate: the direct float64 value). AC2 needs all of
c: it uses the FFT when the certified bound on the relative error of C2 is below
``AC2_FFT_REL_TOL`` (reported in ``metrics["rel_error_bound"]``) and ``np.convolve`` otherwise.

At most 100,000 pieces are accepted (``convolution.MAX_PIECES``; the records use <= 50,000): the
exact fallback is O(n^2) and verification has no time limit of its own.

Differences from TTT-Discover's verifier (on purpose): negative heights in AC1/AC2 are rejected
rather than silently clamped to 0, and values above 1000 are not clamped.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from discoverygym.errors import InvalidSolution
from discoverygym.rewards.common import Score, as_float_array, require_range, scale_by_power_of_two
from discoverygym.rewards.convolution import convolve, max_abs_convolution, require_max_pieces

#: AC1 rejects functions with Σf below this (TTT-Discover's rule).
AC1_MIN_SUM = 0.01
#: AC3 rejects |Σf·dx|² below this (the bound is meaningless for a near-zero integral).
AC3_MIN_INTEGRAL_SQ = 1e-12
#: AC2 uses the FFT convolution only when its certified relative error bound on C2 is below this.
AC2_FFT_REL_TOL = 1e-9


def first_autocorrelation(f: Any, method: str = "auto") -> Score:
    """Upper bound C1 of the first autocorrelation inequality (lower is better).

    Args:
        f: 1-D list/array of n >= 1 finite, nonnegative heights.
        method: convolution method (``"auto"``, ``"fft"``, ``"direct"``).

    Returns:
        :class:`Score`, ``value`` = 2n · max(f * f) / (Σf)²; metrics ``n``, ``method``, ``candidates``.

    Raises:
        InvalidSolution: non-finite or negative entries, wrong rank, more than 100,000 pieces,
            Σf < 0.01.
    """
    arr = as_float_array(f, "f", ndim=1)
    require_max_pieces(arr.size, "f")
    require_range(arr, "f", 0.0, None)
    total = float(np.sum(arr))
    if total < AC1_MIN_SUM:
        raise InvalidSolution(f"Σf = {total!r} is below {AC1_MIN_SUM} (function too close to 0)")
    arr = scale_by_power_of_two(arr)  # exact, C1 is scale-invariant: no overflow for huge heights
    total = float(np.sum(arr))
    peak, _, stats = max_abs_convolution(arr, arr, signed=False, method=method)
    n = arr.size
    return Score(2 * n * peak / total**2, {"n": n, **stats})


def second_autocorrelation(f: Any, method: str = "auto") -> Score:
    """Lower bound C2 of the second autocorrelation inequality (higher is better).

    Args:
        f: 1-D list/array of n >= 1 finite, nonnegative heights, not all zero.
        method: ``"auto"`` (FFT when certified, else direct), ``"fft"`` (FFT regardless; the bound
            is still reported) or ``"direct"``.

    Returns:
        :class:`Score`, ``value`` = L2² / (L1 · L∞); metrics ``n``, ``method``,
        ``rel_error_bound`` (certified bound on |value - direct value| / value; 0 for direct).

    Raises:
        InvalidSolution: non-finite or negative entries, wrong rank, more than 100,000 pieces,
            f identically 0.
    """
    arr = as_float_array(f, "f", ndim=1)
    require_max_pieces(arr.size, "f")
    require_range(arr, "f", 0.0, None)
    if not np.any(arr > 0):
        raise InvalidSolution("f is identically 0; C2 is undefined")
    arr = scale_by_power_of_two(arr)  # exact, C2 is scale-invariant: no overflow for huge heights
    c, bound = convolve(arr, arr, method)
    value, rel = _c2_from_convolution(c, bound)
    used = "fft" if bound else "direct"
    if bound and method == "auto" and not rel <= AC2_FFT_REL_TOL:
        c, bound = convolve(arr, arr, "direct")
        value, rel = _c2_from_convolution(c, 0.0)
        used = "direct-fallback"
    return Score(value, {"n": arr.size, "method": used, "rel_error_bound": rel})


def _c2_from_convolution(c: np.ndarray, bound: float) -> tuple[float, float]:
    """C2 from the autoconvolution c (length M) and a certified first-order relative error bound.

    With every entry of c off by at most ``bound``: |Δ L2²| <= (h/3) Σ_i (3|y_i| + 3|y_{i+1}|)·bound,
    |Δ L1| <= bound, |Δ L∞| <= bound; the relative bound adds the three relative errors (x2 margin).
    """
    m = c.size
    h = 1.0 / (m + 1)
    y = np.concatenate(([0.0], c, [0.0]))
    y0, y1 = y[:-1], y[1:]
    l2_sq = float(np.sum((h / 3.0) * (y0 * y0 + y0 * y1 + y1 * y1)))
    abs_c = np.abs(c)
    l1 = float(np.sum(abs_c)) / (m + 1)
    linf = float(np.max(abs_c))
    if not (l1 > 0 and linf > 0 and l2_sq > 0):
        raise InvalidSolution("the autoconvolution of f vanishes; C2 is undefined")
    if bound == 0.0:
        return l2_sq / (l1 * linf), 0.0
    d_l2 = h * bound * float(np.sum(np.abs(y0) + np.abs(y1)))
    rel = 2.0 * (d_l2 / l2_sq + bound / l1 + bound / linf)
    return l2_sq / (l1 * linf), rel


def third_autocorrelation(f: Any, method: str = "auto") -> Score:
    """Upper bound C3 of the third autocorrelation inequality (lower is better); f may be negative.

    Args:
        f: 1-D list/array of n >= 1 finite heights on [-1/4, 1/4] (signed).
        method: convolution method (``"auto"``, ``"fft"``, ``"direct"``).

    Returns:
        :class:`Score`, ``value`` = max|f * f · dx| / (Σf · dx)² with dx = 0.5/n; metrics ``n``,
        ``method``, ``candidates``.

    Raises:
        InvalidSolution: non-finite entries, wrong rank, more than 100,000 pieces, (Σf·dx)² < 1e-12.
    """
    arr = as_float_array(f, "f", ndim=1)
    require_max_pieces(arr.size, "f")
    n = arr.size
    dx = 0.5 / n
    with np.errstate(over="ignore"):
        integral_sq = float(np.square(np.sum(arr) * dx))
    if integral_sq < AC3_MIN_INTEGRAL_SQ:
        raise InvalidSolution(
            f"(Σf·dx)² = {integral_sq!r} is below {AC3_MIN_INTEGRAL_SQ}; the bound is undefined"
        )
    arr = scale_by_power_of_two(arr)  # exact, C3 is scale-invariant: no overflow for huge heights
    integral_sq = (float(np.sum(arr)) * dx) ** 2
    peak, _, stats = max_abs_convolution(arr, arr, signed=True, method=method)
    return Score(peak * dx / integral_sq, {"n": n, **stats})


def nonnegative_violation(a: Any) -> float:
    """How far a nonnegative step function (AC1, AC2) is from valid: the mean negative part.

    ``inf`` for a non-finite or non-1-D input. The graded violation of AC1 and AC2
    (:attr:`Problem.violation <discoverygym.envs.problem.Problem>`).
    """
    arr = np.asarray(a, dtype=np.float64)
    if arr.ndim != 1 or not arr.size or not np.isfinite(arr).all():
        return math.inf
    return float(np.maximum(0, -arr).mean())
