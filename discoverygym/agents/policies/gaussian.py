"""GaussianPolicy: a trainable (torch) numeric policy for ``action_mode="construction"`` envs.

For a parent construction ``x`` of shape ``(U, C)`` (``U`` units: the entries of a 1-D array, or
the rows of a 2-D array such as circles ``[x, y, r]``; ``C`` columns, 1 for 1-D), one proposal is

* a mask ``m_u ~ Bernoulli(sigmoid(logit_u))`` — which units move (learned per unit);
* for each moving unit, a move ``u_uc ~ N(s · μ_uc, (s · σ_uc)²)`` in units of the column's spread
  ``spread_c = max(std_c(x), mean_c |x|, 1e-12)`` (computed from the parent, not learned), where
  ``s = exp(log_step)`` is the learned global step size, ``μ`` a learned per-coordinate drift and
  ``σ = exp(log_std)`` a learned per-coordinate scale;
* the child ``x + m · u · spread``, optionally followed by a deterministic polish
  (:mod:`~discoverygym.envs.polish`; part of the reward function for the learner).

Action "tokens" (for token-level KL shaping and the IS loss) are the units: the log-probability of
unit ``u`` is ``log Bernoulli(m_u) + m_u Σ_c log N(u_uc)``, so :meth:`token_logprobs` is ``[B, U]``.
All randomness comes from the ``np.random.Generator`` given to :meth:`sample` (exact resume).

Integer constructions are moved as floats (so Hadamard / sum-difference children are invalid):
use the frozen ``mutation`` policy for those problems.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import torch
from torch import nn

from discoverygym.envs.polish import get_polisher
from discoverygym.policy import Sample, SamplingContext

__all__ = ["GaussianPolicy", "PolicySample"]

_LOG_2PI = math.log(2 * math.pi)


def _polish_job(polisher, child: np.ndarray, kwargs: dict) -> np.ndarray:
    """``polisher(child, **kwargs)`` as float64 of ``child``'s shape (a picklable worker job)."""
    return np.asarray(polisher(child, **kwargs), dtype=np.float64).reshape(child.shape)


@dataclass(frozen=True, kw_only=True)
class PolicySample(Sample):
    """One proposal of a numeric policy (a :class:`~discoverygym.policy.Sample`).

    ``action`` is the construction to evaluate (numpy float64, the parent's shape); when a polish
    is set it is ``None`` and ``pending`` is the polish job, run by the trainer's worker processes
    (:meth:`~discoverygym.policy.Sample.with_action` stores the result) or here by
    :meth:`~discoverygym.policy.Sample.resolved`.

    Attributes (besides those of :class:`~discoverygym.policy.Sample`):
        mask: ``[U]`` bool tensor, which units moved.
        move: ``[U, C]`` float64 tensor, the moves in spread units (0 where not moving).
        logprob: ``[U]`` float64 tensor, behaviour log-probability per unit (no gradient).
    """

    mask: torch.Tensor
    move: torch.Tensor
    logprob: torch.Tensor


class GaussianPolicy(nn.Module):
    """Learned Gaussian moves of a parent construction (see the module docstring).

    Args:
        shape: the construction shape ``(U,)`` or ``(U, C)`` (all parents must have it).
        sigma: initial global step ``s`` (fraction of each column's spread; > 0).
        fraction: initial per-unit move probability, in (0, 1).
        polish: ``None``/``"none"``, ``"auto"`` (the problem's declared polisher, ``Problem.polish``) or a name in
            :func:`~discoverygym.envs.polish.get_polisher` (a polisher's function name).
        polish_kwargs: keyword arguments of the polisher (e.g. ``{"steps": 50}``).

    Raises:
        ValueError: bad shape or hyper-parameters; in :meth:`sample`, a parent of another shape or
            a non-float construction.
    """

    name = "gaussian"

    #: this policy proposes constructions (checked by the search runner before a run starts)
    action_modes = ("construction",)

    def __init__(
        self,
        shape: Sequence[int],
        sigma: float = 0.02,
        fraction: float = 0.1,
        polish: str | None = None,
        polish_kwargs: dict | None = None,
    ) -> None:
        super().__init__()
        shape = tuple(int(s) for s in shape)
        if len(shape) not in (1, 2) or min(shape) < 1:
            raise ValueError(f"shape must be (U,) or (U, C) with positive sizes, got {shape}")
        if not sigma > 0 or not 0 < fraction < 1:
            raise ValueError(f"need sigma > 0 and 0 < fraction < 1, got {sigma}, {fraction}")
        get_polisher(polish)  # an unknown polish name is refused here, before any run starts
        self.shape = shape
        units, cols = shape[0], (shape[1] if len(shape) == 2 else 1)
        self.log_step = nn.Parameter(torch.tensor(math.log(sigma), dtype=torch.float64))
        self.mean = nn.Parameter(torch.zeros(units, cols, dtype=torch.float64))
        self.log_std = nn.Parameter(torch.zeros(units, cols, dtype=torch.float64))
        self.logit = nn.Parameter(torch.full((units,), math.log(fraction / (1 - fraction)), dtype=torch.float64))
        self.polish_name = polish
        self.polish_kwargs = dict(polish_kwargs or {})

    # ------------------------------------------------------------------ distribution
    def _unit_logprob(self, mask: torch.Tensor, move: torch.Tensor) -> torch.Tensor:
        """``[B, U]`` log-probabilities of (mask ``[B, U]``, move ``[B, U, C]``); differentiable."""
        s = self.log_step.exp()
        std = s * self.log_std.exp()
        z = (move - s * self.mean) / std
        gauss = (-0.5 * z**2 - torch.log(std) - 0.5 * _LOG_2PI).sum(-1)
        bern = torch.where(mask, nn.functional.logsigmoid(self.logit), nn.functional.logsigmoid(-self.logit))
        return bern + mask.to(gauss.dtype) * gauss

    def token_logprobs(self, samples: Sequence[PolicySample]) -> torch.Tensor:
        """Differentiable per-unit log-probabilities, ``[B, U]`` float64 (B = len(samples))."""
        mask = torch.stack([s.mask for s in samples])
        move = torch.stack([s.move for s in samples])
        return self._unit_logprob(mask, move)

    def logprob(self, contexts: Sequence[SamplingContext] | None, samples: Sequence[PolicySample]) -> torch.Tensor:
        """Differentiable sequence log-probabilities ``[B]`` (the policy ignores the contexts here:
        moves are stored in spread units)."""
        return self.token_logprobs(samples).sum(-1)

    def stats(self) -> dict[str, float]:
        """Scalars for logging: global step, mean move probability, mean per-unit entropy (nats)."""
        with torch.no_grad():
            p = torch.sigmoid(self.logit)
            bern_h = -(p * torch.log(p + 1e-300) + (1 - p) * torch.log(1 - p + 1e-300))
            std = self.log_step.exp() * self.log_std.exp()
            gauss_h = (0.5 * (1 + _LOG_2PI) + torch.log(std)).sum(-1)
            entropy = (bern_h + p * gauss_h).mean()
            return {"step_size": float(self.log_step.exp()), "move_prob": float(p.mean()),
                    "entropy": float(entropy), "drift_abs": float(self.mean.abs().mean())}

    # ------------------------------------------------------------------ sampling
    def sample(
        self, contexts: Sequence[SamplingContext], n: int, rng: np.random.Generator
    ) -> list[list[PolicySample]]:
        """``n`` proposals per context (the :class:`~discoverygym.agents.policies.Policy` protocol).

        Returns:
            For each context, ``n`` :class:`PolicySample` (``.action`` is the construction, or
            ``.pending`` its polish job).
        """
        out = []
        for c, ctx in enumerate(contexts):
            x = np.asarray(ctx.parent.solution)
            if x.dtype.kind not in "fiu":
                raise ValueError(f"GaussianPolicy needs a numeric construction, got {x.dtype}")
            if tuple(x.shape) != self.shape:
                raise ValueError(f"parent shape {x.shape} differs from the policy's {self.shape}")
            polisher = get_polisher(self.polish_name, ctx.problem)
            out.append([self._one(x.astype(np.float64), ctx.parent.id, rng, polisher, c) for _ in range(n)])
        return out

    def _one(self, x: np.ndarray, parent_id: str, rng: np.random.Generator, polisher, context: int = 0) -> PolicySample:
        cols = x if x.ndim == 2 else x[:, None]
        spread = np.maximum(np.maximum(cols.std(axis=0), np.abs(cols).mean(axis=0)), 1e-12)
        units, ncol = cols.shape
        with torch.no_grad():
            p = torch.sigmoid(self.logit).numpy()
            mask_np = rng.random(units) < p
            s = float(self.log_step.exp())
            mean = (s * self.mean).numpy()
            std = (s * self.log_std.exp()).numpy()
            eps = rng.standard_normal((units, ncol))
            move_np = np.where(mask_np[:, None], mean + std * eps, 0.0)
            mask, move = torch.from_numpy(mask_np), torch.from_numpy(move_np)
            logprob = self._unit_logprob(mask[None], move[None])[0]
        child = (cols + move_np * spread).reshape(x.shape)
        fields = {"mask": mask, "move": move, "logprob": logprob, "parent_id": parent_id, "context": context}
        if polisher is not None:
            return PolicySample(pending=partial(_polish_job, polisher, child, self.polish_kwargs), **fields)
        return PolicySample(action=child, **fields)

    # ------------------------------------------------------------------ reference
    def reference(self) -> GaussianPolicy:
        """A frozen deep copy (``requires_grad=False``): the KL reference π_ref."""
        ref = copy.deepcopy(self)
        for p in ref.parameters():
            p.requires_grad_(False)
        return ref

    def config(self) -> dict[str, Any]:
        """Constructor arguments (JSON) that rebuild a policy of the same architecture."""
        return {"shape": list(self.shape), "polish": self.polish_name, "polish_kwargs": self.polish_kwargs}
