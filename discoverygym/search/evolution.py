"""The asynchronous (C, L, K, Φ) evolutionary-search runner (TES).

C independent trajectories each take L committed steps; a step samples K candidates from one
prompt whose states are chosen by the selector Φ; all K go to the trajectory's archive, the best
valid one is committed to its history. The budget is exactly C·L·K evaluations. Best-of-N is
``selector="none"``; greedy refinement is C = 1, K = 1 with ``selector="greedy"``.

Pipeline (one process, three kinds of workers; the threads and queues are
:class:`~discoverygym.search.pipeline.Pipeline`, the configuration and its checks
:mod:`~discoverygym.search.config`)::

    coordinator (selection, commits, logging)
        └─> generation pool (threads: policy.sample)      ─> bounded queue of batches
              └─> dispatcher thread ─> evaluator (process pool / Ray) ─> results ─> coordinator

Backpressure: a trajectory has at most ``backpressure`` batches outstanding (default 1); the
dispatcher keeps at most ``prefetch × workers`` tasks in flight; the batch queue holds at most
``queue_size`` batches (default C).

Determinism (a deviation from SimpleTES, which ranks RPUCG over the population of all chains and
is timing-dependent): each trajectory has its own archive, rule and random streams, and its
steps are committed strictly in order once all K candidates are back. Step ``l`` of trajectory
``c`` draws from ``numpy.random.SeedSequence([seed, c, l])`` (selection, policy and program
seeds), and its selection happens right after the commit of step ``l - backpressure``. So the
result does not depend on worker timing, and a killed run replays its log to the same state.

Resume: ``archive.jsonl`` is replayed (:class:`~discoverygym.search.runlog.Replay`: commits are
recomputed and checked against the log); generated batches are not generated again and evaluated
candidates are not evaluated again.

Controllers (:mod:`~discoverygym.search.controllers`, all optional): ``inspirations="auto"`` (a
per-trajectory UCB1 over the states per prompt), ``restart_controller`` (a per-trajectory bandit
choosing best node or fresh start at each selector restart, one ``restart`` record per decision in
the log) and ``budget_controller`` (the C·L steps handed out in rounds, one ``budget`` record per
round; a round starts when every trajectory has committed its steps, so the allocation does not
depend on timing either). Their decisions are pure functions of the committed steps, so a resumed
run recomputes them during the replay; every logged decision is checked against the recomputed
one, and their state is in ``archive.json`` (``controllers``) and in the result's trajectories.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from discoverygym import tensorboard as tbs
from discoverygym.outcomes import OutcomeLog
from discoverygym.policy import Policy, Sample, SamplingContext, edit_stats, make_policy
from discoverygym.search.archive import Archive, state_record
from discoverygym.search.config import SearchConfig
from discoverygym.search.controllers import InspirationBandit, RestartController, make_budget_controller
from discoverygym.search.executors import EvalTask, Evaluator, EvaluatorSpec
from discoverygym.search.pipeline import Batch, Pipeline, PipelineOptions
from discoverygym.search.rule import Selector
from discoverygym.search.runlog import Replay, RunLog, ScalarWriter
from discoverygym.search.selectors import make_selector
from discoverygym.types import State, to_jsonable

__all__ = ["EvolutionarySearch", "SearchConfig", "SearchResult", "load_snapshot"]

INITIAL_ID = "init"


@dataclass
class SearchResult:
    """Summary of a finished (or resumed-and-finished) run.

    Attributes:
        best: the best valid state of the whole run (ties: smaller id), or ``None``.
        evaluations: candidates in the log (C·L·K when finished).
        evaluated_now: candidates evaluated by this call (the rest came from the log).
        wall_s: seconds spent in :meth:`EvolutionarySearch.run`.
        utilisation: evaluator busy time / (evaluation wall time × workers), in [0, 1].
        timings: coordinator seconds by activity (``select``, ``commit``, ``log``, ``dispatch``).
        trajectories: per trajectory: ``best_reward``, ``best_score``, ``archive_size``, ``commits``.
        run_dir: the run directory.
    """

    best: State | None
    evaluations: int
    evaluated_now: int
    wall_s: float
    utilisation: float
    timings: dict
    trajectories: list[dict]
    run_dir: Path


@dataclass
class _Trajectory:
    index: int
    archive: Archive
    rule: Selector
    history: list = field(default_factory=list)  # committed id (or None) per step
    best: State | None = None
    next_commit: int = 0
    next_select: int = 0
    batches: dict = field(default_factory=dict)  # step -> Batch (selected, not committed)
    limit: int = 0  # steps this trajectory may take (L, or what the budget controller gave it)
    insp: InspirationBandit | None = None
    restart: RestartController | None = None
    curve: list = field(default_factory=list)  # best reward before any step, then after each step
    insp_used: dict = field(default_factory=dict)  # step -> inspirations asked for


@dataclass
class _Meter:
    """The run's counters and clocks (what :meth:`EvolutionarySearch.stats` and :class:`SearchResult` report)."""

    commits: int = 0  # steps committed (replayed ones included)
    done: int = 0  # candidates evaluated, logged ones included
    evaluated_now: int = 0  # candidates evaluated by this process
    busy_s: float = 0.0  # evaluator busy time of those
    workers: int = 1  # evaluator size
    t_start: float = field(default_factory=time.perf_counter)
    t_first_submit: float | None = None
    t_last_result: float | None = None
    timings: dict = field(default_factory=lambda: dict.fromkeys(("select", "commit", "log", "dispatch"), 0.0))

    def rate(self) -> float:
        """Candidates evaluated per second since :attr:`t_start`."""
        elapsed = time.perf_counter() - self.t_start
        return self.evaluated_now / elapsed if elapsed > 0 else 0.0

    def utilisation(self) -> float:
        """Evaluator busy time / (evaluation wall time × workers), in [0, 1]."""
        span = (self.t_last_result or 0) - (self.t_first_submit or 0)
        return min(1.0, self.busy_s / (span * self.workers)) if span > 0 else 0.0


def _better(a: State, b: State | None) -> bool:
    """Deterministic order of valid states: higher reward, then smaller id."""
    return b is None or a.reward > b.reward or (a.reward == b.reward and a.id < b.id)


def load_snapshot(run_dir: str | Path) -> dict:
    """Read ``archive.json`` of a finished run: ``{"trajectories": [...], "best": ...}``.

    Each trajectory entry has ``archive`` (an :class:`Archive`), ``rule`` (statistics dict) and
    ``history`` (committed id per step).
    """
    with open(Path(run_dir) / RunLog.SNAPSHOT) as fh:
        data = json.load(fh)
    for t in data["trajectories"]:
        t["archive"] = Archive.from_dict(t["archive"])
    return data


class EvolutionarySearch:
    """Runs one (C, L, K, Φ) search into a run directory (see the module docstring).

    Args:
        config: the search (:class:`SearchConfig`).
        run_dir: the run directory (see :mod:`~discoverygym.search.runlog`).
        resume: continue the run found in ``run_dir`` (its ``config.json`` must equal ``config``).
        executor: ``"local"`` (process pool, default), ``"ray"`` or ``"inline"``; or pass ``evaluator``.
        workers: evaluator size (default: the machine's CPUs / the Ray cluster's CPUs).
        ray_address: Ray cluster address (implies ``executor="ray"``).
        evaluator: a ready :class:`~discoverygym.search.executors.Evaluator` (not closed by the runner).
        policy: a policy object to use instead of ``config.policy`` (its name must match).
        generation_workers: threads running ``policy.sample`` (default 1; more for LLM servers).
        prefetch: tasks in flight per evaluator worker (default 2).
        queue_size: generated batches waiting for the dispatcher (default C).
        (The evaluator and pipeline arguments are kept in :attr:`pipeline_options`, a
        :class:`~discoverygym.search.pipeline.PipelineOptions`.)
        progress: called with a stats dict after events (``done``, ``total``, ``best_score``,
            ``best_reward``, ``evals_per_s``, ``queue_depth``, ``in_flight``, ``outcomes``).
        tensorboard: write TensorBoard scalars into the run directory.
        problem: a :class:`Problem` to evaluate instead of ``get_problem(config.env_id)`` (e.g. a
            benchmark problem not in the registry; its functions must be picklable).

    Raises:
        ValueError: bad configuration (see :meth:`SearchConfig.validate`; also ``workers`` < 1 and
            a ``policy`` that does not support ``config.action_mode``); a run directory that
            already holds a run without ``resume``; ``resume`` of a directory that does not exist
            or holds no run, or with a different configuration.
        OSError: the run directory cannot be created or written.
    """

    def __init__(
        self,
        config: SearchConfig,
        run_dir: str | Path,
        *,
        resume: bool = False,
        executor: str = "local",
        workers: int | None = None,
        ray_address: str | None = None,
        evaluator: Evaluator | None = None,
        policy: Policy | None = None,
        generation_workers: int = 1,
        prefetch: int = 2,
        queue_size: int | None = None,
        progress: Callable[[dict], None] | None = None,
        tensorboard: bool = True,
        problem: Any = None,
    ) -> None:
        config.validate(policy=policy)
        self.pipeline_options = PipelineOptions(
            executor, workers, ray_address, evaluator, generation_workers, prefetch, queue_size or config.C
        )
        self.config = config
        # everything that can be refused is checked before the run directory is touched
        problem_obj = problem if problem is not None else config.problem()
        if policy is None:
            # shaped like the start: --init's construction (a 600-piece record, say) where there is one,
            # else the env's own initial construction (as train shapes its policy by its start state)
            def shape() -> tuple[int, ...]:
                if config.initial is not None:
                    try:
                        return np.shape(np.asarray(config.initial, dtype=np.float64))
                    except (TypeError, ValueError):  # not an array of numbers: the env's own shape
                        pass
                return np.shape(problem_obj.initial(np.random.default_rng(0)))

            policy = make_policy(config.policy, shape=shape, **config.policy_kwargs)
            config.check_policy(policy)  # the built object may say more than its factory did
        self.policy = policy
        probe = make_selector(config.selector, **config.selector_kwargs)
        self.log = RunLog.claim(run_dir, self._config_dict(), resume)
        self.resume = resume
        usage = getattr(policy, "usage", None)  # a chat backend's tracker built without a run dir (Python API)
        if usage is not None and getattr(usage, "dir", False) is None and callable(getattr(usage, "bind", None)):
            usage.bind(self.log.dir, resume=resume)
        self.problem = problem_obj
        self.spec = EvaluatorSpec(
            config.env_id,
            {"action_mode": config.action_mode, **config.env_kwargs, **({"problem": problem} if problem is not None else {})},
        )
        self._progress = progress
        self._tb_enabled = tensorboard
        self.inspirations = (
            probe.default_inspirations if config.inspirations in (None, "auto") else config.inspirations
        )
        self.budget = (
            make_budget_controller(
                config.budget_controller, config.C, config.L, **config.controller_kwargs.get("budget", {})
            )
            if config.budget_controller
            else None
        )
        # the state of the run (filled by run(), which runs once)
        self._ran = False
        self._pipeline: Pipeline | None = None  # while the pipeline runs
        self.meter = _Meter()
        self.best: State | None = None
        self.trajectories: list[_Trajectory] = []
        self.replay = Replay()  # what the log holds (read by run() on resume)
        self._tb = ScalarWriter(self.log.dir, enabled=False)
        # every sample's outcome (samples.jsonl with each response's text, outcomes.json, outcome/*)
        self._outcomes = OutcomeLog(self.log.dir)
        self._samples: dict[tuple[int, int], list[Sample]] = {}  # (traj, step) -> samples until the commit

    # ------------------------------------------------------------------ helpers
    def _config_dict(self) -> dict:
        out = to_jsonable(asdict(self.config))
        defaults = SearchConfig(self.config.env_id)
        for name in SearchConfig.OPTIONAL_FIELDS:  # absent at defaults: older runs still resume
            if out.get(name) == to_jsonable(getattr(defaults, name)):
                out.pop(name, None)
        return out

    def _rngs(self, c: int, step: int) -> list[np.random.Generator]:
        """Independent streams of step ``step`` of trajectory ``c``: selection, policy, programs."""
        seq = np.random.SeedSequence([int(self.config.seed), c, step])
        return [np.random.Generator(np.random.PCG64(s)) for s in seq.spawn(3)]

    def _new_trajectory(self, c: int, initial: State) -> _Trajectory:
        cfg = self.config
        rule = make_selector(cfg.selector, **cfg.selector_kwargs)
        archive = rule.new_archive()
        archive.add(initial, initial=True)
        traj = _Trajectory(c, archive, rule, best=initial, limit=0 if self.budget else cfg.L)
        if cfg.inspirations == "auto":
            traj.insp = InspirationBandit(**cfg.controller_kwargs.get("inspirations", {}))
        if cfg.restart_controller:
            traj.restart = RestartController(cfg.restart_controller, **cfg.controller_kwargs.get("restart", {}))
        traj.curve.append(_reward_of(initial))
        return traj

    # ------------------------------------------------------------------ coordinator steps
    def _select_batches(self, traj: _Trajectory) -> list[Batch]:
        """Select every step allowed by backpressure; returns the new batches."""
        out = []
        cfg = self.config
        while traj.next_select < traj.limit and traj.next_select < traj.next_commit + cfg.backpressure:
            t0 = time.perf_counter()
            step = traj.next_select
            rng_sel = self._rngs(traj.index, step)[0]
            n_insp = traj.insp.choose(step) if traj.insp is not None else self.inspirations
            traj.insp_used[step] = n_insp
            picks = traj.rule.select(traj.archive, n_insp, rng_sel)
            if not picks:  # an unscored initial program (a kernel env without a GPU): start from it
                picks = [s for s in map(traj.archive.get, traj.archive.initial_ids) if s is not None and s.unscored]
            if not picks:
                raise RuntimeError(f"trajectory {traj.index}: no valid state to start step {step} from")
            picks = list({s.id: s for s in picks}.values())  # a state appears once per prompt
            batch = Batch(traj.index, step, list(picks), None, [None] * cfg.K)
            logged = self.replay.batch(traj.index, step, [s.id for s in picks], cfg.K)
            if logged is not None:  # generated before the run was killed: not generated again
                record, batch.results = logged
                batch.actions, batch.seeds = record["actions"], record.get("seeds")
            traj.batches[step] = batch
            traj.next_select += 1
            out.append(batch)
            self.meter.timings["select"] += time.perf_counter() - t0
        return out

    def _commit_ready(self, traj: _Trajectory) -> list[Batch]:
        """Commit every complete batch in step order; returns batches newly selected after them."""
        new: list[Batch] = []
        while traj.next_commit in traj.batches and traj.batches[traj.next_commit].complete():
            batch = traj.batches.pop(traj.next_commit)
            self._commit(traj, batch)
            traj.next_commit += 1
            new += self._select_batches(traj)
        return new

    def _advance(self, trajs: list[_Trajectory]) -> list[Batch]:
        """Select and commit what is ready in ``trajs``, then start budget rounds at each barrier.

        Returns the batches newly selected (to submit)."""
        new: list[Batch] = []
        for traj in trajs:
            new += self._select_batches(traj)
            new += self._commit_ready(traj)
        while self.budget is not None and self.budget.left > 0 and all(
            t.next_commit >= t.limit for t in self.trajectories
        ):
            self._next_round()
            for traj in self.trajectories:
                new += self._select_batches(traj)
                new += self._commit_ready(traj)
        return new

    def _next_round(self) -> None:
        """A barrier: the budget controller hands out the next round of steps (logged, checked on replay)."""
        assert self.budget is not None
        limits = self.budget.next_round([t.curve for t in self.trajectories])
        for t, lim in zip(self.trajectories, limits):
            t.limit = lim
        record = {"kind": "budget", "round": self.budget.round, "limits": limits}
        if not self.replay.logged(record):
            self._log(record)

    def _commit(self, traj: _Trajectory, batch: Batch) -> None:
        t0 = time.perf_counter()
        children: list[State] = list(batch.results)
        traj.archive.add_batch(children)
        restarts_before = getattr(traj.rule, "restarts", 0)
        committed = traj.rule.update(traj.archive, batch.inspirations, children)
        traj.history.append(committed.id if committed is not None else None)
        improved = False
        for child in children:
            if child.valid and _better(child, traj.best):
                traj.best = child
            if child.valid and _better(child, self.best):
                self.best, improved = child, True
        traj.curve.append(_reward_of(traj.best))
        insp_reward = None
        if traj.insp is not None:
            arch = traj.archive
            mask = arch.alive & arch.valid
            span = float(arch.rewards[mask].max() - arch.rewards[mask].min()) if mask.any() else 0.0
            insp_reward = traj.insp.reward(
                batch.step, committed.reward if committed is not None else None, batch.inspirations[0].reward, span
            )
        if traj.restart is not None and getattr(traj.rule, "restarts", 0) > restarts_before:
            self._decide_restart(traj, batch.step)
        self.meter.commits += 1
        self.meter.timings["commit"] += time.perf_counter() - t0
        record = {
            "kind": "commit",
            "traj": traj.index,
            "step": batch.step,
            "committed": traj.history[-1],
            "archive_size": len(traj.archive),
        }
        if traj.insp is not None:
            record["inspirations"] = traj.insp_used.get(batch.step)
            record["insp_reward"] = insp_reward
        if not self.replay.logged(record):
            self._log(record)
        samples = self._samples.pop((batch.traj, batch.step), None)
        if samples is not None and not self.replay.active:
            for k, (sample, child) in enumerate(zip(samples, children)):
                self._outcomes.record(sample, child, traj=batch.traj, step=batch.step, k=k, id=child.id)
            self._outcomes.flush()
        if not self.replay.active:
            done = self.meter.commits * self.config.K
            self._tb.add(
                done,
                tbs.for_policy({  # the schema of discoverygym.tensorboard (the same tags as train and post-train)
                    tbs.SCORE_BEST: self.best.score if self.best else None,
                    tbs.REWARD_BEST: self.best.reward if self.best else None,
                    f"trajectory/{traj.index}/best_reward": traj.best.reward if traj.best else None,
                    tbs.VALID_FRACTION: sum(c.valid for c in children) / len(children),
                    "perf/evals_per_s": self.meter.rate(),
                    "perf/queue_depth": self._queue_depth(),
                    tbs.COST_EVALUATIONS: done,
                    **(batch.edit or {}),  # edit/parse_fail_rate, edit/apply_fail_rate, edit/fallback_rate
                    **self._usage_scalars(),
                    **self._outcomes.scalars(),  # outcome/<category>: counts so far
                }, llm=self.config.action_mode == "code"),  # a numeric run: no LLM-only tags
            )
        if improved and not self.replay.active:
            self._write_best()

    def _usage_scalars(self) -> dict:
        """The policy's token/cost scalars (``cost/usd``, ``cost/tokens``) when it tracks usage (chat backends)."""
        get = getattr(self.policy, "usage_scalars", None)
        return get() if callable(get) else {}

    def _decide_restart(self, traj: _Trajectory, step: int) -> None:
        """The selector just restarted after ``step``: the restart controller picks best or fresh."""
        assert traj.restart is not None
        rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([int(self.config.seed), traj.index, step, 1])))
        choice = traj.restart.decide(step, traj.curve[-1], rng)
        if choice == "fresh":
            traj.rule.history = list(traj.archive.initial_ids)  # type: ignore[attr-defined]
        decision = traj.restart.decisions[-1]
        previous = traj.restart.decisions[-2]["reward"] if len(traj.restart.decisions) > 1 else None
        record = {"kind": "restart", "traj": traj.index, "step": step, "choice": choice,
                  "best_at": decision["best_at"], "previous_reward": previous}
        if not self.replay.logged(record):
            self._log(record)

    def _write_best(self) -> None:
        b = self.best
        if b is None:
            return
        traj, step = b.metadata.get("trajectory"), b.metadata.get("step")
        self.log.write_best(
            {
                "env_id": self.config.env_id,
                "id": b.id,
                "score": b.score,
                "reward": b.reward,
                "trajectory": traj,
                "step": step,
                "sota": self.problem.sota,
                "evaluations": self.meter.commits * self.config.K,
                "state": state_record(b),
            },
            code=b.code,
        )

    def _log(self, record: dict) -> None:
        t0 = time.perf_counter()
        self.log.append(record)
        self.meter.timings["log"] += time.perf_counter() - t0

    def _queue_depth(self) -> int:
        return self._pipeline.queue_depth if self._pipeline is not None else 0

    # ------------------------------------------------------------------ pipeline callbacks
    def _sample(self, batch: Batch) -> None:
        """Generation thread: sample the batch's K actions, draw its program seeds, log it."""
        rng_pol, rng_prog = self._rngs(batch.traj, batch.step)[1:]
        ctx = SamplingContext(
            batch.inspirations[0],
            tuple(batch.inspirations),
            self.problem,
            self.config.action_mode,
            batch.traj,
            batch.step,
        )
        samples = self.policy.sample([ctx], self.config.K, rng_pol)[0]
        if not all(isinstance(s, Sample) for s in samples):
            bad = next(type(s).__name__ for s in samples if not isinstance(s, Sample))
            raise TypeError(f"policy {getattr(self.policy, 'name', self.policy)!r} returned a {bad}; a policy "
                            "returns discoverygym.policy.Sample records (wrap an action as Sample(action=...))")
        samples = [s.resolved() for s in samples]  # a pending job (an operator, a polish) runs here
        self._samples[(batch.traj, batch.step)] = samples
        actions = [s.action for s in samples]
        edit = None
        if any(s.edit is not None for s in samples):  # LLM samples: how responses became programs
            batch.edit = edit_stats(samples)
            edit = {"modes": [s.edit for s in samples], "errors": [s.error for s in samples]}
        if len(actions) != self.config.K:
            raise RuntimeError(
                f"policy {getattr(self.policy, 'name', self.policy)!r} returned {len(actions)} actions, expected "
                f"{self.config.K}"
            )
        seeds = [int(s) for s in rng_prog.integers(2**31 - 1, size=self.config.K)]
        batch.actions = [to_jsonable(a) for a in actions]
        self._log(
            {
                "kind": "batch",
                "traj": batch.traj,
                "step": batch.step,
                "parents": [s.id for s in batch.inspirations],
                "actions": batch.actions,
                "seeds": seeds,
                **({"edit": edit} if edit is not None else {}),
            }
        )
        batch.seeds = seeds

    def _task(self, batch: Batch, k: int) -> EvalTask:
        """Dispatcher thread: the evaluation task of candidate ``k`` of a batch."""
        seeds = batch.seeds or [0] * self.config.K
        return EvalTask(
            action=batch.actions[k],  # type: ignore[index]
            id=f"c{batch.traj}-l{batch.step}-k{k}",
            parent_ids=tuple(s.id for s in batch.inspirations),
            parent_solution=batch.inspirations[0].solution,
            seed=seeds[k],
            metadata={"trajectory": batch.traj, "step": batch.step, "k": k},
        )

    # ------------------------------------------------------------------ run
    def _initial_state(self) -> State:
        """The start state: the env's seeded reset, or ``config.initial`` judged by the env.

        Raises:
            ValueError: ``config.initial`` is not a valid construction (the env's message).
        """
        env = self.spec.make()
        _, info = env.reset(seed=int(self.config.seed))
        s: State = info["state"]
        if self.config.initial is not None:
            s = env.unwrapped.evaluate(self.config.initial)
            if not s.valid:
                raise ValueError(f"the initial construction (--init) is invalid: {s.error}")
        return State(
            s.solution,
            s.score,
            s.reward,
            s.valid,
            code=s.code,
            id=INITIAL_ID,
            parent_ids=(),
            error=s.error,
            metadata={"trajectory": None, "step": None,
                      **{k: s.metadata[k] for k in ("unscored", "unscored_reason") if k in s.metadata}},
        )

    def _rerun(self, state: State, seed: int | None) -> State:
        """``state``'s program judged again through a fresh env (on resume, :meth:`Replay.verify`): with
        its logged program seed, or, for the logged initial state (``seed`` None), the seeded reset that
        judged it."""
        if seed is None and state.id == INITIAL_ID:
            return self._initial_state()
        env = self.spec.make()
        try:
            return env.unwrapped.evaluate(state.code, seed=0 if seed is None else int(seed), id=state.id,
                                          parent_ids=tuple(state.parent_ids))
        finally:
            env.close()

    def run(self) -> SearchResult:
        """Run (or resume) the search to C·L·K evaluations.

        Returns:
            :class:`SearchResult`. The run directory then holds the complete log, ``best.json``
            and the ``archive.json`` snapshot.

        Raises:
            KeyboardInterrupt: after a clean stop (the run directory is resumable).
            Exception: from the policy or an evaluator (the run directory is resumable).
            RuntimeError: called a second time (an object runs once; continue a run with a new
                ``EvolutionarySearch(..., resume=True)``).
        """
        if self._ran:
            raise RuntimeError("EvolutionarySearch.run() runs once; resume with a new EvolutionarySearch")
        self._ran = True
        self.log.lock()
        try:
            return self._run()
        finally:
            self.log.unlock()

    def _run(self) -> SearchResult:
        t_run = self.meter.t_start = time.perf_counter()
        if self.resume:  # the log is re-verified with this run's problem (a caller's own one too)
            self.replay = Replay.read(self.log, problem=self.problem, rerun=self._rerun)
        self.replay.active = True
        initial = self.replay.initial
        if initial is None:
            self.log.write_config(self._config_dict())
            initial = self._initial_state()
            self._log({"kind": "init", "state": state_record(initial)})
        self.best = initial if initial.valid else None
        self.trajectories = [self._new_trajectory(c, initial) for c in range(self.config.C)]
        self._advance(self.trajectories)
        pending: list[Batch] = [b for traj in self.trajectories for b in traj.batches.values()]
        self.replay.active = False
        evaluations_logged = self.meter.done = self.replay.evaluations
        self._write_best()
        self._tb = ScalarWriter(self.log.dir, enabled=self._tb_enabled, record=self.problem.sota.get("value"),
                               direction=self.problem.direction)

        if self.meter.commits < self.config.C * self.config.L:
            self._run_pipeline(pending)
        wall = time.perf_counter() - t_run
        self._finish()
        return SearchResult(
            best=self.best,
            evaluations=evaluations_logged + self.meter.evaluated_now,
            evaluated_now=self.meter.evaluated_now,
            wall_s=wall,
            utilisation=self.meter.utilisation(),
            timings=dict(self.meter.timings),
            trajectories=self._summaries(),
            run_dir=self.log.dir,
        )

    def _run_pipeline(self, pending: list[Batch]) -> None:
        """Generate, evaluate and commit until C·L steps are committed (the pipeline's whole lifetime)."""
        meter = self.meter
        pipeline = self.pipeline_options.build(self.spec, self._sample, self._task)
        meter.workers = pipeline.evaluator.workers
        target = self.config.C * self.config.L
        try:
            with pipeline:
                self._pipeline = pipeline
                meter.t_start = time.perf_counter()
                for batch in pending:
                    pipeline.submit(batch)
                last_progress = 0.0
                while meter.commits < target:
                    done = pipeline.next_result(timeout=0.25)
                    if done is not None:
                        batch, k, result = done
                        meter.t_last_result = time.perf_counter()
                        meter.busy_s += result.busy_s
                        meter.evaluated_now += 1
                        meter.done += 1
                        batch.results[k] = result.state
                        self._log(
                            {
                                "kind": "eval",
                                "traj": batch.traj,
                                "step": batch.step,
                                "k": k,
                                "busy_s": result.busy_s,
                                "state": state_record(result.state),
                            }
                        )
                        for new in self._advance([self.trajectories[batch.traj]]):
                            pipeline.submit(new)
                    now = time.perf_counter()
                    if self._progress is not None and (now - last_progress > 0.1 or meter.commits >= target):
                        last_progress = now
                        self._progress(self.stats())
        finally:
            self._pipeline = None
            meter.t_first_submit = pipeline.first_submit
            meter.timings["dispatch"] += pipeline.dispatch_s
            self.log.sync()
            if meter.commits < target:
                self._tb.close()
                self.log.close()

    def stats(self) -> dict:
        """Live statistics (what the progress display shows)."""
        b = self.best
        return {
            "done": self.meter.done,
            "total": self.config.budget,
            "evaluated": self.meter.evaluated_now,
            "commits": self.meter.commits,
            "best_score": b.score if b else None,
            "best_reward": b.reward if b else None,
            "evals_per_s": self.meter.rate(),
            "queue_depth": self._queue_depth(),
            "in_flight": self._pipeline.in_flight if self._pipeline is not None else 0,
            # what became of the samples so far: {Outcome value: count}, nonzero ones (issue 49)
            "outcomes": {k: v for k, v in self._outcomes.counts.items() if v},
        }

    def _summaries(self) -> list[dict]:
        return [
            {
                "trajectory": t.index,
                "best_reward": t.best.reward if t.best else None,
                "best_score": t.best.score if t.best else None,
                "best_id": t.best.id if t.best else None,
                "archive_size": len(t.archive),
                "commits": sum(h is not None for h in t.history),
                "steps": len(t.history),
                **self._controller_summary(t),
            }
            for t in self.trajectories
        ]

    def _controller_summary(self, t: _Trajectory) -> dict:
        out: dict = {}
        if t.insp is not None:
            used = [t.insp_used[s] for s in range(len(t.history)) if s in t.insp_used]
            out["inspirations"] = {str(a): used.count(a) for a in t.insp.arms}
        if t.restart is not None:
            out["restart_decisions"] = [dict(d) for d in t.restart.decisions]
        return out

    def controller_states(self) -> dict:
        """The controllers' ``state_dict`` (what ``archive.json`` stores under ``controllers``)."""
        return {
            "budget": self.budget.state_dict() if self.budget is not None else None,
            "trajectories": [
                {
                    "limit": t.limit,
                    "inspirations": t.insp.state_dict() if t.insp is not None else None,
                    "restart": t.restart.state_dict() if t.restart is not None else None,
                }
                for t in self.trajectories
            ],
        }

    def _finish(self) -> None:
        for t in self.trajectories:  # the last segment ends with the run
            if t.restart is not None:
                t.restart.close(t.curve[-1])
        self.log.write_snapshot(
            {
                "config": self._config_dict(),
                "best": state_record(self.best) if self.best else None,
                "trajectories": [
                    {
                        "index": t.index,
                        "history": t.history,
                        "rule": t.rule.state_dict(),
                        "archive": t.archive.to_dict(),
                    }
                    for t in self.trajectories
                ],
                "controllers": self.controller_states(),
            }
        )
        self._write_best()
        self._outcomes.flush()
        self._tb.close()
        self.log.close()


def _reward_of(state: State | None) -> float:
    """A trajectory best's reward for the controllers (-inf without a valid best)."""
    return float(state.reward) if state is not None and state.valid else float("-inf")
