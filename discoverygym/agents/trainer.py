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
   frozen reference, then ``−Σ_t exp(log π_θ − log π_sampler) · A_t``) and one Adam step. When no
   rollout has a non-zero advantage (every group's rewards equal), no step is taken and no parameter
   changes (``update_on_constant`` opts into a KL-only step instead). A separate sampler then
   loads the learner's new adapter. With ``failure_tiers`` (ours) a failed rollout's reward is
   graded by its outcome (:func:`~discoverygym.outcomes.failure_tier_reward`) before step 4.
6. **Log + checkpoint**: TensorBoard scalars (+ the best construction's image every ``image_every``
   steps; ``outcome/<category>``), ``metrics.jsonl``, ``samples.jsonl`` + ``outcomes.json`` (every LLM
   response and its :class:`~discoverygym.policy.Outcome`; :class:`~discoverygym.outcomes.OutcomeLog`),
   ``best.json``, and a checkpoint (learner, archive, rule statistics, generator states) from which
   ``resume`` continues exactly (``credit="reward"``; ``"progress-rate"`` credits by wall seconds).

The trainer never names a problem or a backend. Source: TTT-Discover (arXiv 2601.16175) §3 and
App. A; docs/algorithms.md. Ablations (TTT-Discover's table of ablations) are data, :data:`ABLATIONS`: eight configs, one code
path, for every learner (and two of ours, ``progress-rate`` and ``failure-tiers``).

Around the loop, each in its module (TRL's ``grpo_config.py`` beside ``grpo_trainer.py``): config and
per-env defaults (:mod:`~.config`), builders (:mod:`~.build`), checkpoints (:mod:`~.checkpoint`), the
run's log files (:mod:`~.train_log`), the evaluation pool (:mod:`~discoverygym.search.executors`).
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
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from discoverygym.agents.batch import TrainBatch, run_update
from discoverygym.agents.build import build_learners, make_reuse, make_train_env, rollout_pool
from discoverygym.agents.checkpoint import has_checkpoint, latest_checkpoint, load_checkpoint, save_checkpoint
from discoverygym.agents.config import (
    TrainConfig,
    ablation_config,
    policy_mismatch,
    recorded_config,
    unnamed_refusal,
)
from discoverygym.agents.losses import DEFAULT_LOSS, Loss, make_loss
from discoverygym.agents.objectives import (
    REPEAT_RTOL,
    Objective,
    is_repeat,
    make_objective,
    progress_rate,
    scored_advantages,
)
from discoverygym.agents.policies.llm import LLMSample
from discoverygym.agents.train_log import TrainLog
from discoverygym.envs.operators.deadline import WithDeadline, deadline_at, step_reserve
from discoverygym.io import atomic_write_json, available_cpus, limit_native_threads
from discoverygym.outcomes import classify, count_outcomes, failure_tier_reward
from discoverygym.policy import Sample, SamplingContext, edit_stats
from discoverygym.rundir import CONFIG_FILE, RunDirOccupied, check_run_dir
from discoverygym.search.executors import EvalTask, LocalEvaluator, evaluate_task
from discoverygym.types import State

__all__ = ["METRICS", "NaiveRL", "TTTDiscover", "TrainResult", "Trainer", "operator_costs"]

#: the metrics every step reports (``metrics.jsonl`` and TensorBoard; ``beta/group_<g>``,
#: ``policy/<name>``, ``errors``, ``outcomes`` (the step's ``{category: count}``, nonzero
#: :class:`~discoverygym.policy.Outcome` values) and, for operator policies, :func:`operator_costs`'s
#: ``perf/rollout_s``, ``ops/time_share/<op>`` and ``ops/improved/<op>`` come on top). One schema for every learner.
METRICS = ("step", "reward/max", "reward/mean", "reward/min", "score/best", "reward/best", "beta/mean", "kl",
           "loss", "grad_norm", "train_tokens", "groups_kept", "valid_fraction", "unscored_fraction", "repeat_fraction", "parsed_fraction",
           "edit/parse_fail_rate", "edit/apply_fail_rate", "edit/fallback_rate", "archive/size", "perf/sample_s", "perf/eval_s", "perf/train_s", "perf/evals_per_s",
           "perf/tokens_per_s", "perf/step_time_s")


@dataclass
class TrainResult:
    """Outcome of :meth:`Trainer.run`.

    Attributes:
        best: the best valid state seen (the start state if nothing beat it).
        initial: the start state.
        steps: training steps completed (including resumed ones).
        history: per-step metric dicts.
        elapsed_s: wall time of this call (seconds).
        late_s: seconds the run ended past its wall budget (0 without one, or when kept).
    """

    best: State
    initial: State
    steps: int
    history: list[dict]
    elapsed_s: float
    late_s: float = 0.0


class Trainer:
    """Online RL on one discovery env for any learner (TTT-Discover and its ablations; module docstring).

    Args:
        config: hyper-parameters (:class:`TrainConfig`; see :data:`ABLATIONS`).
        run_dir: run directory (``config.json``, ``metrics.jsonl``, ``samples.jsonl``, ``states.jsonl``,
            ``best.json``, ``archive.json`` (also every 10 s while running), TensorBoard events,
            ``checkpoints/``); ``None`` = nothing written.
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
        if self.run_dir is not None and not resume:
            try:  # the one "free or resumable" check; a train run counts once it has a checkpoint
                check_run_dir(self.run_dir, "train", resume=False, occupied=has_checkpoint)
            except RunDirOccupied as exc:
                raise FileExistsError(str(exc)) from None
        if self.run_dir is not None and resume and (self.run_dir / CONFIG_FILE).is_file():
            given = tuple(seam for seam, fn in (("objective", objective), ("loss", loss)) if fn is not None)
            refusal = unnamed_refusal(json.loads((self.run_dir / CONFIG_FILE).read_text()), self.run_dir, given)
            if refusal:
                raise ValueError(refusal)
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
        self._tmp: str | None = None
        self._pool: LocalEvaluator | None = None
        #: wall seconds of each rollout of the last :meth:`_judge` call, in rollout order
        self.last_rollout_s: list[float] = []
        #: ``time.perf_counter()`` at which operator jobs stop (inside :meth:`run` under a budget)
        self._ops_deadline: float | None = None
        #: TensorBoard, metrics.jsonl, states.jsonl, best.json, archive.json (``None``: no run directory)
        self.files = (TrainLog(self.run_dir, record=self.problem.sota.get("value"), direction=self.problem.direction,
                               llm=config.family == "llm") if self.run_dir is not None else None)
        if resume:
            self._load_checkpoint()
        elif self.run_dir is not None:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            atomic_write_json(self.run_dir / CONFIG_FILE, recorded_config(config, objective=objective, loss=loss))
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
        with deadline_at(self._wall(self._ops_deadline)):  # a budget run: LLM sampling stops there
            samples = [list(group) for group in self.sampler.sample(contexts, cfg.group_size, self.rng)]
        t_eval = time.perf_counter()
        sample_s = t_eval - t0
        # 3. evaluation, recorded in the archive in rollout order
        rewards = torch.zeros(cfg.groups, cfg.group_size, dtype=torch.float64)
        scored = torch.ones(cfg.groups, cfg.group_size, dtype=torch.bool)
        n_valid = n_parsed = n_repeat = 0
        errors: dict[str, int] = {}
        keys = [(g, k) for g, group in enumerate(samples) for k in range(len(group))]
        children = self._judge(starts, samples, keys)
        if self.files is not None:  # every judged child (the report draws evicted ones with their scores)
            self.files.states(children, self.step_index + 1)
        outcomes = self._outcome_log()
        step_outcomes = []  # this step's Outcome of every rollout (the console's counts: metrics["outcomes"])
        for (g, k), child in zip(keys, children):
            sample = samples[g][k]
            outcome = classify(sample, child)
            step_outcomes.append(outcome)
            # failure_tiers (ours, issue 49): a failed rollout's reward by how it failed, below every valid one
            rewards[g, k] = failure_tier_reward(child.reward, outcome) if cfg.failure_tiers else child.reward
            if outcomes is not None:  # every response's text and category (samples.jsonl, outcomes.json)
                outcomes.record(sample, child, step=self.step_index + 1, group=g, reward=float(rewards[g, k]))
            # unscored rollouts, and repeats of their start state when cfg.skip_repeats, carry no signal
            repeat = cfg.skip_repeats and is_repeat(child, starts[g])
            n_repeat += repeat
            scored[g, k] = not child.unscored and not repeat
            n_valid += child.valid
            n_parsed += sample.parse_error is None
            if not child.valid:
                key = (sample.error or child.error or "invalid").split(":")[0][:60]
                errors[key] = errors.get(key, 0) + 1
            elif child.reward > self.best.reward:
                self.best = child
        if outcomes is not None:
            outcomes.flush()
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
        n_tokens = sum(len(s.completion_ids) for s in flat if isinstance(s, LLMSample))
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
            **(outcomes.scalars() if outcomes is not None else {}),  # outcome/<category>: counts so far
            "errors": errors,
            "outcomes": count_outcomes(step_outcomes),  # this step's {category: count}, nonzero ones
        }
        return metrics

    def _outcome_log(self) -> Any:
        """The run's :class:`~discoverygym.outcomes.OutcomeLog` (every response in ``samples.jsonl``,
        counts in ``outcomes.json``), made at the first step (after a resume truncated the file), or
        ``None`` without a run directory."""
        if getattr(self, "_outcomes", None) is None and self.run_dir is not None:
            from discoverygym.outcomes import OutcomeLog

            self._outcomes = OutcomeLog(self.run_dir)
        return getattr(self, "_outcomes", None)

    def _eval_workers(self) -> int:
        if self.config.eval_workers:
            return self.config.eval_workers
        env = self.env.unwrapped  # constructions: worker processes; programs: threads (each its own sandbox)
        if env.action_kind != "code" or env.thread_safe_evaluate:
            return available_cpus()
        return 1

    def _judge(self, starts: list[State], samples: list[list[Sample]], keys: list[tuple[int, int]]) -> list[State]:
        """Judge every sample's action against its start state; returns the children in the order of
        ``keys`` (``(group, rollout)`` pairs, rollout order).

        Each rollout gets an id and a seed drawn here from the trainer's (checkpointed) generator in
        rollout order, and is judged with ``env.unwrapped.evaluate(action, parent=start, ...)``: the
        start state is never re-verified (no ``reset`` per rollout). A sample with a ``pending`` job
        (:attr:`~discoverygym.policy.Sample.pending`: an operator or a polish) has it run next to
        its verification, and is replaced in ``samples`` by its copy with the computed action
        (:meth:`~discoverygym.policy.Sample.with_action`). With ``eval_workers`` > 1 construction
        rollouts run in a pool of worker processes (:func:`rollout_pool`), programs in threads (each
        in its own sandbox process); the
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
            pending = sample.pending
            meta = {"step": self.step_index}
            if env.action_kind == "code":  # a resume runs the best program again with it (agents.checkpoint)
                meta["program_seed"] = seed
            if sample.operator:
                meta["operator"] = sample.operator
            action = None if pending is not None else sample.action
            if pending is not None and self._ops_deadline is not None:  # the run's wall budget, kept
                wall = time.time() + (self._ops_deadline - time.perf_counter())
                pending = WithDeadline(pending, wall, fallback=starts[g].solution)
            tasks.append(EvalTask(action, state_id, seed=seed, metadata=meta, pending=pending, parent=starts[g]))
        deferred = any(t.pending is not None for t in tasks)  # nothing to compute: verify here (no IPC)
        if workers <= 1 or len(tasks) <= 1 or (env.action_kind != "code" and not deferred):
            results = [evaluate_task(env, t) for t in tasks]
        elif env.action_kind == "code":
            with ThreadPoolExecutor(max_workers=min(workers, len(tasks))) as threads:
                results = list(threads.map(lambda t: evaluate_task(env, t), tasks))
        else:
            if self._pool is None or self._pool.workers != workers:
                self._close_pool()
                self._pool = rollout_pool(env, workers)
            results = [f.result() for f in [self._pool.submit(t) for t in tasks]]
        children = []
        for (g, k), task, result in zip(keys, tasks, results):
            if task.pending is not None:
                samples[g][k] = samples[g][k].with_action(result.action)
            children.append(self.reuse.record(result.state, parent=starts[g]))
        self.last_rollout_s = [float(r.busy_s) for r in results]
        return children

    @staticmethod
    def _wall(when: float | None) -> float | None:
        """A ``time.perf_counter()`` moment as ``time.time()`` seconds (what
        :func:`~discoverygym.envs.operators.deadline.deadline_at` takes); ``None`` stays ``None``."""
        return None if when is None else time.time() + (when - time.perf_counter())

    def _close_pool(self) -> None:
        if self._pool is not None:
            self._pool.close(cancel=True)
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

    def run(self, deadline: float | None = None) -> TrainResult:
        """Train until ``config.steps`` (or the wall budget), logging and checkpointing each step.

        Under a wall budget (``config.budget_s`` from this call's start, or ``deadline``: an absolute
        ``time.perf_counter()`` that the benchmark's clock started) the budget is kept, not just
        scored: operator jobs run under the deadline less a reserve for the step's verification and
        update (:func:`step_reserve`) and return their best so far there
        (:mod:`~discoverygym.envs.operators.deadline`), and no step starts once that point has
        passed. The same point ends LLM sampling (an ``hf:`` policy stops every row at the token
        during which it passed; the rows are judged as they are), and the deadline itself caps
        each sandboxed program's timeout and ends the LLM update (between micro-batches, with no
        step taken), through :func:`~discoverygym.envs.operators.deadline.deadline_at` around the
        step. What still ends past the deadline is reported as ``perf/late_s`` and
        :attr:`TrainResult.late_s`. The TensorBoard writer is always closed.
        """
        t0 = time.perf_counter()
        if deadline is None and self.config.budget_s is not None:
            deadline = t0 + self.config.budget_s
        reserve = 0.0 if deadline is None else step_reserve(0.0, deadline - t0)
        try:
            while self.step_index < self.config.steps:
                if deadline is not None:
                    self._ops_deadline = deadline - reserve
                    if time.perf_counter() >= self._ops_deadline:
                        break
                with deadline_at(self._wall(deadline)):  # sandboxed runs and the LLM update stop there
                    metrics = self.train_step()
                t_log = time.perf_counter()
                if deadline is not None:
                    metrics["perf/late_s"] = max(0.0, t_log - deadline)
                self.history.append(metrics)
                self._log(metrics)
                if self.callback is not None:
                    self.callback(metrics)
                if self.run_dir is not None and (self.step_index % self.config.checkpoint_every == 0
                                                 or self.step_index == self.config.steps):
                    self._save_checkpoint()
                if deadline is not None:
                    overhead = metrics["perf/sample_s"] + metrics["perf/train_s"] + time.perf_counter() - t_log
                    reserve = step_reserve(overhead, deadline - t0)
        finally:
            self._ops_deadline = None
            self._close_pool()
            if self.files is not None:
                self.files.close()
            if self._tmp is not None:
                shutil.rmtree(self._tmp, ignore_errors=True)
                self._tmp = None
        if self.files is not None:
            self.reuse.close_batch()
            self.files.archive(self.reuse.archive, every_s=0.0)
        late = 0.0 if deadline is None else max(0.0, time.perf_counter() - deadline)
        return TrainResult(self.best, self.initial, self.step_index, self.history, time.perf_counter() - t0, late)

    # ------------------------------------------------------------------ logging
    def _log(self, metrics: dict) -> None:
        """The step's TensorBoard scalars (+ the best state's picture every ``image_every`` steps) and
        ``metrics.jsonl`` (:meth:`~.train_log.TrainLog.step`), ``best.json``, and ``archive.json`` every
        :data:`~.train_log.ARCHIVE_EVERY_S` (a report of a running run shows its states)."""
        if self.files is None:
            return
        step, every, image = metrics["step"], self.config.image_every, None
        if every and (step % every == 0 or step == 1) and self.best.solution is not None:
            image = (self.env.unwrapped.picture(self.best, 256), self.best.score)
        self.files.step(metrics, step * self.config.groups * self.config.group_size, image)
        self._write_best()
        self.files.archive(self.reuse.archive)

    def _write_best(self) -> None:
        if self.files is not None:
            self.files.best(self.config.env_id, self.best, self.initial, self.step_index, self.problem.sota)

    # ------------------------------------------------------------------ checkpoints
    def _save_checkpoint(self) -> None:
        """``checkpoints/step_NNNNNN/`` and ``latest.json`` (:func:`~discoverygym.agents.checkpoint.save_checkpoint`)."""
        assert self.run_dir is not None
        save_checkpoint(self.run_dir, self.learner, self.reuse, step=self.step_index, rng=self.rng, best=self.best,
                        initial=self.initial, history=self.history)

    def _load_checkpoint(self) -> None:
        assert self.run_dir is not None
        found = latest_checkpoint(self.run_dir / "checkpoints")
        if found is None:
            if not (self.run_dir / CONFIG_FILE).is_file():
                raise FileNotFoundError(f"no checkpoint in {self.run_dir} to resume from")
            # stopped (Ctrl-C) before its first checkpoint: nothing to restore, start from scratch
            # with the stored configuration, dropping whatever the first step had begun to log
            self.files.rewind([], 0)
            self._write_best()
            return
        self.step_index, self.best, self.initial, self.history = load_checkpoint(
            found, self.learner, self.sampler, self.reuse, self.rng, fresh_initial=self.initial)
        self.files.rewind(self.history, self.step_index)  # drop what a killed run logged after its checkpoint


#: xor-ed into rollout ids drawn from the trainer's generator (``default_rng(seed)``, the same stream as the
#: env's own generator, which draws the initial state's id), so that the two never coincide systematically
_ID_SALT = 0x2545F4914F6CDD1D


def operator_costs(problem: Any, samples: list[list[Sample]], starts: list[State], children: list[State],
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
    names = [s.operator for _, s in flat]
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
