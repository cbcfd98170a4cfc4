"""A finished run's result, judged again before it is read back, and the score it reached by its budget.

:func:`verified_result` is what ``discoverygym compare --resume`` (:func:`~discoverygym.agents.bench.run_one`)
and the audit's ``resume`` family read a ``result.json`` with (issue 52, #13); :func:`best_within`
is the score every compare table shows. Layer 4 (beside the run log's :func:`~discoverygym.search.runlog.verify_states`,
whose judgment it reuses), so the audit can replay it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from discoverygym.types import Direction

__all__ = ["best_within", "verified_result"]


def verified_result(path: Path, env_id: str, env_kwargs: dict | None = None) -> dict | None:
    """A finished run's ``result.json`` read back only after it is judged again (issue 52, #13: one
    result edited to best 0.30, true 0.38135, went into the table and ``summary.json``).

    The file is read through its descriptor (:func:`~discoverygym.io.read_input_text`). Its best
    and initial states (``best_state``, ``initial_state``, written by :func:`run_one`) are judged as
    ``train --resume`` judges a checkpoint's (:func:`~discoverygym.search.runlog.verify_states`: a
    construction by the problem's verifier; a program run again through the env, a timed one
    measured again and its new score kept), and must carry the file's ``best`` and ``initial``.
    No point of ``trace`` or ``curve`` may be better than the verified best, and ``best_in_budget``,
    ``late`` and ``over_s`` are recomputed from the file's own numbers.

    Args:
        path: the ``result.json``.
        env_id: the study's env; env_kwargs: its options (program tasks: the task's options).

    Returns:
        The result, or ``None`` when it holds no states to judge (written before this check: the
        run is then done again, its checkpoint read through the trainer's verified resume; the old
        file is kept as ``result.unverified.json``).

    Raises:
        UsageError: the file is unreadable, for another env, or judged otherwise (one line naming
            the file and the figure; remove the file to run that config and seed again).
    """
    import math

    from discoverygym.errors import UsageError
    from discoverygym.io import read_input_text
    from discoverygym.search.runlog import verify_states
    from discoverygym.types import State

    fix = "the file was altered; remove it to run this config and seed again"
    try:
        result = json.loads(read_input_text(path, 1 << 30))
    except (ValueError, RecursionError) as exc:
        raise UsageError(f"{path}: not a readable run result ({str(exc)[:200]}); {fix}") from None
    if not isinstance(result, dict) or result.get("env_id") != env_id:
        raise UsageError(f"{path}: not a result of {env_id}; {fix}")
    if "best_state" not in result:
        os.replace(path, path.with_name("result.unverified.json"))
        return None
    problem, rerun = _judge_of(env_id, env_kwargs)
    try:
        best, initial = State.from_dict(result["best_state"]), State.from_dict(result["initial_state"])
        claimed = float(result["best"]), float(result["initial"])
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise UsageError(f"{path}: its states are malformed ({type(exc).__name__}: {exc}); {fix}") from None
    for name, state, value in (("best", best, claimed[0]), ("initial", initial, claimed[1])):
        if not state.valid or state.score is None or not math.isclose(state.score, value, rel_tol=1e-9, abs_tol=1e-12):
            raise UsageError(f"{path}: {name} {value!r}, but its {name}_state is {'invalid' if not state.valid else state.score!r}; {fix}")
    try:
        verify_states(problem, [(f"{path}: best_state", best), (f"{path}: initial_state", initial)], rerun=rerun)
    except ValueError as exc:
        raise UsageError(f"{str(exc).split('; the log was altered')[0]}; {fix}") from None
    result["best"], result["initial"] = float(best.score), float(initial.score)  # re-measured for a timed task
    direction = Direction(problem.direction)
    for key in ("trace", "curve"):
        points = result.get(key)
        if not isinstance(points, list) or not all(isinstance(p, list) and len(p) == 2 for p in points):
            raise UsageError(f"{path}: {key} is malformed; {fix}")
        beyond = [p[1] for p in points if not isinstance(p[1], (int, float)) or direction.better(float(p[1]), result["best"])
                  and not math.isclose(float(p[1]), result["best"], rel_tol=1e-9)]
        if beyond and not getattr(problem, "nondeterministic", False) and not getattr(problem, "timed", False):
            raise UsageError(f"{path}: {key} reaches {beyond[0]!r}, better than the verified best {result['best']!r}; {fix}")
        if beyond:  # a timed task: its logged timings are replaced by the re-measured best
            result[key] = [[p[0], p[1] if p[1] not in beyond else result["best"]] for p in points]
    try:
        result["best_in_budget"] = best_within(result)
    except (ValueError, TypeError) as exc:
        raise UsageError(f"{path}: {exc}; {fix}") from None
    result["late"] = result["best_in_budget"] != float(result["best"])
    budget, elapsed = result.get("budget_s"), result.get("elapsed_s")
    if isinstance(elapsed, (int, float)) and isinstance(budget, (int, float)):
        result["over_s"] = max(0.0, float(elapsed) - float(budget))
    return result


def _judge_of(env_id: str, env_kwargs: dict | None) -> tuple[Any, Callable | None]:
    """The problem that judges ``env_id``'s states and, for a program task, the re-run through its env."""
    from discoverygym.envs.registry import ENVS, problem_of

    if env_id in ENVS:
        return ENVS[env_id], None
    import gymnasium as gym

    problem = problem_of(env_id, "code", **(env_kwargs or {}))
    env = gym.make(env_id, **(env_kwargs or {})).unwrapped

    def rerun(state: Any) -> Any:
        seed = state.metadata.get("program_seed", 0)
        return env.evaluate(state.code, seed=seed if isinstance(seed, int) else 0, id=state.id)

    return problem, rerun


def best_within(run: dict) -> float:
    """The best verified score a run had reached by its wall budget: the last point of its
    ``trace`` at or before ``budget_s`` seconds (the run's ``best`` when it has no budget).

    A trainer stops when its next step would overrun the budget, judged by the last step's time,
    so a slow step (a 40 s ``anneal`` on FirstAutocorrelation-v0) can end past the budget; what it
    found after the budget does not count, so every config is scored at the same wall time. The
    clock is :func:`run_one`'s, started before the env (and the trainer) is built, for every config;
    a trainer starts its own budget once built (milliseconds later: 5 ms on FirstAutocorrelation-v0).
    A trainer run resumed from its checkpoint (``discoverygym compare --resume``) restarts both its
    trace and its budget, so it is scored on the resumed part only.

    Args:
        run: a :func:`run_one` result (``trace`` as ``[[seconds, score], ...]`` in time order).

    Returns:
        The score (float); the trace's first point when nothing was reached within the budget.

    Raises:
        ValueError: an empty trace with a budget.

    Source: issue 15 ("at the same wall budget"): every config is judged at the same wall time.
    """
    budget = run.get("budget_s")
    if budget is None:
        return float(run["best"])
    trace = run["trace"]
    if not trace:
        raise ValueError(f"run {run.get('env_id')}/{run.get('config')}/{run.get('seed')} has no trace")
    score = float(trace[0][1])
    for t, s in trace:
        if t > budget:
            break
        score = float(s)
    return score
