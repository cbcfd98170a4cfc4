"""The one TTT-Discover loss, as tensors: padding, KL-shaped token advantages, IS loss.

Shared by every learner: the numeric :class:`~discoverygym.agents.learner.NumericLearner` (a
"token" is one action unit of the construction) and :class:`~discoverygym.agents.policies.hf.HFPolicy`
compute the loss locally; :class:`~discoverygym.agents.policies.tinker_policy.TinkerPolicy` sends
the shaped advantages to the service. Source: TTT-Discover App. A and its code ``rl/train.py``
(docs/algorithms.md, "KL shaping and loss"):

* ``Δ_t = log π_sampler(a_t) − log π_base(a_t)`` over action tokens (the base model = the policy
  with its LoRA adapter disabled);
* ``A_t = A + λ (mean(Δ) − Δ_t)`` with the batch mean over all action tokens;
* ``loss = −Σ_t exp(log π_θ(a_t) − log π_sampler(a_t)) · A_t`` (summed over tokens, unclipped).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # each function imports torch itself: agents.config takes DEFAULT_LOSS from here torch-free
    import torch

__all__ = ["DEFAULT_LOSS", "LOSSES", "Loss", "importance_sampling_loss", "kl_shaping", "make_loss", "pad_behaviour",
           "register_loss", "token_advantages"]


def pad_behaviour(samples: Sequence[Any]) -> tuple[torch.Tensor, torch.Tensor]:
    """Behaviour log-probs and action masks of LLM samples, right-padded.

    Args:
        samples: objects with ``logprobs`` (list of float, length T_i) and ``mask`` (list of bool).

    Returns:
        ``(logprobs [B, T] float32, mask [B, T] bool)``, ``T = max T_i`` (at least 1); padding is
        0.0 / False.
    """
    import torch

    width = max([len(s.logprobs) for s in samples] + [1])
    lp = torch.zeros(len(samples), width, dtype=torch.float32)
    mask = torch.zeros(len(samples), width, dtype=torch.bool)
    for i, s in enumerate(samples):
        n = len(s.logprobs)
        if n:
            lp[i, :n] = torch.tensor(s.logprobs, dtype=torch.float32)
            mask[i, :n] = torch.tensor([bool(m) for m in s.mask], dtype=torch.bool)
    return lp, mask


#: |Δ_t| below this is rounding (KV-cache sampling vs a full forward pass in float32), taken as 0,
#: so that a KL-only step with an unchanged adapter has exactly zero gradient (Adam would otherwise
#: turn rounding noise into full-size steps).
DELTA_NOISE = 1e-5


def kl_shaping(adv_tokens: torch.Tensor, delta: torch.Tensor, mask: torch.Tensor, lam: float) -> torch.Tensor:
    """Token-level KL shaping: ``A_t ← A_t + λ (avg − Δ_t)`` (TTT-Discover App. A, code ``rl/train.py``).

    ``Δ_t = log π_sampler(a_t) − log π_ref(a_t)``; ``avg`` = mean of Δ over all action tokens of
    the batch (``mask`` True). Here a "token" is one action unit of a numeric policy.

    Args:
        adv_tokens: ``[B, T]`` advantages broadcast to tokens.
        delta: ``[B, T]`` log-ratio sampler/reference per token (no gradient needed).
        mask: ``[B, T]`` bool, which tokens exist.
        lam: λ (0.1 in the paper; 0 disables).

    Returns:
        ``[B, T]`` shaped advantages (masked tokens unchanged).
    """
    import torch

    if lam == 0.0 or not bool(mask.any()):
        return adv_tokens
    avg = delta[mask].mean()
    return torch.where(mask, adv_tokens + lam * (avg - delta), adv_tokens)


def token_advantages(adv: torch.Tensor, old_lp: torch.Tensor, base_lp: torch.Tensor, mask: torch.Tensor,
                     kl_coef: float, noise: float = DELTA_NOISE) -> tuple[torch.Tensor, torch.Tensor]:
    """Sequence advantages broadcast to tokens, with token-level KL shaping.

    Args:
        adv: ``[B]`` advantages (objective output, flattened groups).
        old_lp: ``[B, T]`` behaviour log-probs; base_lp: ``[B, T]`` base-model log-probs.
        mask: ``[B, T]`` bool action tokens.
        kl_coef: λ (0.1 in the paper, 0.01 for AtCoder; 0 disables).
        noise: ``|Δ_t|`` at or below this counts as 0 (:data:`DELTA_NOISE`; 0 for float64
            numeric policies, whose log-probs carry no sampling-path rounding).

    Returns:
        ``(A_t [B, T], Δ [B, T])`` in ``old_lp``'s dtype, both 0 outside ``mask``.
    """
    import torch

    diff = old_lp - base_lp
    delta = torch.where(mask & (diff.abs() > noise), diff, torch.zeros_like(diff))
    a_tok = adv.to(old_lp.dtype).reshape(-1, 1).expand_as(old_lp).clone()
    a_tok = kl_shaping(a_tok, delta, mask, kl_coef)
    return torch.where(mask, a_tok, torch.zeros_like(a_tok)), delta


def importance_sampling_loss(new_lp: torch.Tensor, old_lp: torch.Tensor, a_tok: torch.Tensor,
                             mask: torch.Tensor) -> torch.Tensor:
    """``−Σ_t exp(new − old) · A_t`` over masked tokens (scalar; summed, unclipped)."""
    import torch

    ratio = torch.exp(torch.where(mask, new_lp - old_lp, torch.zeros_like(new_lp)))
    return -(ratio * a_tok * mask).sum()


class Loss(Protocol):
    """The loss seam: ``(logprobs, behaviour_logprobs, token_advantages, mask) -> scalar`` to minimise.

    All four are ``[B, T]`` (``T`` action tokens or construction units): ``logprobs`` under the
    current policy (with gradient), ``behaviour_logprobs`` under the sampler, the KL-shaped token
    advantages of :func:`token_advantages`, and the bool action mask. A learner that computes its
    loss locally (:class:`~discoverygym.agents.learner.NumericLearner`, the HF policy) calls it once
    per (micro-)batch and backpropagates the result. :func:`importance_sampling_loss` is the default.
    """

    def __call__(self, new_lp: torch.Tensor, old_lp: torch.Tensor, a_tok: torch.Tensor,
                 mask: torch.Tensor) -> torch.Tensor: ...


#: the name of the TTT-Discover loss (``TrainConfig.loss`` default).
DEFAULT_LOSS = "importance-sampling"

#: loss name -> (constructor kwargs -> Loss); extend with :func:`register_loss`.
LOSSES: dict[str, Callable[..., Loss]] = {DEFAULT_LOSS: lambda: importance_sampling_loss}


def register_loss(name: str, factory: Callable[..., Loss]) -> None:
    """Make ``TrainConfig(loss=name, loss_kwargs=...)`` build ``factory(**loss_kwargs)``.

    Raises:
        ValueError: ``name`` is already registered to another factory.
    """
    if name in LOSSES and LOSSES[name] is not factory:
        raise ValueError(f"loss {name!r} is already registered")
    LOSSES[name] = factory


def make_loss(name: str, **kwargs: Any) -> Loss:
    """The registered loss ``name`` built with ``kwargs``.

    Raises:
        ValueError: unknown name (the message lists the known ones).
    """
    if name not in LOSSES:
        raise ValueError(f"unknown loss {name!r}; known: {', '.join(LOSSES)} (register_loss adds one)")
    return LOSSES[name](**kwargs)
