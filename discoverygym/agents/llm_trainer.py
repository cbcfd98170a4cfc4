"""TTT-Discover (and its ablations) with an LLM policy writing programs (``action_mode="code"``).

The numeric :class:`~discoverygym.agents.trainer.Trainer` proposes constructions; this one runs
the papers' setting: an LLM reads a prompt built from a start state and writes a program, the
program is run in the sandbox (math envs) or judged by its task (program envs), and LoRA weights
are trained on the rewards. One step, top to bottom:

1. **Start states**: ``reuse.select(groups)`` (PUCT / ε-greedy / none), filled cyclically.
2. **Prompts + sampling**: :mod:`~discoverygym.agents.prompts` builds one prompt per start state;
   the sampler returns ``group_size`` :class:`~.policies.llm.LLMSample` per prompt (token ids,
   behaviour log-probs, the parsed program).
3. **Evaluation**: each program through the reuse wrapper (``reset(state)``, ``step(program)``),
   which records it in the archive. Unparseable responses are evaluated as a failing stub.
4. **Advantages**: the objective on ``[groups, group_size]`` rewards (entropic, adaptive β).
5. **Update**: the learner's ``train_step`` (KL-shaped importance-sampling loss, one Adam step);
   when sampler and learner differ (vLLM server / engine), the new adapter is saved and loaded
   into the sampler under a new name.
6. **Log + checkpoint**: TensorBoard scalars, ``metrics.jsonl``, ``samples.jsonl`` (responses),
   ``best.json``, ``checkpoints/step_N`` (adapter, optimizer, archive, generator) for ``resume``.

Source: TTT-Discover (arXiv 2601.16175) §3, App. A; docs/algorithms.md.
"""

from __future__ import annotations

import contextlib
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

import numpy as np
import torch

from discoverygym.agents.objectives import make_objective
from discoverygym.agents.policies import SamplingContext
from discoverygym.agents.policies.llm import split_spec
from discoverygym.search.archive import atomic_write_json
from discoverygym.search.reuse import EpsilonGreedyReuse, NoReuse, PUCTReuse
from discoverygym.types import State

__all__ = ["LLMTrainConfig", "LLMTrainer", "build_backends", "make_code_env"]


@dataclass
class LLMTrainConfig:
    """Hyper-parameters of an LLM training run (paper defaults, with sources).

    ``policy`` is a backend spec: ``hf:PATH_OR_ID``, ``openai:URL``, ``vllm:MODEL``, ``tinker:MODEL``.
    ``train_model`` names the local HF model that trains the LoRA adapter for the ``openai``/``vllm``
    samplers (default: the same model id for ``vllm``; required for ``openai``).
    """

    env_id: str = "CirclePacking-26-v0"
    policy: str = "hf:Qwen/Qwen3-8B"
    steps: int = 50  # TTT-Discover §4
    groups: int = 8  # TTT-Discover §4
    group_size: int = 64  # TTT-Discover §4
    objective: str = "entropic-adaptive"  # TTT-Discover §3.2
    objective_kwargs: dict = field(default_factory=dict)
    reuse: str = "puct"  # TTT-Discover App. A.2
    reuse_kwargs: dict = field(default_factory=dict)
    train: bool = True
    kl_coef: float = 0.1  # TTT-Discover App. A (0.01 for AtCoder)
    lr: float = 4e-5  # TTT-Discover App. A
    adam_beta1: float = 0.9
    adam_beta2: float = 0.95
    adam_eps: float = 1e-8
    lora_rank: int = 32  # TTT-Discover App. A
    temperature: float = 1.0  # TTT-Discover App. A
    max_new_tokens: int = 1024  # ours (the paper's budget is far larger; raise on a GPU)
    thinking_budget: int | None = None  # two-phase forcing (None = off)
    micro_batch: int = 4  # sequences per backward (gradient accumulation)
    device: str = "auto"
    train_model: str | None = None
    env_kwargs: dict = field(default_factory=dict)  # task options (n_cases, dataset, device...)
    seed: int = 0
    checkpoint_every: int = 1
    budget_s: float | None = None
    name: str = "full"
    log_samples: int = 4  # responses per step written to samples.jsonl (0 = none)
    # ours: when every group is dropped (all rewards equal, e.g. all failures), still take a KL-only
    # step (A = 0, only the KL shaping term): the adapter is pulled toward the base model and every
    # stage runs. False = skip the update, as the paper's code does.
    update_on_constant: bool = True
    torch_threads: int | None = 1  # ours: CPU threads for torch (None = leave); small models run faster on 1
    # programs judged at once (threads; each sandbox is its own process). 0 = auto: all CPUs for math
    # envs, 1 for program envs (their tasks need not be thread-safe).
    eval_workers: int = 0

    def __post_init__(self) -> None:
        """Raises ValueError for settings that cannot train (steps/groups < 1, group_size < 2, bad spec)."""
        for key, low in (("steps", 1), ("groups", 1), ("group_size", 2), ("checkpoint_every", 1),
                         ("max_new_tokens", 1), ("lora_rank", 1), ("micro_batch", 1)):
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
        if not isinstance(self.env_kwargs, dict):
            raise ValueError(f"task options (env_kwargs) must be a JSON object, got {self.env_kwargs!r}")  # noqa: TRY004
        split_spec(self.policy)

    def to_dict(self) -> dict:
        """Plain JSON."""
        return asdict(self)


def make_code_env(env_id: str, **env_kwargs: Any) -> Any:
    """A code-mode env for any registered id (math: ``DiscoveryEnv(action_mode="code")``; program envs).

    Raises:
        ValueError: unknown env id.
    """
    from discoverygym.envs.base import DiscoveryEnv
    from discoverygym.envs.registry import ENVS, PROGRAM_TASKS, make_env

    if env_id in ENVS:
        return DiscoveryEnv(ENVS[env_id], action_mode="code", render_mode=None, **env_kwargs)
    if env_id in PROGRAM_TASKS:
        return make_env(env_id, **env_kwargs)
    raise ValueError(f"unknown env {env_id!r}; run `discoverygym list`")


def build_backends(cfg: LLMTrainConfig) -> tuple[Any, Any]:
    """``(sampler, learner)`` for ``cfg.policy`` (the same object for ``hf`` and ``tinker``).

    Raises:
        ValueError: ``openai:`` without ``train_model`` or with a malformed URL.
        BackendUnavailable / ModelUnavailable: from the backend (an unreachable server, a missing
            SDK or key are BackendUnavailable).
    """
    backend, target = split_spec(cfg.policy)
    hf_kw = {"device": cfg.device, "lora_rank": cfg.lora_rank, "max_new_tokens": cfg.max_new_tokens,
             "temperature": cfg.temperature, "thinking_budget": cfg.thinking_budget, "micro_batch": cfg.micro_batch,
             "lr": cfg.lr, "adam_beta1": cfg.adam_beta1, "adam_beta2": cfg.adam_beta2, "adam_eps": cfg.adam_eps,
             "seed": cfg.seed}
    if backend == "hf":
        from discoverygym.agents.policies.hf import HFPolicy

        policy = HFPolicy(target, **hf_kw)
        return policy, policy
    if backend == "tinker":
        from discoverygym.agents.policies.tinker_policy import TinkerPolicy

        policy = TinkerPolicy(target, lora_rank=cfg.lora_rank, max_new_tokens=cfg.max_new_tokens,
                              temperature=cfg.temperature, lr=cfg.lr, adam_beta1=cfg.adam_beta1,
                              adam_beta2=cfg.adam_beta2, adam_eps=cfg.adam_eps, seed=cfg.seed)
        return policy, policy
    from discoverygym.agents.policies.hf import HFPolicy

    if backend == "openai":
        from discoverygym.agents.policies.openai_server import check_url, probe_server

        check_url(target)  # a malformed URL is refused before the learner loads
        if not cfg.train_model:
            raise ValueError("--policy openai:URL trains a local copy: pass --train-model PATH_OR_ID "
                             "(the model the server serves)")
        probe_server(target)  # an unreachable server is reported before the learner loads
        from discoverygym.agents.policies.openai_server import OpenAIServerPolicy

        learner = HFPolicy(cfg.train_model, **hf_kw)
        sampler = OpenAIServerPolicy(target, tokenizer=learner.tokenizer, max_new_tokens=cfg.max_new_tokens,
                                     temperature=cfg.temperature)
        return sampler, learner
    from discoverygym.agents.policies.vllm_engine import VLLMPolicy

    sampler = VLLMPolicy(target, max_new_tokens=cfg.max_new_tokens, temperature=cfg.temperature,
                         max_lora_rank=cfg.lora_rank)
    learner = HFPolicy(cfg.train_model or target, **hf_kw)
    return sampler, learner


@contextlib.contextmanager
def _precomputed(env: Any, state: State | None) -> Any:
    """Within the block, ``env.evaluate_program`` returns ``state`` (re-labelled with the id, parents
    and metadata the env's ``step`` passes) instead of running the program again."""
    if state is None:
        yield
        return

    def replay(source: Any, parent: Any = None, seed: int = 0, **fields: Any) -> State:
        meta = {**(fields.pop("metadata", None) or {}), **state.metadata}
        return dataclasses.replace(state, metadata=meta, **fields)

    env.evaluate_program = replay
    try:
        yield
    finally:
        del env.evaluate_program


class LLMTrainer:
    """Online RL of an LLM policy on one env (see the module docstring).

    Args:
        config: :class:`LLMTrainConfig`.
        run_dir: run directory (``None`` = nothing written).
        resume: continue the run in ``run_dir`` from its last checkpoint.
        callback: called with each step's metrics.
        backends: ``(sampler, learner)`` to use instead of building them from ``config.policy``
            (tests, custom backends).
        env: a code-mode env to use instead of ``make_code_env(config.env_id)``.

    Raises:
        ValueError: unknown env / objective / reuse rule; FileExistsError: ``run_dir`` holds a run
        and ``resume`` is False; FileNotFoundError: ``resume`` without a checkpoint.
    """

    def __init__(self, config: LLMTrainConfig, run_dir: str | os.PathLike | None = None, *, resume: bool = False,
                 callback: Callable[[dict], None] | None = None, backends: tuple[Any, Any] | None = None,
                 env: Any = None) -> None:
        self.config = config
        self.run_dir = Path(run_dir) if run_dir is not None else None
        if self.run_dir is not None and not resume and (self.run_dir / "checkpoints" / "latest.json").exists():
            raise FileExistsError(f"{self.run_dir} already holds a run; pass resume=True (--resume)")
        self.callback = callback
        self.objective = make_objective(config.objective, **config.objective_kwargs)
        self.env = env if env is not None else make_code_env(config.env_id, **config.env_kwargs)
        _, info = self.env.reset(seed=config.seed)
        self.initial: State = info["state"]
        self.best: State = self.initial
        classes = {"puct": PUCTReuse, "epsilon": EpsilonGreedyReuse, "none": NoReuse}
        if config.reuse not in classes:
            raise ValueError(f"unknown reuse rule {config.reuse!r}; known: {', '.join(classes)}")
        seeds = [self.initial] if hasattr(self.env.unwrapped, "evaluate_construction") else None
        self.reuse = classes[config.reuse](self.env, initial_states=seeds, **config.reuse_kwargs)
        self.rng = np.random.default_rng(config.seed)
        torch.manual_seed(config.seed)
        if config.torch_threads:
            torch.set_num_threads(config.torch_threads)  # process-wide
        self.sampler, self.learner = backends if backends is not None else build_backends(config)
        self.step_index = 0
        self.history: list[dict] = []
        self._writer: Any = None
        self._tmp = None
        if resume:
            self._load_checkpoint()
        elif self.run_dir is not None:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            atomic_write_json(self.run_dir / "config.json", config.to_dict())
            self._write_best()

    # ------------------------------------------------------------------ the algorithm
    def train_step(self) -> dict:
        """One step (module docstring, 1–5). Returns the step's metrics."""
        cfg, t0 = self.config, time.perf_counter()
        picks = self.reuse.select(cfg.groups)
        starts = [picks[i % len(picks)] for i in range(cfg.groups)]
        contexts = [SamplingContext(parent=s, inspirations=(s,), problem=self.env.unwrapped.problem,
                                    action_mode="code", trajectory=g, step=self.step_index)
                    for g, s in enumerate(starts)]
        samples = self.sampler.sample(contexts, cfg.group_size, self.rng)
        t_eval = time.perf_counter()
        sample_s = t_eval - t0
        rewards = torch.zeros(cfg.groups, cfg.group_size, dtype=torch.float64)
        n_valid = n_parsed = 0
        errors: dict[str, int] = {}
        judged = self._judge_parallel(starts, samples)
        for g, start in enumerate(starts):
            for k, sample in enumerate(samples[g]):
                self.reuse.reset(options={"state": start})
                with _precomputed(self.env.unwrapped, judged.get((g, k))):
                    _, reward, _, _, info = self.reuse.step(sample.action)
                rewards[g, k] = reward
                child: State = info["state"]
                n_valid += child.valid
                n_parsed += sample.parse_error is None
                if not child.valid:
                    key = (sample.parse_error or child.error or "invalid").split(":")[0][:60]
                    errors[key] = errors.get(key, 0) + 1
                if child.valid and child.reward > self.best.reward:
                    self.best = child
        eval_s = time.perf_counter() - t_eval
        adv = self.objective(rewards)
        flat = [s for group in samples for s in group]
        keep = adv.keep.repeat_interleave(cfg.group_size)
        update: dict[str, float] = {"loss": 0.0, "kl": 0.0, "tokens": 0, "grad_norm": 0.0}
        t_train = time.perf_counter()
        if cfg.train and (bool(keep.any()) or cfg.update_on_constant):
            if bool(keep.any()):
                batch, batch_adv = [s for s, k in zip(flat, keep) if k], adv.adv.reshape(-1)[keep]
            else:  # KL-only step (see LLMTrainConfig.update_on_constant)
                batch, batch_adv = flat, torch.zeros(len(flat), dtype=torch.float64)
            update = self.learner.train_step(batch, batch_adv, kl_coef=cfg.kl_coef)
            self._sync_weights()
        train_s = time.perf_counter() - t_train
        self.step_index += 1
        beta = adv.beta[adv.keep]
        n_tokens = sum(len(s.completion_ids) for s in flat)
        metrics = {
            "step": self.step_index,
            "reward/max": float(rewards.max()), "reward/mean": float(rewards.mean()),
            "reward/min": float(rewards.min()),
            "score/best": self.best.score, "reward/best": self.best.reward,
            "beta/mean": float(beta.mean()) if beta.numel() and not beta.isnan().all() else None,
            "groups_kept": int(adv.keep.sum()), "valid_fraction": n_valid / rewards.numel(),
            "parsed_fraction": n_parsed / rewards.numel(),
            "loss": float(update["loss"]), "kl": float(update["kl"]), "grad_norm": float(update["grad_norm"]),
            "train_tokens": int(update["tokens"]), "archive/size": len(self.reuse.archive),
            "perf/sample_s": sample_s, "perf/eval_s": eval_s, "perf/train_s": train_s,
            "perf/tokens_per_s": n_tokens / max(sample_s, 1e-9),
            "perf/step_time_s": time.perf_counter() - t0,
            "errors": errors,
        }
        self._log_samples(flat, rewards.reshape(-1).tolist())
        return metrics

    def _eval_workers(self) -> int:
        if self.config.eval_workers:
            return self.config.eval_workers
        from discoverygym.search.executors import available_cpus

        return available_cpus() if hasattr(self.env.unwrapped, "evaluate_construction") else 1

    def _judge_parallel(self, starts: list[State], samples: list[list[Any]]) -> dict[tuple[int, int], State]:
        """Judge every program at once in threads (``eval_workers`` > 1); ``{}`` when sequential.

        Each program gets a seed from the trainer's generator; the states are then recorded in
        order through the reuse wrapper (:func:`_precomputed`), so the archive sees the same
        sequence of children as with sequential evaluation.
        """
        workers = self._eval_workers()
        if workers <= 1:
            return {}
        from concurrent.futures import ThreadPoolExecutor

        env = self.env.unwrapped
        jobs = [(g, k, start, sample.action, int(self.rng.integers(2**31 - 1)))
                for g, start in enumerate(starts) for k, sample in enumerate(samples[g])]
        with ThreadPoolExecutor(max_workers=min(workers, len(jobs))) as pool:
            futures = {(g, k): pool.submit(env.evaluate_program, action, parent=start, seed=seed)
                       for g, k, start, action, seed in jobs}
            return {key: fut.result() for key, fut in futures.items()}

    def _sync_weights(self) -> None:
        """Load the learner's new adapter into a separate sampler (server / engine) under a new name."""
        if self.sampler is self.learner:
            return
        root = self.run_dir / "adapters" if self.run_dir is not None else Path(self._tmpdir())
        path = root / f"step_{self.step_index + 1:06d}"
        self.learner.save_adapter(path)
        self.sampler.load_adapter(path, name=f"step-{self.step_index + 1}")

    def _tmpdir(self) -> str:
        if self._tmp is None:
            self._tmp = tempfile.mkdtemp(prefix="dg-adapters-")
        return self._tmp

    def run(self) -> Any:
        """Train until ``config.steps`` (or ``budget_s``); returns a :class:`~.trainer.TrainResult`."""
        from discoverygym.agents.trainer import TrainResult, run_steps

        t0 = time.perf_counter()
        try:
            run_steps(self)
        finally:
            if self._tmp is not None:
                shutil.rmtree(self._tmp, ignore_errors=True)
                self._tmp = None
        if self.run_dir is not None:
            self.reuse.close_batch()
            self.reuse.archive.save(self.run_dir / "archive.json")
        return TrainResult(self.best, self.initial, self.step_index, self.history, time.perf_counter() - t0)

    # ------------------------------------------------------------------ logging
    def _log(self, metrics: dict) -> None:
        if self.run_dir is None:
            return
        if self._writer is None:
            from tensorboardX import SummaryWriter

            self._writer = SummaryWriter(logdir=str(self.run_dir), purge_step=self.step_index - 1 or None)
        step = metrics["step"]
        for tag, value in metrics.items():
            if tag not in ("step", "errors") and isinstance(value, (int, float)) and math.isfinite(value):
                self._writer.add_scalar(tag, float(value), step)
        self._writer.flush()
        with open(self.run_dir / "metrics.jsonl", "a") as fh:
            fh.write(json.dumps(metrics) + "\n")
        self._write_best()

    def _log_samples(self, flat: list, rewards: list[float]) -> None:
        if self.run_dir is None or not self.config.log_samples:
            return
        with open(self.run_dir / "samples.jsonl", "a") as fh:
            fh.writelines(json.dumps({"step": self.step_index, "reward": r, "parse_error": s.parse_error,
                                     "finish_reason": s.finish_reason, "text": s.text[-4000:]}) + "\n" for s, r in list(zip(flat, rewards))[: self.config.log_samples])

    def _write_best(self) -> None:
        if self.run_dir is None:
            return
        problem = self.env.unwrapped.problem
        data = {"env_id": self.config.env_id, "score": self.best.score, "reward": self.best.reward,
                "step": self.step_index, "sota": dict(problem.sota), "initial_score": self.initial.score,
                "state": self.best.to_dict(), "program": self.best.code}
        atomic_write_json(self.run_dir / "best.json", data, fsync=False)

    # ------------------------------------------------------------------ checkpoints
    def _save_checkpoint(self) -> None:
        """``checkpoints/step_NNNNNN/`` (learner adapter + optimizer, archive, generator), then ``latest.json``."""
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
            "initial": self.initial.to_dict(), "history": self.history})
        from discoverygym.agents.trainer import publish_checkpoint

        publish_checkpoint(root, tmp, name, self.step_index)

    def _load_checkpoint(self) -> None:
        assert self.run_dir is not None
        latest = self.run_dir / "checkpoints" / "latest.json"
        if not latest.exists():
            raise FileNotFoundError(f"no checkpoint in {self.run_dir} to resume from")
        where = self.run_dir / "checkpoints" / json.loads(latest.read_text())["dir"]
        self.learner.load_checkpoint(where / "learner")
        if self.sampler is not self.learner:
            self.sampler.load_adapter(where / "learner" / "adapter", name=f"resume-{where.name}")
        self.reuse.load(where)
        state = json.loads((where / "trainer.json").read_text())
        self.step_index = state["step"]
        self.rng.bit_generator.state = state["rng"]
        self.best = State.from_dict(state["best"])
        self.initial = State.from_dict(state["initial"])
        self.history = state["history"]
        (self.run_dir / "metrics.jsonl").write_text("".join(json.dumps(m) + "\n" for m in self.history))
        self._truncate_samples()

    def _truncate_samples(self) -> None:
        """Drop ``samples.jsonl`` records of steps after the checkpoint (a kill between logging and
        checkpointing left them; the resumed run logs those steps again).

        Records carry the step number of the metrics (1-based), so a checkpoint after ``n`` steps
        keeps records with ``step <= n``; a torn last line is dropped too.
        """
        path = self.run_dir / "samples.jsonl"
        if not path.exists():
            return
        kept, changed = [], False
        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                try:
                    record = json.loads(line)
                    keep = line.endswith("\n") and int(record["step"]) <= self.step_index
                except (ValueError, TypeError, KeyError):
                    keep = False
                if keep:
                    kept.append(line)
                else:
                    changed = True
        if changed:
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_text("".join(kept), encoding="utf-8")
            os.replace(tmp, path)
