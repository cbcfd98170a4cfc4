"""One trainer for TTT-Discover, naive RL and every ablation: rollouts → advantages → loss → step.

Read :meth:`Trainer.train_step` top to bottom (CleanRL style):

1. **Start states**: ``reuse.select(groups)`` (PUCT with lineage blocking, ε-greedy, or always the
   initial state); when the rule returns fewer than ``groups`` states (early on the archive holds
   one), the picks are repeated cyclically to fill the groups.
2. **Rollouts**: ``group_size`` proposals per start state from the policy; each is evaluated by the
   env (``reset(options={"state": s}); step(action)``), which records it in the reuse archive.
3. **Advantages**: ``objective(rewards[groups, group_size])`` (:mod:`~discoverygym.agents.objectives`);
   constant-reward groups are dropped.
4. **Loss**: token-level KL shaping ``A_t += λ (avg − Δ_t)`` against the frozen reference, then the
   importance-sampling REINFORCE loss ``−Σ_t exp(log π_θ − log π_sampler) · A_t`` (summed, unclipped).
5. **Update**: one Adam step per batch.
6. **Log + checkpoint**: TensorBoard scalars (+ an image of the best construction every
   ``image_every`` steps), ``metrics.jsonl``, ``best.json``, and a checkpoint (policy, reference,
   optimizer, archive, rule statistics, generator states) from which ``resume`` continues exactly.

The trainer never names a problem: the env owns its problem and the policy owns its polish.
Source: TTT-Discover (arXiv 2601.16175) §3 and App. A; docs/algorithms.md.

Ablations (TTT-Discover Table "ablations") are data, :data:`ABLATIONS`: eight configs, one code path.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from discoverygym.agents.objectives import Objective, kl_shaping, make_objective
from discoverygym.agents.policies import SamplingContext, make_trainable_policy
from discoverygym.envs.base import DiscoveryEnv
from discoverygym.envs.registry import ENVS
from discoverygym.search.archive import atomic_write_json
from discoverygym.search.reuse import EpsilonGreedyReuse, NoReuse, PUCTReuse, ReuseWrapper
from discoverygym.types import State

__all__ = ["ABLATIONS", "NaiveRL", "TTTDiscover", "TrainConfig", "TrainResult", "Trainer", "ablation_config"]


@dataclass
class TrainConfig:
    """Every hyper-parameter of a training run (paper defaults, with sources).

    The numeric policy's learning rate is ours: the paper's 4e-5 is for LoRA adapters of an LLM
    and moves a 100-parameter Gaussian policy by nothing visible in 50 steps.
    """

    env_id: str = "CirclePacking-26-v0"
    steps: int = 50  # TTT-Discover §4: 50 training steps
    groups: int = 8  # TTT-Discover §4: 8 groups (start states) per step
    group_size: int = 64  # TTT-Discover §4: 64 rollouts per group (512 per step)
    objective: str = "entropic-adaptive"  # TTT-Discover §3.2: entropic, adaptive β (KL budget ln 2)
    objective_kwargs: dict = field(default_factory=dict)  # e.g. {"beta": 2.0} for entropic-constant
    reuse: str = "puct"  # TTT-Discover App. A.2: PUCT; ablations: "epsilon" (ε = 0.1), "none"
    reuse_kwargs: dict = field(default_factory=dict)  # e.g. {"c": 1.0} (App. A.2)
    train: bool = True  # False: the "no training" / "best-of-N" ablations (policy frozen)
    kl_coef: float = 0.1  # TTT-Discover App. A: λ of token-level KL shaping (0.01 for AtCoder)
    lr: float = 0.05  # ours (paper: 4e-5 for LoRA rank 32; see the class docstring)
    adam_beta1: float = 0.9  # TTT-Discover App. A
    adam_beta2: float = 0.95  # TTT-Discover App. A
    adam_eps: float = 1e-8  # TTT-Discover App. A
    policy: str = "gaussian"  # discoverygym.agents.policies.TRAINABLE_POLICIES
    policy_kwargs: dict = field(default_factory=dict)  # e.g. {"sigma": 0.02, "polish": "auto"}
    seed: int = 0  # seeds the env (initial state, state ids) and the policy's generator
    image_every: int = 5  # steps between TensorBoard images of the best construction (0 = never)
    checkpoint_every: int = 1  # steps between checkpoints (resume restarts at the last one)
    budget_s: float | None = None  # wall-clock budget (s): no step starts that would overrun it
    init: str | None = None  # the --init construction file (recorded; the construction is passed in)
    name: str = "full"  # ablation / config name (for tables and logs)
    torch_threads: int | None = 1  # ours: tiny policies run ~25x faster single-threaded (None = leave)

    def __post_init__(self) -> None:
        """Refuse settings that cannot train (found by QA: they crashed mid-run or trained on nothing).

        Raises:
            ValueError: steps, groups < 1; group_size < 2 (every objective needs two rollouts per
                group); budget_s <= 0; image_every or checkpoint_every < 0 / < 1; an unknown polish.
        """
        for key, low in (("steps", 1), ("groups", 1), ("group_size", 2), ("checkpoint_every", 1),
                         ("image_every", 0)):
            value = getattr(self, key)
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise ValueError(f"{key} must be an integer >= {low}, got {value!r}")
        if self.budget_s is not None and not self.budget_s > 0:
            raise ValueError(f"budget_s must be positive, got {self.budget_s!r}")
        polish = self.policy_kwargs.get("polish")
        if polish not in (None, "none", "auto"):
            from discoverygym.agents.policies.polish import POLISHERS

            if polish not in POLISHERS:
                raise ValueError(f"unknown polish {polish!r}; known: none, auto, {', '.join(POLISHERS)}")

    def to_dict(self) -> dict:
        """Plain JSON."""
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
}


def ablation_config(name: str, **overrides: Any) -> TrainConfig:
    """The :class:`TrainConfig` of an ablation (``full``, ``naive-rl``...) with ``overrides`` applied.

    Raises:
        ValueError: unknown ablation name.
    """
    if name not in ABLATIONS:
        raise ValueError(f"unknown config {name!r}; known: {', '.join(ABLATIONS)}")
    merged = {**ABLATIONS[name], **overrides}
    merged.setdefault("name", name)
    return TrainConfig(**merged)


def make_reuse(name: str, env: DiscoveryEnv, initial: State, **kwargs: Any) -> ReuseWrapper:
    """The reuse wrapper ``name`` (``puct``, ``epsilon``, ``none``) seeded with ``initial``.

    Raises:
        ValueError: unknown name.
    """
    classes = {"puct": PUCTReuse, "epsilon": EpsilonGreedyReuse, "none": NoReuse}
    if name not in classes:
        raise ValueError(f"unknown reuse rule {name!r}; known: {', '.join(classes)}")
    return classes[name](env, initial_states=[initial], **kwargs)


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
    """Online RL on one discovery env (TTT-Discover and its ablations; see the module docstring).

    Args:
        config: hyper-parameters (:class:`TrainConfig`; see :data:`ABLATIONS`).
        run_dir: run directory (``config.json``, ``metrics.jsonl``, ``best.json``, ``archive.json``,
            TensorBoard events, ``checkpoints/``); ``None`` = nothing written (tests).
        initial: a construction to start from (``--init``; re-verified), else the env's seeded
            initial state.
        objective: a custom advantage function (the plug-in hook: any
            :class:`~discoverygym.agents.objectives.Objective`); default ``config.objective``.
        resume: continue the run stored in ``run_dir`` (its config must match the architecture).
        callback: called with each step's metrics (progress display).

    Raises:
        ValueError: unknown env id / objective / reuse rule / policy, or an invalid ``initial``.
        FileNotFoundError: ``resume`` without a checkpoint in ``run_dir``.
    """

    def __init__(
        self,
        config: TrainConfig,
        run_dir: str | os.PathLike | None = None,
        initial: Any = None,
        objective: Objective | None = None,
        resume: bool = False,
        callback: Callable[[dict], None] | None = None,
    ) -> None:
        if config.env_id not in ENVS:
            raise ValueError(f"unknown env {config.env_id!r}; run `discoverygym list`")
        self.config = config
        self.run_dir = Path(run_dir) if run_dir is not None else None
        self.callback = callback
        self.objective = objective or make_objective(config.objective, **config.objective_kwargs)
        self.env = DiscoveryEnv(ENVS[config.env_id], render_mode=None)
        _, info = self.env.reset(seed=config.seed)
        start = info["state"]
        if initial is not None:
            start = self.env.evaluate_construction(initial, id=start.id)
            if not start.valid:
                raise ValueError(f"the initial construction is invalid: {start.error}")
        self.initial: State = start
        self.best: State = start
        self.reuse = make_reuse(config.reuse, self.env, start, **config.reuse_kwargs)
        self.rng = np.random.default_rng(config.seed)
        torch.manual_seed(config.seed)
        if config.torch_threads:
            torch.set_num_threads(config.torch_threads)  # process-wide (torch has no per-module setting)
        shape = np.shape(start.solution)
        self.policy = make_trainable_policy(config.policy, shape, problem_name=self.env.problem.name,
                                            **config.policy_kwargs)
        self.reference = self.policy.reference()
        self.optimizer = torch.optim.Adam(self.policy.parameters(), lr=config.lr,
                                          betas=(config.adam_beta1, config.adam_beta2), eps=config.adam_eps)
        self.step_index = 0
        self.history: list[dict] = []
        self._writer: Any = None
        if resume:
            self._load_checkpoint()
        elif self.run_dir is not None:
            if (self.run_dir / "checkpoints" / "latest.json").exists():
                raise FileExistsError(f"{self.run_dir} already holds a run; pass resume=True (--resume)")
            self.run_dir.mkdir(parents=True, exist_ok=True)
            atomic_write_json(self.run_dir / "config.json", config.to_dict())
            self._write_best()

    # ------------------------------------------------------------------ the algorithm
    def train_step(self) -> dict:
        """One step: rollouts → advantages → IS loss with KL shaping → Adam step. Returns metrics."""
        cfg, t0 = self.config, time.perf_counter()
        # 1. start states (reuse rule), filled cyclically up to `groups`
        picks = self.reuse.select(cfg.groups)
        starts = [picks[i % len(picks)] for i in range(cfg.groups)]
        contexts = [SamplingContext(parent=s, inspirations=(s,), problem=self.env.problem, step=self.step_index)
                    for s in starts]
        # 2. rollouts: sample, then evaluate each proposal in the env (recorded in the archive)
        samples = self.policy.sample(contexts, cfg.group_size, self.rng)
        t_eval = time.perf_counter()
        rewards = torch.zeros(cfg.groups, cfg.group_size, dtype=torch.float64)
        n_valid = 0
        for g, start in enumerate(starts):
            for k, sample in enumerate(samples[g]):
                self.reuse.reset(options={"state": start})
                _, reward, _, _, info = self.reuse.step(sample.action)
                rewards[g, k] = reward
                child: State = info["state"]
                n_valid += child.valid
                if child.valid and child.reward > self.best.reward:
                    self.best = child
        eval_s = time.perf_counter() - t_eval
        # 3. advantages from the group rewards (the objective hook)
        adv = self.objective(rewards)
        flat = [s for group in samples for s in group]
        old_lp = torch.stack([s.logprob for s in flat])  # [B, T] behaviour log-probs
        mask = torch.ones_like(old_lp, dtype=torch.bool)
        keep = adv.keep.repeat_interleave(cfg.group_size)  # [B] rollouts of kept groups
        with torch.no_grad():
            delta = old_lp - self.reference.token_logprobs(flat)  # Δ_t = log π_sampler − log π_ref
        loss_value = 0.0
        if cfg.train and bool(keep.any()):
            # 4. token-level KL shaping, then the importance-sampling REINFORCE loss (summed)
            a_tok = adv.adv.reshape(-1, 1).to(old_lp.dtype).expand_as(old_lp)
            a_tok = kl_shaping(a_tok[keep], delta[keep], mask[keep], cfg.kl_coef)
            new_lp = self.policy.token_logprobs([s for s, k in zip(flat, keep) if k])
            loss = -(torch.exp(new_lp - old_lp[keep]) * a_tok).sum()
            # 5. one Adam step per batch
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            loss_value = float(loss.detach())
        self.step_index += 1
        step_s = time.perf_counter() - t0
        beta = adv.beta[adv.keep]
        metrics = {
            "step": self.step_index,
            "reward/max": float(rewards.max()), "reward/mean": float(rewards.mean()),
            "reward/min": float(rewards.min()),
            "score/best": self.best.score, "reward/best": self.best.reward,
            "beta/mean": float(beta.mean()) if beta.numel() and not beta.isnan().all() else None,
            **{f"beta/group_{g}": float(adv.beta[g]) for g in range(cfg.groups) if adv.keep[g]
               and not math.isnan(float(adv.beta[g]))},
            "kl": float(delta.sum(-1).mean()), "loss": loss_value,
            "groups_kept": int(adv.keep.sum()), "valid_fraction": n_valid / rewards.numel(),
            **{f"policy/{k}": v for k, v in self.policy.stats().items()},
            "archive/size": len(self.reuse.archive),
            "perf/evals_per_s": rewards.numel() / max(eval_s, 1e-9), "perf/step_time_s": step_s,
        }
        return metrics

    def run(self) -> TrainResult:
        """Train until ``config.steps`` (or the wall budget), logging and checkpointing each step."""
        t0 = time.perf_counter()
        run_steps(self)
        if self.run_dir is not None:
            self.reuse.close_batch()
            self.reuse.archive.save(self.run_dir / "archive.json")
        return TrainResult(self.best, self.initial, self.step_index, self.history, time.perf_counter() - t0)

    # ------------------------------------------------------------------ logging
    def _tb(self) -> Any:
        if self._writer is None and self.run_dir is not None:
            from tensorboardX import SummaryWriter

            self._writer = SummaryWriter(logdir=str(self.run_dir), purge_step=self.step_index or None)
        return self._writer

    def _log(self, metrics: dict) -> None:
        if self.run_dir is None:
            return
        writer, step = self._tb(), metrics["step"]
        for tag, value in metrics.items():
            if tag != "step" and value is not None:
                writer.add_scalar(tag, float(value), step)
        every = self.config.image_every
        if every and (step % every == 0 or step == 1):
            image = self.env.problem.render(np.asarray(self.best.solution, dtype=np.float64), 256)
            writer.add_image("best_construction", np.asarray(image, dtype=np.uint8), step, dataformats="HWC")
        with open(self.run_dir / "metrics.jsonl", "a") as fh:
            fh.write(json.dumps(metrics) + "\n")
        self._write_best()

    def _write_best(self) -> None:
        if self.run_dir is None:
            return
        data = {"env_id": self.config.env_id, "score": self.best.score, "reward": self.best.reward,
                "step": self.step_index, "sota": self.env.problem.sota, "initial_score": self.initial.score,
                "state": self.best.to_dict(), "construction": self.best.solution}
        atomic_write_json(self.run_dir / "best.json", data, fsync=False)

    # ------------------------------------------------------------------ checkpoints
    def _save_checkpoint(self) -> None:
        """``checkpoints/step_NNNNNN/`` (policy + optimizer + archive + generators), then
        ``checkpoints/latest.json`` atomically; older step directories are removed."""
        assert self.run_dir is not None
        root = self.run_dir / "checkpoints"
        name = f"step_{self.step_index:06d}"
        tmp = root / f".{name}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        torch.save({"policy": self.policy.state_dict(), "reference": self.reference.state_dict(),
                    "optimizer": self.optimizer.state_dict()}, tmp / "model.pt")
        self.reuse.save(tmp)
        atomic_write_json(tmp / "trainer.json", {
            "step": self.step_index, "rng": self.rng.bit_generator.state, "best": self.best.to_dict(),
            "initial": self.initial.to_dict(), "history": self.history,
        })
        publish_checkpoint(root, tmp, name, self.step_index)

    def _load_checkpoint(self) -> None:
        assert self.run_dir is not None
        latest = self.run_dir / "checkpoints" / "latest.json"
        if not latest.exists():
            raise FileNotFoundError(f"no checkpoint in {self.run_dir} to resume from")
        where = self.run_dir / "checkpoints" / json.loads(latest.read_text())["dir"]
        model = torch.load(where / "model.pt", weights_only=True)
        self.policy.load_state_dict(model["policy"])
        self.reference.load_state_dict(model["reference"])
        self.optimizer.load_state_dict(model["optimizer"])
        self.reuse.load(where)
        state = json.loads((where / "trainer.json").read_text())
        self.step_index = state["step"]
        self.rng.bit_generator.state = state["rng"]
        self.best = State.from_dict(state["best"])
        self.initial = State.from_dict(state["initial"])
        self.history = state["history"]
        metrics = self.run_dir / "metrics.jsonl"  # drop lines logged after the checkpoint
        metrics.write_text("".join(json.dumps(m) + "\n" for m in self.history))


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


def run_steps(trainer: Any) -> None:
    """The step loop shared by :class:`Trainer` and the LLM trainer.

    Runs ``trainer.train_step()`` until ``config.steps`` steps are done or the next step would
    exceed ``config.budget_s`` (seconds, judged by the last step's time); logs each step's metrics,
    calls ``trainer.callback``, checkpoints every ``config.checkpoint_every`` steps and at the end,
    and always closes the TensorBoard writer.
    """
    cfg, t0, last = trainer.config, time.perf_counter(), 0.0
    try:
        while trainer.step_index < cfg.steps:
            if cfg.budget_s is not None and time.perf_counter() - t0 + last > cfg.budget_s:
                break
            metrics = trainer.train_step()
            last = metrics["perf/step_time_s"]
            trainer.history.append(metrics)
            trainer._log(metrics)
            if trainer.callback is not None:
                trainer.callback(metrics)
            if trainer.run_dir is not None and (trainer.step_index % cfg.checkpoint_every == 0
                                                or trainer.step_index == cfg.steps):
                trainer._save_checkpoint()
    finally:
        if trainer._writer is not None:
            trainer._writer.close()
            trainer._writer = None


class TTTDiscover(Trainer):
    """TTT-Discover (the ``full`` config): adaptive entropic objective, PUCT reuse, KL λ = 0.1.

    Args:
        env_id: a registered env id; run_dir, initial, resume, callback: as :class:`Trainer`;
        **overrides: :class:`TrainConfig` fields.
    """

    def __init__(self, env_id: str, run_dir: str | os.PathLike | None = None, **kwargs: Any) -> None:
        trainer_kw = {k: kwargs.pop(k) for k in ("initial", "resume", "callback", "objective") if k in kwargs}
        super().__init__(ablation_config("full", env_id=env_id, **kwargs), run_dir, **trainer_kw)


class NaiveRL(Trainer):
    """Naive RL (the ``naive-rl`` config): expected-reward (mean baseline) objective, no reuse.

    Args: as :class:`TTTDiscover`.
    """

    def __init__(self, env_id: str, run_dir: str | os.PathLike | None = None, **kwargs: Any) -> None:
        trainer_kw = {k: kwargs.pop(k) for k in ("initial", "resume", "callback", "objective") if k in kwargs}
        super().__init__(ablation_config("naive-rl", env_id=env_id, **kwargs), run_dir, **trainer_kw)


def replace_config(config: TrainConfig, **changes: Any) -> TrainConfig:
    """``dataclasses.replace`` for :class:`TrainConfig` (convenience for sweeps)."""
    return dataclasses.replace(config, **changes)
