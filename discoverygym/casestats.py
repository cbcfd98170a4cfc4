"""Per-case distributions of multi-case tasks: improvement over the initial state, quantiles, a text histogram.

A multi-case env (AtCoder AHC039/AHC058, TriMul / MLA-Decode kernels) judges a program on many cases
and reports one aggregate (mean score, geometric-mean runtime). The aggregate hides whether a
program is better everywhere or much better on a few cases and worse on the rest. The program envs
put the per-case relative improvement over the initial program into ``info["metrics"]
["case_improvement"]`` (:func:`case_improvement`), and the search and train summaries print its
distribution (:func:`distribution_text`: quantiles and a small text histogram).

A ground-floor module: plain Python and numpy, and :class:`~discoverygym.types.Direction` from the ground floor.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from discoverygym.types import Direction

__all__ = ["QUANTILES", "case_improvement", "case_summary", "distribution_text", "quantiles", "text_histogram"]

#: the quantiles a summary prints (min, deciles 1 and 9, quartiles, median, max).
QUANTILES = (0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0)


def case_improvement(
    scores: Sequence[float], baseline: Sequence[float], direction: str
) -> list[float | None]:
    """Relative improvement of each case over the baseline (the initial program); positive = better.

    ``(s - b) / |b|`` when the score is maximised, ``(b - s) / |b|`` when it is minimised (a
    runtime: 100 μs against a 200 μs baseline is +0.5). A case whose baseline is 0 or not finite,
    or whose score is not finite, gives ``None`` (no relative change is defined).

    Args:
        scores: per-case scores of the program.
        baseline: per-case scores of the initial program, same cases in the same order.
        direction: ``"max"`` or ``"min"``.

    Raises:
        ValueError: lengths differ, or an unknown direction.

    Example:
        >>> case_improvement([110, 90], [100, 100], "max")
        [0.1, -0.1]
        >>> case_improvement([100.0], [200.0], "min")
        [0.5]
    """
    try:
        sense = Direction(direction)
    except ValueError:
        raise ValueError(f"direction must be 'max' or 'min', got {direction!r}") from None
    if len(scores) != len(baseline):
        raise ValueError(f"{len(scores)} case scores against {len(baseline)} baseline cases")
    out: list[float | None] = []
    for s, b in zip(scores, baseline, strict=True):
        s, b = float(s), float(b)
        if b == 0 or not math.isfinite(b) or not math.isfinite(s):
            out.append(None)
            continue
        delta = sense.improvement(s, b)
        out.append(delta / abs(b))
    return out


def _finite(values: Sequence[float | None]) -> np.ndarray:
    arr = np.array([v for v in values if v is not None], dtype=np.float64)
    return arr[np.isfinite(arr)]


def quantiles(values: Sequence[float | None], qs: Sequence[float] = QUANTILES) -> dict[float, float]:
    """Quantiles of the finite values (``None`` and NaN dropped), linear interpolation (numpy's default).

    Returns ``{}`` when no finite value is left.

    Example:
        >>> quantiles([0.0, 1.0, 2.0, 3.0, None], qs=(0.0, 0.5, 1.0))
        {0.0: 0.0, 0.5: 1.5, 1.0: 3.0}
    """
    arr = _finite(values)
    if arr.size == 0:
        return {}
    return {float(q): float(v) for q, v in zip(qs, np.quantile(arr, list(qs)), strict=True)}


def text_histogram(values: Sequence[float | None], bins: int = 8, width: int = 30) -> list[str]:
    """A small text histogram of the finite values: one line per bin, ``[lo, hi) count bar``.

    Bins are equal-width over [min, max] (the last one closed); the longest bar is ``width``
    characters. One value, or all equal: a single line. No finite value: no line.

    Example:
        >>> text_histogram([0, 0, 1, 3], bins=3, width=4)
        ['[      +0,       +1)  2 ####', '[      +1,       +2)  1 ##', '[      +2,       +3]  1 ##']
    """
    arr = _finite(values)
    if arr.size == 0:
        return []
    lo, hi = float(arr.min()), float(arr.max())
    if lo == hi:
        return [f"[{lo:+8.3g}, {hi:+8.3g}] {arr.size:2d} " + "#" * width]
    counts, edges = np.histogram(arr, bins=bins, range=(lo, hi))
    edges = np.where(np.abs(edges) < 1e-12 * (hi - lo), 0.0, edges)  # no "-1e-17" edges
    top = int(counts.max())
    lines = []
    for i, c in enumerate(counts):
        close = "]" if i == len(counts) - 1 else ")"
        bar = "#" * (round(width * int(c) / top) if c else 0)
        lines.append(f"[{edges[i]:+8.3g}, {edges[i + 1]:+8.3g}{close} {int(c):2d} {bar}".rstrip())
    return lines


def distribution_text(values: Sequence[float | None], label: str = "per-case improvement over the initial state") -> str:
    """Summary block: the label with counts (better / equal / worse), the quantiles, the histogram.

    Example:
        >>> print(distribution_text([0.1, -0.1, 0.0, 0.3], label="gain"))  # doctest: +NORMALIZE_WHITESPACE
        gain: 4 cases (2 better, 1 equal, 1 worse)
          quantiles: min -0.1 | p10 -0.07 | p25 -0.025 | p50 +0.05 | p75 +0.15 | p90 +0.24 | max +0.3
          [    -0.1,       +0)  1 ###############
          [      +0,     +0.1)  1 ###############
          [    +0.1,     +0.2)  1 ###############
          [    +0.2,     +0.3]  1 ###############
    """
    arr = _finite(values)
    if arr.size == 0:
        return f"{label}: no case with a defined improvement"
    names = {0.0: "min", 1.0: "max"}
    q = quantiles(arr.tolist())
    qline = " | ".join(f"{names.get(k, f'p{round(100 * k)}')} {v:+.3g}" for k, v in q.items())
    head = (
        f"{label}: {arr.size} cases ({int((arr > 0).sum())} better, {int((arr == 0).sum())} equal, "
        f"{int((arr < 0).sum())} worse)"
    )
    bins = min(8, max(1, int(arr.size) if arr.size < 8 else 8))
    return "\n".join([head, f"  quantiles: {qline}", *("  " + ln for ln in text_histogram(arr.tolist(), bins=bins, width=15))])


def case_summary(metadata: Mapping[str, Any] | None, label: str = "best state: per-case improvement over the initial state") -> str | None:
    """:func:`distribution_text` of ``metadata["case_improvement"]`` (a state's metrics), or ``None`` without one.

    What the search and train summaries print under their tables.

    Example:
        >>> case_summary({"case_scores": [1.0]}) is None
        True
    """
    values = (metadata or {}).get("case_improvement")
    if not values:
        return None
    return distribution_text(values, label=label)
