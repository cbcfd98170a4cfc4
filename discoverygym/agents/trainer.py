"""One trainer for TTT-Discover, naive RL and every ablation, over any learner: numeric or LLM.

Read :meth:`Trainer.train_step` top to bottom (CleanRL style):

1. **Start states**: ``reuse.select(groups)`` (PUCT with lineage blocking, ε-greedy, or always the
   initial state); when the rule returns fewer than ``groups`` states (early on the archive holds
   one), the picks are repeated cyclically to fill the groups.
2. **Rollouts**: ``group_size`` samples per start state from the sampler (the learner itself, or an
   OpenAI-compatible server / vLLM engine that samples for a local learner). A numeric sample is a
   construction; an LLM sample is a program parsed from the response (unparseable responses are
   judged as a failing stub).
3. **Evaluation**: every action (and a sample's deferred ``pending`` job: an operator or a polish) is
   judged by the env (``env.unwrapped.evaluate``) against its start state, without re-verifying
   it; constructions in ``eval_workers`` worker processes (``forkserver``: a script that trains must
   guard its entry point with ``if __name__ == "__main__":``), programs in threads; children are
   recorded in the reuse archive in rollout order (``reuse.record``), so results do not depend on
   the number of workers.
4. **Advantages**: ``objective(rewards[groups, group_size])`` (:mod:`~discoverygym.agents.objectives`);
   constant-reward groups are dropped.
5. **Update** (:func:`~discoverygym.agents.batch.run_update` on the step's typed
   :class:`~discoverygym.agents.batch.TrainBatch`; a learner with its own ``update(batch)``, e.g.
   CEM, replaces all of this): ``learner.train_step(kept samples, advantages, kl_coef=λ)``: the loss of
   :mod:`~discoverygym.agents.losses` (token-level KL shaping ``A_t += λ (avg − Δ_t)`` against the
   frozen reference, then ``−Σ_t exp(log π_θ − log π_sampler) · A_t``) and one Adam step. When every
   group is dropped, ``update_on_constant`` takes a KL-only step (A = 0). A separate sampler then
   loads the learner's new adapter.
6. **Log + checkpoint**: TensorBoard scalars (+ an image of the best construction every
   ``image_every`` steps), ``metrics.jsonl``, ``samples.jsonl`` (LLM responses), ``best.json``, and a
   checkpoint (learner, archive, rule statistics, generator states) from which ``resume`` continues
   exactly (with ``credit="reward"``, the default; ``"progress-rate"`` credits rollouts by wall seconds).

The trainer never names a problem or a backend: the env owns its problem, the learner its loss
inputs. Source: TTT-Discover (arXiv 2601.16175) §3 and App. A; docs/algorithms.md.

Ablations (TTT-Discover's table of ablations) are data, :data:`ABLATIONS`: eight configs, one code
path, for every learner (and one of ours, ``progress-rate``).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from discoverygym.agents.batch import TrainBatch, run_update
from discoverygym.agents.losses import DEFAULT_LOSS, Loss, make_loss
from discoverygym.agents.objectives import Objective, make_objective
from discoverygym.agents.policies.edits import check_edit_format, edit_stats
from discoverygym.io import atomic_write_json, available_cpus, limit_native_threads
from discoverygym.policy import CHAT_REFUSAL, POLICIES, SamplingContext, is_chat_spec, is_llm_spec, split_spec
from discoverygym.search.executors import ParentGuard, guard_parent
from discoverygym.search.reuse import EpsilonGreedyReuse, NoReuse, PUCTReuse, ReuseWrapper
from discoverygym.types import State

__all__ = ["ABLATIONS", "CREDITS", "DEFAULT_GROUPS", "METRICS", "RESUMABLE_FIELDS", "NaiveRL", "TTTDiscover", "TrainConfig",
           "TrainResult", "Trainer", "ablation_config", "build_learners", "default_policy", "policy_mismatch", "progress_rate",
           "scored_advantages"]

#: the learning rate when none is given: ours for the numeric policy (the paper's 4e-5 is for LoRA
#: adapters of an LLM and moves a 100-parameter Gaussian policy by nothing visible in 50 steps),
#: TTT-Discover App. A for LLM LoRA adapters.
#: learning rate per policy name, else per learner family. The operator policy learns a handful of
#: logits and Beta parameters within a few dozen steps of a CPU budget (0.3: measured on
#: CirclePacking-26-v0 at 60 s; 0.05 barely moved the operator choice in that time)
DEFAULT_LR = {"operators": 0.3, "numeric": 0.05, "llm": 4e-5}

#: (groups, group_size) when none are given, per policy name ("*": every other policy, LLMs included):
#: TTT-Discover §4's 8 × 64 for LLMs and the Gaussian policy; ours for the operator policy, whose
#: rollouts each run a local optimiser (SLSQP, Adam): 2 × 8 gives a step every few seconds on 2
#: cores, so PUCT re-picks start states and the policy updates often within a 300 s budget.
DEFAULT_GROUPS = {"operators": (2, 8), "*": (8, 64)}

#: steps of a run with a wall budget and no step count (the budget ends it)
UNLIMITED_STEPS = 10**9

#: TrainConfig fields that a resumed run may change (``discoverygym train --resume``, the benchmark
#: and ``discoverygym compare``); every other field must match the stored config.json
RESUMABLE_FIELDS = ("steps", "budget_s", "image_every", "eval_workers")


def default_policy(env_id: str) -> str:
    """The numeric policy of ``env_id`` when none is given: ``"operators"`` when its problem declares
    operators (:attr:`Problem.operators <discoverygym.envs.problem.Problem.operators>`), else
    ``"gaussian"`` (also for program envs, which refuse every numeric policy)."""
    from discoverygym.envs.registry import ENVS

    problem = ENVS.get(env_id)
    return "operators" if getattr(problem, "operators", ()) else "gaussian"


#: the metrics every step reports (``metrics.jsonl`` and TensorBoard; ``beta/group_<g>``,
#: ``policy/<name>``, ``errors`` and, for operator policies, :func:`operator_costs`'s
#: ``perf/rollout_s``, ``ops/time_share/<op>`` and ``ops/improved/<op>`` come on top). One schema for every learner.
METRICS = ("step", "reward/max", "reward/mean", "reward/min", "score/best", "reward/best", "beta/mean", "kl",
           "loss", "grad_norm", "train_tokens", "groups_kept", "valid_fraction", "unscored_fraction", "repeat_fraction", "parsed_fraction",
           "edit/parse_fail_rate", "edit/apply_fail_rate", "edit/fallback_rate", "archive/size", "perf/sample_s", "perf/eval_s", "perf/train_s", "perf/evals_per_s",
           "perf/tokens_per_s", "perf/step_time_s")


@dataclass
class TrainConfig:
    """Every hyper-parameter of a training run, for every learner (paper defaults, with sources).

    ``policy`` is a registered policy name (``gaussian``: constructions) or an LLM spec
    (``hf:PATH_OR_ID``, ``openai:URL``, ``vllm:MODEL``, ``tinker:MODEL``: programs, code mode).
    ``lr`` and ``update_on_constant`` default per learner family (:data:`DEFAULT_LR`; a KL-only
    step on all-constant groups for LLMs, none for the numeric policy), resolved at construction so
    that ``config.json`` records the value used.

    Raises:
        ValueError: settings that cannot train: steps, groups, checkpoint_every, max_new_tokens,
            lora_rank, micro_batch < 1; group_size < 2 (every objective needs two rollouts per
            group); image_every < 0; non-finite or non-positive lr / temperature / adam_eps, negative
            kl_coef; Adam β outside [0, 1); budget_s <= 0; an unknown polish; a malformed LLM spec;
            env_kwargs not a dict; kind other than "train".
    """

    env_id: str = "CirclePacking-26-v0"
    # discoverygym.policy.POLICIES name, or an LLM spec. `discoverygym train` and the discovery
    # benchmark pass default_policy(env_id) ("operators" where the problem declares operators)
    policy: str = "gaussian"
    policy_kwargs: dict = field(default_factory=dict)  # gaussian: {"sigma": 0.02, "polish": "auto"}
    steps: int | None = None  # None: TTT-Discover §4's 50 training steps; unlimited with a budget_s
    groups: int | None = None  # None: DEFAULT_GROUPS of the policy (TTT-Discover §4: 8 start states)
    group_size: int | None = None  # None: DEFAULT_GROUPS of the policy (TTT-Discover §4: 64 rollouts)
    objective: str = "entropic-adaptive"  # TTT-Discover §3.2: entropic, adaptive β (KL budget ln 2)
    objective_kwargs: dict = field(default_factory=dict)  # e.g. {"beta": 2.0} for entropic-constant
    loss: str = DEFAULT_LOSS  # agents.losses.LOSSES name (the loss seam); TTT-Discover App. A: IS loss
    loss_kwargs: dict = field(default_factory=dict)  # e.g. {"eps": 0.2} for a registered PPO-clip loss
    reuse: str = "puct"  # TTT-Discover App. A.2: PUCT; ablations: "epsilon" (ε = 0.1), "none"
    reuse_kwargs: dict = field(default_factory=dict)  # e.g. {"c": 1.0} (App. A.2)
    train: bool = True  # False: the "no training" / "best-of-N" ablations (policy frozen)
    skip_repeats: bool = True  # rollouts that only reproduce their start state's reward get no advantage (is_repeat)
    # what the objective ranks within a group (CREDITS): "reward" (TTT-Discover: the rollouts' rewards) or
    # "progress-rate" (ours: each rollout's gain over its start state per second of its wall time, progress_rate)
    credit: str = "reward"
    # construction envs: a child whose reward equals a kept archive state's (to REPEAT_RTOL) stands for
    # that state instead of taking a slot of its own (Archive.reward_rtol; ours, the papers' archives
    # deduplicate exact solutions only). Program envs never (equal scores of different programs are common).
    # Off by default: on CirclePacking-26-v0 (300 s, seeds 0, 1, 2, 4) it reached the record in 0 of 4
    # seeds against 3 of 5 without it; the copies of the best basin are what PUCT keeps shaking.
    reward_dedup: bool = False
    kl_coef: float = 0.1  # TTT-Discover App. A: λ of token-level KL shaping (0.01 for AtCoder)
    lr: float | None = None  # None: DEFAULT_LR of the learner family
    adam_beta1: float = 0.9  # TTT-Discover App. A
    adam_beta2: float = 0.95  # TTT-Discover App. A
    adam_eps: float = 1e-8  # TTT-Discover App. A
    seed: int = 0  # seeds the env (initial state, state ids), the trainer's and the policy's generators
    image_every: int = 5  # steps between TensorBoard images of the best construction (0 = never)
    checkpoint_every: int = 1  # steps between checkpoints (resume restarts at the last one)
    budget_s: float | None = None  # wall-clock budget (s): no step starts that would overrun it
    init: str | None = None  # the --init construction file (recorded; the construction is passed in)
    name: str = "full"  # ablation / config name (for tables and logs)
    torch_threads: int | None = 1  # ours: small policies run ~25x faster single-threaded (None = leave)
    # when every group is dropped (all rewards equal, e.g. all failures), still take a KL-only step
    # (A = 0): the adapter is pulled toward the base model. None: True for LLMs, False for numeric.
    update_on_constant: bool | None = None
    # actions judged at once (threads; each sandbox is its own process). 0 = auto: all CPUs when the
    # env's evaluations are thread-safe programs (env.unwrapped.thread_safe_evaluate, code), else 1.
    eval_workers: int = 0
    env_kwargs: dict = field(default_factory=dict)  # env / task options (n_cases, dataset, device...)
    log_samples: int = 4  # LLM responses per step written to samples.jsonl (0 = none)
    # LLM learners (ignored by the numeric policy)
    lora_rank: int = 32  # TTT-Discover App. A
    temperature: float = 1.0  # TTT-Discover App. A
    max_new_tokens: int = 1024  # ours (the paper's budget is far larger; raise on a GPU)
    thinking_budget: int | None = None  # two-phase forcing (None = off)
    micro_batch: int = 4  # sequences per backward (gradient accumulation)
    device: str = "auto"
    train_model: str | None = None  # the local HF model that learns for openai:/vllm: samplers
    # LLM responses: whole programs (full) or SEARCH/REPLACE blocks against the parent (diff; Aider/OpenEvolve)
    edit_format: str = "full"
    kind: str = "train"  # run-directory kind (config.json); see discoverygym.cli.common.run_kind

    def __post_init__(self) -> None:
        """Resolve the per-learner defaults and refuse settings that cannot train (class docstring)."""
        groups, group_size = DEFAULT_GROUPS.get(self.policy, DEFAULT_GROUPS["*"])
        if self.groups is None:
            self.groups = groups
        if self.group_size is None:
            self.group_size = group_size
        if self.steps is None:
            self.steps = 50 if self.budget_s is None else UNLIMITED_STEPS
        family = self.family
        if family == "llm":
            split_spec(self.policy)
            if is_chat_spec(self.policy):
                raise ValueError(CHAT_REFUSAL.format(command="train"))
        if self.lr is None:
            self.lr = DEFAULT_LR.get(self.policy, DEFAULT_LR[family])
        if self.update_on_constant is None:
            self.update_on_constant = family == "llm"
        check_edit_format(self.edit_format)
        if self.edit_format != "full" and family != "llm":
            raise ValueError(f"edit_format {self.edit_format!r} needs an LLM policy (hf:, openai:, vllm:, tinker:)")
        if self.kind != "train":
            raise ValueError(f"a train configuration has kind 'train', got {self.kind!r}")
        if self.credit not in CREDITS:
            raise ValueError(f"credit must be one of {', '.join(CREDITS)}, got {self.credit!r}")
        for key, low in (("steps", 1), ("groups", 1), ("group_size", 2), ("checkpoint_every", 1),
                         ("image_every", 0), ("max_new_tokens", 1), ("lora_rank", 1), ("micro_batch", 1),
                         ("eval_workers", 0), ("log_samples", 0)):
            value = getattr(self, key)
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise ValueError(f"{key} must be an integer >= {low}, got {value!r}")
        for key, low, strict in (("lr", 0.0, True), ("kl_coef", 0.0, False), ("temperature", 0.0, True),
                                 ("adam_eps", 0.0, True)):
            value = getattr(self, key)
            ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
            if not ok or (value <= low if strict else value < low):
                raise ValueError(f"{key} must be a finite number {'>' if strict else '>='} {low:g}, got {value!r}")
        for key in ("adam_beta1", "adam_beta2"):
            value = getattr(self, key)
            if not isinstance(value, (int, float)) or not 0 <= value < 1:
                raise ValueError(f"{key} must be in [0, 1), got {value!r}")
        if self.budget_s is not None and not (isinstance(self.budget_s, (int, float)) and self.budget_s > 0):
            raise ValueError(f"budget_s must be positive, got {self.budget_s!r}")
        for key in ("policy_kwargs", "objective_kwargs", "loss_kwargs", "reuse_kwargs", "env_kwargs"):
            if not isinstance(getattr(self, key), dict):
                raise ValueError(f"{key} must be a JSON object, got {getattr(self, key)!r}")  # noqa: TRY004
        from discoverygym.envs.polish import get_polisher

        get_polisher(self.policy_kwargs.get("polish"))  # refuses an unknown polish name

    @property
    def family(self) -> str:
        """``"llm"`` for an LLM spec (programs), ``"numeric"`` for a registered policy (constructions)."""
        return "llm" if is_llm_spec(self.policy) else "numeric"

    @property
    def action_mode(self) -> str:
        """What the policy proposes: ``"code"`` (LLM programs) or ``"construction"``."""
        return "code" if self.family == "llm" else "construction"

    def to_dict(self) -> dict:
        """Plain JSON (``config.json``; round-trips through ``TrainConfig(**d)``)."""
        return asdict(self)


#: TTT-Discover's ablation grid as config overrides (the paper's Table of ablations).
ABLATIONS: dict[str, dict[str, Any]] = {
    "full": {},
    "constant-beta": {"objective": "entropic-constant", "objective_kwargs": {"beta": 2.0}},
    "expected-reward": {"objective": "mean-baseline"},
    "no-training": {"train": False},
    "epsilon-greedy": {"reuse": "epsilon"},
    "no-reuse": {"reuse": "none"},
    "naive-rl": {"objective": "mean-baseline", "reuse": "none"},
    "best-of-n": {"train": False, "reuse": "none"},
    # ours, not a paper ablation: TTT-Discover with each rollout credited by its gain per second (progress_rate)
    "progress-rate": {"credit": "progress-rate"},
}


def ablation_config(name: str, **overrides: Any) -> TrainConfig:
    """The :class:`TrainConfig` of an ablation (``full``, ``naive-rl``...) with ``overrides`` applied.

    Raises:
        ValueError: unknown ablation name; an override that changes a setting the ablation itself
            fixes (``progress-rate`` with ``credit="reward"``); an invalid override (:class:`TrainConfig`).
    """
    if name not in ABLATIONS:
        raise ValueError(f"unknown config {name!r}; known: {', '.join(ABLATIONS)}")
    clash = sorted(k for k, v in ABLATIONS[name].items() if k in overrides and overrides[k] != v)
    if clash:
        raise ValueError(f"config {name!r} sets {', '.join(f'{k}={ABLATIONS[name][k]!r}' for k in clash)}; the "
                         f"override {', '.join(f'{k}={overrides[k]!r}' for k in clash)} would make it another "
                         "config under its name: choose the config that has it")
    merged = {**ABLATIONS[name], **overrides}
    merged.setdefault("name", name)
    return TrainConfig(**merged)


#: reuse rule name -> wrapper class (TTT-Discover App. A.2 and its ablations).
REUSE_RULES: dict[str, type[ReuseWrapper]] = {"puct": PUCTReuse, "epsilon": EpsilonGreedyReuse, "none": NoReuse}


def make_reuse(name: str, env: gym.Env, initial: State | None, **kwargs: Any) -> ReuseWrapper:
    """The reuse wrapper ``name`` (``puct``, ``epsilon``, ``none``) around ``env``, seeded with ``initial``.

    ``initial=None`` lets the wrapper take (and judge) the env's own initial state.

    Raises:
        ValueError: unknown name.
    """
    if name not in REUSE_RULES:
        raise ValueError(f"unknown reuse rule {name!r}; known: {', '.join(REUSE_RULES)}")
    return REUSE_RULES[name](env, initial_states=[initial] if initial is not None else None, **kwargs)


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

    Args:
        config: the run's configuration.
        start: the start state (a numeric policy is shaped like its construction).
        problem: the env's problem (its name selects ``polish="auto"``).

    Raises:
        ValueError: an unknown or untrainable policy; ``openai:`` without ``train_model`` or with a
            malformed URL.
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
    hf_kw = {"device": config.device, "lora_rank": config.lora_rank, "max_new_tokens": config.max_new_tokens,
             "temperature": config.temperature, "thinking_budget": config.thinking_budget,
             "micro_batch": config.micro_batch, "lr": config.lr, "adam_beta1": config.adam_beta1,
             "adam_beta2": config.adam_beta2, "adam_eps": config.adam_eps, "seed": config.seed,
             "edit_format": config.edit_format}
    if backend == "hf":
        from discoverygym.agents.policies.hf import HFPolicy

        policy = HFPolicy(target, **hf_kw)
        return policy, policy
    if backend == "tinker":
        from discoverygym.agents.policies.tinker_policy import TinkerPolicy

        policy = TinkerPolicy(target, lora_rank=config.lora_rank, max_new_tokens=config.max_new_tokens,
                              temperature=config.temperature, lr=config.lr, adam_beta1=config.adam_beta1,
                              adam_beta2=config.adam_beta2, adam_eps=config.adam_eps, seed=config.seed,
                              edit_format=config.edit_format)
        return policy, policy
    from discoverygym.agents.policies.hf import HFPolicy

    if backend == "openai":
        from discoverygym.agents.policies.openai_server import OpenAIServerPolicy, check_url, probe_server

        check_url(target)  # a malformed URL is refused before the learner loads
        if not config.train_model:
            raise ValueError("--policy openai:URL trains a local copy: pass --train-model PATH_OR_ID "
                             "(the model the server serves)")
        probe_server(target)  # an unreachable server is reported before the learner loads
        learner = HFPolicy(config.train_model, **hf_kw)
        sampler = OpenAIServerPolicy(target, tokenizer=learner.tokenizer, max_new_tokens=config.max_new_tokens,
                                     temperature=config.temperature, edit_format=config.edit_format)
        return sampler, learner
    from discoverygym.agents.policies.vllm_engine import VLLMPolicy

    sampler = VLLMPolicy(target, max_new_tokens=config.max_new_tokens, temperature=config.temperature,
                         max_lora_rank=config.lora_rank, edit_format=config.edit_format)
    learner = HFPolicy(config.train_model or target, **hf_kw)
    return sampler, learner


@dataclass
class TrainResult:
    """Outcome of :meth:`Trainer.run`.

    Attributes:
        best: the best valid state seen (the start state if nothing beat it).
        initial: the start state.
        steps: training steps completed (including resumed ones).
        history: per-step metric dicts.
        elapsed_s: wall time of this call (seconds).
    """

    best: State
    initial: State
    steps: int
    history: list[dict]
    elapsed_s: float


class Trainer:
    """Online RL on one discovery env for any learner (TTT-Discover and its ablations; module docstring).

    Args:
        config: hyper-parameters (:class:`TrainConfig`; see :data:`ABLATIONS`).
        run_dir: run directory (``config.json``, ``metrics.jsonl``, ``samples.jsonl``, ``best.json``,
            ``archive.json``, TensorBoard events, ``checkpoints/``); ``None`` = nothing written.
        initial: a construction to start from (``--init``; re-verified), else the env's seeded
            initial state.
        objective: a custom advantage function (the objective seam: any
            :class:`~discoverygym.agents.objectives.Objective`); default ``config.objective``.
        loss: a custom loss (the loss seam: any :class:`~discoverygym.agents.losses.Loss`), set on
            the learner as ``learner.loss``; default ``config.loss``.
        resume: continue the run stored in ``run_dir`` (its config must match the architecture).
        callback: called with each step's metrics (progress display).
        learners: ``(sampler, learner)`` to use instead of :func:`build_learners` (custom learners,
            tests); the same object twice when the learner samples itself.
        env: an env to use instead of ``gym.make(config.env_id, action_mode=config.action_mode,
            **config.env_kwargs)``.

    Raises:
        ValueError: unknown env id / objective / loss / reuse rule / policy, an invalid ``initial``,
            or a non-default loss for a learner that does not compute its loss locally (no ``loss``
            attribute, e.g. Tinker's service).
        FileExistsError: ``run_dir`` holds a run and ``resume`` is False.
        FileNotFoundError: ``resume`` without a checkpoint nor a ``config.json`` in ``run_dir`` (a run
            stopped before its first checkpoint restarts from scratch with its stored configuration).
        BackendUnavailable / ModelUnavailable: from an LLM backend (:func:`build_learners`).
    """

    def __init__(
        self,
        config: TrainConfig,
        run_dir: str | os.PathLike | None = None,
        initial: Any = None,
        objective: Objective | None = None,
        resume: bool = False,
        callback: Callable[[dict], None] | None = None,
        *,
        learners: tuple[Any, Any] | None = None,
        env: gym.Env | None = None,
        loss: Loss | None = None,
    ) -> None:
        self.config = config
        mismatch = policy_mismatch(config, env)
        if mismatch:
            raise ValueError(mismatch)
        self.run_dir = Path(run_dir) if run_dir is not None else None
        if self.run_dir is not None and not resume and has_checkpoint(self.run_dir):
            raise FileExistsError(f"{self.run_dir} already holds a run; pass resume=True (--resume)")
        self.callback = callback
        self.objective = objective or make_objective(config.objective, **config.objective_kwargs)
        self.env = env if env is not None else make_train_env(config)
        self.problem = self.env.unwrapped.problem
        _, info = self.env.reset(seed=config.seed)
        start: State = info["state"]
        if initial is not None:
            judged = self.env.unwrapped.evaluate(initial)
            if not judged.valid:
                raise ValueError(f"the initial construction is invalid: {judged.error}")
            start = dataclasses.replace(judged, id=start.id)
        self.initial: State = start
        self.best: State = start
        reuse_kwargs = dict(config.reuse_kwargs)
        if config.reward_dedup and self.env.unwrapped.action_kind != "code":
            reuse_kwargs.setdefault("reward_rtol", REPEAT_RTOL)
        self.reuse = make_reuse(config.reuse, self.env, start if start.valid else None, **reuse_kwargs)
        self.rng = np.random.default_rng(config.seed)
        torch.manual_seed(config.seed)
        if config.torch_threads:
            torch.set_num_threads(config.torch_threads)  # process-wide (torch has no per-module setting)
            limit_native_threads(config.torch_threads)  # BLAS too (SLSQP): processes give the parallelism
        self.sampler, self.learner = learners if learners is not None else build_learners(config, start, self.problem)
        self._install_loss(loss)
        self.last_batch: TrainBatch | None = None  # the latest step's batch (agents.batch), for outside code
        self.step_index = 0
        self.history: list[dict] = []
        self._writer: Any = None
        self._tmp: str | None = None
        self._pool: _EvalPool | None = None
        #: wall seconds of each rollout of the last :meth:`_judge` call, in rollout order
        self.last_rollout_s: list[float] = []
        if resume:
            self._load_checkpoint()
        elif self.run_dir is not None:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            atomic_write_json(self.run_dir / "config.json", config.to_dict())
            self._write_best()

    def _install_loss(self, loss: Loss | None) -> None:
        """Set the loss seam on the learner (``learner.loss``); refuse a custom one it cannot use."""
        custom = loss is not None or self.config.loss != DEFAULT_LOSS
        if not custom:
            return
        fn = loss or make_loss(self.config.loss, **self.config.loss_kwargs)
        if not hasattr(self.learner, "loss"):
            raise ValueError(f"learner {getattr(self.learner, 'name', type(self.learner).__name__)!r} does not "
                             "compute its loss locally (no `loss` attribute): a custom loss cannot apply")
        self.learner.loss = fn

    @property
    def policy(self) -> Any:
        """The trained policy: the learner's torch policy for numeric learners, else the learner."""
        return getattr(self.learner, "policy", self.learner)

    # ------------------------------------------------------------------ the algorithm
    def train_step(self) -> dict:
        """One step (module docstring, 1–6). Returns the step's metrics (:data:`METRICS`)."""
        cfg, t0 = self.config, time.perf_counter()
        # 1. start states (reuse rule), filled cyclically up to `groups`
        # an unscored initial state (a kernel env without a GPU) gives the archive no valid state:
        # the groups then start from the initial program itself
        picks = self.reuse.select(cfg.groups) or [self.initial]
        starts = [picks[i % len(picks)] for i in range(cfg.groups)]
        contexts = [SamplingContext(parent=s, inspirations=(s,), problem=self.problem, action_mode=cfg.action_mode,
                                    trajectory=g, step=self.step_index) for g, s in enumerate(starts)]
        # 2. rollouts
        samples = self.sampler.sample(contexts, cfg.group_size, self.rng)
        t_eval = time.perf_counter()
        sample_s = t_eval - t0
        # 3. evaluation, recorded in the archive in rollout order
        rewards = torch.zeros(cfg.groups, cfg.group_size, dtype=torch.float64)
        scored = torch.ones(cfg.groups, cfg.group_size, dtype=torch.bool)
        n_valid = n_parsed = n_repeat = 0
        errors: dict[str, int] = {}
        keys = [(g, k) for g, group in enumerate(samples) for k in range(len(group))]
        children = self._judge(starts, samples, keys)
        for (g, k), child in zip(keys, children):
            sample = samples[g][k]
            rewards[g, k] = child.reward
            # unscored rollouts, and repeats of their start state when cfg.skip_repeats, carry no signal
            repeat = cfg.skip_repeats and is_repeat(child, starts[g])
            n_repeat += repeat
            scored[g, k] = not child.unscored and not repeat
            n_valid += child.valid
            parse_error = getattr(sample, "parse_error", None)
            n_parsed += parse_error is None
            if not child.valid:
                key = (parse_error or getattr(sample, "apply_error", None) or child.error or "invalid").split(":")[0][:60]
                errors[key] = errors.get(key, 0) + 1
            elif child.reward > self.best.reward:
                self.best = child
        eval_s = time.perf_counter() - t_eval
        ops = operator_costs(self.problem, samples, starts, children, self.last_rollout_s)
        # 4. advantages from the group rewards (the objective hook), unscored rollouts left out;
        #    credit "progress-rate" ranks each rollout's gain over its start per second instead
        signal = rewards if cfg.credit == "reward" else progress_rate(starts, children, self.last_rollout_s, rewards.shape)
        adv, _ = scored_advantages(self.objective, signal, scored)  # unscored rollouts: no advantage, no update
        flat = [s for group in samples for s in group]
        # 5. one update on the typed batch (agents.batch.run_update: the learner's own update(batch),
        #    else its train_step on the kept, scored samples: KL shaping + the loss seam, one Adam step)
        update: dict[str, float] = {"loss": 0.0, "kl": 0.0, "tokens": 0, "grad_norm": 0.0}
        t_train = time.perf_counter()
        self.last_batch = TrainBatch.from_step(starts, samples, rewards, adv, step=self.step_index,
                                               kl_coef=cfg.kl_coef, scored=torch.as_tensor(scored, dtype=torch.bool))
        if cfg.train:
            done = run_update(self.learner, self.last_batch, update_on_constant=bool(cfg.update_on_constant))
            if done is not None:
                update = done
                self._sync_weights()
        train_s = time.perf_counter() - t_train
        self.step_index += 1
        beta = adv.beta[adv.keep]
        n_tokens = sum(len(getattr(s, "completion_ids", ())) for s in flat)
        metrics = {
            "step": self.step_index,
            "reward/max": float(rewards.max()), "reward/mean": float(rewards.mean()),
            "reward/min": float(rewards.min()),
            "score/best": self.best.score, "reward/best": self.best.reward,
            "beta/mean": float(beta.mean()) if beta.numel() and not beta.isnan().all() else None,
            **{f"beta/group_{g}": float(adv.beta[g]) for g in range(cfg.groups) if adv.keep[g]
               and not math.isnan(float(adv.beta[g]))},
            "kl": float(update["kl"]), "loss": float(update["loss"]), "grad_norm": float(update["grad_norm"]),
            "train_tokens": int(update["tokens"]),
            "groups_kept": int(adv.keep.sum()), "valid_fraction": n_valid / rewards.numel(),
            "parsed_fraction": n_parsed / rewards.numel(),
            **edit_stats([s for group in samples for s in group]),
            "unscored_fraction": float((~scored).sum() - n_repeat) / rewards.numel(),
            "repeat_fraction": n_repeat / rewards.numel(),
            **{f"policy/{k}": v for k, v in self.learner.stats().items()},
            "archive/size": len(self.reuse.archive),
            "perf/sample_s": sample_s, "perf/eval_s": eval_s, "perf/train_s": train_s,
            "perf/evals_per_s": rewards.numel() / max(eval_s, 1e-9),
            "perf/tokens_per_s": n_tokens / max(sample_s, 1e-9),
            "perf/step_time_s": time.perf_counter() - t0,
            **ops,
            "errors": errors,
        }
        self._log_samples(flat, rewards.reshape(-1).tolist())
        return metrics

    def _eval_workers(self) -> int:
        if self.config.eval_workers:
            return self.config.eval_workers
        env = self.env.unwrapped  # constructions: worker processes; programs: threads (each its own sandbox)
        if env.action_kind != "code" or env.thread_safe_evaluate:
            return available_cpus()
        return 1

    def _judge(self, starts: list[State], samples: list[list[Any]], keys: list[tuple[int, int]]) -> list[State]:
        """Judge every sample's action against its start state; returns the children in the order of
        ``keys`` (``(group, rollout)`` pairs, rollout order).

        Each rollout gets an id and a seed drawn here from the trainer's (checkpointed) generator in
        rollout order, and is judged with ``env.unwrapped.evaluate(action, parent=start, ...)``: the
        start state is never re-verified (no ``reset`` per rollout). A sample with a ``pending`` job
        (:class:`~discoverygym.policy.DeferredAction`: an operator or a polish) has it run next to
        its verification. With ``eval_workers`` > 1 construction rollouts run in a pool of worker
        processes (:class:`_EvalPool`), programs in threads (each in its own sandbox process); the
        children are then recorded through the reuse wrapper in rollout order, so the results are
        identical for any number of workers. Each rollout's wall seconds go to ``last_rollout_s``
        (never into a child or the archive; into an advantage only with ``credit="progress-rate"``,
        which is therefore not bit-identical across worker counts).
        """
        workers = self._eval_workers()
        env = self.env.unwrapped
        # ids salted: the env's generator (state ids of the initial state) runs the same stream for the same seed
        draws = [(f"{int(self.rng.integers(2**63)) ^ _ID_SALT:016x}", int(self.rng.integers(2**31 - 1))) for _ in keys]
        tasks = []
        for (g, k), (state_id, seed) in zip(keys, draws):
            sample = samples[g][k]
            pending = getattr(sample, "pending", None) if getattr(sample, "child", None) is None else None
            meta = {"step": self.step_index}
            if getattr(sample, "operator", None):
                meta["operator"] = sample.operator
            action = None if pending is not None else sample.action
            tasks.append(_EvalTask(pending, action, starts[g], seed, state_id, meta))
        deferred = any(t.pending is not None for t in tasks)  # nothing to compute: verify here (no IPC)
        if workers <= 1 or len(tasks) <= 1 or (env.action_kind != "code" and not deferred):
            results = [_run_task(env, t) for t in tasks]
        elif env.action_kind == "code":
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(max_workers=min(workers, len(tasks))) as pool:
                results = list(pool.map(lambda t: _run_task(env, t), tasks))
        else:
            if self._pool is None or self._pool.workers != workers:
                self._close_pool()
                self._pool = _EvalPool(env, workers)
            results = self._pool.map(tasks)
        children = []
        for (g, k), task, (action, child, _) in zip(keys, tasks, results):
            if task.pending is not None:
                samples[g][k].action = action
            children.append(self.reuse.record(child, parent=starts[g]))
        self.last_rollout_s = [float(seconds) for _, _, seconds in results]
        return children

    def _close_pool(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    def _sync_weights(self) -> None:
        """Load the learner's new adapter into a separate sampler (server / engine) under a new name."""
        if self.sampler is self.learner:
            return
        if self.run_dir is not None:
            root = self.run_dir / "adapters"
        else:
            if self._tmp is None:
                self._tmp = tempfile.mkdtemp(prefix="dg-adapters-")
            root = Path(self._tmp)
        path = root / f"step_{self.step_index + 1:06d}"
        self.learner.save_adapter(path)
        self.sampler.load_adapter(path, name=f"step-{self.step_index + 1}")

    def run(self) -> TrainResult:
        """Train until ``config.steps`` (or the wall budget), logging and checkpointing each step.

        Steps stop when ``config.steps`` are done or the next step would exceed ``config.budget_s``
        (seconds, judged by the last step's time); the TensorBoard writer is always closed.
        """
        t0, last = time.perf_counter(), 0.0
        try:
            while self.step_index < self.config.steps:
                if self.config.budget_s is not None and time.perf_counter() - t0 + last > self.config.budget_s:
                    break
                metrics = self.train_step()
                last = metrics["perf/step_time_s"]
                self.history.append(metrics)
                self._log(metrics)
                if self.callback is not None:
                    self.callback(metrics)
                if self.run_dir is not None and (self.step_index % self.config.checkpoint_every == 0
                                                 or self.step_index == self.config.steps):
                    self._save_checkpoint()
        finally:
            self._close_pool()
            if self._writer is not None:
                self._writer.close()
                self._writer = None
            if self._tmp is not None:
                shutil.rmtree(self._tmp, ignore_errors=True)
                self._tmp = None
        if self.run_dir is not None:
            self.reuse.close_batch()
            self.reuse.archive.save(self.run_dir / "archive.json")
        return TrainResult(self.best, self.initial, self.step_index, self.history, time.perf_counter() - t0)

    # ------------------------------------------------------------------ logging
    def _tb(self, step: int) -> Any:
        """The TensorBoard writer (:class:`discoverygym.tensorboard.RunWriter`, the schema shared with
        search and post-train); on resume it purges events from ``step`` on (the first step this
        process logs), which a killed run may have written after its last checkpoint."""
        if self._writer is None and self.run_dir is not None:
            from discoverygym.tensorboard import RunWriter

            # tensorboardX names event files by the second: a resume within the second of a kill would
            # truncate the killed process's file, so each writer's file name carries its first step (so
            # that TensorBoard, which reads files in name order, reads them in step order) and its pid
            self._writer = RunWriter(self.run_dir, record=self.problem.sota.get("value"),
                                     direction=self.problem.direction,
                                     purge_step=step if step > 1 else None,
                                     filename_suffix=f".step{step:09d}.{os.getpid()}")
        return self._writer

    def _log(self, metrics: dict) -> None:
        """The step's metrics into TensorBoard (the shared schema: ``score/best`` with the
        ``score/record`` line, ``reward/*``, ``beta`` histogram + ``beta/mean``, ``perf/*``,
        ``cost/evaluations``; per-group β only as the histogram), ``metrics.jsonl`` and ``best.json``."""
        if self.run_dir is None:
            return
        from discoverygym.tensorboard import BETA, COST_EVALUATIONS

        step = metrics["step"]
        writer = self._tb(step)
        writer.scalars({tag: value for tag, value in metrics.items() if tag not in ("step", "errors")
                        and not tag.startswith("beta/group_") and isinstance(value, (int, float))}, step)
        writer.scalar(COST_EVALUATIONS, step * self.config.groups * self.config.group_size, step)
        writer.histogram(BETA, [v for t, v in metrics.items() if t.startswith("beta/group_")], step)
        every = self.config.image_every
        if every and (step % every == 0 or step == 1) and self.best.solution is not None:
            writer.image(self.env.unwrapped.picture(self.best, 256), step, self.best.score)
        writer.flush()
        with open(self.run_dir / "metrics.jsonl", "a") as fh:
            fh.write(json.dumps(metrics) + "\n")
        self._write_best()

    def _log_samples(self, flat: list, rewards: list[float]) -> None:
        """The first ``log_samples`` LLM responses of the step into ``samples.jsonl`` (text samples only)."""
        if self.run_dir is None or not self.config.log_samples or not flat or getattr(flat[0], "text", None) is None:
            return
        with open(self.run_dir / "samples.jsonl", "a") as fh:
            fh.writelines(json.dumps({"step": self.step_index, "reward": r, "parse_error": s.parse_error,
                                      "apply_error": getattr(s, "apply_error", None), "edit": getattr(s, "edit", None),
                                      "finish_reason": s.finish_reason, "text": s.text[-4000:]}) + "\n"
                          for s, r in list(zip(flat, rewards))[: self.config.log_samples])

    def _write_best(self) -> None:
        if self.run_dir is None:
            return
        data = {"env_id": self.config.env_id, "score": self.best.score, "reward": self.best.reward,
                "step": self.step_index, "sota": dict(self.problem.sota), "initial_score": self.initial.score,
                "state": self.best.to_dict(), "construction": self.best.solution, "program": self.best.code}
        atomic_write_json(self.run_dir / "best.json", data, fsync=False)

    # ------------------------------------------------------------------ checkpoints
    def _save_checkpoint(self) -> None:
        """``checkpoints/step_NNNNNN/`` (learner, archive, generators), then ``checkpoints/latest.json``
        atomically; older step directories are removed."""
        assert self.run_dir is not None
        root = self.run_dir / "checkpoints"
        name = f"step_{self.step_index:06d}"
        tmp = root / f".{name}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        self.learner.save_checkpoint(tmp / "learner")
        self.reuse.save(tmp)
        atomic_write_json(tmp / "trainer.json", {
            "step": self.step_index, "rng": self.rng.bit_generator.state, "best": self.best.to_dict(),
            "initial": self.initial.to_dict(), "history": self.history,
        })
        publish_checkpoint(root, tmp, name, self.step_index)

    def _load_checkpoint(self) -> None:
        assert self.run_dir is not None
        found = latest_checkpoint(self.run_dir / "checkpoints")
        if found is None:
            if not (self.run_dir / "config.json").is_file():
                raise FileNotFoundError(f"no checkpoint in {self.run_dir} to resume from")
            # stopped (Ctrl-C) before its first checkpoint: nothing to restore, start from scratch
            # with the stored configuration, dropping whatever the first step had begun to log
            (self.run_dir / "metrics.jsonl").write_text("")
            truncate_jsonl(self.run_dir / "samples.jsonl", 0)
            self._write_best()
            return
        where = found
        self.learner.load_checkpoint(where / "learner")
        if self.sampler is not self.learner:
            self.sampler.load_adapter(where / "learner" / "adapter", name=f"resume-{where.name}")
        self.reuse.load(where)
        state_path = where / "trainer.json"
        state = _read_json(state_path)
        try:
            self.step_index = int(state["step"])
            self.rng.bit_generator.state = state["rng"]
            self.best = State.from_dict(state["best"])
            self.initial = State.from_dict(state["initial"])
            self.history = list(state["history"])
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ValueError(f"{state_path} is not a trainer checkpoint ({type(exc).__name__}: {exc}); "
                             "the run cannot be resumed from it") from None
        # drop what a killed run logged after its checkpoint (the resumed run logs those steps again)
        (self.run_dir / "metrics.jsonl").write_text("".join(json.dumps(m) + "\n" for m in self.history))
        truncate_jsonl(self.run_dir / "samples.jsonl", self.step_index)


#: xor-ed into rollout ids drawn from the trainer's generator (``default_rng(seed)``, the same stream as the
#: env's own generator, which draws the initial state's id), so that the two never coincide systematically
_ID_SALT = 0x2545F4914F6CDD1D


@dataclass
class _EvalTask:
    """One rollout to judge: a ``pending`` job (or a ready ``action``), its start state, seed and id."""

    pending: Any
    action: Any
    parent: State
    seed: int
    id: str
    metadata: dict


def _run_task(env: Any, task: _EvalTask) -> tuple[Any, State, float]:
    """``(action, child, seconds)``: the action (``task.pending()`` when deferred; a job that raises
    gives an invalid child with the error) judged by ``env.evaluate`` against ``task.parent``, and the
    wall seconds the rollout took where it ran (its job plus its verification; float64 seconds, kept
    out of the child so that children do not depend on timing)."""
    t0 = time.perf_counter()
    action = task.action
    if task.pending is not None:
        try:
            action = task.pending()
        except Exception as exc:  # noqa: BLE001 - an operator failure is a failed rollout, not a crash
            child = State(None, None, env.failure_reward, False, id=task.id, parent_ids=(task.parent.id,),
                          error=f"operator failed: {type(exc).__name__}: {exc}", metadata=dict(task.metadata))
            return None, child, time.perf_counter() - t0
    child = env.evaluate(action, parent=task.parent, seed=task.seed, id=task.id, metadata=task.metadata)
    return action, child, time.perf_counter() - t0


#: the env of a worker process (set by the pool's initializer)
_WORKER_ENV: Any = None


def _worker_init(env: Any, guard: ParentGuard | None = None) -> None:
    global _WORKER_ENV
    if guard is not None:  # die with the trainer, even when it is killed (SIGKILL, SIGTERM in a script)
        guard_parent(guard)
    if env is not None:
        _WORKER_ENV = env
    torch.set_num_threads(1)
    limit_native_threads(1)


def _worker_run(task: _EvalTask) -> tuple[Any, State, float]:
    return _run_task(_WORKER_ENV, task)


class _EvalPool:
    """A pool of ``workers`` processes judging construction rollouts. Workers start from a fresh
    interpreter (``forkserver`` where available, else ``spawn``: forking a trainer that already runs
    threads, e.g. torch's or a tokenizer's, can deadlock the child), each with its own unpickled copy
    of the env. Results come back in task order, so the trainer's results do not depend on the number
    of workers. Each worker dies with the trainer's process even when that is killed without running
    its ``finally`` blocks (SIGKILL; SIGTERM in a script that does not handle it): it watches the
    owner's pid (:func:`discoverygym.search.executors.guard_parent`), so no worker, and then no
    forkserver, is left behind."""

    def __init__(self, env: Any, workers: int) -> None:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        self.workers = workers
        method = "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"
        ctx = mp.get_context(method)
        if method == "forkserver":
            ctx.set_forkserver_preload(["discoverygym.agents.trainer"])
        guard = ParentGuard(os.getpid(), direct=method != "forkserver")
        self._pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_worker_init,
                                         initargs=(env, guard))

    def map(self, tasks: list[_EvalTask]) -> list[tuple[Any, State, float]]:
        """Run the tasks; ``(action, child, seconds)`` per task, in order (:func:`_run_task`)."""
        return list(self._pool.map(_worker_run, tasks))

    def close(self) -> None:
        """Stop the worker processes."""
        self._pool.shutdown(wait=True, cancel_futures=True)


def operator_costs(problem: Any, samples: list[list[Any]], starts: list[State], children: list[State],
                   seconds: list[float]) -> dict[str, float]:
    """Where a step's compute went, per search operator (operator policies only).

    Args:
        problem: the env's problem; its ``operators`` (if any) name the rows, so an operator no
            rollout used this step reports 0 rather than nothing.
        samples: ``[groups][group_size]`` samples; an operator rollout carries ``sample.operator``.
        starts: the start state of each group; children: the judged children in rollout order
            (flattened ``samples``); seconds: each rollout's wall seconds (:func:`_run_task`), same order.

    Returns:
        ``{"perf/rollout_s": Σ seconds, "ops/time_share/<op>": that operator's share of Σ seconds
        (0-1), "ops/improved/<op>": its rollouts whose child is valid and beats its start state's
        reward}``; ``{}`` when no rollout names an operator or ``seconds`` does not match.

    Why: an operator's probability is not its share of the wall budget (one ``restart_hop_slsqp``
    call costs about 40 single moves), and a fixed wall budget buys operators by their time share.
    """
    flat = [(g, s) for g, group in enumerate(samples) for s in group]
    names = [getattr(s, "operator", None) for _, s in flat]
    if not any(names) or len(seconds) != len(flat) or len(children) != len(flat):
        return {}
    declared = [op.name for op in getattr(problem, "operators", ()) or ()]
    total = float(sum(seconds))
    spent = dict.fromkeys(declared, 0.0)
    improved = dict.fromkeys(declared, 0)
    for (g, _), name, child, sec in zip(flat, names, children, seconds):
        if name is None:
            continue
        spent[name] = spent.get(name, 0.0) + sec
        improved[name] = improved.get(name, 0) + bool(child.valid and child.reward > starts[g].reward)
    out: dict[str, float] = {"perf/rollout_s": total}
    out.update({f"ops/time_share/{n}": (v / total if total > 0 else 0.0) for n, v in spent.items()})
    out.update({f"ops/improved/{n}": v for n, v in improved.items()})
    return out


#: what the objective ranks within a group (:attr:`TrainConfig.credit`)
CREDITS = ("reward", "progress-rate")
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


def policy_mismatch(config: TrainConfig, env: gym.Env | None = None) -> str | None:
    """One line saying why ``config.policy`` cannot write the actions of the run's env, or ``None``.

    A registered numeric policy (``gaussian``) proposes constructions; a program env
    (``TriMul-H100-v0``, ``AHC039-v0``...) takes programs, which only an LLM policy writes. Checked
    from the registry (nothing is built) unless ``env`` is given.
    """
    if config.action_mode == "code":
        return None  # an LLM writes programs for every env (code mode of construction envs)
    if env is not None:
        takes_programs = env.unwrapped.action_kind == "code"
    else:
        from discoverygym.envs.registry import PROGRAM_TASKS

        takes_programs = config.env_id in PROGRAM_TASKS
    if not takes_programs:
        return None
    return (f"{config.env_id} takes programs, which policy {config.policy!r} cannot write (it proposes "
            "constructions): train it with an LLM policy (--policy hf:PATH_OR_ID, openai:URL, vllm:MODEL, "
            "tinker:MODEL)")


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


def scored_advantages(objective: Objective, rewards: torch.Tensor, scored: torch.Tensor) -> tuple[Any, torch.Tensor]:
    """Advantages of the scored rollouts only, and the mask of rollouts that enter the update.

    An *unscored* rollout (:attr:`State.unscored <discoverygym.types.State.unscored>`: e.g. a
    correct kernel on a machine without a GPU) carries the failure reward although it did not
    fail, so it must neither get an advantage nor shift its group's baseline. When every rollout
    is scored this is ``objective(rewards)``; otherwise the objective is applied to each group's
    scored rollouts alone (a group with fewer than two is dropped), and unscored rollouts get
    advantage 0 and are left out of the update.

    Args:
        objective: the advantage function (:class:`~discoverygym.agents.objectives.Objective`).
        rewards: ``[groups, rollouts]`` rewards.
        scored: ``[groups, rollouts]`` bool, False for unscored rollouts.

    Returns:
        ``(advantages, use)``: an :class:`~discoverygym.agents.objectives.Advantages` of shape
        ``[groups, rollouts]`` and a ``[groups * rollouts]`` bool mask (rollouts of kept groups
        that were scored).
    """
    from discoverygym.agents.objectives import Advantages

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


def make_train_env(config: TrainConfig) -> gym.Env:
    """The env of a run: ``gym.make(env_id, action_mode=..., **env_kwargs)`` without a render mode.

    Raises:
        ValueError: an env id that is not registered (the message points to ``discoverygym list``).
    """
    try:
        # Gymnasium's passive checker only warns ("Casting input x to numpy array") on list actions
        return gym.make(config.env_id, action_mode=config.action_mode, disable_env_checker=True, **config.env_kwargs)
    except gym.error.Error as exc:
        raise ValueError(f"unknown env {config.env_id!r}; run `discoverygym list` ({exc})") from None


def _read_json(path: Path) -> Any:
    """``path`` parsed as JSON; ``ValueError`` naming the file when unreadable, not UTF-8 or too deep."""
    try:
        return json.loads(path.read_bytes().decode("utf-8"))
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from None
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise ValueError(f"{path} is not valid JSON ({type(exc).__name__}: {exc})") from None


def _step_dirs(root: Path) -> list[tuple[int, Path]]:
    """Published ``step_NNNNNN`` directories under ``root`` holding ``trainer.json``, by step."""
    found = []
    for path in root.glob("step_*"):
        digits = path.name[len("step_"):]
        if digits.isdigit() and path.is_dir() and (path / "trainer.json").is_file():
            found.append((int(digits), path))
    return sorted(found)


def latest_checkpoint(root: Path) -> Path | None:
    """The checkpoint directory a resume continues from, or ``None`` when there is none.

    ``root/latest.json`` names it. Where that file is missing or unusable (the disk filled after
    :func:`publish_checkpoint` moved the step directory into place, before ``latest.json`` was
    written), the published ``step_*`` directory of the highest step is used: a step directory
    is only ever moved into place complete.

    Args:
        root: the run's ``checkpoints`` directory.

    Raises:
        ValueError: ``latest.json`` exists but is unusable (not UTF-8, not JSON, wrong shape, or
            naming a missing directory) and no complete step directory exists; the message names
            the file.
    """
    latest = root / "latest.json"
    problem = None
    if latest.exists():
        try:
            data = _read_json(latest)
            name = data["dir"] if isinstance(data, dict) else None
            if not isinstance(name, str) or "/" in name or not (root / name / "trainer.json").is_file():
                raise ValueError(f"{latest} does not name a checkpoint directory of {root} (got {data!r:.200})")
            return root / name
        except ValueError as exc:
            problem = str(exc)
    steps = _step_dirs(root)
    if steps:
        return steps[-1][1]
    if problem is not None:
        raise ValueError(f"{problem}; no complete step directory to resume from either")
    return None


def has_checkpoint(run_dir: Path) -> bool:
    """Whether ``run_dir`` holds a train checkpoint (``latest.json`` or a published step directory)."""
    root = Path(run_dir) / "checkpoints"
    return (root / "latest.json").exists() or bool(_step_dirs(root))


def truncate_jsonl(path: Path, step: int) -> None:
    """Drop records of ``path`` (JSON lines with a ``step`` field) after ``step``, and a torn last line.

    Records carry the 1-based step of their metrics, so a checkpoint after ``step`` steps keeps
    records with ``record["step"] <= step``. The file is replaced atomically; a missing file is
    left missing.
    """
    if not path.exists():
        return
    kept, changed = [], False
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            try:
                keep = line.endswith("\n") and int(json.loads(line)["step"]) <= step
            except (ValueError, TypeError, KeyError, IndexError, RecursionError):
                keep = False
            if keep:
                kept.append(line)
            else:
                changed = True
    if changed:
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text("".join(kept), encoding="utf-8")
        os.replace(tmp, path)


def publish_checkpoint(root: Path, tmp: Path, name: str, step: int) -> None:
    """Make the finished checkpoint directory ``tmp`` the latest one, atomically.

    Moves ``tmp`` to ``root/name``, points ``root/latest.json`` at it, then removes older
    ``step_*`` directories, so a kill at any moment leaves ``latest.json`` naming a complete one.
    """
    shutil.rmtree(root / name, ignore_errors=True)
    os.replace(tmp, root / name)
    atomic_write_json(root / "latest.json", {"step": step, "dir": name})
    for old in root.glob("step_*"):
        if old.name != name:
            shutil.rmtree(old, ignore_errors=True)



#: Trainer arguments that the thin configs pass through (the rest are TrainConfig fields).
_TRAINER_ARGS = ("initial", "resume", "callback", "objective", "learners", "env", "loss")


class TTTDiscover(Trainer):
    """TTT-Discover (the ``full`` config): adaptive entropic objective, PUCT reuse, KL λ = 0.1.

    Args:
        env_id: a registered env id; run_dir, initial, resume, callback: as :class:`Trainer`;
        **overrides: :class:`TrainConfig` fields.
    """

    def __init__(self, env_id: str, run_dir: str | os.PathLike | None = None, **kwargs: Any) -> None:
        trainer_kw = {k: kwargs.pop(k) for k in _TRAINER_ARGS if k in kwargs}
        super().__init__(ablation_config("full", env_id=env_id, **kwargs), run_dir, **trainer_kw)


class NaiveRL(Trainer):
    """Naive RL (the ``naive-rl`` config): expected-reward (mean baseline) objective, no reuse.

    Args: as :class:`TTTDiscover`.
    """

    def __init__(self, env_id: str, run_dir: str | os.PathLike | None = None, **kwargs: Any) -> None:
        trainer_kw = {k: kwargs.pop(k) for k in _TRAINER_ARGS if k in kwargs}
        super().__init__(ablation_config("naive-rl", env_id=env_id, **kwargs), run_dir, **trainer_kw)


def replace_config(config: TrainConfig, **changes: Any) -> TrainConfig:
    """``dataclasses.replace`` for :class:`TrainConfig` (convenience for sweeps)."""
    return dataclasses.replace(config, **changes)
