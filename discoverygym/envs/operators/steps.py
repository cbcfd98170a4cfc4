"""Operators for step-function problems (Erdős minimum overlap, AC1, AC2, AC3).

A construction is a 1-D array of ``n`` step heights. Each operator makes a variation and, when the
problem has a smoothed-max polisher (:func:`~discoverygym.envs.polish.erdos_smooth_max`,
:func:`~discoverygym.envs.polish.ac1_smooth_max`), ends with a few projected-Adam iterations on it:

* ``adam`` — projected Adam on the log-sum-exp smoothed max with a temperature schedule
  (``T`` then ``5T``): the gradient method of TTT-Discover's and AlphaEvolve's step-function programs
  (arXiv 2601.16175 App. C; Novikov et al. 2025 §B.1–B.3);
* ``block`` — a local multiplicative perturbation of a contiguous block of pieces;
* ``upsample`` / ``downsample`` — ×2 refinement (each piece split in two; the bound is unchanged)
  or ½ coarsening (pairs averaged), the resolution moves of those programs;
* ``resample`` — linear interpolation of the piece heights to ``round(factor·n)`` pieces
  (``factor ∈ [1/8, 2]``): the free change of resolution, e.g. from TTT-Discover's 1000-8000-piece
  AC1 start down to the few hundred pieces where an ``lp`` call is cheap (ours);
* ``smooth`` — a Gaussian filter of width ``sigma`` pieces (``scipy.ndimage.gaussian_filter1d``),
  which takes a noisy start (the seeded Erdős one) towards a smoother basin than Adam alone finds
  (ours; measured in the README's record runs);
* ``symmetrize`` — mix with the mirror image (``h ← (1 − λ) h + λ h[::-1]``);
* ``shake`` — a global multiplicative perturbation;
* ``lp`` — sequential linear programming on the near-maximal shifts of a block of pieces
  (:func:`~discoverygym.envs.operators.lp.slp`), for the problems whose bound is a max of bilinear
  forms (Erdős, AC1); unlike the others it is not followed by the smoothed-max polish, whose
  smoothing would undo its exact progress;
* ``hop`` — greedy basin hopping (Wales & Doye 1997, J. Phys. Chem. A 101, 5111), the step-function
  analogue of the circles' perturb-then-SLSQP moves: resample to ``factor·n`` pieces (at most
  :data:`HOP_MAX_PIECES`), then :data:`HOP_TRIES` times perturb every height, run the ``lp``
  iteration to convergence (at most :data:`HOP_ITERATIONS` solves) and keep the result if it is
  better. A move this large is needed because ``lp`` only finds the
  bottom of the basin it starts in: from 16 random 50-piece Erdős starts it ended at
  0.38111-0.3815, while hops of scale 0.3 from the best of them reached 0.38097 (Haugland's
  basin) within 100 hops (measured; ours);
* ``restart_anneal`` and ``anneal`` (AC1) — the coarse-to-fine ladder of the gradient programs,
  one rung per call (:func:`~discoverygym.envs.operators.anneal.ac1_anneal`: one long Adam
  schedule on the smoothed bound, 10,000-200,000 steps, inverse temperature raised 10,000x, which
  the 40-step ``adam`` polish cannot stand in for). ``restart_anneal`` anneals a batch of up
  to 256 fresh random starts on 25-200 pieces (default 256 on 50) from the ladder's ``beta0`` for
  that many pieces and keeps the best; ``anneal`` resamples its parent to
  ``grow`` (1-2, default 2) times as many pieces (at most 1600) and anneals from the ladder's
  ``beta0`` for that many pieces (3 on 50, tripled per doubling) times ``heat``. The archive
  holds every rung's result, so PUCT picks which coarse starts are refined further (measured in
  the anneal module's docstring).

Without a polisher (AC2, AC3) the same variations are returned unpolished (verified like any
candidate). Lengths stay within ``[MIN_PIECES, MAX_PIECES]``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial

import numpy as np

from discoverygym.envs.operators import lp as _lp
from discoverygym.envs.operators.anneal import ac1_anneal, ac1_bound
from discoverygym.envs.operators.base import Operator, ParamSpec
from discoverygym.envs.operators.deadline import expired, remaining
from discoverygym.envs.operators.lbfgs import ac1_lbfgs
from discoverygym.envs.polish import ac1_smooth_max, erdos_smooth_max

__all__ = ["MAX_PIECES", "MIN_PIECES", "ladder_beta0", "step_operators"]

MIN_PIECES = 8
MAX_PIECES = 20000

Polisher = Callable[..., np.ndarray] | None


#: Adam iterations of the polish that ends every variation
POLISH_STEPS = 40
#: under a run's deadline the polish runs in chunks of this many iterations (each from the best so
#: far: Adam's moments restart) and stops at the deadline (operators.deadline)
POLISH_CHUNK = 5


def _interp(x: np.ndarray, m: int) -> np.ndarray:
    """The heights ``x`` (n,) linearly interpolated at the centres of ``m`` equal pieces (``x`` itself when ``m == n``)."""
    n = x.size
    return np.interp((np.arange(m) + 0.5) / m, (np.arange(n) + 0.5) / n, x) if m != n else x


def _count(m: float, lo: int, hi: int) -> int:
    """A number of pieces: ``m`` rounded and clamped to ``[lo, hi]``."""
    return int(min(max(round(m), lo), hi))


def _finish(h: np.ndarray, polisher: Polisher, clip: tuple[float, float] | None, steps: int | None = None,
            **kw) -> np.ndarray:
    steps = POLISH_STEPS if steps is None else steps
    if clip is not None:
        h = np.clip(h, *clip)
    if polisher is None or expired():  # past the run's deadline (operators.deadline): unpolished
        return h
    if not math.isfinite(remaining()):
        return polisher(h, steps=steps, **kw)
    # under a deadline: chunks of POLISH_CHUNK iterations, each from the best so far, until the deadline
    # (a polish of 600 Erdős pieces took ~10 s on a loaded machine, 8 s past a 20 s budget in one call)
    done = 0
    while done < steps and not expired():
        chunk = min(POLISH_CHUNK, steps - done)
        h, done = polisher(h, steps=chunk, **kw), done + chunk
    return h


def adam(x, rng, temp, lr, steps, *, polisher: Polisher, clip, temp0: float, lr0: float) -> np.ndarray:
    """Two polish stages of ``steps`` iterations at temperatures ``temp0·temp·(1, 5)``, learning rate ``lr0·lr``."""
    h = x
    for factor in (1.0, 5.0):
        h = _finish(h, polisher, clip, steps=int(steps), lr=lr0 * lr, temp=temp0 * temp * factor)
    return h


def block(x, rng, width, scale, *, polisher: Polisher, clip, **_) -> np.ndarray:
    """A random block of ``max(1, width·n)`` pieces × (1 + scale·N(0, 1)), then a short polish (``POLISH_STEPS``)."""
    n = len(x)
    w = max(1, int(width * n))
    start = int(rng.integers(0, n - w + 1))
    h = x.copy()
    h[start:start + w] *= 1.0 + scale * rng.standard_normal(w)
    return _finish(np.abs(h) if clip is not None else h, polisher, clip)


def upsample(x, rng, *, polisher: Polisher, clip, **_) -> np.ndarray:
    """Each piece split in two (same function, twice the resolution), then a short polish (``POLISH_STEPS``)."""
    h = np.repeat(x, 2) if 2 * len(x) <= MAX_PIECES else x
    return _finish(h, polisher, clip)


def downsample(x, rng, *, polisher: Polisher, clip, **_) -> np.ndarray:
    """Pairs of pieces averaged (half the resolution; an odd last piece kept), then a short polish (``POLISH_STEPS``)."""
    n = len(x)
    if n // 2 < MIN_PIECES:
        return _finish(x, polisher, clip)
    h = x[: n - n % 2].reshape(-1, 2).mean(axis=1)
    if n % 2:
        h = np.append(h, x[-1])
    return _finish(h, polisher, clip)


def resample(x, rng, factor, *, polisher: Polisher, clip, **_) -> np.ndarray:
    """Heights linearly interpolated (at the piece centres) to ``round(factor·n)`` pieces, kept
    within ``[MIN_PIECES, MAX_PIECES]``, then a short polish (``POLISH_STEPS``)."""
    n = len(x)
    m = _count(factor * n, MIN_PIECES, MAX_PIECES)
    return _finish(_interp(x, m), polisher, clip)


def smooth(x, rng, sigma, *, polisher: Polisher, clip, **_) -> np.ndarray:
    """A Gaussian filter of standard deviation ``sigma`` pieces (edges: nearest value), then a short
    polish (``POLISH_STEPS``)."""
    from scipy.ndimage import gaussian_filter1d

    return _finish(gaussian_filter1d(x, float(sigma), mode="nearest"), polisher, clip)


def symmetrize(x, rng, mix, *, polisher: Polisher, clip, **_) -> np.ndarray:
    """``(1 − mix) h + mix h[::-1]``, then a short polish (``POLISH_STEPS``)."""
    return _finish((1 - mix) * x + mix * x[::-1], polisher, clip)


def shake(x, rng, scale, *, polisher: Polisher, clip, **_) -> np.ndarray:
    """Every piece × (1 + scale·N(0, 1)), then a short polish (``POLISH_STEPS``)."""
    h = x * (1.0 + scale * rng.standard_normal(len(x)))
    return _finish(np.abs(h) if clip is not None else h, polisher, clip)


#: LP solves per ``lp`` call
LP_ITERATIONS = 5


def lp(x, rng, width, delta, margin, *, model: _lp.BilinearMax, **_) -> np.ndarray:
    """``LP_ITERATIONS`` trust-region LP steps on a random block of ``width·n`` pieces (:func:`~discoverygym.envs.operators.lp.slp`)."""
    return _lp.slp(model, x, rng, width, delta, margin, iterations=LP_ITERATIONS)


#: most LP solves of one ``hop`` (it stops earlier once the trust radius falls below HOP_MIN_DELTA)
HOP_ITERATIONS = 40
#: trust radius at which a hop's LP iteration counts as converged (share of the mean height)
HOP_MIN_DELTA = 1e-6
#: hops per ``hop`` call (each accepted only if it lowers the bound)
HOP_TRIES = 4
#: most pieces a hop works on (a hop on 160 Erdős pieces takes about 1 s, on 300 about 5 s)
HOP_MAX_PIECES = 160
#: each hop draws its perturbation share log-uniformly from this range (not a learned parameter: a
#: learned scale drifted to the range's floor, whose small sure gains the risk-averse entropic
#: update prefers, and the run stalled; see the README)
HOP_SCALE = (0.1, 1.0)


def _hop_once(h: np.ndarray, rng: np.random.Generator, model: _lp.BilinearMax) -> np.ndarray:
    lo, hi = HOP_SCALE
    scale = lo * (hi / lo) ** rng.random()
    noise = rng.standard_normal(h.size)
    z = h * (1.0 + scale * noise) if rng.random() < 0.5 else h + scale * float(np.mean(np.abs(h))) * noise
    z = model.clip(z)
    return _lp.slp(model, z, rng, 1.0, 0.05, 0.02, iterations=HOP_ITERATIONS, min_delta=HOP_MIN_DELTA)


def hop(x, rng, factor, *, model: _lp.BilinearMax, **_) -> np.ndarray:
    """:data:`HOP_TRIES` greedy basin hops. The heights are linearly resampled to ``round(factor·n)``
    pieces (within ``[MIN_PIECES, HOP_MAX_PIECES]``; when that changes ``n`` the resampled start is
    first brought to the bottom of its basin by :func:`~discoverygym.envs.operators.lp.slp`). Each
    hop draws a share ``scale`` log-uniformly from :data:`HOP_SCALE` and perturbs every height — with
    probability ½ multiplicatively, ``h·(1 + scale·N(0, 1))``, else
    additively, ``h + scale·mean(h)·N(0, 1)`` (which can grow pieces out of a zero region) — clips
    to the bounds and runs ``slp`` on all pieces (trust radius 0.05, margin 0.02, at most
    :data:`HOP_ITERATIONS` solves); the result replaces the current heights only if its exact bound
    is lower (the acceptance rule of greedy basin hopping). So the child is never worse than the
    (resampled) start, and equals it when no hop succeeded. Under a run's deadline
    (:mod:`~discoverygym.envs.operators.deadline`) no hop starts after it."""
    h = _lp.prepared(model, x)  # ValueError on non-finite or empty heights
    x = np.asarray(x, dtype=np.float64)
    n = x.size
    m = _count(factor * n, MIN_PIECES, HOP_MAX_PIECES)
    if m != n:
        h = _lp.slp(model, _interp(x, m), rng, 1.0, 0.05, 0.02, iterations=HOP_ITERATIONS, min_delta=HOP_MIN_DELTA)
    best = float(model.values(h).max())
    for _ in range(HOP_TRIES):
        if expired():  # the run's deadline (operators.deadline): the best so far
            break
        z = _hop_once(h, rng, model)
        value = float(model.values(z).max())
        if value < best:
            h, best = z, value
    return h


#: pieces an ``anneal`` call may work on. A ladder that starts on 50 pieces climbs further than one
#: that starts on 200 (AC1, measured, anneal module docstring): the range reaches down to 25
ANNEAL_PIECES = (25, 1600)
#: pieces of a ``restart_anneal`` call (fresh coarse starts: the ladder's first rung), and its most
#: starts per call (a batch of 256 on 50 pieces, 30,000 steps: about 40 s on one core)
RESTART_PIECES = (25, 200)
RESTART_STARTS = 256
#: the ladder's inverse temperature: ``beta0 = LADDER_BETA0 · (n / LADDER_BASE)^log2(3)`` on ``n``
#: pieces (3 on 50 pieces, tripled per doubling: 729 on 1600), at most :data:`LADDER_BETA_MAX`;
#: the schedule of the measured ladders in the anneal module's docstring
LADDER_BETA0, LADDER_BASE, LADDER_BETA_MAX = 3.0, 50.0, 3000.0
#: ``anneal``'s initial Adam step size is ``min(ANNEAL_MAX_LR, ANNEAL_LR_BETA · beta0^(-3/4))``
#: (lowered 10x over the call): 3e-2 for a restart (``beta0 ≤ 10``), 1e-2 at ``beta0 = 100``, 4e-3 at
#: 300 — a fit to the step sizes of the ladder in the anneal module's docstring (a refinement with
#: 1e-3 at ``beta0 = 300`` did worse: 1.51151 against 1.51056). Not a learned parameter: a learned
#: step size drifted to its range's floor (whose small sure gains the risk-averse entropic update
#: prefers) and the run stalled (AC1 seed 1 at 600 s: 1.5184804; see the README).
ANNEAL_MAX_LR = 3e-2
ANNEAL_LR_BETA = 0.3


def _anneal_lr(beta0: float) -> float:
    return min(ANNEAL_MAX_LR, ANNEAL_LR_BETA * float(beta0) ** -0.75)


def ladder_beta0(n: int) -> float:
    """The ladder's initial inverse temperature on ``n`` pieces (:data:`LADDER_BETA0`, ``LADDER_BASE``):
    ``3 · (n/50)^log2(3)``, at most :data:`LADDER_BETA_MAX` (a float; ``n ≥ 1``)."""
    return float(min(LADDER_BETA_MAX, LADDER_BETA0 * (n / LADDER_BASE) ** np.log2(3.0)))


def anneal(x, rng, iterations, grow=2.0, heat=1.0, **_) -> np.ndarray:
    """One rung of the coarse-to-fine ladder: the heights linearly resampled to ``round(grow·n)``
    pieces (within :data:`ANNEAL_PIECES`; ``n`` the parent's), then one annealed Adam schedule
    (:func:`~discoverygym.envs.operators.anneal.ac1_anneal`: ``iterations`` steps, inverse
    temperature ``heat · ladder_beta0(pieces)`` raised 10,000x, initial step size
    ``min(ANNEAL_MAX_LR, ANNEAL_LR_BETA·beta0^(-3/4))`` lowered 10x); the best exact iterate, so
    never worse than the (resampled) start. ``grow = 2`` is the ladder's doubling, ``grow = 1`` a
    re-anneal at the parent's resolution; a parent above 1600 pieces (the env's seeded start) is
    resampled down to 1600."""
    x = np.maximum(np.asarray(x, dtype=np.float64), 0.0)
    m = _count(x.size * float(grow), *ANNEAL_PIECES)
    beta0 = float(heat) * ladder_beta0(m)
    return ac1_anneal(_interp(x, m), rng, int(iterations), beta0, _anneal_lr(beta0))


def restart_anneal(x, rng, iterations, pieces=50.0, starts=256.0, **_) -> np.ndarray:
    """Fresh coarse starts, the ladder's first rung: ``round(starts)`` (1-256) independent draws of
    ``round(pieces)`` log-normal heights ``exp(N(0, 0.3²))`` (within :data:`RESTART_PIECES`; the
    parent is ignored), annealed together from ``beta0 = ladder_beta0(pieces)`` (3 on 50 pieces)
    for ``iterations`` steps (:func:`~discoverygym.envs.operators.anneal.ac1_anneal` on a
    ``(starts, pieces)`` batch); the draw with the lowest exact ``C1``. The batched multi-start of
    the gradient programs (Jaech & Joseph 2025, arXiv 2508.02803 §2), whose best draw the
    ``anneal`` rungs then refine: how far a ladder gets is set by its coarse start (anneal module
    docstring)."""
    m = _count(float(pieces), *RESTART_PIECES)
    b = _count(float(starts), 1, RESTART_STARTS)
    beta0 = ladder_beta0(m)
    rows = ac1_anneal(np.exp(rng.normal(0.0, 0.3, (b, m))), rng, int(iterations), beta0, _anneal_lr(beta0))
    return rows[int(np.argmin([ac1_bound(r) for r in rows]))]


def step_operators(polisher: Polisher, clip: tuple[float, float] | None, temp0: float = 1.0,
                   lr0: float = 1.0, bilinear: _lp.BilinearMax | None = None,
                   annealed: bool = False) -> tuple[Operator, ...]:
    """The step-function operators of one problem.

    Args:
        polisher: its smoothed-max polisher (``polisher(h, steps=, lr=, temp=)``) or ``None``.
        clip: value bounds applied before polishing (``(0, 1)`` Erdős, ``(0, inf)`` AC1/AC2), or
            ``None`` (AC3: signed heights).
        temp0, lr0: the polisher's base temperature and learning rate (the ``adam`` operator's
            ``temp`` and ``lr`` parameters are factors of these).
        bilinear: the bound as a max of bilinear forms (:data:`~discoverygym.envs.operators.lp.ERDOS`,
            :data:`~discoverygym.envs.operators.lp.AC1`, :data:`~discoverygym.envs.operators.lp.AC3`):
            adds the ``lp`` and ``hop`` operators; ``None``: neither.
        annealed: add the ``anneal``, ``restart_anneal`` and ``lbfgs`` operators (AC1's bound only:
            their gradient is AC1's).
    """
    kw = {"polisher": polisher, "clip": clip, "temp0": temp0, "lr0": lr0}
    ops = [
        Operator("block", partial(block, **kw), (ParamSpec("width", 0.005, 0.3, log=True, doc="share of pieces"),
                                                  ParamSpec("scale", 0.005, 0.5, log=True, doc="relative change"))),
        Operator("upsample", partial(upsample, **kw)),
        Operator("downsample", partial(downsample, **kw)),
        Operator("resample", partial(resample, **kw),
                 (ParamSpec("factor", 0.125, 2.0, log=True, doc="new number of pieces / old", default=1.0),)),
        Operator("smooth", partial(smooth, **kw),
                 (ParamSpec("sigma", 0.5, 30.0, log=True, doc="Gaussian width (pieces)"),)),
        Operator("symmetrize", partial(symmetrize, **kw), (ParamSpec("mix", 0.0, 0.5, doc="mirror weight"),)),
        Operator("shake", partial(shake, **kw), (ParamSpec("scale", 0.001, 0.2, log=True, doc="relative change"),)),
    ]
    if polisher is not None:
        ops.insert(0, Operator("adam", partial(adam, **kw),
                               (ParamSpec("temp", 0.3, 10.0, log=True, doc="temperature factor"),
                                ParamSpec("lr", 0.1, 3.0, log=True, doc="learning-rate factor"),
                                ParamSpec("steps", 10, 60, doc="Adam steps per stage"))))
    if bilinear is not None:
        ops.append(Operator("lp", partial(lp, model=bilinear),
                            (ParamSpec("width", 0.02, 1.0, log=True, doc="share of pieces free", default=1.0),
                             ParamSpec("delta", 1e-5, 0.05, log=True, doc="trust radius (share of the mean height)",
                                       default=0.02),
                             ParamSpec("margin", 1e-5, 0.05, log=True, doc="shifts within this share of the max",
                                       default=0.02)),
                            "sequential LP on the near-maximal shifts (trust region)"))
        ops.append(Operator("hop", partial(hop, model=bilinear),
                            (ParamSpec("factor", 0.25, 2.0, log=True, doc="new number of pieces / old", default=1.0),),
                            "basin hop: resample, perturb every height, LP to convergence"))
    if annealed:
        ops.append(Operator("anneal", anneal,
                            (ParamSpec("iterations", 10000, 200000, log=True, doc="Adam steps", default=50000),
                             ParamSpec("grow", 1.0, 2.0, doc="new number of pieces / old (capped at 1600)",
                                       default=2.0),
                             ParamSpec("heat", 1 / 3, 3.0, log=True, doc="initial inverse temperature / the "
                                       "ladder's (3 on 50 pieces, tripled per doubling)", default=1.0)),
                            "a ladder rung: resample x grow, long annealed Adam on the smoothed bound"))
        ops.append(Operator("restart_anneal", restart_anneal,
                            (ParamSpec("iterations", 10000, 60000, log=True, doc="Adam steps", default=30000),
                             ParamSpec("pieces", RESTART_PIECES[0], RESTART_PIECES[1], log=True,
                                       doc="number of pieces", default=50.0),
                             ParamSpec("starts", 16, RESTART_STARTS, log=True, doc="random starts annealed "
                                       "together (the best is kept)", default=float(RESTART_STARTS))),
                            "fresh coarse starts (the parent ignored), batched annealed Adam, the best kept"))
        ops.append(Operator("lbfgs", ac1_lbfgs,
                            (ParamSpec("iterations", 100, 5000, log=True, doc="L-BFGS iterations", default=1000),
                             ParamSpec("beta", 1e5, 1e10, log=True, doc="inverse temperature of the smoothed max "
                                       "(1/C1 units)", default=1e8)),
                            "L-BFGS on the smoothed bound at a high inverse temperature, every piece at once"))
    return tuple(ops)


#: Erdős: heights in [0, 1] (the polisher rescales to Σh = n/2); AC1: f ≥ 0
ERDOS_OPERATORS = step_operators(erdos_smooth_max, (0.0, 1.0), temp0=2000.0, lr0=2e-3, bilinear=_lp.ERDOS)
AC1_OPERATORS = step_operators(ac1_smooth_max, (0.0, np.inf), temp0=200.0, lr0=1e-2, bilinear=_lp.AC1,
                               annealed=True)
AC2_OPERATORS = step_operators(None, (0.0, np.inf))
AC3_OPERATORS = step_operators(None, None, bilinear=_lp.AC3)
