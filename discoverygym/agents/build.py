"""What a training run is built from: its env, its reuse wrapper, and its learners (sampler + learner).

:class:`~discoverygym.agents.trainer.Trainer` calls these once, at construction; a script that
brings its own env or learners passes them to the trainer instead (``env=``, ``learners=``).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from discoverygym.agents.config import TrainConfig
from discoverygym.envs.registry import env_ids
from discoverygym.errors import UnknownEnvError
from discoverygym.policy import POLICIES, chat_refusal, llm_backend, llm_specs, split_spec
from discoverygym.search.executors import EnvCopy, LocalEvaluator
from discoverygym.search.reuse import ReuseWrapper
from discoverygym.types import State

__all__ = ["build_learners", "check_polish_kwargs", "make_reuse", "make_train_env", "rollout_pool"]


def make_train_env(config: TrainConfig) -> gym.Env:
    """The env of a run: ``gym.make(env_id, action_mode=..., **env_kwargs)`` without a render mode.

    Raises:
        ValueError: an env id that is not registered (the message points to ``discoverygym list``).
    """
    try:
        # Gymnasium's passive checker only warns ("Casting input x to numpy array") on list actions
        return gym.make(config.env_id, action_mode=config.action_mode, disable_env_checker=True, **config.env_kwargs)
    except gym.error.Error as exc:
        raise UnknownEnvError(config.env_id, env_ids(), detail=str(exc)) from None


def make_reuse(name: str, env: gym.Env, initial: State | None, **kwargs: Any) -> ReuseWrapper:
    """The reuse wrapper of rule ``name`` around ``env``, seeded with ``initial``.

    ``name`` is any rule of the one registry (:data:`~discoverygym.search.selectors.SELECTORS`:
    ``puct``, ``epsilon``, ``none``, also ``rpucg``, ``greedy``...); ``kwargs`` are the rule's
    hyper-parameters (``c=1.0``) and the wrapper's (``reward_rtol``). ``initial=None`` lets the
    wrapper take (and judge) the env's own initial state.

    Raises:
        ValueError: unknown name (the message lists the known ones).
        TypeError: a hyper-parameter the rule does not take.
    """
    return ReuseWrapper(env, name, initial_states=[initial] if initial is not None else None, **kwargs)


def check_polish_kwargs(policy_kwargs: dict, problem: Any) -> None:
    """Refuse ``polish_kwargs`` that the resolved polisher does not take (before anything runs).

    Raises:
        ValueError: an unknown polish name, or arguments the polisher's signature does not accept.
    """
    import inspect

    from discoverygym.envs.polish import get_polisher

    polisher = get_polisher(policy_kwargs.get("polish"), problem)
    kwargs = policy_kwargs.get("polish_kwargs") or {}
    if polisher is None or not kwargs:
        return
    try:
        inspect.signature(polisher).bind(None, **kwargs)
    except TypeError as exc:
        raise ValueError(f"polish_kwargs {kwargs!r} do not fit {polisher.__name__}: {exc}") from None


def build_learners(config: TrainConfig, start: State, problem: Any) -> tuple[Any, Any]:
    """``(sampler, learner)`` for ``config.policy``: the same object unless a server/engine samples.

    A numeric policy is built here; an LLM spec is a lookup in the one backend table
    (:mod:`discoverygym.agents.policies.backends`: the entry's learner factory).

    Args:
        config: the run's configuration.
        start: the start state (a numeric policy is shaped like its construction).
        problem: the env's problem (its name selects ``polish="auto"``).

    Raises:
        ValueError: an unknown backend (the message names the known ones, never a silent default) or
            an untrainable policy; ``--warm-start`` with another backend than ``hf:``; ``openai:``
            without ``train_model`` or with a malformed URL.
        BackendUnavailable / ModelUnavailable: from an LLM backend (missing library, model, key or
            an unreachable server).
    """
    if config.family == "numeric":
        from discoverygym.agents.learner import NumericLearner
        from discoverygym.agents.policies import make_trainable_policy
        from discoverygym.policy import policy_factory

        check_polish_kwargs(config.policy_kwargs, problem)
        # a policy shaped by the problem (the operator policy: its operators) says how
        hook = getattr(policy_factory(config.policy), "problem_kwargs", None) if config.policy in POLICIES else None
        kwargs = {**(hook(problem) if hook is not None else {}), **config.policy_kwargs}
        policy = make_trainable_policy(config.policy, np.shape(start.solution), **kwargs)
        learner = NumericLearner(policy, lr=config.lr, adam_beta1=config.adam_beta1, adam_beta2=config.adam_beta2,
                                 adam_eps=config.adam_eps)
        return learner, learner
    backend, target = split_spec(config.policy)
    entry = llm_backend(backend)
    if config.llm.warm_start is not None and backend != "hf":
        raise ValueError(f"--warm-start needs an hf: policy (it merges an adapter into local weights), got {config.policy!r}")
    if entry.learners is None:
        raise ValueError(chat_refusal("train") if entry.chat else
                         f"{config.policy!r} cannot be trained; train with {llm_specs('train')}")
    return entry.learners(config, target)


def rollout_pool(env: Any, workers: int) -> LocalEvaluator:
    """The pool of ``workers`` processes that judge construction rollouts (and run their pending jobs).

    A :class:`~discoverygym.search.executors.LocalEvaluator` over a pickled copy of the env. Workers
    start from a fresh interpreter (``forkserver`` where available, preloading this module, else
    ``spawn``: forking a trainer that already runs threads, e.g. torch's, can deadlock the child), run
    BLAS and torch single-threaded, ignore Ctrl-C (the trainer stops them) and die with the trainer
    even when it is killed without running its ``finally`` blocks (SIGKILL; an unhandled SIGTERM):
    they watch its pid (:func:`~discoverygym.search.executors.guard_parent`), so no worker, and then
    no forkserver, is left behind.
    """
    import multiprocessing as mp

    method = "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"
    return LocalEvaluator(EnvCopy(env), workers, start_method=method, preload=("discoverygym.agents.trainer",))
