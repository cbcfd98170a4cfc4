"""Operators for circle packing (rows ``[x, y, r]`` in the unit square), each ending in SLSQP.

Every operator makes a start point and hands it to
:func:`~discoverygym.envs.polish.slsqp_circles` (SLSQP on Σr with containment and non-overlap,
then radii shrunk to exact feasibility), so each is one "perturb, then locally optimise" move of
basin hopping (Wales & Doye 1997, J. Phys. Chem. A 101, 5111) as used for packings by
AlphaEvolve's circle-packing programs (Novikov et al. 2025, §B.12) and by the SLSQP
restart loop of the issue. The moves themselves are the standard packing moves:

* :data:`SHAKE` — jitter every centre and shrink every radius (a global shake);
* :data:`PERTURB_K` — re-place ``k`` random circles near their position (a local kick);
* :data:`HOLE` — move one of the smallest circles into the largest empty hole (the "jump" move of
  Huang & Ye 2011, quasi-physical packing algorithms);
* :data:`SWAP` — exchange the centres of two circles of different radii;
* :data:`RESTART` — random centres with equal radii (a fresh start, SLSQP multi-start);
* :data:`RESTART_HOP` — a fresh start, then greedy basin hopping with the moves above until
  ``patience`` moves in a row fail: one new lineage of multi-start basin hopping per call.
"""

from __future__ import annotations

import numpy as np

from discoverygym.envs.operators.base import Operator, ParamSpec
from discoverygym.envs.operators.deadline import expired
from discoverygym.envs.polish import slsqp_circles

__all__ = ["CIRCLE_OPERATORS", "HOLE", "PERTURB_K", "RESTART", "RESTART_HOP", "SHAKE", "SWAP", "restart_hop"]

#: SLSQP iterations after each move (enough to converge from a perturbed packing of ≤ 32 circles)
MAXITER = 200


def _slsqp(z: np.ndarray) -> np.ndarray:
    return slsqp_circles(z, maxiter=MAXITER)


def shake(x: np.ndarray, rng: np.random.Generator, scale: float, shrink: float) -> np.ndarray:
    """Centres + N(0, scale²) (clipped to the square), radii × ``shrink``, then SLSQP."""
    z = x.copy()
    z[:, :2] = np.clip(z[:, :2] + rng.normal(0.0, scale, (len(z), 2)), 0.0, 1.0)
    z[:, 2] *= shrink
    return _slsqp(z)


def perturb_k(x: np.ndarray, rng: np.random.Generator, fraction: float, scale: float) -> np.ndarray:
    """``k = 1 + ⌊fraction (n − 1)⌋`` random circles moved by N(0, scale²) with radius halved, then SLSQP."""
    z = x.copy()
    n = len(z)
    k = 1 + int(fraction * (n - 1))
    idx = rng.choice(n, size=k, replace=False)
    z[idx, :2] = np.clip(z[idx, :2] + rng.normal(0.0, scale, (k, 2)), 0.0, 1.0)
    z[idx, 2] *= 0.5
    return _slsqp(z)


def _largest_hole(z: np.ndarray, skip: int, grid: int = 64) -> tuple[float, float, float]:
    """Centre and clearance of the grid point farthest from the walls and the other circles."""
    g = (np.arange(grid) + 0.5) / grid
    px, py = np.meshgrid(g, g, indexing="ij")
    px, py = px.ravel(), py.ravel()
    clear = np.minimum.reduce([px, 1 - px, py, 1 - py])
    keep = np.arange(len(z)) != skip
    d = np.hypot(px[:, None] - z[keep, 0][None], py[:, None] - z[keep, 1][None]) - z[keep, 2][None]
    clear = np.minimum(clear, d.min(axis=1))
    k = int(np.argmax(clear))
    return float(px[k]), float(py[k]), float(max(clear[k], 0.0))


def hole(x: np.ndarray, rng: np.random.Generator, rank: float) -> np.ndarray:
    """One of the smallest circles (``rank`` ∈ [0, 1] picks among the 4 smallest) moved into the
    largest hole with the hole's radius, then SLSQP."""
    z = x.copy()
    order = np.argsort(z[:, 2], kind="stable")
    i = int(order[min(int(rank * 4), min(3, len(z) - 1))])
    cx, cy, r = _largest_hole(z, i)
    jitter = rng.normal(0.0, 0.25 / 64, 2)
    z[i] = [np.clip(cx + jitter[0], 0, 1), np.clip(cy + jitter[1], 0, 1), r]
    return _slsqp(z)


def swap(x: np.ndarray, rng: np.random.Generator, gap: float) -> np.ndarray:
    """The centres of a random circle and one whose radius differs by a ``gap`` fraction of the
    radius range (nearest such) exchanged, then SLSQP."""
    z = x.copy()
    n = len(z)
    i = int(rng.integers(n))
    r = z[:, 2]
    target = r[i] + (gap if rng.random() < 0.5 else -gap) * (r.max() - r.min())
    cand = np.argsort(np.abs(r - target), kind="stable")
    j = int(cand[0] if cand[0] != i else cand[1 % n])
    z[[i, j], :2] = z[[j, i], :2]
    return _slsqp(z)


def restart(x: np.ndarray, rng: np.random.Generator, radius: float) -> np.ndarray:
    """Uniform random centres with every radius ``radius``, then SLSQP (parent ignored but for n)."""
    n = len(x)
    z = np.column_stack([rng.random(n), rng.random(n), np.full(n, radius)])
    return _slsqp(z)


#: a chain stops after this many moves even if it still improves (bounds one call's time: ~40 s on 26 circles)
HOP_MAX_MOVES = 500
#: a move must raise Σr by more than this to be accepted by a chain
HOP_MIN_GAIN = 1e-9


def _hop_move(z: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One random move of a chain: shake (p 0.6; jitter log-uniform on [0.005, 0.1], shrink on
    [0.8, 1]), kick k circles (p 0.2; share on [0, 0.3], move log-uniform on [0.02, 0.3]), hole
    (p 0.1) or swap (p 0.1), each followed by SLSQP."""
    u = rng.random()
    if u < 0.6:
        return shake(z, rng, float(np.exp(rng.uniform(np.log(0.005), np.log(0.1)))), float(rng.uniform(0.8, 1.0)))
    if u < 0.8:
        return perturb_k(z, rng, float(rng.uniform(0.0, 0.3)), float(np.exp(rng.uniform(np.log(0.02), np.log(0.3)))))
    if u < 0.9:
        return hole(z, rng, float(rng.random()))
    return swap(z, rng, float(rng.random()))


def restart_hop(x: np.ndarray, rng: np.random.Generator, patience: float) -> np.ndarray:
    """A fresh lineage: :func:`restart` (radius 0.05), then greedy basin hopping from it.

    Each move (:func:`_hop_move`) is kept when it raises Σr by more than :data:`HOP_MIN_GAIN`; the
    chain stops once ``round(patience)`` moves in a row failed, or after :data:`HOP_MAX_MOVES`, or
    (under a run's wall budget) at the deadline of :mod:`~discoverygym.envs.operators.deadline`.
    The parent is ignored but for ``n``.

    Why: measured on 26 circles (one core), a packing that a chain has converged into stays there
    (from the 2.6342924 trap, 900 shakes, kicks, hole and swap moves found nothing better), while
    about 1 chain in 30 (patience 30, ~3 s each) ends at the record 2.6359831. So the record is
    found by starting many short chains, the multi-start basin hopping of Wales & Doye (1997) and
    Grosso et al. (2010, "Solving the problem of packing equal and unequal circles in a circular
    container", J. Glob. Optim. 47). Eight such chains interleaved, each restarted after 60 failed
    moves, reached the record within 150 s in 6 of 7 seeds, where the greedy loop of the issue
    (restart or shake the best) reached it in 0 of 3.

    Args:
        x: ``(n, 3)`` parent (only its length is used); rng: the only randomness;
        patience: failed moves in a row that end the chain (rounded, at least 1).

    Returns:
        ``(n, 3)`` float64, the chain's last (= best) packing, feasible (SLSQP output shrunk to
        zero slack by :func:`~discoverygym.envs.polish.slsqp_circles`).
    """
    best = restart(x, rng, 0.05)
    limit, stale = max(1, round(float(patience))), 0
    for _ in range(HOP_MAX_MOVES):
        if stale >= limit or expired():  # converged, or the run's deadline passed (operators.deadline)
            break
        z = _hop_move(best, rng)
        if z[:, 2].sum() > best[:, 2].sum() + HOP_MIN_GAIN:
            best, stale = z, 0
        else:
            stale += 1
    return best


# defaults: the perturbed-best SLSQP restart loop of the issue (jitter 0.05, radii x 0.9)
SHAKE = Operator("shake_slsqp", shake, (ParamSpec("scale", 0.002, 0.15, log=True, doc="centre jitter (square sides)",
                                                  default=0.05),
                                        ParamSpec("shrink", 0.6, 1.0, doc="radius factor", default=0.9)),
                 "jitter all centres, shrink radii, SLSQP")
PERTURB_K = Operator("perturb_k_slsqp", perturb_k,
                     (ParamSpec("fraction", 0.0, 0.5, doc="share of circles moved"),
                      ParamSpec("scale", 0.01, 0.5, log=True, doc="move (square sides)")),
                     "kick k circles, SLSQP")
HOLE = Operator("hole_slsqp", hole, (ParamSpec("rank", 0.0, 1.0, doc="which of the 4 smallest circles"),),
                "smallest circle into the largest hole, SLSQP")
SWAP = Operator("swap_slsqp", swap, (ParamSpec("gap", 0.0, 1.0, doc="radius difference, share of the range"),),
                "swap two circles of different radii, SLSQP")
RESTART = Operator("restart_slsqp", restart, (ParamSpec("radius", 0.01, 0.1, log=True, doc="start radius"),),
                   "random restart, SLSQP")
RESTART_HOP = Operator("restart_hop_slsqp", restart_hop,
                       (ParamSpec("patience", 5, 80, log=True, doc="failed moves in a row that end the chain",
                                  default=30),),
                       "random restart, then greedy basin hopping until `patience` moves fail")

#: the circle-packing operators (Problem.operators of CirclePacking-*)
CIRCLE_OPERATORS: tuple[Operator, ...] = (SHAKE, PERTURB_K, HOLE, SWAP, RESTART, RESTART_HOP)
