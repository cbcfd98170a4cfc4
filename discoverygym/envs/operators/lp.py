"""Sequential linear programming on the active constraints of a max of bilinear forms.

Erdős' minimum overlap bound and the first autocorrelation bound are both ``max_m c_m(x)`` over
shifts ``m``, with every ``c_m`` bilinear in the step heights ``x`` and the sum ``Σx`` fixed (the
verifiers rescale it; AC1 is scale invariant). Minimising such a max is the textbook case for
sequential linear programming with a trust region (Fletcher, *Practical Methods of Optimization*,
2nd ed. 1987, §14.4; the "LP/prox step on the active constraints" that issue 15 asks of the
step-function operators): linearise the near-maximal
``c_m`` at ``x``, solve

    min t   s.t.   c_m(x) + ∇c_m(x)·d ≤ t  (m active),   Σd = 0,   |d_j| ≤ δ·mean(x),   x + d in bounds

with HiGHS's interior-point solver (:func:`scipy.optimize.linprog`, ``highs-ipm``: 5x faster than
the default ``highs`` on a 470 x 600 Erdős LP, 2.2 s against 11.6 s), and keep ``x + d`` only if
the exact max went down
(else δ ← δ/4; on success δ ← 1.5 δ). Only a contiguous block of pieces is free (``width``), so
that the LP stays small on 30,000-piece constructions.

Each objective is a :class:`BilinearMax` of module-level functions (operators travel to worker
processes by pickling): :data:`ERDOS` (``c = h ⋆ (1 − h)`` on ``0 ≤ h ≤ 1``, ``Σh = n/2``),
:data:`AC1` (``c = f * f`` on ``f ≥ 0``) and :data:`AC3` (``|f * f|`` on signed ``f``: each
near-maximal ``|c_m|`` is linearised with the sign ``c_m`` has at ``x``, as
``benchmarks/ac3_slp.py`` found the AC3 record with). The env verifies the result like any candidate; the
values computed here only decide which iterate to return.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from discoverygym.envs.operators.deadline import expired, remaining
from discoverygym.envs.polish import project_box_sum
from discoverygym.rewards.convolution import convolve

__all__ = ["AC1", "AC3", "ERDOS", "BilinearMax", "prepared", "slp"]

#: most active constraints (rows) and free pieces (columns) of one LP, and most entries of its
#: dense matrix (rows are cut to MAX_ENTRIES // columns, the largest c_m kept): a 470 x 600 Erdős
#: LP takes about 2 s; an uncut 1000 x 1000 AC1 LP took about 40 s on this machine's cores
MAX_ROWS, MAX_COLS, MAX_ENTRIES = 1000, 1000, 300_000
#: HiGHS interior-point iterations per LP (an iteration cap, not a time limit, keeps the operator
#: deterministic on any machine); an LP that hits it counts as a failed iteration
LP_MAX_ITER = 100
#: the shortest HiGHS time limit given to an LP under a deadline (seconds)
MIN_TIME_LIMIT_S = 0.05
#: heights stay this far below an upper bound of 1, so the verifier's rescaling cannot cross it
UPPER_SLACK = 1e-9


def _convolve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return convolve(a, b)[0]  # the verifiers' convolution: direct below DIRECT_BELOW pieces, else FFT


def _erdos_prepare(x: np.ndarray) -> np.ndarray:
    """Scaled to Σh = n/2; when that leaves a height outside [0, 1 − UPPER_SLACK], projected onto
    {0 ≤ h ≤ 1 − UPPER_SLACK, Σh = n/2} (:func:`~discoverygym.envs.polish.project_box_sum`), since a
    plain clip would change Σh and the verifier's own rescaling would push heights above 1 again."""
    n = x.size
    top = 1.0 - UPPER_SLACK
    h = x * (n / 2) / max(float(x.sum()), 1e-300)
    if h.min() >= 0.0 and h.max() <= top:
        return h
    return project_box_sum(h, n / 2, top)


def _erdos_values(h: np.ndarray) -> np.ndarray:
    return _convolve(h, (1.0 - h)[::-1])


def _erdos_rows(h: np.ndarray, ms: np.ndarray, cols: np.ndarray) -> np.ndarray:
    # c[m] = Σ_i h_i (1 − h_{i+s}), s = n − 1 − m:  ∂c[m]/∂h_j = (1 − h_{j+s}) − h_{j−s}
    n = h.size
    s = (n - 1 - ms)[:, None]
    j = cols[None, :]
    a, b = j + s, j - s
    out = np.where((a >= 0) & (a < n), 1.0 - h[np.clip(a, 0, n - 1)], 0.0)
    out -= np.where((b >= 0) & (b < n), h[np.clip(b, 0, n - 1)], 0.0)
    return out


def _ac1_prepare(x: np.ndarray) -> np.ndarray:
    x = np.maximum(x, 0.0)
    return x / max(float(x.mean()), 1e-300)


def _ac1_values(f: np.ndarray) -> np.ndarray:
    return _convolve(f, f)


def _ac1_rows(f: np.ndarray, ms: np.ndarray, cols: np.ndarray) -> np.ndarray:
    # c[m] = Σ_i f_i f_{m−i}:  ∂c[m]/∂f_j = 2 f_{m−j}
    n = f.size
    k = ms[:, None] - cols[None, :]
    return np.where((k >= 0) & (k < n), 2.0 * f[np.clip(k, 0, n - 1)], 0.0)


def _ac3_prepare(x: np.ndarray) -> np.ndarray:
    # C3 = 2n max|f*f| / (Σf)² is scale and sign invariant: Σf = n keeps the LP well scaled
    s = float(x.sum())
    return x * (x.size / s) if s != 0.0 else x


def _ac3_values(f: np.ndarray) -> np.ndarray:
    return np.abs(_convolve(f, f))


def _ac3_rows(f: np.ndarray, ms: np.ndarray, cols: np.ndarray) -> np.ndarray:
    # |c[m]| near c[m] ≠ 0: ∂|c[m]|/∂f_j = sign(c[m]) · 2 f_{m−j}
    return np.sign(_convolve(f, f)[ms])[:, None] * _ac1_rows(f, ms, cols)


@dataclass(frozen=True)
class BilinearMax:
    """An objective ``max_m c_m(x)`` (lower is better) with ``c_m`` bilinear in ``x``.

    Attributes:
        name: the problem family.
        prepare: ``x -> x`` normalisation to the verifier's scale (float64 ``(n,)``).
        values: ``x (n,) -> c (M,)`` float64, every ``c_m``.
        rows: ``(x, ms (r,), cols (w,)) -> (r, w)`` float64, ``∂c_m/∂x_j``.
        upper: upper bound on every height (``None``: unbounded).
        lower: lower bound on every height (``None``: unbounded, signed heights).
    """

    name: str
    prepare: Callable[[np.ndarray], np.ndarray]
    values: Callable[[np.ndarray], np.ndarray]
    rows: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]
    upper: float | None
    lower: float | None = 0.0

    def clip(self, x: np.ndarray) -> np.ndarray:
        """``x`` clipped to ``[lower, upper]`` (a copy; either bound may be ``None``)."""
        lo = -np.inf if self.lower is None else self.lower
        hi = np.inf if self.upper is None else self.upper
        return np.clip(x, lo, hi)


ERDOS = BilinearMax("erdos_min_overlap", _erdos_prepare, _erdos_values, _erdos_rows, 1.0 - UPPER_SLACK)
AC1 = BilinearMax("first_autocorrelation", _ac1_prepare, _ac1_values, _ac1_rows, None)
AC3 = BilinearMax("third_autocorrelation", _ac3_prepare, _ac3_values, _ac3_rows, None, lower=None)


def _lp_step(model: BilinearMax, x: np.ndarray, c: np.ndarray, cols: np.ndarray, delta: float,
             margin: float) -> np.ndarray | None:
    """One trust-region LP step on the free pieces ``cols``: the new ``x`` or ``None`` (LP failed)."""
    from scipy.optimize import linprog

    top = float(c.max())
    ms = np.nonzero(c >= top - margin * abs(top))[0]
    cap = min(MAX_ROWS, MAX_ENTRIES // max(cols.size, 1))
    if ms.size > cap:
        ms = ms[np.argsort(c[ms], kind="stable")[-cap:]]
    grad = model.rows(x, ms, cols)
    w = cols.size
    step = delta * float(np.mean(np.abs(x)))
    lo = np.full(w, -step) if model.lower is None else np.maximum(model.lower - x[cols], -step)
    hi = np.full(w, step) if model.upper is None else np.minimum(model.upper - x[cols], step)
    if np.any(hi < lo):
        return None
    options: dict = {"maxiter": LP_MAX_ITER}
    left = remaining()
    if math.isfinite(left):  # under a run's wall budget: HiGHS stops at the deadline (a failed step)
        options["time_limit"] = max(left, MIN_TIME_LIMIT_S)
    res = linprog(np.r_[np.zeros(w), 1.0], A_ub=np.hstack([grad, -np.ones((ms.size, 1))]), b_ub=-c[ms],
                  A_eq=np.r_[np.ones(w), 0.0][None], b_eq=[0.0],
                  bounds=np.vstack([np.column_stack([lo, hi]), [[-np.inf, np.inf]]]), method="highs-ipm",
                  options=options)
    if res.status != 0 or res.x is None:
        return None
    out = x.copy()
    out[cols] += res.x[:w]
    return model.clip(out)


def prepared(model: BilinearMax, x: Any) -> np.ndarray:
    """``x`` as float64 heights normalised by ``model.prepare``.

    Args:
        model: the objective whose normalisation applies.
        x: ``(n,)`` heights (anything ``np.asarray`` turns into float64).

    Returns:
        float64 ``(n,)``: ``model.prepare(x)``.

    Raises:
        ValueError: ``x`` is not a non-empty 1-D array of finite numbers, or its normalisation is not
            finite (e.g. heights of 1e-320 scaled up to a fixed sum).
    """
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim != 1 or arr.size == 0 or not np.all(np.isfinite(arr)):
        raise ValueError(f"{model.name}: heights must be a non-empty 1-D array of finite numbers")
    with np.errstate(all="ignore"):
        out = model.prepare(arr)
    if not np.all(np.isfinite(out)):
        raise ValueError(f"{model.name}: the heights cannot be normalised (their sum under- or overflows)")
    return out


def slp(model: BilinearMax, x: np.ndarray, rng: np.random.Generator, width: float, delta: float,
        margin: float, iterations: int = 3, min_delta: float = 0.0) -> np.ndarray:
    """``iterations`` trust-region LP steps on a random block of pieces (see the module docstring).

    Args:
        model: the objective (:data:`ERDOS`, :data:`AC1`, :data:`AC3`).
        x: ``(n,)`` float64 heights (normalised by ``model.prepare`` first).
        rng: picks the block's start.
        width: share of the pieces that are free, in (0, 1] (at most :data:`MAX_COLS`).
        delta: initial trust radius, a share of ``mean(x)`` per piece.
        margin: ``c_m`` with ``c_m ≥ (1 − margin)·max c`` are linearised (at most :data:`MAX_ROWS`
            and :data:`MAX_ENTRIES` / the block's width, the largest kept).
        iterations: most LP solves.
        min_delta: stop once the trust radius has shrunk below this (a converged iterate: every
            step since the last success failed); ``0`` runs all ``iterations``.

    Under a deadline (:mod:`~discoverygym.envs.operators.deadline`) no LP starts after it and each
    LP gets the time left (HiGHS ``time_limit``); the best iterate so far is returned.

    Returns:
        ``(n,)`` float64 heights whose exact ``max c`` (computed here) is no higher than that of
        the prepared input, which is returned when no step improves it.

    Raises:
        ValueError: non-finite, empty or multi-dimensional heights (:func:`prepared`).
        ImportError: scipy missing.
    """
    x = prepared(model, x)
    n = x.size
    w = int(min(n, MAX_COLS, max(2, round(width * n))))
    start = int(rng.integers(0, n - w + 1))
    cols = np.arange(start, start + w)
    c = model.values(x)
    best = float(c.max())
    for _ in range(iterations):
        if delta < min_delta or expired():  # converged, or the run's deadline passed: the best so far
            break
        cand = _lp_step(model, x, c, cols, delta, margin)
        if cand is None:
            delta /= 4
            continue
        cand = model.prepare(cand)
        cc = model.values(cand)
        if float(cc.max()) < best:
            x, c, best = cand, cc, float(cc.max())
            delta *= 1.5
        else:
            delta /= 4
    return x
