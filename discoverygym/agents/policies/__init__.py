"""Policies (the proposers) and trainable policies (what RL agents update).

The protocol, :class:`~discoverygym.policy.SamplingContext` and the one policy registry live on the
ground floor (:mod:`discoverygym.policy`) so that search never imports agents; this package holds
the implementations: the frozen numeric :class:`~.mutation.GaussianMutation` (``mutation``), the
trainable :class:`~.gaussian.GaussianPolicy` (``gaussian``) and the LLM backends (``hf:``,
``openai:``, ``vllm:``, ``tinker:``; :mod:`~discoverygym.agents.policies.llm`). Every registered
name runs in both ``discoverygym search`` (frozen) and ``discoverygym train`` (when trainable).

Trainable policies implement :class:`TrainablePolicy` on top of :class:`~discoverygym.policy.Policy`:
differentiable per-token log-probabilities, torch parameters, ``state_dict`` and a frozen
``reference()`` copy for the KL term (docs/architecture.md, "Agent contract").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from discoverygym.policy import (
    POLICIES,
    Policy,
    SamplingContext,
    make_policy,
    policy_factory,
    register_policy,
)

__all__ = [
    "POLICIES",
    "Policy",
    "SamplingContext",
    "TrainablePolicy",
    "make_policy",
    "make_trainable_policy",
    "register_policy",
]


@runtime_checkable
class TrainablePolicy(Policy, Protocol):
    """A :class:`Policy` that RL agents can update (docs/architecture.md, "Agent contract").

    ``sample`` returns objects with ``.action`` (the construction or program), ``.logprob``
    (``[T]`` behaviour log-probabilities per action token, no gradient) and whatever the policy
    needs to score the sample again.
    """

    def token_logprobs(self, samples: Sequence[Any]) -> Any:
        """Differentiable ``[B, T]`` torch tensor of per-token log-probabilities of ``samples``."""

    def logprob(self, contexts: Sequence[SamplingContext] | None, samples: Sequence[Any]) -> Any:
        """Differentiable ``[B]`` sequence log-probabilities."""

    def parameters(self) -> Any:
        """The torch parameters to optimise."""

    def state_dict(self) -> dict:
        """Torch state dict (checkpoints)."""

    def load_state_dict(self, state: dict) -> Any:
        """Restore :meth:`state_dict`."""

    def reference(self) -> TrainablePolicy:
        """A frozen copy: π_ref of the KL term."""

    def stats(self) -> dict[str, float]:
        """Scalars to log (step size, entropy...)."""

    def config(self) -> dict[str, Any]:
        """JSON constructor arguments that rebuild the same architecture."""


def _is_trainable_class(factory: Any) -> bool:
    """Whether a policy factory (a class) has every method of :class:`TrainablePolicy` (checked before
    anything is built)."""
    return all(callable(getattr(factory, m, None)) for m in _TRAINABLE_METHODS)


#: the methods of :class:`TrainablePolicy` (and :class:`~discoverygym.policy.Policy`'s ``sample``).
_TRAINABLE_METHODS = ("sample", "token_logprobs", "logprob", "parameters", "state_dict", "load_state_dict",
                      "reference", "stats", "config")


def make_trainable_policy(name: str, shape: Sequence[int], **kwargs: Any) -> TrainablePolicy:
    """Build a registered policy for constructions of ``shape`` and check that it can be trained.

    Raises:
        ValueError: unknown name, an LLM spec (LLM backends are built by the trainer's learner
            factory), or a registered policy that is not trainable (no ``token_logprobs`` ...).
        ImportError: torch is not installed (``pip install 'discoverygym[rl]'``).
    """
    from discoverygym.policy import is_llm_spec, llm_specs

    if is_llm_spec(name) or name not in POLICIES:
        trainable = sorted(n for n in POLICIES if _is_trainable_class(policy_factory(n)))
        raise ValueError(f"unknown trainable policy {name!r}; trainable: {', '.join(trainable)}, "
                         f"or an LLM (code mode): {llm_specs()}")
    if not _is_trainable_class(policy_factory(name)):
        raise ValueError(f"policy {name!r} cannot be trained (it has no differentiable log-probabilities); "
                         "use it with `discoverygym search`")
    return make_policy(name, shape=shape, **kwargs)
