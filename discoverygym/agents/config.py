"""The configuration of a training run (:class:`TrainConfig`), its per-env defaults and the ablations.

Imports no torch (nor anything that does), so that the command line (``discoverygym train``,
``compare``) builds its parser, help and checks from here before torch loads.

Apart from the loop (:mod:`discoverygym.agents.trainer`), as TRL keeps ``grpo_config.py`` beside
``grpo_trainer.py``. There is one source of defaults: ``TrainConfig(env_id=E)`` is exactly the
configuration ``discoverygym train E`` runs (the policy, ``groups × group_size`` and learning rate
of the env's problem are resolved here, and the command builds its config through this class with
only the flags the user set).

The LLM knobs (LoRA rank, sampling, token budgets...) live in their own dataclass,
:class:`LLMConfig` (``TrainConfig.llm``). ``config.json`` stores it nested (``"llm": {...}``); the
flat keys of older run directories (``"max_new_tokens": 1024`` at the top level) are still
accepted, by ``TrainConfig(...)`` itself, so an old run resumes.

Example:
    >>> from discoverygym.agents.config import TrainConfig
    >>> cfg = TrainConfig(env_id="CirclePacking-26-v0")
    >>> cfg.policy, cfg.groups, cfg.group_size, cfg.lr
    ('operators', 2, 8, 0.3)
    >>> TrainConfig(env_id="CirclePacking-26-v0", policy="hf:Qwen/Qwen3-8B", max_new_tokens=256).llm.max_new_tokens
    256
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym

from discoverygym.agents.losses import DEFAULT_LOSS
from discoverygym.agents.policies.edits import check_edit_format
from discoverygym.policy import chat_refusal, is_chat_spec, is_llm_spec, split_spec

__all__ = [
    "ABLATIONS",
    "ABLATION_DOCS",
    "ABLATION_HELP",
    "CREDITS",
    "DEFAULT_GROUPS",
    "DEFAULT_LR",
    "DEFAULT_STEPS",
    "LLM_FIELDS",
    "LLM_REALS",
    "OVERRIDE_KEYS",
    "RESUMABLE_FIELDS",
    "TRAIN_REALS",
    "UNLIMITED_STEPS",
    "LLMConfig",
    "TrainConfig",
    "ablation_config",
    "changed_settings",
    "check_reals",
    "config_overrides",
    "default_policy",
    "flat_config",
    "policy_mismatch",
    "recorded_config",
    "register_config",
    "replace_config",
    "unnamed_refusal",
]

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

#: steps of a run with neither a step count nor a wall budget (TTT-Discover §4's 50 training steps)
DEFAULT_STEPS = 50

#: steps of a run with a wall budget and no step count (the budget ends it)
UNLIMITED_STEPS = 10**9

#: TrainConfig fields that a resumed run may change (``discoverygym train --resume``, the benchmark
#: and ``discoverygym compare``); every other field must match the stored config.json
RESUMABLE_FIELDS = ("steps", "budget_s", "image_every", "eval_workers")

#: what the objective ranks within a group (:attr:`TrainConfig.credit`)
CREDITS = ("reward", "progress-rate")

#: policy_kwargs that only the Gaussian policy takes (``--sigma``, ``--polish``, ``--polish-kwargs``):
#: given without a policy, they choose it (:func:`default_policy`)
GAUSSIAN_KWARGS = ("sigma", "polish", "polish_kwargs")


def default_policy(env_id: str, policy_kwargs: dict | None = None) -> str:
    """The numeric policy of ``env_id`` when none is given: ``"gaussian"`` when ``policy_kwargs``
    name a Gaussian-policy option (:data:`GAUSSIAN_KWARGS`), else ``"operators"`` when the env's
    problem declares operators (:attr:`Problem.operators <discoverygym.envs.problem.Problem.operators>`),
    else ``"gaussian"`` (also for program envs, which refuse every numeric policy)."""
    from discoverygym.envs.registry import ENVS

    if any(k in GAUSSIAN_KWARGS for k in policy_kwargs or {}):
        return "gaussian"
    problem = ENVS.get(env_id)
    return "operators" if getattr(problem, "operators", ()) else "gaussian"


def _check_ints(obj: Any, limits: tuple[tuple[str, int], ...]) -> None:
    for key, low in limits:
        value = getattr(obj, key)
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise ValueError(f"{key} must be an integer >= {low}, got {value!r}")


def check_reals(obj: Any, limits: tuple[tuple[str, float, bool], ...], *, flags: bool = False) -> None:
    """Refuse a real-valued setting of ``obj`` that is not a finite number > low (``strict``) or >= low.

    Args:
        obj: a config, or the command line's parsed arguments (``flags=True``).
        limits: ``(name, low, strict)`` per setting (:data:`TRAIN_REALS`, :data:`LLM_REALS`).
        flags: ``obj`` is an ``argparse.Namespace``: a setting that is absent or ``None`` (not given)
            is skipped, and the message names the flag (``--kl-coef``) instead of the field.

    Raises:
        ValueError: the first setting out of range (``--lr inf`` would train NaN adapters).
    """
    for key, low, strict in limits:
        value = getattr(obj, key, None) if flags else getattr(obj, key)
        if flags and value is None:
            continue
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        if not ok or (value <= low if strict else value < low):
            name = f"--{key.replace('_', '-')}" if flags else key
            raise ValueError(f"{name} must be a finite number {'>' if strict else '>='} {low:g}, got {value!r}")


#: the real-valued :class:`TrainConfig` settings and their limits, ``(name, low, strict)``: :func:`check_reals`
TRAIN_REALS = (("lr", 0.0, True), ("kl_coef", 0.0, False), ("adam_eps", 0.0, True))
#: the real-valued :class:`LLMConfig` settings and their limits
LLM_REALS = (("temperature", 0.0, True),)


@dataclass
class LLMConfig:
    """The knobs of LLM learners (``hf:``, ``openai:``, ``vllm:``, ``tinker:``); the numeric policy ignores them.

    Raises:
        ValueError: max_new_tokens, lora_rank, micro_batch < 1; log_samples < 0; a non-finite or
            non-positive temperature; an unknown edit_format.
    """

    lora_rank: int = 32  # TTT-Discover App. A
    temperature: float = 1.0  # TTT-Discover App. A
    max_new_tokens: int = 1024  # ours (the paper's budget is far larger; raise on a GPU)
    thinking_budget: int | None = None  # two-phase forcing (None = off)
    micro_batch: int = 1  # sequences per backward (gradient accumulation; 1: least memory, issue 49)
    device: str = "auto"
    train_model: str | None = None  # the local HF model that learns for openai:/vllm: samplers
    # a LoRA adapter directory merged into the base before training (post-train --warmup's adapter; hf: only)
    warm_start: str | None = None
    # a group that answers one prompt is scored with the prompt run once (hf: only; same gradient, less time)
    shared_prompt: bool = False
    # LLM responses: whole programs (full) or SEARCH/REPLACE blocks against the parent (diff; Aider/OpenEvolve)
    edit_format: str = "full"
    log_samples: int = 4  # unused since samples.jsonl keeps every response (issue 39); kept so old configs load

    def __post_init__(self) -> None:
        _check_ints(self, (("max_new_tokens", 1), ("lora_rank", 1), ("micro_batch", 1), ("log_samples", 0)))
        check_reals(self, LLM_REALS)
        check_edit_format(self.edit_format)


#: the LLMConfig fields, accepted flat by TrainConfig (and found flat in older config.json files)
LLM_FIELDS = tuple(f.name for f in dataclasses.fields(LLMConfig))


def _flat_llm_keys(cls: type) -> type:
    """Let ``cls(...)`` take the :data:`LLM_FIELDS` flat (``max_new_tokens=256``, the command line's
    flags and older ``config.json`` files), folded into its ``llm`` (a flat key wins over ``llm``'s)."""
    init = cls.__init__

    @functools.wraps(init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        flat = {k: kwargs.pop(k) for k in LLM_FIELDS if k in kwargs}
        if flat:
            llm = kwargs.get("llm")
            base = asdict(llm) if isinstance(llm, LLMConfig) else dict(llm or {})
            kwargs["llm"] = {**base, **flat}
        init(self, *args, **kwargs)

    cls.__init__ = __init__
    return cls


@_flat_llm_keys
@dataclass
class TrainConfig:
    """Every hyper-parameter of a training run, for every learner (paper defaults, with sources).

    ``policy`` is a registered policy name (``gaussian``, ``operators``: constructions) or an LLM spec
    (``hf:PATH_OR_ID``, ``openai:URL``, ``vllm:MODEL``, ``tinker:MODEL``: programs, code mode).
    ``policy``, ``groups``/``group_size``, ``lr`` and ``steps`` default per env and learner
    (:func:`default_policy`, :data:`DEFAULT_GROUPS`, :data:`DEFAULT_LR`), resolved at construction so that
    ``config.json`` records the values used and ``TrainConfig(env_id=E)`` is what
    ``discoverygym train E`` runs. The LLM knobs are in :attr:`llm` (:class:`LLMConfig`); the
    constructor also takes them flat (``max_new_tokens=256``).

    Raises:
        ValueError: settings that cannot train: steps, groups, checkpoint_every < 1; group_size < 2
            (every objective needs two rollouts per group); image_every < 0; non-finite or
            non-positive lr / adam_eps, negative kl_coef; Adam β outside [0, 1); budget_s <= 0; an
            unknown polish or credit; a malformed LLM spec; env_kwargs not a dict; kind other than
            "train"; an invalid :class:`LLMConfig`, or edit_format "diff" with a numeric policy.
        TypeError: an unknown field.
    """

    env_id: str = "CirclePacking-26-v0"
    # discoverygym.policy.POLICIES name, or an LLM spec. None: default_policy(env_id) ("operators" where
    # the problem declares operators, "gaussian" elsewhere or when policy_kwargs name a Gaussian option)
    policy: str | None = None
    policy_kwargs: dict = field(default_factory=dict)  # gaussian: {"sigma": 0.02, "polish": "auto"}
    steps: int | None = None  # None: TTT-Discover §4's 50 training steps; unlimited with a budget_s
    groups: int | None = None  # None: DEFAULT_GROUPS of the policy (TTT-Discover §4: 8 start states)
    group_size: int | None = None  # None: DEFAULT_GROUPS of the policy (TTT-Discover §4: 64 rollouts)
    objective: str = "entropic-adaptive"  # TTT-Discover §3.2: entropic, adaptive β (KL budget ln 2)
    objective_kwargs: dict = field(default_factory=dict)  # e.g. {"beta": 2.0} for entropic-constant
    loss: str = DEFAULT_LOSS  # agents.losses.LOSSES name (the loss seam); TTT-Discover App. A: IS loss
    loss_kwargs: dict = field(default_factory=dict)  # e.g. {"eps": 0.2} for a registered PPO-clip loss
    reuse: str = "puct"  # TTT-Discover App. A.2: PUCT; ablations: "epsilon" (ε = 0.1), "none"; any search.SELECTORS name
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
    lr: float | None = None  # None: DEFAULT_LR of the policy, else of its learner family
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
    # when no rollout has a non-zero advantage (every group's rewards equal, e.g. all failures), still
    # take a KL-only step (A = 0). Off (None = False) for every learner: on an adapter still equal to the
    # base the step's gradient is sampler-vs-learner rounding noise, which Adam normalises into a
    # full-size step away from the base (issue 49); off, such a step changes no parameter at all.
    update_on_constant: bool | None = None
    # ours (issue 49), opt-in: graded failure rewards by outcome (outcomes.failure_tier_reward): truncated <
    # no code < syntax error < wrong entry < runtime error / timeout < invalid, all below every valid reward,
    # so a group of failures still ranks its rollouts. Off: every failure gets the env's failure reward.
    failure_tiers: bool = False
    # actions judged at once (threads; each sandbox is its own process). 0 = auto: all CPUs when the
    # env's evaluations are thread-safe programs (env.unwrapped.thread_safe_evaluate, code), else 1.
    eval_workers: int = 0
    env_kwargs: dict = field(default_factory=dict)  # env / task options (n_cases, dataset, device...)
    llm: LLMConfig = field(default_factory=LLMConfig)  # LLM learners only (a dict is accepted: config.json)
    kind: str = "train"  # run-directory kind (config.json); see discoverygym.cli.common.run_kind

    def __post_init__(self) -> None:
        """Resolve the per-env and per-learner defaults, then refuse settings that cannot train."""
        if isinstance(self.llm, dict):
            self.llm = LLMConfig(**self.llm)
        for key in ("policy_kwargs", "objective_kwargs", "loss_kwargs", "reuse_kwargs", "env_kwargs"):
            if not isinstance(getattr(self, key), dict):
                raise ValueError(f"{key} must be a JSON object, got {getattr(self, key)!r}")  # noqa: TRY004
        # 1. defaults: the env's policy, then that policy's groups, learning rate and steps
        if self.policy is None:
            self.policy = default_policy(self.env_id, self.policy_kwargs)
        groups, group_size = DEFAULT_GROUPS.get(self.policy, DEFAULT_GROUPS["*"])
        self.groups = groups if self.groups is None else self.groups
        self.group_size = group_size if self.group_size is None else self.group_size
        if self.steps is None:
            self.steps = DEFAULT_STEPS if self.budget_s is None else UNLIMITED_STEPS
        family = self.family
        if self.lr is None:
            self.lr = DEFAULT_LR.get(self.policy, DEFAULT_LR[family])
        if self.update_on_constant is None:
            self.update_on_constant = False
        # 2. refusals
        if family == "llm":
            split_spec(self.policy)
            if is_chat_spec(self.policy):
                raise ValueError(chat_refusal("train"))
        if self.llm.edit_format != "full" and family != "llm":
            raise ValueError(f"edit_format {self.llm.edit_format!r} needs an LLM policy (hf:, openai:, vllm:, tinker:)")
        hf = family == "llm" and split_spec(self.policy)[0] == "hf"
        for flag, given in (("--warm-start", self.llm.warm_start is not None), ("--shared-prompt", self.llm.shared_prompt)):
            if given and not hf:  # refused, not ignored: only a local hf: model merges an adapter / shares a prompt
                raise ValueError(f"{flag} needs an hf: policy (a local model), got {self.policy!r}")
        if self.llm.warm_start is not None and not (Path(self.llm.warm_start) / "adapter_config.json").is_file():
            raise ValueError(f"--warm-start {self.llm.warm_start}: no adapter there (adapter_config.json missing; "
                             "`post-train --warmup` writes it to <run-dir>/adapter)")
        if self.kind != "train":
            raise ValueError(f"a train configuration has kind 'train', got {self.kind!r}")
        if self.credit not in CREDITS:
            raise ValueError(f"credit must be one of {', '.join(CREDITS)}, got {self.credit!r}")
        _check_ints(self, (("steps", 1), ("groups", 1), ("group_size", 2), ("checkpoint_every", 1),
                           ("image_every", 0), ("eval_workers", 0)))
        check_reals(self, TRAIN_REALS)
        for key in ("adam_beta1", "adam_beta2"):
            value = getattr(self, key)
            if not isinstance(value, (int, float)) or not 0 <= value < 1:
                raise ValueError(f"{key} must be in [0, 1), got {value!r}")
        if self.budget_s is not None and not (isinstance(self.budget_s, (int, float)) and self.budget_s > 0):
            raise ValueError(f"budget_s must be positive, got {self.budget_s!r}")
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
        """Plain JSON (``config.json``: the LLM knobs nested under ``"llm"``; round-trips through ``TrainConfig(**d)``)."""
        return asdict(self)

    def flat(self) -> dict:
        """:meth:`to_dict` with the LLM knobs at the top level (the command line's view: one key per flag)."""
        data = self.to_dict()
        llm = data.pop("llm")
        return {**data, **llm}


#: the ``config.json`` key that lists the seams a run got as Python objects, which no name rebuilds.
UNNAMED_KEY = "unnamed"


def _describe(fn: Any) -> str:
    """``"module.qualname"`` of a function or of an object's class, for messages."""
    target = fn if hasattr(fn, "__qualname__") else type(fn)
    return f"{getattr(target, '__module__', '?')}.{getattr(target, '__qualname__', repr(target))}"


def recorded_config(config: TrainConfig, *, objective: Any = None, loss: Any = None) -> dict:
    """What ``config.json`` records of a run: enough to resume the same algorithm, or that it cannot be.

    ``config.objective`` / ``config.loss`` name registered seams, so :meth:`TrainConfig.to_dict`
    rebuilds them. An ``objective`` or ``loss`` given as a Python object (``Trainer(objective=fn)``)
    has no name: its field is recorded as ``None`` and ``"unnamed": {"objective": "module.qualname"}``
    says so, so that no reader mistakes the configured default for the algorithm that ran.

    Args:
        config: the run's configuration.
        objective: the Python objective the trainer got, or ``None`` (``config.objective`` ran).
        loss: the Python loss the trainer got, or ``None``.

    Returns:
        A JSON-ready dict (:meth:`TrainConfig.to_dict`, plus the ``"unnamed"`` key when needed).
    """
    data = config.to_dict()
    unnamed = {seam: _describe(fn) for seam, fn in (("objective", objective), ("loss", loss)) if fn is not None}
    for seam in unnamed:
        data[seam] = None
    if unnamed:
        data[UNNAMED_KEY] = unnamed
    return data


def unnamed_refusal(stored: dict, run_dir: Any, given: tuple[str, ...] = ()) -> str | None:
    """The one line that refuses to resume a run whose ``config.json`` records an unnamed seam.

    Args:
        stored: the run's ``config.json``.
        run_dir: the run directory (for the message).
        given: the seams the resuming caller passes again as Python objects (they are not refused).

    Returns:
        The message, or ``None`` when every seam of the run is named (or given again).
    """
    unnamed = {seam: name for seam, name in (stored.get(UNNAMED_KEY) or {}).items() if seam not in given}
    if not unnamed:
        return None
    what = " and ".join(f"a Python {seam} ({name})" for seam, name in unnamed.items())
    return (f"{run_dir} was trained with {what} that config.json cannot name, so --resume would continue with "
            "another algorithm: resume it from Python with the same object (Trainer(..., resume=True, "
            f"{'=..., '.join(unnamed)}=...)), or register it (register_objective / register_loss) and start a "
            "new run under its name")


def flat_config(data: dict) -> dict:
    """A stored ``config.json`` (nested ``"llm"``, or an older flat one) with the LLM knobs at the top level."""
    data = dict(data)
    nested = data.pop("llm", None)
    return {**(nested if isinstance(nested, dict) else {}), **data}


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
    # ours (issue 49): TTT-Discover with graded failure rewards (outcomes.failure_tier_reward)
    "failure-tiers": {"failure_tiers": True},
}

#: what each named config is, relative to ``full`` (``discoverygym compare --help``, the verdicts).
#: The three that change one thing each: ``expected-reward`` (objective only), ``no-reuse`` (reuse
#: only), ``no-training`` (training only).
ABLATION_DOCS: dict[str, str] = {
    "full": "TTT-Discover: entropic objective with adaptive beta, PUCT reuse, training on",
    "constant-beta": "objective only: entropic with a fixed beta = 2",
    "expected-reward": "objective only: expected reward (mean baseline, naive RL's objective)",
    "no-training": "training only: the policy stays frozen (objective and reuse as full)",
    "epsilon-greedy": "reuse only: epsilon-greedy start states instead of PUCT",
    "no-reuse": "reuse only: every group starts from the initial state",
    "naive-rl": "TWO things: objective (expected reward) and reuse (none); "
                "expected-reward and no-reuse change one each",
    "best-of-n": "TWO things: training off and reuse none",
    "progress-rate": "credit only (ours): each rollout's gain over its start per second",
    "failure-tiers": "failure rewards only (ours): graded by outcome, truncated < no code < syntax < runtime < "
                     "invalid, all below every valid reward",
}

#: the short form of :data:`ABLATION_DOCS` for ``discoverygym compare --help`` (its ``--configs`` text)
ABLATION_HELP: dict[str, str] = {
    "full": "TTT-Discover (entropic objective, adaptive beta; PUCT reuse; training)",
    "expected-reward": "objective only (mean baseline)",
    "constant-beta": "objective only (entropic, beta = 2)",
    "no-reuse": "reuse only (always the initial state)",
    "epsilon-greedy": "reuse only (epsilon-greedy)",
    "no-training": "training only (frozen policy)",
    "naive-rl": "TWO things, objective (expected reward) and reuse (none)",
    "best-of-n": "TWO things, training off and reuse none",
    "progress-rate": "credit only (gain per second; ours)",
    "failure-tiers": "failure rewards only (graded by outcome, all below every valid reward; ours)",
}

#: the settings a ``--configs`` override may change (``objective=expected-reward``), with value aliases
OVERRIDE_KEYS = ("objective", "reuse", "train", "loss", "credit", "failure_tiers")
_VALUE_ALIASES = {"objective": {"expected-reward": "mean-baseline", "entropic": "entropic-adaptive"},
                  "reuse": {"no-reuse": "none"}}
_BOOLEANS = {"true": True, "on": True, "yes": True, "1": True, "false": False, "off": False, "no": False, "0": False}


def changed_settings(overrides: dict[str, Any]) -> list[str]:
    """The settings a config's overrides change relative to ``full`` (``objective_kwargs`` counted
    with ``objective``, ``loss_kwargs`` with ``loss``, ``reuse_kwargs`` with ``reuse``), in a fixed order."""
    keys = {k.removesuffix("_kwargs") for k in overrides if k != "name"}
    return [k for k in (*OVERRIDE_KEYS, *sorted(keys - set(OVERRIDE_KEYS))) if k in keys]


def config_overrides(spec: str) -> dict[str, Any]:
    """The :class:`TrainConfig` overrides of a config spec: a name of :data:`ABLATIONS` (``naive-rl``),
    or ``[NAME+]KEY=VALUE[+KEY=VALUE...]`` on ``NAME`` (default ``full``), KEY one of
    :data:`OVERRIDE_KEYS` (``objective=expected-reward``, ``full+reuse=none``,
    ``objective=grpo+train=false``). Values: a registered objective / loss name (aliases
    ``expected-reward`` = ``mean-baseline``, ``entropic`` = ``entropic-adaptive``), a reuse rule
    (``puct``, ``epsilon``, ``none``...), ``true``/``false`` for ``train`` and ``failure_tiers``, a credit.

    Raises:
        ValueError: an unknown name or key, a malformed part, an unknown objective, loss or credit.
    """
    if spec in ABLATIONS:
        return dict(ABLATIONS[spec])
    parts = [p.strip() for p in spec.split("+")]
    out: dict[str, Any] = {}
    if parts and "=" not in parts[0]:
        if parts[0] not in ABLATIONS:
            raise ValueError(f"unknown config {parts[0]!r}; known: {', '.join(ABLATIONS)}, or overrides such as "
                             "objective=expected-reward (keys: " + ", ".join(OVERRIDE_KEYS) + ")")
        out = dict(ABLATIONS[parts.pop(0)])
    for part in parts:
        key, eq, value = (t.strip() for t in part.partition("="))
        if not eq or not value or key not in OVERRIDE_KEYS:
            raise ValueError(f"config {spec!r}: {part!r} is not KEY=VALUE with KEY one of {', '.join(OVERRIDE_KEYS)}")
        value = _VALUE_ALIASES.get(key, {}).get(value, value)
        if key in ("train", "failure_tiers"):
            if value.lower() not in _BOOLEANS:
                raise ValueError(f"config {spec!r}: {key} takes true or false, got {value!r}")
            out[key] = _BOOLEANS[value.lower()]
            continue
        if key == "objective":
            from discoverygym.agents.objectives import OBJECTIVES

            if value not in OBJECTIVES:
                raise ValueError(f"config {spec!r}: unknown objective {value!r}; known: {', '.join(OBJECTIVES)}")
            out.pop("objective_kwargs", None)
        if key == "loss":
            from discoverygym.agents.losses import LOSSES

            if value not in LOSSES:
                raise ValueError(f"config {spec!r}: unknown loss {value!r}; known: {', '.join(LOSSES)}")
            out.pop("loss_kwargs", None)
        if key == "credit" and value not in CREDITS:
            raise ValueError(f"config {spec!r}: credit must be one of {', '.join(CREDITS)}, got {value!r}")
        out[key] = value
    return out


def register_config(name: str, overrides: dict[str, Any], doc: str = "") -> None:
    """Make ``name`` a config of ``train --agent``, ``compare --configs`` and the benchmark: ``full``
    with ``overrides`` (:class:`TrainConfig` fields, e.g. ``{"objective": "grpo"}``), described by
    ``doc`` in ``compare``'s output (default: the settings it changes). A plugin file's entry point
    (``discoverygym compare ... --plugin FILE``); registering the same overrides again is a no-op.

    Raises:
        ValueError: ``name`` is taken by other overrides, contains ``=``, ``+`` or ``,``, or an
            override is not a TrainConfig field.
    """
    fields = {f.name for f in dataclasses.fields(TrainConfig)} | set(LLM_FIELDS)
    unknown = sorted(set(overrides) - fields)
    if unknown:
        raise ValueError(f"config {name!r}: {', '.join(unknown)} are not TrainConfig fields")
    if not name or any(c in name for c in "=+,/ "):
        raise ValueError(f"config name {name!r} must be non-empty, without '=', '+', ',', '/' or spaces")
    if name in ABLATIONS and ABLATIONS[name] != overrides:
        raise ValueError(f"config {name!r} is already registered with other settings: {ABLATIONS[name]}")
    ABLATIONS[name] = dict(overrides)
    ABLATION_DOCS[name] = doc or ("changes " + ", ".join(changed_settings(overrides)) if overrides else "= full")


def ablation_config(name: str, **overrides: Any) -> TrainConfig:
    """The :class:`TrainConfig` of a config spec (an ablation name, ``full``, ``naive-rl``..., or
    overrides such as ``objective=expected-reward``: :func:`config_overrides`) with ``overrides`` applied.

    Raises:
        ValueError: unknown config; an override that changes a setting the config itself fixes
            (``progress-rate`` with ``credit="reward"``); an invalid override (:class:`TrainConfig`).
    """
    base = config_overrides(name)
    clash = sorted(k for k, v in base.items() if k in overrides and overrides[k] != v)
    if clash:
        raise ValueError(f"config {name!r} sets {', '.join(f'{k}={base[k]!r}' for k in clash)}; the "
                         f"override {', '.join(f'{k}={overrides[k]!r}' for k in clash)} would make it another "
                         "config under its name: choose the config that has it")
    merged = {**base, **overrides}
    merged.setdefault("name", name)
    return TrainConfig(**merged)


def replace_config(config: TrainConfig, **changes: Any) -> TrainConfig:
    """``dataclasses.replace`` for :class:`TrainConfig` (convenience for sweeps)."""
    return dataclasses.replace(config, **changes)


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
