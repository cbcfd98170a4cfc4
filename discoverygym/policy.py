"""The policy contract, on the ground floor: what search and agents both speak to, and one registry.

A **policy** proposes ``n`` actions per sampling context::

    class Policy(Protocol):
        name: str
        def sample(self, contexts: Sequence[SamplingContext], n: int,
                   rng: np.random.Generator) -> list[list[Sample]]: ...

``sample`` returns, for each context, ``n`` :class:`Sample` records whose ``action`` is a
construction (array/list) in ``action_mode="construction"`` or program text in
``action_mode="code"``; subclasses add what a learner needs (token ids and log-probs, tensors).
Readers use the typed fields (``parse_error``, ``edit``, ``operator``, ``pending``, ``outcome``),
never ``getattr`` with a default. All
randomness must come from ``rng`` so that seeded searches and training runs repeat exactly. A
policy may declare ``action_modes`` (e.g. ``("construction",)``); runners refuse to run it with
an env in another action mode.

**One registry** serves ``discoverygym search --policy`` and ``discoverygym train --policy``:
:data:`POLICIES` maps names to factories (or ``"module:attr"`` strings of plug-ins, imported lazily),
and LLM policies are named by a spec ``backend:target`` whose backend is an :class:`LLMBackend` of
:data:`LLM_BACKENDS` (``hf:PATH_OR_ID``, ``openai:URL``, ``vllm:MODEL``, ``tinker:MODEL``,
``litellm:MODEL``: hosted chat models, search only). The entries are written in one table,
:mod:`discoverygym.agents.policies.backends`, which ``import discoverygym`` loads (as it registers
the envs): this module imports nothing above it and names nothing above it.
A factory that declares a ``shape`` parameter receives the construction's shape from the runner
(the numeric Gaussian policy needs it; its ``polish="auto"`` reads the problem from each context).

Source of the shapes: docs/architecture.md ("Agent contract"); TES / OpenEvolve's split of the
proposer from the search loop.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from discoverygym.types import State

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = [
    "LLM_BACKENDS",
    "POLICIES",
    "LLMBackend",
    "Outcome",
    "Policy",
    "Sample",
    "SamplingContext",
    "chat_refusal",
    "edit_stats",
    "is_chat_spec",
    "is_llm_spec",
    "llm_backend",
    "llm_specs",
    "make_policy",
    "policy_factory",
    "register_backend",
    "register_policy",
    "split_spec",
]


@dataclass(frozen=True)
class SamplingContext:
    """What a policy sees for one prompt.

    Attributes:
        parent: the state to improve (the first inspiration).
        inspirations: every state shown in the prompt, parent first (TES: several inspirations).
        problem: the problem (statement, direction, record...; :class:`discoverygym.types.ProblemLike`).
        action_mode: ``"construction"`` or ``"code"``.
        trajectory: index of the search trajectory or training group (0-based).
        step: index of the step within the trajectory, or the training step (0-based).
    """

    parent: State
    inspirations: tuple[State, ...]
    problem: Any
    action_mode: str = "construction"
    trajectory: int = 0
    step: int = 0


class Outcome(str, Enum):
    """What became of one sample, one category per sample (the real-model issue's taxonomy).

    The first three are decided by the judge (env / sandbox), the last four before or instead of
    running anything (the response parser, the sandbox's load step). ``str`` values are what
    ``outcomes.json`` and TensorBoard ``outcome/<value>`` use.

    Source: issue 39 (outcome categories of a real model's responses); TRL / tinker-cookbook's
    ``StopReason`` for the truncated/stop split.
    """

    VALID = "valid"                      #: judged, valid construction/program
    INVALID = "invalid"                  #: judged, ran, but its result is not a valid construction
    RUNTIME_ERROR = "runtime_error"      #: the program raised (or was killed) while running
    TIMEOUT = "timeout"                  #: the program ran past its time limit
    SYNTAX_ERROR = "syntax_error"        #: the extracted code does not compile
    NO_CODE = "no_code"                  #: the response holds no program (no fence, no diff)
    TRUNCATED = "truncated"              #: the response was cut by the token budget inside the code
    WRONG_ENTRY = "wrong_entry_point"    #: the program does not define the entry function


@dataclass(frozen=True, kw_only=True)
class Sample:
    """One proposal of a policy: the typed record that search, agents and IRFT read by field.

    A policy's ``sample`` returns ``list[list[Sample]]`` (one list per context, ``n`` each);
    numeric and LLM policies subclass it to add what their learner needs (tensors, token ids).
    Frozen: a trainer that computes a pending action in a worker stores it with
    :meth:`with_action` (a new sample), never by mutation.

    Attributes:
        action: the construction (array/list) or program text to evaluate; ``None`` while
            ``pending`` has not run.
        pending: a zero-argument picklable job that returns the action (e.g. an operator or a
            polish run in a worker), or ``None``.
        parse_error: why no program could be read from a response (LLM), else ``None``.
        apply_error: why a response's SEARCH/REPLACE blocks did not apply (LLM ``diff``), else ``None``.
        edit: how a program was obtained (``"full"``, ``"diff"``, ``"fallback"``, ``"failed"``;
            :mod:`~discoverygym.agents.policies.edits`), or ``None`` for constructions.
        operator: name of the search move that made a construction (operator policy), or ``None``.
        text: the decoded response (LLM), or ``None``.
        finish_reason: ``"stop"`` or ``"length"`` (LLM; hit the token budget), or ``None``.
        outcome: the category known before judging (:attr:`Outcome.NO_CODE`,
            :attr:`Outcome.TRUNCATED`, ...), or ``None`` until the judge decides.
        context: index of the sampling context this sample answers.
        parent_id: id of the parent state.
        extra: free-form, JSON-able notes of a backend (e.g. ``edit_note``).

    Source: docs/architecture.md ("Agent contract"); tinker-cookbook ``rl/types.py`` (typed
    trajectories instead of duck-typed dicts).
    """

    action: Any = None
    pending: Callable[[], Any] | None = None
    parse_error: str | None = None
    apply_error: str | None = None
    edit: str | None = None
    operator: str | None = None
    text: str | None = None
    finish_reason: str | None = None
    outcome: Outcome | None = None
    context: int = 0
    parent_id: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def error(self) -> str | None:
        """The failure reason before judging (``parse_error`` or ``apply_error``), ``None`` if none."""
        return self.parse_error or self.apply_error

    def resolved(self) -> Self:
        """This sample with ``pending`` run here and its result stored as ``action`` (itself if nothing is pending)."""
        if self.pending is None:
            return self
        return replace(self, action=self.pending(), pending=None)

    def with_action(self, action: Any) -> Self:
        """A copy (same class) whose ``action`` is ``action`` and nothing is pending (a worker computed it)."""
        return replace(self, action=action, pending=None)


def edit_stats(samples: Iterable[Sample]) -> dict[str, float]:
    """The logged edit rates of one step's samples (how LLM responses became programs).

    Returns:
        ``{"edit/parse_fail_rate", "edit/apply_fail_rate", "edit/fallback_rate"}``: the fractions
        of all samples whose response gave no program because nothing could be read
        (``parse_error``), because its blocks did not apply (``apply_error``), and that were
        rescued by a full program in ``diff`` mode (``edit == "fallback"``). The first two plus
        the success rate sum to 1. Samples of constructions (no errors, ``edit`` ``None``) count
        as parsed. An empty step gives zeros. Used by the trainer and the search runner alike.

    Example:
        >>> edit_stats([Sample(action="x", edit="fallback"), Sample(parse_error="no block")])
        {'edit/parse_fail_rate': 0.5, 'edit/apply_fail_rate': 0.0, 'edit/fallback_rate': 0.5}
    """
    items = list(samples)
    n = len(items)
    if not n:
        return {"edit/parse_fail_rate": 0.0, "edit/apply_fail_rate": 0.0, "edit/fallback_rate": 0.0}
    parse = sum(s.parse_error is not None for s in items)
    apply = sum(s.parse_error is None and s.apply_error is not None for s in items)
    fallback = sum(s.edit == "fallback" for s in items)
    return {"edit/parse_fail_rate": parse / n, "edit/apply_fail_rate": apply / n, "edit/fallback_rate": fallback / n}


@runtime_checkable
class Policy(Protocol):
    """Anything that can propose ``n`` actions per sampling context (see the module docstring)."""

    name: str

    def sample(self, contexts: Sequence[SamplingContext], n: int, rng: np.random.Generator) -> list[list[Sample]]:
        """``n`` samples for each context, as a list (one entry per context) of lists of :class:`Sample`."""


@dataclass(frozen=True)
class LLMBackend:
    """One LLM backend: the entry of :data:`LLM_BACKENDS` for the prefix of a spec ``name:target``.

    The entries are written in :mod:`discoverygym.agents.policies.backends` (the one table).

    Attributes:
        name: the spec prefix (``"hf"``).
        target: what follows the colon, for help texts (``"PATH_OR_ID"``, ``"URL"``, ``"MODEL"``).
        summary: one line for help texts.
        policy: the sampler factory's loader: called with no argument, it imports and returns the
            policy class (``policy()(target, **kwargs)`` builds a sampler).
        learners: ``(train_config, target) -> (sampler, learner)`` for ``discoverygym train``, or
            ``None`` when the backend cannot be trained (a chat API).
        post_train: whether ``discoverygym post-train`` (IRFT) can train it.
        chat: text only (no log-probabilities): search can use it, training cannot.
        extra: the pip extra that installs it (``pip install 'discoverygym[EXTRA]'``).
        settings: the configuration fields and environment variables it reads.
    """

    name: str
    target: str
    summary: str
    policy: Callable[[], Callable[..., Policy]]
    learners: Callable[[Any, str], tuple[Any, Any]] | None = None
    post_train: bool = False
    chat: bool = False
    extra: str = ""
    settings: tuple[str, ...] = ()

    @property
    def spec(self) -> str:
        """The spec form for messages: ``"hf:PATH_OR_ID"``."""
        return f"{self.name}:{self.target}"

    @property
    def trainable(self) -> bool:
        """Whether ``discoverygym train`` can train it (it has a learner factory)."""
        return self.learners is not None


#: policy name -> its factory, or the "module:attr" of a plug-in's factory (imported lazily);
#: the built-in ones are registered by :mod:`discoverygym.agents.policies.backends`.
POLICIES: dict[str, str | Callable[..., Policy]] = {}

#: backend prefix of an LLM ``--policy`` spec -> its entry (:func:`register_backend`).
LLM_BACKENDS: dict[str, LLMBackend] = {}


def register_backend(backend: LLMBackend) -> None:
    """Add (or replace) the LLM backend ``backend.name``.

    Raises:
        ValueError: an empty name, or one that contains ``:``.
    """
    if not backend.name or ":" in backend.name:
        raise ValueError(f"backend names must be non-empty and contain no ':', got {backend.name!r}")
    LLM_BACKENDS[backend.name] = backend


_WHICH: dict[str, Callable[[LLMBackend], bool]] = {
    "all": lambda b: True,
    "train": lambda b: b.trainable,
    "post-train": lambda b: b.post_train,
    "chat": lambda b: b.chat,
}


def llm_specs(which: str = "all", *, summaries: bool = False) -> str:
    """The registered LLM spec forms, for messages and help texts: ``"hf:PATH_OR_ID, openai:URL, ..."``.

    Args:
        which: ``"all"``, ``"train"`` (``discoverygym train`` can train it), ``"post-train"``
            (IRFT can) or ``"chat"`` (text only).
        summaries: follow each spec with its one-line summary in parentheses.

    Raises:
        ValueError: another ``which``.
    """
    if which not in _WHICH:
        raise ValueError(f"which must be one of {', '.join(_WHICH)}, got {which!r}")
    return ", ".join(f"{b.spec} ({b.summary})" if summaries else b.spec
                     for b in LLM_BACKENDS.values() if _WHICH[which](b))


def chat_refusal(command: str) -> str:
    """The one line ``train`` / ``post-train`` (``command``) refuse a chat backend with."""
    trainable = [b.spec + (" (vLLM)" if b.name == "openai" else "") for b in LLM_BACKENDS.values() if b.trainable]
    return (f"`discoverygym {command}` needs log-probabilities of a model you hold; a chat backend "
            f"({llm_specs('chat')}) drives only frozen search (`discoverygym search --action-mode code`); "
            f"train with {', '.join(trainable[:-1])} or {trainable[-1]}")


def llm_backend(name: str) -> LLMBackend:
    """The entry of backend ``name`` (``"hf"``).

    Raises:
        ValueError: an unknown backend (the message names the known ones).
    """
    if name not in LLM_BACKENDS:
        raise ValueError(f"unknown LLM backend {name!r}; known: {', '.join(LLM_BACKENDS)}")
    return LLM_BACKENDS[name]


def register_policy(name: str, target: str | Callable[..., Policy]) -> None:
    """Register a policy factory under ``name``: ``"package.module:Factory"`` or the callable itself.

    Raises:
        ValueError: ``name`` looks like an LLM spec (contains ``:``) or is empty.
    """
    if not name or ":" in name:
        raise ValueError(f"policy names must be non-empty and contain no ':', got {name!r}")
    POLICIES[name] = target  # type: ignore[assignment]


def split_spec(spec: str) -> tuple[str, str]:
    """``"hf:path/or/id"`` -> ``("hf", "path/or/id")``.

    Raises:
        ValueError: no known backend prefix, or nothing after the colon.
    """
    backend, sep, target = spec.partition(":")
    if not sep or backend not in LLM_BACKENDS:
        raise ValueError(f"LLM policy spec must be one of {llm_specs()}; got {spec!r}")
    if not target:
        raise ValueError(f"LLM policy spec {spec!r} names no model/URL after '{backend}:'")
    return backend, target


def is_llm_spec(spec: Any) -> bool:
    """Whether ``spec`` names an LLM backend (``hf:``, ``openai:``, ``vllm:``, ``tinker:``, ``litellm:``)."""
    return isinstance(spec, str) and ":" in spec and spec.partition(":")[0] in LLM_BACKENDS


def is_chat_spec(spec: Any) -> bool:
    """Whether ``spec`` names a chat backend (:attr:`LLMBackend.chat`: text only, no log-probs to train on)."""
    return is_llm_spec(spec) and LLM_BACKENDS[spec.partition(":")[0]].chat


def _resolve(target: str | Callable) -> Callable:
    if callable(target):
        return target
    module, attr = target.split(":")
    return getattr(importlib.import_module(module), attr)


def policy_factory(name: str) -> Callable[..., Policy]:
    """The factory (class or function) of a registered policy or an LLM spec, imported, not called.

    Raises:
        ValueError: neither a registered name nor an LLM spec (the message lists both forms).
    """
    if is_llm_spec(name):
        return LLM_BACKENDS[split_spec(name)[0]].policy()
    if name not in POLICIES:
        raise ValueError(f"unknown policy {name!r}; registered: {', '.join(sorted(POLICIES))}, "
                         f"or an LLM: {llm_specs()}")
    return _resolve(POLICIES[name])


def make_policy(name: str, *, shape: Sequence[int] | Callable[[], Sequence[int]] | None = None,
                **kwargs: Any) -> Policy:
    """Build a registered policy, or an LLM policy from a spec ``backend:target``.

    Args:
        name: a key of :data:`POLICIES` or an LLM spec.
        shape: the construction's shape (or a function returning it, called only when needed),
            passed to factories that declare ``shape``.
        **kwargs: the policy's own arguments (``--policy-kwargs``).

    Raises:
        ValueError: unknown name; a factory that needs ``shape`` when none is known.
        BackendUnavailable / ModelUnavailable: an LLM backend's library or model is missing.
    """
    factory = policy_factory(name)
    if is_llm_spec(name):
        return factory(split_spec(name)[1], **kwargs)
    params = inspect.signature(factory).parameters
    if "shape" in params and "shape" not in kwargs:
        if shape is None:
            raise ValueError(f"policy {name!r} needs the construction's shape (it proposes constructions)")
        kwargs["shape"] = tuple(shape() if callable(shape) else shape)
    return factory(**kwargs)
