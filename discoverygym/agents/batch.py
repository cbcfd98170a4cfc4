"""The typed batch of one training step, and the three seams of an RL algorithm.

A step of :class:`~discoverygym.agents.trainer.Trainer` produces ``groups`` rollout groups (all
rollouts of a group start from the same state). They are handed to the update as a
:class:`TrainBatch` of :class:`TrajectoryGroup` s (frozen dataclasses, modelled on
tinker-cookbook's ``TrajectoryGroup``), so that an outside loop can be written against the same
types: build groups with :meth:`TrajectoryGroup.from_samples`, score them, call an objective, call
:func:`run_update`.

The three seams, each replaceable on its own (``docs``: README "Plug in your own RL algorithm"):

1. **objective** — ``rewards [groups, rollouts] -> Advantages``
   (:class:`~discoverygym.agents.objectives.Objective`): ``Trainer(objective=fn)`` or a name
   registered with :func:`~discoverygym.agents.objectives.register_objective` and chosen by
   ``TrainConfig.objective``. Example: ``examples/algorithms/grpo_objective.py``.
2. **loss** — ``(logprobs, behaviour_logprobs, token_advantages, mask) -> scalar``, all ``[B, T]``
   (:class:`~discoverygym.agents.losses.Loss`): ``Trainer(loss=fn)`` or a name registered with
   :func:`~discoverygym.agents.losses.register_loss` and chosen by ``TrainConfig.loss``; used by
   the learners that compute their loss locally (numeric, HF). Example:
   ``examples/algorithms/ppo_clip_loss.py``.
3. **update** — a learner with ``update(batch: TrainBatch) -> dict`` replaces the whole gradient
   step (:func:`run_update`); pass it as ``Trainer(learners=(learner, learner))``. Example (no
   gradient at all): ``examples/algorithms/cem_update.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from discoverygym.agents.policies.llm import LLMSample
from discoverygym.policy import Sample
from discoverygym.types import State

__all__ = ["TrainBatch", "TrajectoryGroup", "behaviour_logprobs", "gradient_update", "run_update"]

#: what an update reports when nothing was trained (the trainer's metric schema).
NO_UPDATE = {"loss": 0.0, "kl": 0.0, "tokens": 0, "grad_norm": 0.0}


def behaviour_logprobs(samples: Sequence[Sample]) -> tuple[torch.Tensor, torch.Tensor] | None:
    """Behaviour log-probs and masks of samples, ``([B, T], [B, T] bool)``, or ``None`` if they carry none.

    LLM samples (:class:`~discoverygym.agents.policies.llm.LLMSample`) carry ``logprobs`` (list of
    float) and ``mask`` (list of bool), right-padded here to the longest (padding 0.0 / False,
    float32). Numeric samples carry ``logprob``, a ``[U]`` float64 tensor per construction unit or
    decision (mask all True, or the samples' ``token_mask`` where they carry one: the operator
    policy's padded decisions). Samples of a gradient-free learner (CEM) carry neither: ``None``.
    """
    if not samples:
        return None
    if all(isinstance(s, LLMSample) for s in samples):
        from discoverygym.agents.losses import pad_behaviour

        return pad_behaviour(samples)
    if all(getattr(s, "logprob", None) is not None for s in samples):
        lp = torch.stack([torch.as_tensor(s.logprob) for s in samples])
        if all(getattr(s, "token_mask", None) is not None for s in samples):
            return lp, torch.stack([torch.as_tensor(s.token_mask, dtype=torch.bool) for s in samples])
        return lp, torch.ones_like(lp, dtype=torch.bool)
    return None


@dataclass(frozen=True)
class TrajectoryGroup:
    """One rollout group: ``N`` rollouts sampled from one start state, with their rewards.

    Attributes:
        group_id: the group's index within the step (0-based; the sampling context's ``trajectory``).
        start: the start :class:`~discoverygym.types.State` every rollout was derived from.
        samples: the ``N`` :class:`~discoverygym.policy.Sample` s of the sampler (numeric ones add
            ``.logprob``, LLM ones ``.logprobs``/``.mask``).
        rewards: ``[N]`` float64 tensor, the env's reward of each rollout (the failure reward for
            an invalid one).
        advantages: ``[N]`` float64 tensor from the objective (zeros until one has run).
        keep: whether the objective kept the group (False: no signal, e.g. all rewards equal).
        logprobs: ``[N, T]`` behaviour log-probs, or ``None`` when the samples carry none.
        mask: ``[N, T]`` bool action-token mask, or ``None`` with ``logprobs``.
        beta: the objective's β for this group (NaN when not applicable).
        scored: ``[N]`` bool tensor, False for an *unscored* rollout (its reward is not a verdict,
            e.g. a correct kernel without a GPU: it gets no advantage and stays out of the update);
            ``None`` means every rollout was scored.
    """

    group_id: int
    start: State
    samples: tuple[Sample, ...]
    rewards: torch.Tensor
    advantages: torch.Tensor
    keep: bool = True
    logprobs: torch.Tensor | None = None
    mask: torch.Tensor | None = None
    beta: float = float("nan")
    scored: torch.Tensor | None = None

    @classmethod
    def from_samples(cls, group_id: int, start: State, samples: Sequence[Sample], rewards: Sequence[float] | torch.Tensor,
                     advantages: Sequence[float] | torch.Tensor | None = None, keep: bool = True,
                     beta: float = float("nan"), scored: Sequence[bool] | torch.Tensor | None = None) -> TrajectoryGroup:
        """Build a group from samples and rewards (log-probs read with :func:`behaviour_logprobs`).

        Raises:
            ValueError: ``rewards`` (or ``advantages``) not of length ``len(samples)``.
        """
        r = torch.as_tensor(rewards, dtype=torch.float64).reshape(-1)
        a = torch.zeros_like(r) if advantages is None else torch.as_tensor(advantages, dtype=torch.float64).reshape(-1)
        if r.numel() != len(samples) or a.numel() != len(samples):
            raise ValueError(f"a group of {len(samples)} samples needs {len(samples)} rewards and advantages, "
                             f"got {r.numel()} and {a.numel()}")
        sc = None if scored is None else torch.as_tensor(scored, dtype=torch.bool).reshape(-1)
        if sc is not None and sc.numel() != len(samples):
            raise ValueError(f"a group of {len(samples)} samples needs {len(samples)} scored flags, got {sc.numel()}")
        lp = behaviour_logprobs(samples)
        return cls(int(group_id), start, tuple(samples), r, a, bool(keep), lp[0] if lp else None,
                   lp[1] if lp else None, float(beta), sc)

    @property
    def actions(self) -> list[Any]:
        """The ``N`` actions (constructions or programs), in rollout order."""
        return [s.action for s in self.samples]


@dataclass(frozen=True)
class TrainBatch:
    """Everything one update sees: the step's groups, in group order.

    Attributes:
        groups: the :class:`TrajectoryGroup` s (equal sizes in the trainer; any sizes outside it).
        step: the 0-based index of the step that produced the batch.
        kl_coef: λ of the token-level KL shaping (``TrainConfig.kl_coef``).
    """

    groups: tuple[TrajectoryGroup, ...]
    step: int = 0
    kl_coef: float = 0.0

    @classmethod
    def from_step(cls, starts: Sequence[State], samples: Sequence[Sequence[Sample]], rewards: torch.Tensor,
                  advantages: Any, *, step: int, kl_coef: float, scored: torch.Tensor | None = None) -> TrainBatch:
        """The trainer's batch: ``rewards`` ``[G, N]``, ``advantages`` an
        :class:`~discoverygym.agents.objectives.Advantages` (``adv`` ``[G, N]``, ``keep``/``beta`` ``[G]``),
        ``scored`` ``[G, N]`` bool or None (all scored)."""
        groups = tuple(TrajectoryGroup.from_samples(g, starts[g], samples[g], rewards[g], advantages.adv[g],
                                                    bool(advantages.keep[g]), float(advantages.beta[g]),
                                                    None if scored is None else scored[g])
                       for g in range(len(samples)))
        return cls(groups, int(step), float(kl_coef))

    @property
    def samples(self) -> list[Sample]:
        """All samples, flattened group by group (``[B]``)."""
        return [s for g in self.groups for s in g.samples]

    @property
    def rewards(self) -> torch.Tensor:
        """``[B]`` float64 rewards, flattened group by group."""
        return torch.cat([g.rewards for g in self.groups]) if self.groups else torch.zeros(0, dtype=torch.float64)

    @property
    def advantages(self) -> torch.Tensor:
        """``[B]`` float64 advantages, flattened group by group."""
        return torch.cat([g.advantages for g in self.groups]) if self.groups else torch.zeros(0, dtype=torch.float64)

    @property
    def kept(self) -> torch.Tensor:
        """``[B]`` bool: the rollout's group was kept by the objective and the rollout was scored."""
        return torch.tensor([g.keep and (g.scored is None or bool(g.scored[i]))
                             for g in self.groups for i in range(len(g.samples))], dtype=torch.bool)


def gradient_update(learner: Any, batch: TrainBatch, *, update_on_constant: bool = False) -> dict[str, float] | None:
    """The default update: ``learner.train_step(kept samples, their advantages, kl_coef=λ)``.

    No signal, no step: when no kept, scored rollout has a non-zero advantage (every group dropped
    because its rewards were all equal, e.g. all failures; or an objective that keeps constant groups
    with zero advantages), nothing is trained and ``None`` is returned, so the parameters stay
    bit-identical. Only with ``update_on_constant`` (opt-in, off by default) is a KL-only step taken
    then (advantages 0 on every sample): on an adapter still equal to the base model its gradient is
    the rounding noise between sampler and learner log-probs, which Adam normalises into a full-size
    step away from the base (issue 49: mean KL -7.9e-8, gradient norm 2.7e-4 on SmolLM2-135M).

    Returns:
        the learner's ``{"loss", "kl", "tokens", "grad_norm"}``, or ``None`` when no step was taken.
    """
    kept = batch.kept
    signal = bool((kept & (batch.advantages != 0)).any())
    if signal:
        samples = [s for s, k in zip(batch.samples, kept) if k]
        return learner.train_step(samples, batch.advantages[kept], kl_coef=batch.kl_coef)
    if update_on_constant and batch.groups:
        return learner.train_step(batch.samples, torch.zeros(len(kept), dtype=torch.float64), kl_coef=batch.kl_coef)
    return None


def run_update(learner: Any, batch: TrainBatch, *, update_on_constant: bool = False) -> dict[str, float] | None:
    """One update of ``learner`` on ``batch``: its own ``update(batch)`` when it has one, else
    :func:`gradient_update`.

    Returns:
        ``{"loss", "kl", "tokens", "grad_norm", ...}`` (missing keys filled with 0), or ``None`` when
        no update was taken (then a separate sampler need not reload weights).
    """
    own = getattr(learner, "update", None)
    result = own(batch) if callable(own) else gradient_update(learner, batch, update_on_constant=update_on_constant)
    return None if result is None else {**NO_UPDATE, **result}
