"""Sum-difference exponent of a finite integer set (SimpleTES; problems.md).

For a finite set A of integers, C(A) = log(|A+A| / |A|) / log(|A−A| / |A|) (higher is better).
Rules: entries are integers (integral floats such as 3.0 are accepted), |a| <= 10^6, and after
removing duplicates 2 <= |A| <= 512; both ratios |A+A|/|A| and |A−A|/|A| must exceed 1.
Duplicates are removed (reported in ``metrics["duplicates"]``), never an error.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from discoverygym.errors import InvalidSolution
from discoverygym.rewards.common import Score, as_float_array, require_range

MAX_ABS = 10**6
MIN_SIZE, MAX_SIZE = 2, 512


def sum_difference(values: Any) -> Score:
    """Score a finite integer set A by C(A) = log(|A+A|/|A|) / log(|A−A|/|A|).

    Args:
        values: 1-D list/array of integers with |a| <= 10^6 (duplicates allowed, removed).

    Returns:
        :class:`Score` with metrics ``size`` (|A| after dedup), ``duplicates``, ``sumset`` (|A+A|),
        ``diffset`` (|A−A|).

    Raises:
        InvalidSolution: non-integer or out-of-range entries, |A| outside [2, 512] after dedup,
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
    if not MIN_SIZE <= size <= MAX_SIZE:
        raise InvalidSolution(
            f"|A| = {size} distinct integers is outside [{MIN_SIZE}, {MAX_SIZE}]"
        )
    sums = np.unique(np.add.outer(unique, unique)).size
    diffs = np.unique(np.subtract.outer(unique, unique)).size
    if not (sums > size and diffs > size):
        raise InvalidSolution(
            f"|A+A|/|A| = {sums}/{size} and |A−A|/|A| = {diffs}/{size} must both exceed 1"
        )
    value = math.log(sums / size) / math.log(diffs / size)
    return Score(
        value, {"size": int(size), "duplicates": int(arr.size - size), "sumset": int(sums), "diffset": int(diffs)}
    )
