"""The discovery benchmark: trainer configs and the references a user would pick instead, at one wall budget.

One run = (env, config, seed) for ``budget_s`` seconds of wall time, recorded as a trace of
``(seconds, best verified score)`` points. Configs:

* trainer configs (:data:`~discoverygym.agents.config.ABLATIONS`: ``full`` = TTT-Discover,
  ``no-training``, ``naive-rl``, ``expected-reward``...) with every other setting at its
  default (the ``operators`` policy where the problem declares operators): one code path;
* ``reference`` — the scipy reference of the problem family: ``scipy.optimize.basinhopping`` with
  :func:`~discoverygym.envs.polish.slsqp_circles` as its local minimiser (circle packing; Wales &
  Doye 1997), or restarts of the smoothed-max Adam polisher from perturbations of the best
  (step functions; the gradient loop of AlphaEvolve's / TTT-Discover's programs);
* ``cma-es`` — CMA-ES (``cma`` package, Hansen 2016 arXiv:1604.00772; separable for more than 200
  variables) on the construction, scored exactly (circles through the radius repair of the polisher).

Every candidate of every config is verified by the env's verifier; the best verified score counts.
:func:`summarize` gives per config the mean ± sd of the best score, the time to reach 99.9% of
the record and a one-sided Mann–Whitney U test of ``full`` against each other config
(:func:`rank_test`, shared with ``discoverygym compare``); :func:`write_report` writes
``table.md``, ``summary.json`` and ``plot.html`` (plotly: mean best score against wall time, one
line per config).
"""

from __future__ import annotations

import json
import os
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from discoverygym.io import atomic_write_json, atomic_write_text
from discoverygym.search.results import best_within, verified_result  # the runner reads results through it
from discoverygym.types import Direction

__all__ = [
    "ALTERNATIVES",
    "BENCH_ENVS",
    "CONFIGS",
    "REFERENCES",
    "TIE_RTOL",
    "best_within",
    "late_warnings",
    "rank_test",
    "run_benchmark",
    "run_one",
    "summarize",
    "tie_scores",
    "time_to_target",
    "trainer_config",
    "write_report",
]

#: the benchmark's envs (issue 15)
BENCH_ENVS = ("CirclePacking-26-v0", "CirclePacking-32-v0", "ErdosMinOverlap-v0", "FirstAutocorrelation-v0")
#: the trainer configs measured by default, then the references
CONFIGS = ("full", "no-training", "naive-rl", "expected-reward", "reference", "cma-es")
REFERENCES = ("reference", "cma-es")


#: scores closer than this (relative, at least 1e-9 absolute) are one value in :func:`rank_test`: the
#: issue's 1e-9 rule for a verified improvement; two runs that both reach the CP26 record differ by 1e-15
TIE_RTOL = 1e-9


def tie_scores(values: Sequence[float], rtol: float = TIE_RTOL) -> list[float]:
    """``values`` with every cluster of scores within ``rtol`` (relative, ≥ ``rtol`` absolute) of its
    neighbour replaced by the cluster's smallest value, order kept.

    Two runs that reach the same construction report scores that differ in the last bits (2.6359830849175876
    and 2.635983084917583 on CirclePacking-26-v0); ranked as they are, such float noise decides a rank test.

    Returns:
        A list of floats, same length and order as ``values``.

    Source: ours; the tolerance is issue 15's rule that a score counts only when confirmed to 1e-9.
    """
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [float(v) for v in values]
    anchor = prev = None
    for i in order:
        v = float(values[i])
        if prev is None or v - prev > rtol * max(1.0, abs(v)):
            anchor = v
        out[i], prev = anchor, v
    return out


#: the alternatives of :func:`rank_test`: "reference better", "reference worse", either
ALTERNATIVES = ("better", "worse", "two-sided")


def rank_test(reference: Sequence[float], other: Sequence[float], direction: str,
              alternative: str = "better") -> float | None:
    """Mann–Whitney U p-value of ``reference`` against ``other``; ``None`` without data.

    ``alternative``: ``"better"`` (one-sided, H1 = ``reference`` scores are better: ``greater`` for a
    maximised score, ``less`` for a minimised one), ``"worse"`` (the other side) or ``"two-sided"``
    (H1 = the two differ). Scores within :data:`TIE_RTOL` of each other are ties (:func:`tie_scores`).

    Raises:
        ValueError: an unknown ``alternative``.

    Source: ``scipy.stats.mannwhitneyu`` (exact without ties, tie-corrected normal approximation with ties)."""
    if alternative not in ALTERNATIVES:
        raise ValueError(f"alternative must be one of {', '.join(ALTERNATIVES)}, got {alternative!r}")
    if not reference or not other:
        return None
    from scipy.stats import mannwhitneyu

    maximise = Direction(direction) is Direction.MAX
    side = {"better": "greater" if maximise else "less", "worse": "less" if maximise else "greater",
            "two-sided": "two-sided"}[alternative]
    tied = tie_scores([*reference, *other])
    return float(mannwhitneyu(tied[:len(reference)], tied[len(reference):], alternative=side).pvalue)


class _Tracker:
    """Best verified score over wall time and over evaluations (the trace of one reference run)."""

    def __init__(self, env: Any, t0: float, callback: Callable[[dict], None] | None = None) -> None:
        self.env, self.t0, self.callback = env, t0, callback
        self.best: Any = None
        self.evaluations = 0
        self.trace: list[tuple[float, float]] = []
        self.curve: list[list[float]] = []

    def offer(self, construction: Any) -> float:
        """Verify ``construction``; returns its reward (the failure reward when invalid)."""
        state = self.env.evaluate(construction)
        self.evaluations += 1
        if state.valid and (self.best is None or state.reward > self.best.reward):
            self.best = state
            elapsed = time.perf_counter() - self.t0
            self.trace.append((elapsed, float(state.score)))
            self.curve.append([self.evaluations, float(state.score)])
            if self.callback is not None:
                self.callback({"score/best": float(state.score), "evaluations": self.evaluations,
                               "elapsed_s": elapsed})
        return float(state.reward)


def _basinhopping_circles(env: Any, x0: np.ndarray, rng: np.random.Generator, track: _Tracker,
                          deadline: float) -> None:
    from scipy.optimize import OptimizeResult, basinhopping

    from discoverygym.envs.operators.circles import MAXITER
    from discoverygym.envs.polish import slsqp_circles

    shape = x0.shape

    def local(fun, x, args=(), **_):  # SLSQP polish as basinhopping's local minimiser
        z = slsqp_circles(np.asarray(x).reshape(shape), maxiter=MAXITER)
        reward = track.offer(z)
        return OptimizeResult(x=z.ravel(), fun=-reward, success=True, nfev=1)

    def step(x):  # centre jitter, radii shrunk (the "perturb" of basin hopping)
        z = np.asarray(x).reshape(shape).copy()
        z[:, :2] = np.clip(z[:, :2] + rng.normal(0, 0.05, z[:, :2].shape), 0, 1)
        z[:, 2] *= 0.9
        return z.ravel()

    while time.perf_counter() < deadline:
        basinhopping(lambda v: -float(np.asarray(v).reshape(shape)[:, 2].sum()), x0.ravel(), niter=10**9,
                     T=0.01, take_step=step, minimizer_kwargs={"method": local},
                     callback=lambda *a: time.perf_counter() >= deadline, seed=rng)


def _adam_restarts(env: Any, x0: np.ndarray, rng: np.random.Generator, track: _Tracker, deadline: float) -> None:
    polish = env.problem.polish
    best = x0
    track.offer(x0)
    while time.perf_counter() < deadline:
        x = best * (1.0 + 0.05 * rng.standard_normal(best.shape))
        z = polish(np.abs(x), steps=60)
        before = track.best
        track.offer(z)
        if track.best is not before:
            best = np.asarray(track.best.solution, dtype=np.float64)


def _cma(env: Any, x0: np.ndarray, rng: np.random.Generator, track: _Tracker, deadline: float) -> None:
    import cma

    from discoverygym.envs.polish import _shrink_to_feasible

    shape, circles = x0.shape, x0.ndim == 2
    scale = float(np.abs(x0).mean()) or 1.0

    def objective(v):
        z = np.asarray(v).reshape(shape)
        z = _shrink_to_feasible(z) if circles else np.abs(z)
        return -track.offer(z)

    opts = {"seed": int(rng.integers(1, 2**31 - 1)), "verbose": -9, "CMA_diagonal": x0.size > 200,
            "maxfevals": 10**9}
    while time.perf_counter() < deadline:
        es = cma.CMAEvolutionStrategy(x0.ravel(), 0.05 * scale, opts)
        while not es.stop() and time.perf_counter() < deadline:
            xs = es.ask()
            es.tell(xs, [objective(x) for x in xs])
        opts["seed"] += 1


def trainer_config(env_id: str, config: str, seed: int, budget_s: float | None = None, **overrides: Any) -> Any:
    """The :class:`~discoverygym.agents.trainer.TrainConfig` of trainer config ``config`` (an ablation
    name) on ``env_id``: ``discoverygym train``'s defaults (the env's default policy,
    :func:`~discoverygym.agents.config.default_policy`) with ``overrides`` applied; the one place
    the benchmark and ``discoverygym compare`` build their trainer configs.

    Raises:
        ValueError: unknown ablation name or an invalid override.
    """
    from discoverygym.agents.config import ablation_config, default_policy

    overrides.setdefault("policy", default_policy(env_id))
    return ablation_config(config, env_id=env_id, seed=seed, budget_s=budget_s, **overrides)


def _run_trainer(config: Any, t0: float, run_dir: Path | None, initial: Any, callback: Callable | None) -> dict:
    """A trainer run (resumed from ``run_dir``'s checkpoint when it has one): the result fields."""
    import shutil

    from discoverygym.agents.checkpoint import has_checkpoint
    from discoverygym.agents.config import RESUMABLE_FIELDS, TrainConfig, unnamed_refusal
    from discoverygym.agents.trainer import Trainer
    from discoverygym.rundir import CONFIG_FILE

    trace: list[tuple[float, float]] = []

    def on_step(m: dict) -> None:
        if not trace or m["score/best"] != trace[-1][1]:
            trace.append((time.perf_counter() - t0, float(m["score/best"])))
        if callback is not None:
            callback(m)

    if run_dir is not None and has_checkpoint(run_dir):
        stored = json.loads((run_dir / CONFIG_FILE).read_text())
        refusal = unnamed_refusal(stored, run_dir)
        if refusal:
            raise ValueError(refusal)
        stored.update({k: getattr(config, k) for k in RESUMABLE_FIELDS})
        trainer = Trainer(TrainConfig(**stored), run_dir, initial=initial, resume=True, callback=on_step)
    else:
        if run_dir is not None and run_dir.exists():  # killed before its first checkpoint: nothing to keep
            shutil.rmtree(run_dir)
        trainer = Trainer(config, run_dir, initial=initial, callback=on_step)
    trace.insert(0, (time.perf_counter() - t0, float(trainer.best.score)))
    budget = trainer.config.budget_s
    result = trainer.run(deadline=None if budget is None else t0 + budget)  # the budget counts from t0
    per_step = trainer.config.groups * trainer.config.group_size
    history = result.history  # every step of the run, those before a resume too (restored from the checkpoint)
    return {"best": float(result.best.score), "initial": float(result.initial.score), "trace": trace,
            "best_state": result.best.to_dict(), "initial_state": result.initial.to_dict(),
            "steps": len(history), "evaluations": len(history) * per_step,
            "wall_s": sum(m.get("perf/step_time_s", 0.0) for m in history),
            "curve": [[m["step"] * per_step, float(m["score/best"])] for m in history]}


def _run_reference(env_id: str, config: str, seed: int, budget_s: float, t0: float, initial: Any,
                   callback: Callable | None) -> dict:
    """A reference run (one process, BLAS single-threaded): the result fields."""
    from discoverygym.envs.construction import DiscoveryEnv
    from discoverygym.envs.registry import ENVS
    from discoverygym.io import limit_native_threads

    limit_native_threads(1)
    env = DiscoveryEnv(ENVS[env_id])
    _, info = env.reset(seed=seed)
    start = info["state"] if initial is None else env.evaluate(initial)
    if not start.valid:
        raise ValueError(f"the start construction is invalid: {start.error}")
    x0 = np.asarray(start.solution, dtype=np.float64)
    track = _Tracker(env, t0, callback)
    track.offer(x0)
    rng = np.random.default_rng(seed)
    deadline = t0 + budget_s
    if config == "cma-es":
        _cma(env, x0, rng, track, deadline)
    elif x0.ndim == 2:
        _basinhopping_circles(env, x0, rng, track, deadline)
    else:
        _adam_restarts(env, x0, rng, track, deadline)
    return {"best": float(track.best.score), "initial": float(start.score), "trace": track.trace,
            "best_state": track.best.to_dict(), "initial_state": start.to_dict(),
            "steps": track.evaluations, "evaluations": track.evaluations, "wall_s": time.perf_counter() - t0,
            "curve": track.curve}


def run_one(env_id: str, config: str, seed: int, budget_s: float | None, *, train_config: Any = None,
            run_dir: str | Path | None = None, initial: Any = None, callback: Callable[[dict], None] | None = None) -> dict:
    """One run of the benchmark or of a ``discoverygym compare`` study (the one runner of both).

    Args:
        env_id: a construction env id; config: a trainer config spec (an ablation name such as
            ``full``, a registered config, or overrides such as ``objective=expected-reward``:
            :func:`~discoverygym.agents.config.config_overrides`) or one of :data:`REFERENCES`;
        seed: seeds the env's initial state and the method; budget_s: wall budget (seconds; ``None``
            only for trainer configs, which then run ``train_config.steps``).
        train_config: the trainer config (default :func:`trainer_config` of ``config``).
        run_dir: where a trainer run checkpoints (it resumes from there) and where the result is
            stored as ``result.json``; a directory that already holds one is read back, not rerun.
        initial: the start construction (default: the env's seeded initial state).
        callback: called with the metrics of every trainer step (``step``, ``score/best``...) or, for
            a reference, ``{"score/best", "evaluations", "elapsed_s"}`` at every improvement.

    Returns:
        ``{"env_id", "config", "seed", "budget_s", "best", "initial", "trace": [[s, score], ...],
        "steps", "evaluations", "wall_s", "curve": [[evaluations, best score], ...], "elapsed_s",
        "best_in_budget", "late", "over_s"}`` (``best`` the best verified score; ``trace`` over wall
        seconds, ``curve`` over evaluations; ``elapsed_s`` the run's whole wall time;
        ``best_in_budget`` :func:`best_within`, the score every table shows; ``late`` True when an
        improvement landed past the budget (not counted); ``over_s`` seconds past the budget).
        A trainer run keeps its budget (:meth:`~discoverygym.agents.trainer.Trainer.run`: operator
        jobs stop at the deadline with their best so far), counted from this function's clock.

    Raises:
        ValueError: unknown config or env; a reference without ``budget_s``; an invalid ``initial``
            for a reference.
    """
    from discoverygym.envs.registry import PROGRAM_TASKS, find_env

    find_env(env_id)
    if env_id in PROGRAM_TASKS and config in REFERENCES:
        raise ValueError(f"{env_id} takes programs: the references ({', '.join(REFERENCES)}) search constructions")
    run_dir = None if run_dir is None else Path(run_dir)
    if run_dir is not None and os.path.lexists(run_dir / "result.json"):
        kept = verified_result(run_dir / "result.json", env_id, getattr(train_config, "env_kwargs", None))
        if kept is not None:
            return kept
    if config in REFERENCES:
        if budget_s is None:
            raise ValueError(f"reference {config!r} runs for a wall budget: give budget_s (--budget-s)")
    elif train_config is None:
        train_config = trainer_config(env_id, config, seed, budget_s)  # refuses an unknown config
    t0 = time.perf_counter()
    if config in REFERENCES:
        fields = _run_reference(env_id, config, seed, budget_s, t0, initial, callback)
    else:
        fields = _run_trainer(train_config, t0, run_dir, initial, callback)
    elapsed = time.perf_counter() - t0
    result = {"env_id": env_id, "config": config, "seed": seed, "budget_s": budget_s, **fields,
              "trace": [list(p) for p in fields["trace"]], "elapsed_s": elapsed}
    result["best_in_budget"] = best_within(result)
    result["late"] = result["best_in_budget"] != float(result["best"])  # an improvement landed past the budget
    result["over_s"] = 0.0 if budget_s is None else max(0.0, elapsed - budget_s)
    if run_dir is not None:
        run_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_json(run_dir / "result.json", result)
    return result


def late_warnings(result: dict) -> list[str]:
    """Warning lines for a :func:`run_one` result that overran its budget by more than 25% or
    improved after it (what the tables do not count); ``[]`` for a run that kept its budget."""
    budget = result.get("budget_s")
    if budget is None:
        return []
    out, name = [], f"{result['env_id']} {result['config']} seed {result['seed']}"
    elapsed = float(result.get("elapsed_s", 0.0))
    if elapsed > 1.25 * budget:
        out.append(f"warning: {name} ran {elapsed:.1f} s against its {budget:g} s budget")
    if best_within(result) != float(result["best"]):
        out.append(f"warning: {name} improved after the budget ({best_within(result):.10g} at the budget, "
                   f"{float(result['best']):.10g} in the end; not counted)")
    return out


def time_to_target(trace: Sequence[Sequence[float]], record: float, direction: str, share: float = 0.999) -> float | None:
    """Seconds until the trace first reached ``share`` of the record (``score ≥ share·record`` when
    maximised, ``score ≤ record/share`` when minimised), or ``None`` if it never did."""
    sense = Direction(direction)
    target = share * record if sense is Direction.MAX else record / share
    for t, score in trace:
        if score == target or sense.better(score, target):
            return float(t)
    return None


def summarize(results: Sequence[dict], problems: dict[str, Any]) -> list[dict]:
    """One row per (env, config): ``n``, ``mean``, ``sd``, ``best`` (of :func:`best_within`: the
    score each run had at its budget), ``t999`` (mean seconds to 99.9% of the record over the runs
    that reached it within the budget), ``reached``, ``late`` (runs that improved after the budget:
    not counted), ``wall_max`` (seconds, the longest run), ``p_full`` (one-sided rank test of
    ``full`` better than this config; ``None`` for ``full`` itself)."""
    rows = []
    envs = list(dict.fromkeys(r["env_id"] for r in results))
    for env_id in envs:
        problem = problems[env_id]
        direction, record = problem.direction, float(problem.sota["value"])
        by = {}
        for r in results:
            if r["env_id"] == env_id:
                by.setdefault(r["config"], []).append(r)
        full = [best_within(r) for r in by.get("full", [])]
        for config, runs in by.items():
            scores = [best_within(r) for r in runs]
            times = [time_to_target(r["trace"], record, direction) for r in runs]
            reached = [t for t, r in zip(times, runs) if t is not None and (r.get("budget_s") is None or t <= r["budget_s"])]
            late = sum(score != float(r["best"]) for score, r in zip(scores, runs))
            rows.append({"env_id": env_id, "config": config, "n": len(scores), "mean": statistics.fmean(scores),
                         "sd": statistics.stdev(scores) if len(scores) > 1 else 0.0, "best": Direction(direction).best(scores),
                         "t999": statistics.fmean(reached) if reached else None, "reached": len(reached),
                         "late": late, "wall_max": max(float(r.get("elapsed_s", r.get("wall_s", 0.0))) for r in runs),
                         "p_full": None if config == "full" else rank_test(full, scores, direction),
                         "record": record, "direction": direction})
    return rows


def _fmt_table(rows: Sequence[dict], budget_s: float) -> str:
    lines = [(f"Best verified score reached within {budget_s:g} s wall per run (mean ± sd over seeds; what a "
              "run found after the budget does not count); t99.9 = seconds to 99.9% of the record (runs that "
              "reached it within the budget); p = one-sided Mann-Whitney U, full better than the row; late = runs that improved "
              "after the budget; wall = the longest run."), "",
             "| env | config | runs | mean ± sd | best | t99.9 (reached) | p (full better) | late | wall | record |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        t = "—" if r["t999"] is None else f"{r['t999']:.0f} s ({r['reached']}/{r['n']})"
        p = "—" if r["p_full"] is None else f"{r['p_full']:.3f}"
        lines.append(f"| {r['env_id']} | {r['config']} | {r['n']} | {r['mean']:.7f} ± {r['sd']:.1e} | {r['best']:.7f} "
                     f"| {t} | {p} | {r['late']} | {r['wall_max']:.0f} s | {r['record']:.7g} |")
    return "\n".join(lines) + "\n"


def _plot(results: Sequence[dict], problems: dict[str, Any], path: Path) -> None:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    envs = list(dict.fromkeys(r["env_id"] for r in results))
    fig = make_subplots(rows=len(envs), cols=1, subplot_titles=envs)
    for i, env_id in enumerate(envs, start=1):
        runs = [r for r in results if r["env_id"] == env_id]
        budget = max(r["budget_s"] for r in runs)
        grid = np.linspace(0, budget, 200)
        for config in dict.fromkeys(r["config"] for r in runs):
            curves = []
            for r in runs:
                if r["config"] != config or not r["trace"]:
                    continue
                t = np.array([p[0] for p in r["trace"]])
                s = np.array([p[1] for p in r["trace"]])
                idx = np.searchsorted(t, grid, side="right") - 1
                curves.append(s[np.maximum(idx, 0)])  # before the first point: the start score
            if curves:
                fig.add_trace(go.Scatter(x=grid, y=np.mean(np.array(curves), axis=0), name=f"{env_id}: {config}",
                                         mode="lines"), row=i, col=1)
        fig.add_hline(y=float(problems[env_id].sota["value"]), line_dash="dot", row=i, col=1)
        fig.update_xaxes(title_text="wall time (s)", row=i, col=1)
        fig.update_yaxes(title_text="best verified score (mean over seeds)", row=i, col=1)
    fig.update_layout(height=380 * len(envs), title="discovery benchmark: best score against wall time")
    fig.write_html(str(path), include_plotlyjs=True)


def write_report(results: Sequence[dict], out: Path, budget_s: float) -> list[dict]:
    """``out/table.md``, ``out/summary.json`` and ``out/plot.html`` from the run results; returns the rows."""
    from discoverygym.envs.registry import ENVS

    rows = summarize(results, ENVS)
    atomic_write_text(out / "table.md", _fmt_table(rows, budget_s))
    atomic_write_json(out / "summary.json", {"budget_s": budget_s, "rows": rows})
    _plot(results, ENVS, out / "plot.html")
    return rows


def run_benchmark(envs: Sequence[str], configs: Sequence[str], seeds: Sequence[int], budget_s: float, out: Path,
                  log: Callable[[str], None] = print) -> list[dict]:
    """Every (env, config, seed) run not already in ``out/runs/`` (resumable), then :func:`write_report`.

    Returns:
        The summary rows (:func:`summarize`).
    """
    out = Path(out)
    (out / "runs").mkdir(parents=True, exist_ok=True)
    results = []
    for env_id in envs:
        for config in configs:
            for seed in seeds:
                path = out / "runs" / f"{env_id}__{config}__seed{seed}.json"
                if path.is_file():
                    result = json.loads(path.read_text())
                else:
                    result = run_one(env_id, config, seed, budget_s)
                    atomic_write_json(path, result)
                log(f"{env_id} {config} seed {seed}: {best_within(result):.10g} at {budget_s:g} s")
                for line in late_warnings(result):
                    log(line)
                results.append(result)
    return write_report(results, out, budget_s)


