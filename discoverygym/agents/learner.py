"""The learner protocol of the one :class:`~discoverygym.agents.trainer.Trainer`, and its numeric learner.

A **learner** is a policy the trainer can update. It samples groups from contexts (the
:class:`~discoverygym.policy.Policy` protocol), takes one update from per-rollout advantages, and
saves / restores itself; it keeps its own frozen reference (the numeric policy's ``reference()``
copy, or the LLM's base model with the LoRA adapter disabled) for the KL term::

    class Learner(Policy, Protocol):
        def train_step(self, samples, advantages, *, kl_coef) -> dict   # {"loss","kl","tokens","grad_norm"}
        def save_checkpoint(self, path) -> None
        def load_checkpoint(self, path) -> None
        def stats(self) -> dict[str, float]

Every learner uses the same loss, :mod:`discoverygym.agents.losses` (token-level KL shaping, then
the importance-sampling REINFORCE loss): :class:`NumericLearner` wraps a
:class:`~discoverygym.agents.policies.TrainablePolicy` (the Gaussian policy) with its reference and
Adam; :class:`~discoverygym.agents.policies.hf.HFPolicy` and
:class:`~discoverygym.agents.policies.tinker_policy.TinkerPolicy` implement the protocol directly.
A sampler may differ from the learner (an OpenAI-compatible server or a vLLM engine samples, a
local HF copy learns); then the learner also provides ``save_adapter`` and the sampler
``load_adapter``, which the trainer calls after each update.

Source: TTT-Discover (arXiv 2601.16175) App. A (loss, Adam β = (0.9, 0.95), ε = 1e-8).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import torch

from discoverygym.agents.losses import Loss, importance_sampling_loss, token_advantages
from discoverygym.agents.policies import TrainablePolicy
from discoverygym.policy import SamplingContext

__all__ = ["Learner", "NumericLearner"]


@runtime_checkable
class Learner(Protocol):
    """What the trainer needs of a trainable policy (module docstring)."""

    name: str

    def sample(self, contexts: Sequence[SamplingContext], n: int, rng: np.random.Generator) -> list[list[Any]]:
        """``n`` samples (objects with ``.action``) per context; all randomness from ``rng``."""

    def train_step(self, samples: Sequence[Any], advantages: torch.Tensor, *, kl_coef: float) -> dict[str, float]:
        """One update from ``[B]`` sequence advantages of ``samples``; returns loss, kl, tokens, grad_norm."""

    def save_checkpoint(self, path: str | os.PathLike) -> None:
        """Write everything needed to continue exactly (weights, optimizer, reference) under ``path``."""

    def load_checkpoint(self, path: str | os.PathLike) -> None:
        """Restore :meth:`save_checkpoint`."""

    def stats(self) -> dict[str, float]:
        """Scalars to log after a step (step size, entropy, last KL...)."""


class NumericLearner:
    """A torch :class:`~discoverygym.agents.policies.TrainablePolicy` with its frozen reference and Adam.

    Args:
        policy: the trainable policy (e.g. :class:`~discoverygym.agents.policies.gaussian.GaussianPolicy`);
            its ``token_logprobs`` are ``[B, U]`` float64 over the construction's U units.
        lr, adam_beta1, adam_beta2, adam_eps: Adam settings.
        loss: the loss seam (:class:`~discoverygym.agents.losses.Loss`); default
            :func:`~discoverygym.agents.losses.importance_sampling_loss`. Also settable later as
            ``learner.loss`` (the trainer does so for ``Trainer(loss=...)``).

    ``train_step`` is the same loss as the LLM learners (:func:`~discoverygym.agents.losses.token_advantages`
    with λ, then :func:`~discoverygym.agents.losses.importance_sampling_loss`, summed, unclipped) with
    every unit an action token and no rounding threshold on Δ (float64 log-probs are exact).
    """

    def __init__(self, policy: TrainablePolicy, *, lr: float, adam_beta1: float = 0.9, adam_beta2: float = 0.95,
                 adam_eps: float = 1e-8, loss: Loss | None = None) -> None:
        self.policy = policy
        self.loss: Loss = loss or importance_sampling_loss
        self.name = getattr(policy, "name", type(policy).__name__)
        self.action_modes = getattr(policy, "action_modes", ("construction",))
        self.reference = policy.reference()
        self.optimizer = torch.optim.Adam(policy.parameters(), lr=lr, betas=(adam_beta1, adam_beta2), eps=adam_eps)

    def sample(self, contexts: Sequence[SamplingContext], n: int, rng: np.random.Generator) -> list[list[Any]]:
        """The policy's samples (``.action`` the construction, ``.logprob`` ``[U]`` behaviour log-probs)."""
        return self.policy.sample(contexts, n, rng)

    def parameters(self) -> Any:
        """The trainable torch parameters."""
        return self.policy.parameters()

    def train_step(self, samples: Sequence[Any], advantages: torch.Tensor, *, kl_coef: float) -> dict[str, float]:
        """KL-shaped importance-sampling loss on ``samples`` (``[B]`` advantages), then one Adam step.

        Returns:
            ``{"loss", "kl" (mean Δ per unit), "tokens" (action tokens), "grad_norm"}``.
        """
        if not samples:
            return {"loss": 0.0, "kl": 0.0, "tokens": 0, "grad_norm": 0.0}
        old_lp = torch.stack([s.logprob for s in samples])  # [B, U] behaviour log-probs
        mask = (self.policy.token_mask(samples) if hasattr(self.policy, "token_mask")
                else torch.ones_like(old_lp, dtype=torch.bool))  # padded decisions (operator policy)
        with torch.no_grad():
            base_lp = self.reference.token_logprobs(samples)
        a_tok, delta = token_advantages(torch.as_tensor(advantages), old_lp, base_lp, mask, kl_coef, noise=0.0)
        new_lp = self.policy.token_logprobs(samples)
        loss = self.loss(new_lp, old_lp, a_tok, mask)
        self.optimizer.zero_grad()
        loss.backward()
        grad_norm = float(torch.nn.utils.clip_grad_norm_(list(self.policy.parameters()), float("inf")))
        self.optimizer.step()
        return {"loss": float(loss.detach()), "kl": float(delta[mask].mean()) if mask.any() else 0.0, "tokens": int(mask.sum()),
                "grad_norm": grad_norm}

    def stats(self) -> dict[str, float]:
        """The policy's scalars (step size, move probability, entropy, drift)."""
        return self.policy.stats()

    def save_checkpoint(self, path: str | os.PathLike) -> None:
        """``path/model.pt``: policy, reference and optimizer state dicts."""
        out = Path(path)
        out.mkdir(parents=True, exist_ok=True)
        torch.save({"policy": self.policy.state_dict(), "reference": self.reference.state_dict(),
                    "optimizer": self.optimizer.state_dict()}, out / "model.pt")

    def load_checkpoint(self, path: str | os.PathLike) -> None:
        """Restore :meth:`save_checkpoint`; a checkpoint written before learners existed kept
        ``model.pt`` one folder up, and is read from there.

        Raises:
            FileNotFoundError: no ``model.pt`` in ``path`` or its parent.
            ValueError: the checkpoint's policy does not fit this policy (its tensors have other
                shapes, e.g. the run was written when the problem declared other operators).
        """
        where = Path(path) / "model.pt"
        if not where.exists() and (Path(path).parent / "model.pt").exists():
            where = Path(path).parent / "model.pt"
        model = torch.load(where, weights_only=True)
        try:
            self.policy.load_state_dict(model["policy"])
            self.reference.load_state_dict(model["reference"])
        except RuntimeError as exc:  # torch reports size mismatches and missing keys as RuntimeError
            first = str(exc).splitlines()[1:2] or [str(exc)]
            raise ValueError(f"{where} holds a policy this version cannot load ({first[0].strip()}); the run was "
                             "written by a policy of other shapes (e.g. before the problem's operators changed): "
                             "start a new --run-dir") from None
        self.optimizer.load_state_dict(model["optimizer"])
