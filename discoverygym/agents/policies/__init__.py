"""Policies: objects that propose actions (constructions or programs) from sampling contexts.

The protocol is deliberately small, so that a frozen numeric policy, an LLM behind a server or a
trained model all plug into the evolutionary-search runner (:mod:`discoverygym.search.evolution`)::

    class Policy(Protocol):
        name: str
        def sample(self, contexts: Sequence[SamplingContext], n: int,
                   rng: np.random.Generator) -> list[list[Any]]: ...

``sample`` returns, for each context, ``n`` actions: a construction (array/list) in
``action_mode="construction"``, program text in ``action_mode="code"``, or any object with an
``action`` attribute holding one (e.g. a sample that also carries token ids and log-probs).
All randomness must come from ``rng`` so that seeded searches repeat exactly. A policy may
declare ``action_modes`` (e.g. ``("construction",)``); the search runner then refuses to run it
with an env in another action mode.

Registered names (``--policy``): see :data:`POLICIES`; add one with :func:`register_policy`.
LLM policies are named by a spec ``backend:target`` instead: ``hf:PATH_OR_ID``, ``openai:URL``,
``vllm:MODEL``, ``tinker:MODEL`` (:mod:`discoverygym.agents.policies.llm`).

Trainable policies (``discoverygym train --policy``) implement :class:`TrainablePolicy` on top:
differentiable per-token log-probabilities, torch parameters, ``state_dict`` and a frozen
``reference()`` copy for the KL term (docs/architecture.md, "Agent contract"). They are
registered in :data:`TRAINABLE_POLICIES` and built with :func:`make_trainable_policy`, because
they need the construction's shape (so they are not offered to ``discoverygym search``).
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from discoverygym.envs.problem import Problem
from discoverygym.types import State

__all__ = [
    "POLICIES",
    "TRAINABLE_POLICIES",
    "Policy",
    "SamplingContext",
    "TrainablePolicy",
    "llm_policy_factory",
    "make_policy",
    "make_trainable_policy",
    "register_policy",
]


@dataclass(frozen=True)
class SamplingContext:
    """What a policy sees for one prompt.

    Attributes:
        parent: the state to improve (the first inspiration).
        inspirations: every state shown in the prompt, parent first (TES: several inspirations).
        problem: the problem (statement, direction, row length...).
        action_mode: ``"construction"`` or ``"code"``.
        trajectory: index of the search trajectory (0-based).
        step: index of the step within the trajectory (0-based).
    """

    parent: State
    inspirations: tuple[State, ...]
    problem: Problem
    action_mode: str = "construction"
    trajectory: int = 0
    step: int = 0


@runtime_checkable
class Policy(Protocol):
    """Anything that can propose ``n`` actions per sampling context (see the module docstring)."""

    name: str

    def sample(
        self, contexts: Sequence[SamplingContext], n: int, rng: np.random.Generator
    ) -> list[list[Any]]:
        """``n`` actions for each context, as a list (one entry per context) of lists."""


#: policy name -> "module:attribute" of its factory (imported lazily).
POLICIES: dict[str, str] = {
    "mutation": "discoverygym.agents.policies.mutation:GaussianMutation",
}


def register_policy(name: str, target: str) -> None:
    """Register a policy factory under ``name`` (``target`` = ``"package.module:Factory"``)."""
    POLICIES[name] = target


def llm_policy_factory(spec: str) -> Any:
    """The class behind an LLM spec (``hf:M``, ``openai:URL``, ``vllm:M``, ``tinker:M``), imported.

    Raises:
        ValueError: not an LLM spec.
    """
    from discoverygym.agents.policies.llm import BACKENDS, split_spec

    backend, _ = split_spec(spec)
    module, attr = BACKENDS[backend].split(":")
    return getattr(importlib.import_module(module), attr)


def make_policy(name: str, **kwargs: Any) -> Policy:
    """Build a registered policy, or an LLM policy from a spec ``backend:target`` (see ``policies.llm``).

    Raises:
        ValueError: unknown name (the message lists the registered ones and the LLM specs).
        BackendUnavailable / ModelUnavailable: an LLM backend's library or model is missing.
    """
    from discoverygym.agents.policies.llm import is_llm_spec, split_spec

    if is_llm_spec(name):
        return llm_policy_factory(name)(split_spec(name)[1], **kwargs)
    if name not in POLICIES:
        raise ValueError(f"unknown policy {name!r}; registered: {', '.join(sorted(POLICIES))}, "
                         "or an LLM: hf:PATH_OR_ID, openai:URL, vllm:MODEL, tinker:MODEL")
    module, attr = POLICIES[name].split(":")
    return getattr(importlib.import_module(module), attr)(**kwargs)


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


#: trainable policy name -> "module:attribute" of its class (imported lazily; needs torch).
TRAINABLE_POLICIES: dict[str, str] = {
    "gaussian": "discoverygym.agents.policies.gaussian:GaussianPolicy",
}


def make_trainable_policy(name: str, shape: Sequence[int], **kwargs: Any) -> TrainablePolicy:
    """Build a registered trainable policy for constructions of ``shape``.

    Raises:
        ValueError: unknown name (the message lists the registered ones).
        ImportError: torch is not installed (``pip install 'discoverygym[rl]'``).
    """
    if name not in TRAINABLE_POLICIES:
        raise ValueError(f"unknown trainable policy {name!r}; registered: {', '.join(sorted(TRAINABLE_POLICIES))}, "
                         "or an LLM (code mode): hf:PATH_OR_ID, openai:URL, vllm:MODEL, tinker:MODEL")
    module, attr = TRAINABLE_POLICIES[name].split(":")
    return getattr(importlib.import_module(module), attr)(shape=shape, **kwargs)
