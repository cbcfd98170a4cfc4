"""Long annealed Adam on the log-sum-exp smoothed first autocorrelation bound (AC1).

The first autocorrelation bound of a step function ``f ≥ 0`` with ``n`` pieces is
``C1(f) = 2n · max_k (f*f)_k / (Σf)²``. Its gradient methods (AlphaEvolve's and TTT-Discover's AC1
programs: Novikov et al. 2025 §B.1; arXiv 2601.16175 App. C) minimise a smoothed max

    L_β(f) = (1/β) · log Σ_k exp(β · c_k),    c = 2n (f*f) / (Σf)²,

and raise the inverse temperature ``β`` as they go. What matters is the length of the schedule
and its resolution ladder (measured on this project's 2-core machine; ours):

* on 200 pieces from a flat start, 2 x 40 Adam steps (the ``adam`` operator) barely move ``C1``;
  100,000 steps with ``β`` raised 1000x from 10 reached 1.51573 (12 s), and chains of 20,000-step
  calls restarted from their best stalled at 1.51677 after 240 s;
* with ``β`` raised 10,000x and the step size lowered 10x over the schedule, 100,000-step calls
  from flat starts ended at 1.5148-1.5190 (8 seeds, mean 1.5163), and each call on the ×2
  linearly resampled result of the last (200 → 400 → 800 → 1600 pieces, ``β0`` 10, 30, 100, 300,
  step size 3e-2, 1e-2, 5e-3, 3e-3) lowered it again: 1.51386 → 1.51188 → 1.51099 → 1.51056 in
  70 s (seed 0), 1.51719 → 1.51402 (seed 1); one call straight from the 200-piece 1.51386 to
  1600 pieces reached 1.51143-1.51151 in 24 s (``β0`` 30-300). A 100,000-step call from a flat
  1600-piece start was no better than one on 200 pieces (about 1.518), at twice the cost. So a
  fine call needs a good coarse parent, and the coarse calls differ by their draw (a multi-start);
* the ladder goes further from a coarser start: 16 restarts on 50 pieces (30,000 steps each)
  then doubling to 1600 with ``β0`` 3 on 50 pieces, tripled per doubling (9, 27, 81, 243, 729),
  reached 1.50851 and 1.51000 (seeds 0, 1; best coarse start 1.52047, 1.52213) in about 125 s;
  4 restarts: 1.51326; 7 single restarts, each climbed without selection, ended at
  1.5126-1.5268. The end is set by the coarse start. The best of 256 starts annealed as one ``(256, 50)`` batch (40 s), then the
  ladder: 1.50883 and 1.50820 (seeds 0, 1) in about 115 s on one core.

So this module runs one long schedule per call, for one start or a batch of starts, in plain numpy
(``scipy.signal.fftconvolve``: about 0.12 ms per step on 200 pieces, 0.25 ms on 1600, some 25x
faster than the torch polisher's per-step overhead at 200).

Parametrisation ``f = x²`` keeps ``f ≥ 0`` without projection. The gradient is exact:
``∂L/∂f_j = Σ_k w_k (4n/(Σf)²) f_{k−j} − 2 (w·c)/Σf`` with ``w = softmax(β c)``.
"""

from __future__ import annotations

import numpy as np

from discoverygym.envs.operators.deadline import expired
from discoverygym.envs.operators.lp import AC1

__all__ = ["ac1_anneal", "ac1_bound", "smoothed_bound", "smoothed_gradient"]

#: Adam moments (Kingma & Ba 2015 defaults)
BETA1, BETA2, EPS = 0.9, 0.999, 1e-12
#: steps between exact evaluations of the iterate (the best exact iterate is returned)
CHECK_EVERY = 100


def ac1_bound(f: np.ndarray) -> float:
    """Exact ``C1 = 2n · max(f*f) / (Σf)²`` of ``(n,)`` float64 heights ``f ≥ 0`` with ``Σf > 0``
    (the verifiers' convolution, through :data:`~discoverygym.envs.operators.lp.AC1`: a direct sum
    below ``DIRECT_BELOW`` = 2048 pieces, an FFT above; the value used to pick the returned
    iterate, which the env's verifier recomputes). Returns ``inf`` when
    ``Σf`` is not positive."""
    s = float(f.sum())
    if not s > 0.0:
        return float("inf")
    return 2.0 * f.size * float(AC1.values(f).max()) / s ** 2


def smoothed_bound(x: np.ndarray, beta: float) -> tuple[np.ndarray, np.ndarray]:
    """``L_β(x²)`` and ``∂L_β(x²)/∂x`` (module docstring) for ``(n,)`` or ``(B, n)`` float64 ``x``
    (``B`` independent rows, each with ``Σx² > 0``) and inverse temperature ``beta > 0``.

    Returns:
        ``(L, grad)``: ``L`` float64 ``(B,)`` (``(1,)`` for 1-D ``x``; ``L_β`` is at least the max of
        ``c`` and at most ``max c + log(2n − 1)/β``), ``grad`` of ``x``'s shape; exact up to
        ``scipy.signal.fftconvolve`` rounding.
    """
    from scipy.signal import fftconvolve

    rows = np.atleast_2d(x)
    n = rows.shape[1]
    f = rows * rows
    s = f.sum(axis=1, keepdims=True)
    scale = 2.0 * n / s ** 2
    c = fftconvolve(f, f, axes=1) * scale
    top = c.max(axis=1, keepdims=True)
    w = np.exp(beta * (c - top))
    z = w.sum(axis=1, keepdims=True)
    w /= z
    grad_f = (2.0 * scale * fftconvolve(w, f[:, ::-1], axes=1)[:, n - 1: 2 * n - 1]
              - 2.0 * np.sum(w * c, axis=1, keepdims=True) / s)
    out = 2.0 * rows * grad_f
    return (top + np.log(z) / beta)[:, 0], (out if x.ndim == 2 else out[0])


def smoothed_gradient(x: np.ndarray, beta: float) -> np.ndarray:
    """``∂L_β(x²)/∂x`` of :func:`smoothed_bound`, of ``x``'s shape (``(n,)`` or ``(B, n)``)."""
    return smoothed_bound(x, beta)[1]


def ac1_anneal(f: np.ndarray, rng: np.random.Generator, iterations: int, beta0: float, lr: float,
               span: float = 1e4, lr_decay: float = 10.0, jitter: float = 1e-3) -> np.ndarray:
    """Adam on ``L_β`` (module docstring) with ``β`` raised geometrically from ``beta0`` to
    ``beta0·span`` and the step size lowered geometrically from ``lr`` to ``lr/lr_decay`` over
    ``iterations`` steps; returns the best exact iterate (of each row).

    A ``(B, n)`` input anneals ``B`` independent starts in one vectorised run (the batched
    multi-start of Jaech & Joseph 2025, arXiv 2508.02803 §2): 256 starts on 50 pieces cost about
    10x one start, not 256x (measured here: 64 starts 9.5 s, one 3.7 s, 30,000 steps).

    Args:
        f: ``(n,)`` or ``(B, n)`` heights (negative entries are clipped to 0); each row
            normalised to mean 1 first.
        rng: draws the start's multiplicative jitter ``1 + jitter·N(0, 1)`` on ``√f`` (it breaks
            the symmetry of a flat start; the only randomness, so a call is deterministic given it).
        iterations: Adam steps (≥ 1).
        beta0: initial inverse temperature (``C1`` is about 1.5, so ``β = 1000`` resolves shifts
            whose values differ by about 1e-3).
        lr: initial Adam step size on ``x = √f`` (``f`` has mean 1).
        span: ``β`` at the end / ``beta0``.
        lr_decay: initial step size / final step size (≥ 1).
        jitter: relative size of the start's jitter.

    Returns:
        float64 of ``f``'s shape, ``f ≥ 0``, every row of mean 1: per row, the iterate with the
        lowest exact ``C1`` among the start (normalised, unjittered) and every ``CHECK_EVERY``-th
        step and the last; so never worse than the start. Under a run's deadline
        (:mod:`~discoverygym.envs.operators.deadline`) the schedule stops at the first check after it.

    Raises:
        ValueError: ``f`` not 1-D or 2-D, empty, non-finite or a row with ``Σf ≤ 0``;
            ``iterations < 1``; ``beta0``, ``lr`` or ``span`` not positive; ``lr_decay < 1``.
    """
    f0 = np.maximum(np.asarray(f, dtype=np.float64), 0.0)
    if (f0.ndim not in (1, 2) or f0.size == 0 or not np.all(np.isfinite(f0))
            or not np.all(np.atleast_2d(f0).sum(axis=1) > 0)):
        raise ValueError("ac1_anneal: f must be a non-empty finite 1-D or 2-D array with positive (row) sums")
    if iterations < 1 or not (beta0 > 0 and lr > 0 and span > 0 and lr_decay >= 1):
        raise ValueError("ac1_anneal: need iterations >= 1, positive beta0, lr, span and lr_decay >= 1")
    rows = np.atleast_2d(f0)
    rows = rows / rows.mean(axis=1, keepdims=True)
    best = np.array([ac1_bound(r) for r in rows])
    best_f = rows.copy()
    x = np.sqrt(rows) * (1.0 + jitter * rng.standard_normal(f0.shape)).reshape(rows.shape)
    m = np.zeros_like(x)
    v = np.zeros_like(x)
    for it in range(1, int(iterations) + 1):
        t = it / iterations
        beta = beta0 * span ** t
        step = lr * lr_decay ** -t
        g = smoothed_gradient(x, beta)
        m = BETA1 * m + (1 - BETA1) * g
        v = BETA2 * v + (1 - BETA2) * g * g
        x = x - step * (m / (1 - BETA1 ** it)) / (np.sqrt(v / (1 - BETA2 ** it)) + EPS)
        if it % CHECK_EVERY == 0 or it == iterations:
            fx = x * x
            for i, row in enumerate(fx):
                value = ac1_bound(row)
                if value < best[i]:
                    best[i], best_f[i] = value, row / row.mean()
            if expired():  # the run's deadline (operators.deadline): the best exact iterate so far
                break
    return best_f if f0.ndim == 2 else best_f[0]
