"""L-BFGS polish of a large AC1 construction on the log-sum-exp smoothed bound (the ``lbfgs`` operator).

At a good first-autocorrelation construction thousands of shifts are nearly maximal
(TTT-Discover's 30,000 pieces: 14,028 within 1e-6 of the max), too many rows for the sequential LP
(``lp``, which keeps at most :data:`~discoverygym.envs.operators.lp.MAX_ROWS` of them on a block of
at most 1,000 pieces), and Adam's fixed step (``adam``, ``anneal``) is too coarse to gain the last
digits. This operator minimises the smoothed bound ``L_β(x²)``
(:func:`~discoverygym.envs.operators.anneal.smoothed_bound`; ``L_β ≤ max c + log(2n−1)/β``) over
every piece at once with scipy's L-BFGS-B (Nocedal & Wright, *Numerical Optimization*, 2nd ed.,
§7.2), the gradient by FFT (O(n log n) per evaluation), at a fixed, high inverse temperature
``β`` (1e7-1e9 resolve the 1e-7-1e-9 differences between near-maximal shifts); the trainer's
operator policy learns which ``β`` and how many iterations pay. Measured on one core of this
project's 2-core machine (``benchmarks/ac1_lse.py``, the same objective with a ``β`` ladder):
TTT-Discover's 1.5028628983 went to 1.5028626521 in 16 minutes (26 calls of 2,000 iterations).

Source: ours (issue 42); the smoothing is Nesterov's (*Smooth minimization of non-smooth
functions*, Math. Program. 103, 2005).
"""

from __future__ import annotations

import numpy as np

from discoverygym.envs.operators.anneal import ac1_bound, smoothed_bound
from discoverygym.envs.operators.deadline import expired

__all__ = ["ac1_lbfgs"]

#: L-BFGS memory (pairs kept) and line-search steps per iteration
MEMORY, MAX_LINE_SEARCH = 30, 50


def ac1_lbfgs(f: np.ndarray, rng: np.random.Generator, iterations: float, beta: float, **_) -> np.ndarray:
    """``round(iterations)`` L-BFGS-B iterations on ``L_β(x²)`` from ``x = √f`` (module docstring).

    Args:
        f: ``(n,)`` heights (negative entries are clipped to 0), normalised to mean 1 first.
        rng: unused (the move is deterministic); the operator signature's.
        iterations: most L-BFGS iterations (≥ 1; each one or a few gradient evaluations).
        beta: inverse temperature ``β > 0`` (units 1/C1).

    A piece at exactly 0 stays at 0 (the gradient in ``x = √f`` vanishes there): the move polishes
    a construction's support; ``anneal``, ``hop`` and ``lp`` can grow new pieces.

    Returns:
        float64 ``(n,)`` of mean 1, ``f ≥ 0``: the result when its exact ``C1``
        (:func:`~discoverygym.envs.operators.anneal.ac1_bound`) is lower than the start's, else the
        (normalised) start, so never worse. Under a run's deadline
        (:mod:`~discoverygym.envs.operators.deadline`) the iterations stop at the first one after it.

    Raises:
        ValueError: ``f`` not 1-D, empty, non-finite or with ``Σf ≤ 0``; ``iterations < 1`` or
            ``beta ≤ 0``.
    """
    from scipy.optimize import minimize

    f0 = np.maximum(np.asarray(f, dtype=np.float64), 0.0)
    if f0.ndim != 1 or f0.size == 0 or not np.all(np.isfinite(f0)) or not f0.sum() > 0:
        raise ValueError("ac1_lbfgs: f must be a non-empty finite 1-D array with a positive sum")
    if not (iterations >= 1 and beta > 0):
        raise ValueError(f"ac1_lbfgs: need iterations >= 1 and beta > 0, got {iterations!r}, {beta!r}")
    start = f0 / f0.mean()

    def value_and_grad(x: np.ndarray) -> tuple[float, np.ndarray]:
        value, grad = smoothed_bound(x, float(beta))
        return float(value[0]), grad

    def stop_at_deadline(intermediate_result) -> None:
        if expired():
            raise StopIteration

    if expired():
        return start
    res = minimize(value_and_grad, np.sqrt(start), jac=True, method="L-BFGS-B", callback=stop_at_deadline,
                   options={"maxiter": round(iterations), "maxcor": MEMORY, "ftol": 0.0, "gtol": 0.0,
                            "maxls": MAX_LINE_SEARCH})
    out = res.x * res.x
    if not (np.all(np.isfinite(out)) and out.sum() > 0):
        return start
    out = out / out.mean()
    return out if ac1_bound(out) < ac1_bound(start) else start
