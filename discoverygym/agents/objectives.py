"""Advantage estimators over groups of rollouts: the objectives of TTT-Discover and its ablations.

Every estimator is a function of a ``[groups, rollouts]`` reward tensor (float64 recommended; the
rewards of one row were all sampled from the same start state) and returns an :class:`Advantages`.
The trainer (:mod:`discoverygym.agents.trainer`) never looks inside: a new RL algorithm plugs in by
passing any callable with the :class:`Objective` signature.

Source: TTT-Discover ("Learning to Discover at Test Time", arXiv 2601.16175) §3.2 and App. A.1,
and its released code (``rl/train.py``); summarised in ``docs/algorithms.md``.

* :func:`mean_baseline` — expected reward (naive RL): ``A_n = r_n − mean(r)``.
* :func:`entropic_constant` — entropic objective with fixed β (β = 2 in the ablation), leave-one-out.
* :func:`entropic_adaptive` — entropic objective with β chosen per group so that
  ``KL(softmax(β r) ‖ uniform) = ln 2`` (:func:`adaptive_beta`), leave-one-out, max-shift.

The token-level KL shaping of the loss is :func:`discoverygym.agents.losses.kl_shaping`.

Groups whose rewards are all equal carry no signal and are dropped (``keep`` is False, their
advantages are 0) by every estimator here.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import torch

from discoverygym.types import State

__all__ = [
    "MIN_ROLLOUT_S",
    "OBJECTIVES",
    "REPEAT_RTOL",
    "Advantages",
    "Objective",
    "adaptive_beta",
    "adv_est_objective",
    "entropic_adaptive",
    "entropic_constant",
    "is_repeat",
    "kl_to_uniform",
    "loo_entropic_advantages",
    "make_objective",
    "mean_baseline",
    "progress_rate",
    "register_adv_est",
    "register_objective",
    "scored_advantages",
]

#: KL budget of the adaptive β search (TTT-Discover App. A.1).
KL_BUDGET = math.log(2.0)


@dataclass
class Advantages:
    """Output of an objective.

    Attributes:
        adv: ``[groups, rollouts]`` float tensor, the advantage of each rollout (0 for dropped groups).
        keep: ``[groups]`` bool tensor, False for groups that carry no signal (all rewards equal).
        beta: ``[groups]`` float tensor, the β used per group (NaN where not applicable).
    """

    adv: torch.Tensor
    keep: torch.Tensor
    beta: torch.Tensor


class Objective(Protocol):
    """``rewards [groups, rollouts] -> Advantages``: the one hook a new RL algorithm implements."""

    def __call__(self, rewards: torch.Tensor) -> Advantages: ...


def _check(rewards: torch.Tensor) -> torch.Tensor:
    r = torch.as_tensor(rewards)
    if r.ndim != 2:
        raise ValueError(f"rewards must be a [groups, rollouts] tensor, got shape {tuple(r.shape)}")
    if not torch.is_floating_point(r):
        r = r.to(torch.float64)
    if not torch.isfinite(r).all():
        raise ValueError("rewards must be finite (invalid rollouts get the env's finite failure reward)")
    return r


def _varying(r: torch.Tensor) -> torch.Tensor:
    """``[groups]`` bool: the group's rewards are not all equal (and it has ≥ 2 rollouts)."""
    return (r.max(dim=1).values > r.min(dim=1).values) & (r.shape[1] >= 2)


def mean_baseline(rewards: torch.Tensor) -> Advantages:
    """Expected-reward objective (naive RL): ``A_n = r_n − mean(r)`` per group.

    Args:
        rewards: ``[groups, rollouts]`` float tensor.

    Returns:
        :class:`Advantages` (β = NaN); constant-reward groups dropped.

    Raises:
        ValueError: not 2-D, or non-finite rewards.

    Source: TTT-Discover §3.2 / docs/algorithms.md "Naive RL / expected reward".
    """
    r = _check(rewards)
    keep = _varying(r)
    adv = (r - r.mean(dim=1, keepdim=True)) * keep[:, None]
    return Advantages(adv, keep, torch.full((r.shape[0],), float("nan"), dtype=r.dtype))


def kl_to_uniform(r: torch.Tensor, beta: float | torch.Tensor) -> torch.Tensor:
    """``KL(softmax(β r) ‖ uniform) = Σ_n q_n log(N q_n)`` for one group (nats, ≥ 0).

    Args:
        r: ``[N]`` float tensor of rewards.
        beta: β ≥ 0 (scalar).

    Returns:
        0-d tensor, the KL divergence (computed with log-softmax: stable for any β).
    """
    logq = torch.log_softmax(torch.as_tensor(beta, dtype=r.dtype) * r, dim=0)
    return (logq.exp() * (logq + math.log(r.shape[0]))).sum()


def adaptive_beta(
    r: torch.Tensor, budget: float = KL_BUDGET, beta_max: float = 1e6, iters: int = 60
) -> float:
    """β ≥ 0 with ``KL(softmax(β r) ‖ uniform) = budget`` (TTT-Discover App. A.1).

    Search exactly as the reference code: ``hi = 1``; while ``KL(hi) < budget`` and
    ``hi < beta_max``, double ``hi`` (if still below, return ``hi``); else bisect ``[0, hi]`` for
    ``iters`` iterations, keeping ``hi`` on the side with ``KL ≥ budget``; return ``hi``.

    Args:
        r: ``[N]`` float tensor (float64 recommended).
        budget: KL budget in nats (ln 2).
        beta_max: doubling cap (1e6).
        iters: bisection iterations (60).

    Returns:
        β as a Python float; 0.0 when N < 2 or all rewards are equal (KL is 0 for every β).

    Note: KL(β) is non-decreasing in β, and it saturates at ``ln(N / #argmax)``; when that limit is
    below the budget (e.g. N = 2, where the limit is exactly ln 2) the doubling stops at ``beta_max``.
    """
    r = torch.as_tensor(r, dtype=torch.float64).reshape(-1)
    if r.numel() < 2 or not bool(r.max() > r.min()):
        return 0.0
    hi = 1.0
    while float(kl_to_uniform(r, hi)) < budget and hi < beta_max:
        hi *= 2.0
    if float(kl_to_uniform(r, hi)) < budget:
        return hi
    lo = 0.0
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        if float(kl_to_uniform(r, mid)) >= budget:
            hi = mid
        else:
            lo = mid
    return hi


def loo_entropic_advantages(r: torch.Tensor, beta: float, eps: float = 1e-12) -> torch.Tensor:
    """Leave-one-out entropic advantages with max-shift for one group.

    ``e_n = exp(β (r_n − max r))``, ``Z_{−n} = (Σ_m e_m − e_n) / (N − 1)``,
    ``A_n = e_n / (Z_{−n} + eps) − 1`` (TTT-Discover App. A.1, code ``rl/train.py``).

    Args:
        r: ``[N]`` float tensor, N ≥ 2.
        beta: β ≥ 0.
        eps: the 1e-12 of the reference code.

    Returns:
        ``[N]`` tensor of advantages (≥ −1).

    Raises:
        ValueError: N < 2 (no leave-one-out mean exists).
    """
    n = r.shape[0]
    if n < 2:
        raise ValueError("leave-one-out advantages need at least 2 rollouts per group")
    e = torch.exp(beta * (r - r.max()))
    z = (e.sum() - e) / (n - 1)
    return e / (z + eps) - 1.0


def _entropic(r: torch.Tensor, beta_of: callable) -> Advantages:  # type: ignore[valid-type]
    r = _check(r)
    keep = _varying(r)
    adv = torch.zeros_like(r)
    betas = torch.zeros(r.shape[0], dtype=r.dtype)
    for g in range(r.shape[0]):
        if not keep[g]:
            continue
        beta = beta_of(r[g])
        betas[g] = beta
        adv[g] = loo_entropic_advantages(r[g], beta)
    return Advantages(adv, keep, betas)


def entropic_adaptive(rewards: torch.Tensor, budget: float = KL_BUDGET) -> Advantages:
    """Entropic objective with adaptive β (the full TTT-Discover objective).

    Per group: β = :func:`adaptive_beta` (KL budget ln 2), then :func:`loo_entropic_advantages`.
    Invariant to ``r → a r + b`` with ``a > 0`` (β scales as 1/a). N < 2 or all-equal rewards: the
    group is dropped (β = 0, advantages 0).

    Args:
        rewards: ``[groups, rollouts]`` float tensor.
        budget: KL budget (nats).

    Raises:
        ValueError: not 2-D, or non-finite rewards.

    Source: TTT-Discover §3.2, App. A.1.
    """
    return _entropic(rewards, lambda row: adaptive_beta(row, budget))


def entropic_constant(rewards: torch.Tensor, beta: float = 2.0) -> Advantages:
    """Entropic objective with a fixed β (TTT-Discover's constant-β ablation: β = 2), leave-one-out.

    Args:
        rewards: ``[groups, rollouts]`` float tensor.
        beta: β ≥ 0 (in 1/reward units: not scale invariant).

    Raises:
        ValueError: not 2-D, non-finite rewards, or β < 0.
    """
    if beta < 0:
        raise ValueError(f"beta must be >= 0, got {beta}")
    return _entropic(rewards, lambda row: float(beta))


#: objective name -> (constructor kwargs -> Objective). Extend with :func:`make_objective` users.
OBJECTIVES = {
    "entropic-adaptive": lambda **kw: (lambda r: entropic_adaptive(r, **kw)),
    "entropic-constant": lambda **kw: (lambda r: entropic_constant(r, **kw)),
    "mean-baseline": lambda **kw: mean_baseline,
}


def register_objective(name: str, factory: callable) -> None:  # type: ignore[valid-type]
    """Make ``TrainConfig(objective=name, objective_kwargs=...)`` build ``factory(**objective_kwargs)``.

    Raises:
        ValueError: ``name`` is already registered to another factory.
    """
    if name in OBJECTIVES and OBJECTIVES[name] is not factory:
        raise ValueError(f"objective {name!r} is already registered")
    OBJECTIVES[name] = factory


def adv_est_objective(fn: Callable[..., Any], **kwargs: Any) -> Objective:
    """An :class:`Objective` from a verl-style advantage estimator.

    ``fn(token_level_rewards [B, T], response_mask [B, T], index [B], **kwargs) -> (advantages [B, T],
    returns [B, T])`` is the signature of verl's ``@register_adv_est`` estimators
    (``verl/trainer/ppo/core_algos.py``; ``index`` holds each response's prompt uid, the group).
    Here ``B = groups × rollouts`` (rollout order), ``T = 1`` (one outcome reward per rollout, in the
    mask's one position), ``index`` the group number of each rollout (an ``np.ndarray`` of ints);
    the advantage of each rollout is read from its one position. Constant-reward groups are dropped
    (``keep`` False, advantage 0) as by every built-in objective; β is NaN.

    Raises:
        ValueError: the estimator's advantages do not have ``B`` rows.
    """
    import numpy as np

    def objective(rewards: torch.Tensor) -> Advantages:
        r = _check(rewards)
        groups, size = r.shape
        token = r.reshape(-1, 1).clone()
        mask = torch.ones_like(token)
        index = np.repeat(np.arange(groups), size)
        out = fn(token_level_rewards=token, response_mask=mask, index=index, **kwargs)
        adv = torch.as_tensor(out[0] if isinstance(out, tuple) else out, dtype=r.dtype)
        if adv.shape[0] != groups * size:
            raise ValueError(f"advantage estimator gave {adv.shape[0]} rows for {groups * size} rollouts")
        keep = _varying(r)
        adv = adv.reshape(groups * size, -1)[:, 0].reshape(groups, size) * keep[:, None]
        return Advantages(adv, keep, torch.full((groups,), float("nan"), dtype=r.dtype))

    return objective


def register_adv_est(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: register a verl-style advantage estimator as objective ``name``
    (:func:`adv_est_objective`; ``TrainConfig(objective=name, objective_kwargs=...)`` passes the
    kwargs to it), the way verl's ``@register_adv_est(name)`` does. Returns the function unchanged.

    Example:
        >>> @register_adv_est("centred")
        ... def centred(token_level_rewards, response_mask, index, **_):
        ...     import numpy as np
        ...     scores = token_level_rewards.sum(-1)
        ...     for g in np.unique(index):
        ...         sel = torch.as_tensor(index == g)
        ...         scores[sel] = scores[sel] - scores[sel].mean()
        ...     return scores[:, None] * response_mask, scores[:, None] * response_mask
        >>> make_objective("centred")(torch.tensor([[1.0, 3.0]])).adv
        tensor([[-1.,  1.]])

    Raises:
        ValueError: ``name`` is already registered to another objective.
    """
    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        factory = _ADV_EST_FACTORIES.get(fn)
        if factory is None:
            factory = _ADV_EST_FACTORIES[fn] = lambda **kw: adv_est_objective(fn, **kw)
        register_objective(name, factory)
        return fn

    return wrap


#: verl-style estimator -> its objective factory (so registering the same function twice is a no-op)
_ADV_EST_FACTORIES: dict[Callable[..., Any], Callable[..., Objective]] = {}


def make_objective(name: str, **kwargs: float) -> Objective:
    """The registered objective ``name`` (``entropic-adaptive``, ``entropic-constant``, ``mean-baseline``).

    Raises:
        ValueError: unknown name.
    """
    if name not in OBJECTIVES:
        raise ValueError(f"unknown objective {name!r}; known: {', '.join(OBJECTIVES)}")
    return OBJECTIVES[name](**kwargs)


# ----------------------------------------------------------------------------- what enters the objective
# The trainer's step 4: which signal the objective ranks (rewards, or progress rates), and which
# rollouts it leaves out (unscored ones, repeats of their start state).

#: the shortest rollout time :func:`progress_rate` divides by (seconds): a timer's resolution floor
MIN_ROLLOUT_S = 1e-3


def progress_rate(starts: list[State], children: list[State], seconds: list[float],
                  shape: tuple[int, int]) -> torch.Tensor:
    """Each rollout's gain over its group's start state per second of its wall time (``credit="progress-rate"``).

    ``g_{gk} = max(0, r_child − r_start) / max(s_{gk}, MIN_ROLLOUT_S)`` for a valid child, 0 for an
    invalid one. Every rollout that gains nothing gets 0 however long it took (a costly failure is
    not ranked below a cheap one: charging time to failures would push the policy to cheap, useless
    moves whenever the search stalls), and a group in which nothing improved is dropped by the
    objective (no update from it). A fixed wall budget buys
    rollouts by their seconds, so a move that gains δ in 2 s is worth as much as one that gains δ/20
    in 0.1 s; ranked by reward alone (TTT-Discover) the first wins every group, and a learned
    operator policy drifts to the costliest moves (the 300 s discovery benchmark, Erdős: a quarter of
    the frozen policy's steps). For an operator of fixed cost c the expected signal is its progress
    rate E[gain]/c, the quantity a budgeted search maximises (ours; the reward rate of a
    semi-Markov decision process, Puterman 1994 §11). Rollout seconds are wall times, so a run with this credit
    is not bit-identical across worker counts or on resume (the default ``"reward"`` is).

    Args:
        starts: ``[groups]`` start states; children: the judged children in rollout order
            (``groups × group_size``, flattened); seconds: each rollout's wall seconds, same order
            (:attr:`Trainer.last_rollout_s`: its operator, polish and verification, not the sampling).
        shape: ``(groups, group_size)``.

    Returns:
        ``[groups, group_size]`` float64 tensor (reward units per second, ≥ 0).

    Raises:
        ValueError: ``children`` or ``seconds`` do not hold ``groups × group_size`` entries, or
            ``starts`` does not hold ``groups``.
    """
    groups, size = shape
    if len(starts) != groups or len(children) != groups * size or len(seconds) != groups * size:
        raise ValueError(f"progress_rate needs {groups} starts and {groups * size} children and timings, got "
                         f"{len(starts)}, {len(children)} and {len(seconds)}")
    out = torch.zeros(groups, size, dtype=torch.float64)
    for i, (child, sec) in enumerate(zip(children, seconds)):
        g, k = divmod(i, size)
        if child.valid:
            out[g, k] = max(0.0, child.reward - starts[g].reward) / max(float(sec), MIN_ROLLOUT_S)
    return out


#: relative reward difference below which a child only repeats its start state (:func:`is_repeat`)
REPEAT_RTOL = 1e-12


def is_repeat(child: State, start: State) -> bool:
    """Whether a valid ``child`` only reproduces its valid ``start`` state's reward (to :data:`REPEAT_RTOL`).

    Such a rollout (an operator whose local optimiser fell back into the parent's basin, a program
    that rebuilt the parent) says nothing about which decisions lead to better states: rewarding it
    like any other teaches a policy to copy its parent, the safest move under an expected-reward
    objective and the opposite of discovery. With ``TrainConfig.skip_repeats`` (default) it gets no
    advantage and no update, like an unscored rollout, for every config alike; it still enters
    the archive (which deduplicates it).
    """
    if not (child.valid and start.valid) or child.unscored or start.unscored:
        return False
    return abs(child.reward - start.reward) <= REPEAT_RTOL * max(abs(start.reward), 1.0)


def scored_advantages(objective: Objective, rewards: torch.Tensor, scored: torch.Tensor) -> tuple[Advantages, torch.Tensor]:
    """Advantages of the scored rollouts only, and the mask of rollouts that enter the update.

    An *unscored* rollout (:attr:`State.unscored <discoverygym.types.State.unscored>`: e.g. a
    correct kernel on a machine without a GPU) carries the failure reward although it did not
    fail, so it must neither get an advantage nor shift its group's baseline. When every rollout
    is scored this is ``objective(rewards)``; otherwise the objective is applied to each group's
    scored rollouts alone (a group with fewer than two is dropped), and unscored rollouts get
    advantage 0 and are left out of the update.

    Args:
        objective: the advantage function (:class:`Objective`).
        rewards: ``[groups, rollouts]`` rewards.
        scored: ``[groups, rollouts]`` bool, False for unscored rollouts.

    Returns:
        ``(advantages, use)``: an :class:`Advantages` of shape
        ``[groups, rollouts]`` and a ``[groups * rollouts]`` bool mask (rollouts of kept groups
        that were scored).
    """
    scored = torch.as_tensor(scored, dtype=torch.bool)
    if bool(scored.all()):
        adv = objective(rewards)
        return adv, adv.keep.repeat_interleave(rewards.shape[1])
    groups = rewards.shape[0]
    values = torch.zeros_like(rewards, dtype=torch.float64)
    keep = torch.zeros(groups, dtype=torch.bool)
    beta = torch.full((groups,), float("nan"), dtype=torch.float64)
    for g in range(groups):
        idx = scored[g].nonzero().flatten()
        if idx.numel() < 2:
            continue
        part = objective(rewards[g, idx].reshape(1, -1))
        keep[g] = bool(part.keep[0])
        values[g, idx] = part.adv[0].to(torch.float64)
        beta[g] = float(part.beta[0])
    values = values * keep[:, None]
    return Advantages(values, keep, beta), (keep[:, None] & scored).reshape(-1)
