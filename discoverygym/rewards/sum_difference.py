"""Sum-difference exponent of a finite integer set (SimpleTES; problems.md).

For a finite set A of integers, C(A) = log(|A+A| / |A|) / log(|A−A| / |A|) (higher is better).
Rules: entries are integers (integral floats such as 3.0 are accepted), |a| <= 10^6, and after
removing duplicates 2 <= |A| <= 512 (SimpleTES's cap; ``SumDifference-Large-v0`` lifts it with
``max_size=None``); both ratios |A+A|/|A| and |A−A|/|A| must exceed 1. Duplicates are removed
(reported in ``metrics["duplicates"]``), never an error.

Counting: up to :data:`DIRECT_MAX` distinct elements |A+A| and |A−A| come from ``np.unique`` of the
n × n table of sums and differences; above it, from the convolutions 1_A * 1_A and 1_A * 1_{−A} of
A's indicator over its range (length max A − min A + 1 ≤ 2·10^6 + 1), computed by FFT with the
certified entrywise error bound of :mod:`discoverygym.rewards.convolution`. The exact counts are
integers and the bound is below 1/2 (about 3e-4 over the whole range), so rounding recovers them
exactly and a sum exists iff its rounded count is positive.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from discoverygym.errors import InvalidSolution
from discoverygym.rewards.common import Score, as_float_array, require_range
from discoverygym.rewards.convolution import convolve

MAX_ABS = 10**6
MIN_SIZE, MAX_SIZE = 2, 512
#: above this many distinct elements the counts come from FFT convolutions (module docstring).
DIRECT_MAX = 1024


def set_sizes(unique: np.ndarray, method: str = "auto") -> tuple[int, int]:
    """|A+A| and |A−A| of a set of distinct integers, exactly.

    Args:
        unique: (n,) int64, sorted and distinct, n >= 1, range max − min at most ~10^7.
        method: ``"direct"`` (unique of the n × n tables), ``"fft"`` (rounded FFT convolutions of
            the indicator) or ``"auto"`` (direct up to :data:`DIRECT_MAX` elements).

    Returns:
        ``(sumset, diffset)``: the two counts as Python ints.

    Raises:
        ValueError: unknown ``method``.
        ArithmeticError: the FFT error bound reaches 1/2 (cannot happen within |a| <= 10^6).
    """
    if method not in ("auto", "direct", "fft"):
        raise ValueError(f"method must be 'auto', 'direct' or 'fft', got {method!r}")
    if method == "direct" or (method == "auto" and unique.size <= DIRECT_MAX):
        return (int(np.unique(np.add.outer(unique, unique)).size),
                int(np.unique(np.subtract.outer(unique, unique)).size))
    indicator = np.zeros(int(unique[-1] - unique[0]) + 1)
    indicator[unique - unique[0]] = 1.0
    sizes = []
    for other in (indicator, indicator[::-1].copy()):
        counts, bound = convolve(indicator, other, "fft")
        if not bound < 0.5:
            raise ArithmeticError(f"FFT error bound {bound:.3g} does not separate integer counts")
        sizes.append(int(np.count_nonzero(np.rint(counts) > 0)))
    return sizes[0], sizes[1]


def require_size(size: int, max_size: int | None) -> None:
    """Refuse a set of ``size`` distinct integers outside [2, ``max_size``] (``None``: no cap).

    Raises:
        InvalidSolution: one line naming the size and the allowed range.
    """
    if size < MIN_SIZE or (max_size is not None and size > max_size):
        raise InvalidSolution(
            f"|A| = {size} distinct integers is outside [{MIN_SIZE}, {max_size}]"
            if max_size is not None else f"|A| = {size} distinct integers; at least {MIN_SIZE} are needed"
        )


def sum_difference(values: Any, max_size: int | None = MAX_SIZE) -> Score:
    """Score a finite integer set A by C(A) = log(|A+A|/|A|) / log(|A−A|/|A|).

    Args:
        values: 1-D list/array of integers with |a| <= 10^6 (duplicates allowed, removed).
        max_size: most distinct elements allowed (SimpleTES: 512); ``None``: no cap beyond the
            value range (``SumDifference-Large-v0``).

    Returns:
        :class:`Score` with metrics ``size`` (|A| after dedup), ``duplicates``, ``sumset`` (|A+A|),
        ``diffset`` (|A−A|).

    Raises:
        InvalidSolution: non-integer or out-of-range entries, |A| outside [2, max_size] after dedup,
            or a ratio <= 1 (then C(A) is undefined).
    """
    arr = as_float_array(values, "A", ndim=1)
    require_range(arr, "A", -MAX_ABS, MAX_ABS)
    frac = np.flatnonzero(arr != np.round(arr))
    if frac.size:
        k = int(frac[0])
        raise InvalidSolution(f"A[{k}] = {float(arr[k])!r} is not an integer")
    unique = np.unique(arr.astype(np.int64))
    size = unique.size
    require_size(size, max_size)
    sums, diffs = set_sizes(unique)
    if not (sums > size and diffs > size):
        raise InvalidSolution(
            f"|A+A|/|A| = {sums}/{size} and |A−A|/|A| = {diffs}/{size} must both exceed 1"
        )
    value = math.log(sums / size) / math.log(diffs / size)
    return Score(
        value, {"size": int(size), "duplicates": int(arr.size - size), "sumset": int(sums), "diffset": int(diffs)}
    )
