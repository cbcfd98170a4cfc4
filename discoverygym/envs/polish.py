"""Deterministic local optimisers of constructions ("polish"), declared by the problems that have one.

Each construction problem names its own polisher (:attr:`~discoverygym.envs.problem.Problem.polish`,
set in :mod:`~discoverygym.envs.mathematics`); numeric policies apply it with ``polish="auto"``
(a policy option, never a trainer branch).

A polisher maps a proposed construction to a locally improved one: ``polish(x, **kw) -> x'``
(numpy float64 arrays of the same shape). It is deterministic (no randomness), so for a policy
``construction = polish(parent + move)`` the polish is part of the reward function seen by the
learner: the policy's log-probabilities are those of the move, and REINFORCE stays unbiased.
The env verifies the polished construction like any other; nothing here is trusted.

The polishers defined here (``polish="auto"`` takes the problem's own; ``polish=NAME`` one of them
by its function name, whatever the problem):

* circle packing — :func:`slsqp_circles`: SLSQP maximising Σr subject to containment and
  non-overlap (analytic Jacobians), then radii shrunk until every constraint holds exactly
  (the "plain SLSQP" local step of the issue's baseline).
* Erdős minimum overlap — :func:`erdos_smooth_max`: projected Adam on a log-sum-exp smoothed
  ``max_k (h ⋆ (1 − h))_k · 2/n`` over ``{0 ≤ h ≤ 1, Σh = n/2}``.
* first autocorrelation (AC1) — :func:`ac1_smooth_max`: projected Adam on a log-sum-exp smoothed
  ``2n max(f * f) / (Σf)²`` over ``f ≥ 0``.

All three return their input unchanged when the polished point is not better on the exact
(un-smoothed) objective computed here, so a polish never makes a proposal worse.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["ac1_smooth_max", "erdos_smooth_max", "get_polisher", "project_box_sum", "slsqp_circles"]


# ----------------------------------------------------------------------------- circle packing
def _circle_constraints(n: int) -> tuple[np.ndarray, np.ndarray]:
    i, j = np.triu_indices(n, 1)
    return i, j


def _shrink_to_feasible(z: np.ndarray) -> np.ndarray:
    """Radii reduced (never increased) until containment and non-overlap hold with no slack."""
    x, y, r = z[:, 0].copy(), z[:, 1].copy(), np.maximum(z[:, 2], 0.0)
    x = np.clip(x, 0.0, 1.0)
    y = np.clip(y, 0.0, 1.0)
    r = np.minimum.reduce([r, x, 1 - x, y, 1 - y])
    n = len(r)
    for _ in range(n * n):  # each pass fixes the worst overlap by scaling the pair's radii
        d = np.hypot(x[:, None] - x[None, :], y[:, None] - y[None, :])
        over = (r[:, None] + r[None, :]) - d
        np.fill_diagonal(over, -np.inf)
        k = int(np.argmax(over))
        a, b = divmod(k, n)
        if over[a, b] <= 0:
            break
        s = d[a, b] / (r[a] + r[b]) * (1 - 1e-15)
        r[a] *= s
        r[b] *= s
    return np.stack([x, y, r], axis=1)


def slsqp_circles(z: Any, maxiter: int = 100, ftol: float = 1e-12) -> np.ndarray:
    """SLSQP polish of a circle packing: maximise Σr in the unit square (scipy required).

    Args:
        z: ``(n, 3)`` rows ``[x, y, r]``.
        maxiter, ftol: SLSQP settings.

    Returns:
        ``(n, 3)`` float64, feasible with zero slack, Σr ≥ that of ``_shrink_to_feasible(z)``.

    Raises:
        ImportError: scipy missing.
    """
    from scipy.optimize import minimize

    z = np.asarray(z, dtype=np.float64)
    n = z.shape[0]
    i, j = _circle_constraints(n)
    m = len(i)

    def f(v):
        return -v[2::3].sum()

    def g(v):
        out = np.zeros_like(v)
        out[2::3] = -1.0
        return out

    def cons(v):
        x, y, r = v[0::3], v[1::3], v[2::3]
        walls = np.concatenate([x - r, 1 - x - r, y - r, 1 - y - r])
        pair = (x[i] - x[j]) ** 2 + (y[i] - y[j]) ** 2 - (r[i] + r[j]) ** 2
        return np.concatenate([walls, pair, r])

    def jac(v):
        x, y, r = v[0::3], v[1::3], v[2::3]
        J = np.zeros((4 * n + m + n, 3 * n))
        k = np.arange(n)
        J[k, 3 * k], J[k, 3 * k + 2] = 1, -1
        J[n + k, 3 * k], J[n + k, 3 * k + 2] = -1, -1
        J[2 * n + k, 3 * k + 1], J[2 * n + k, 3 * k + 2] = 1, -1
        J[3 * n + k, 3 * k + 1], J[3 * n + k, 3 * k + 2] = -1, -1
        rows = 4 * n + np.arange(m)
        dx, dy, sr = x[i] - x[j], y[i] - y[j], r[i] + r[j]
        J[rows, 3 * i], J[rows, 3 * j] = 2 * dx, -2 * dx
        J[rows, 3 * i + 1], J[rows, 3 * j + 1] = 2 * dy, -2 * dy
        J[rows, 3 * i + 2], J[rows, 3 * j + 2] = -2 * sr, -2 * sr
        J[4 * n + m + k, 3 * k + 2] = 1
        return J

    start = _shrink_to_feasible(z)
    try:
        res = minimize(f, start.ravel(), jac=g, method="SLSQP",
                       constraints=[{"type": "ineq", "fun": cons, "jac": jac}],
                       options={"maxiter": maxiter, "ftol": ftol})
        out = _shrink_to_feasible(res.x.reshape(n, 3))
    except (ValueError, np.linalg.LinAlgError):
        return start
    return out if out[:, 2].sum() >= start[:, 2].sum() else start


# ----------------------------------------------------------------------------- step functions
def project_box_sum(h: Any, total: float, upper: float = 1.0) -> Any:
    """Euclidean projection of ``h`` onto ``{0 ≤ h_i ≤ upper, Σ h_i = total}``: ``clip(h − τ, 0, upper)``
    with the shift ``τ`` found by 60 bisection steps (the sum is monotone in ``τ``).

    Args:
        h: ``(n,)`` float64, a numpy array or a torch tensor (the result has the same type).
        total: the required sum, in ``[0, n·upper]``; upper: the box's upper bound (> 0).

    Returns:
        ``(n,)`` of ``h``'s type. Used by the Erdős polisher (heights in [0, 1], Σh = n/2; the
        verifier's normalisation, :mod:`discoverygym.rewards.erdos`) and by the ``lp`` operator's normalisation.
    """
    lo, hi = float(h.min()) - upper, float(h.max())
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if float((h - mid).clip(0.0, upper).sum()) > total:
            lo = mid
        else:
            hi = mid
    return (h - hi).clip(0.0, upper)


def _adam_smooth_max(x0: np.ndarray, value, project, steps: int, lr: float, temp: float) -> np.ndarray:
    import torch

    x = torch.tensor(x0, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.Adam([x], lr=lr)
    best, best_v = x0, float(value(torch.tensor(x0), None))
    for _ in range(steps):
        opt.zero_grad()
        value(x, temp).backward()
        opt.step()
        with torch.no_grad():
            x.copy_(project(x))
            v = float(value(x, None))
        if v < best_v:
            best, best_v = x.detach().numpy().copy(), v
    return best


def _autocorr(a, b):
    import torch

    n = a.shape[0]
    size = 2 * n
    fa, fb = torch.fft.rfft(a, size), torch.fft.rfft(b, size)
    return torch.fft.irfft(fa * fb, size)[: 2 * n - 1]


def _smax(c, temp):
    import torch

    if temp is None:
        return c.max()
    return torch.logsumexp(temp * c, 0) / temp


def erdos_smooth_max(h: Any, steps: int = 30, lr: float = 2e-3, temp: float = 2000.0) -> np.ndarray:
    """Projected Adam on the smoothed Erdős bound C5 (``steps`` iterations, deterministic).

    Args:
        h: ``(n,)`` step heights (any positive scale; rescaled to Σh = n/2 first).
        steps, lr: Adam iterations and learning rate; temp: log-sum-exp temperature (1/C5 units).

    Returns:
        ``(n,)`` float64 heights in [0, 1] with Σh = n/2, the best iterate on the exact C5 (the
        input itself, rescaled and projected, if no iterate improves it).
    """
    import torch

    x = np.asarray(h, dtype=np.float64)
    n = x.size
    x0 = project_box_sum(torch.tensor(x * (n / 2) / max(x.sum(), 1e-300)), n / 2).numpy()

    def value(v, t):
        return _smax(_autocorr(v, torch.flip(1.0 - v, [0])) * 2.0 / n, t)

    return _adam_smooth_max(x0, value, lambda v: project_box_sum(v, n / 2), steps, lr, temp)


def ac1_smooth_max(f: Any, steps: int = 30, lr: float = 1e-2, temp: float = 200.0) -> np.ndarray:
    """Projected Adam on the smoothed first autocorrelation bound ``2n max(f*f)/(Σf)²``.

    Args:
        f: ``(n,)`` non-negative heights (scale invariant; normalised to mean 1 first).
        steps, lr, temp: Adam iterations, learning rate, log-sum-exp temperature.

    Returns:
        ``(n,)`` float64, ``f ≥ 0``, the best iterate on the exact C1 (or the normalised input).
    """
    import torch

    x = np.maximum(np.asarray(f, dtype=np.float64), 0.0)
    n = x.size
    x0 = x / max(x.mean(), 1e-300)

    def value(v, t):
        return _smax(_autocorr(v, v) * 2.0 * n / v.sum() ** 2, t)

    return _adam_smooth_max(x0, value, lambda v: torch.clamp(v, min=0.0), steps, lr, temp)


#: the polishers of this module (``polish=NAME`` names one by its function name); which problem uses
#: which is the problem's fact, ``Problem.polish``.
_POLISHERS: tuple[Callable[..., np.ndarray], ...] = (slsqp_circles, erdos_smooth_max, ac1_smooth_max)

#: names ``polish=`` took before the problem became the home of its polisher (issue 38): still read,
#: so that old commands and old run directories' ``config.json`` keep working.
_FORMER_NAMES: dict[str, str] = {"circle_packing": "slsqp_circles", "erdos_min_overlap": "erdos_smooth_max",
                                 "first_autocorrelation": "ac1_smooth_max"}


def get_polisher(name: str | None, problem: Any = None) -> Callable[..., np.ndarray] | None:
    """Resolve a polish option.

    Args:
        name: ``None``/``"none"`` (no polish), ``"auto"`` (``problem.polish``, the problem's
            declared local optimiser, or none), or the function name of a polisher of this module
            (``"slsqp_circles"``, ``"erdos_smooth_max"``, ``"ac1_smooth_max"``); the former
            problem-family names (``"circle_packing"``, ``"erdos_min_overlap"``,
            ``"first_autocorrelation"``) name the same polishers.
        problem: the problem (a :class:`~discoverygym.envs.problem.Problem`) for ``"auto"``.

    Returns:
        ``polish(x, **kwargs) -> x'`` (numpy float64 of the same shape), or ``None``.

    Raises:
        ValueError: unknown name.
    """
    if name in (None, "none"):
        return None
    if name == "auto":
        return problem.polish if problem is not None else None
    name = _FORMER_NAMES.get(name, name)
    for polisher in _POLISHERS:
        if polisher.__name__ == name:
            return polisher
    raise ValueError(f"unknown polish {name!r}; known: none, auto, {', '.join(p.__name__ for p in _POLISHERS)}")
