"""The ``resume`` family: a resume trusts no file it reads back (issue 52, #13, #14).

* ``forged-result`` (construction envs): a finished ``compare`` run's ``result.json`` built from the
  honest initial state, with ``best`` edited to twice as good (on main ``compare --resume`` put the
  edited 0.30 for a true 0.38135 into its table and ``summary.json``).
  :func:`~discoverygym.search.results.verified_result` must refuse it.
* ``forged-timing`` (timed program tasks: kernels, LassoPath, AtCoder): a run log whose initial
  record holds a program that fails (``int main(){return 1;}``, or a Python ``raise``) with a far
  better score than the honest one (on main the resume kept it as best, reward 1000, with only a
  warning "its score is taken from the log"). The resume measures the program again through the
  env and must refuse the log.

Both are :class:`~discoverygym.audit.logs.Probe` s built from the env's honest initial state.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from discoverygym.audit.logs import Probe

__all__ = ["PROBES"]


def _twice_as_good(problem: Any, score: float) -> float:
    """A score twice as good as ``score`` in the problem's direction."""
    return 0.5 * score if str(getattr(problem, "direction", "max")).endswith("min") else 2.0 * score


def _forged_result(env: Any, base: Any) -> tuple[str, str]:
    from discoverygym.errors import UsageError
    from discoverygym.search.results import verified_result

    env_id = getattr(getattr(env, "spec", None), "id", None)
    claimed = _twice_as_good(env.problem, float(base.score))
    state = base.to_dict()
    result = {"env_id": env_id, "config": "full", "seed": 0, "budget_s": None, "best": claimed,
              "initial": base.score, "trace": [[0.0, base.score], [1.0, claimed]], "steps": 1, "evaluations": 1,
              "wall_s": 1.0, "curve": [[1, claimed]], "elapsed_s": 1.0, "best_in_budget": claimed, "late": False,
              "over_s": 0.0, "best_state": dict(state, score=claimed, reward=env.problem.reward(claimed)),
              "initial_state": state}
    with tempfile.TemporaryDirectory(prefix="dgaudit-result") as tmp:
        path = Path(tmp) / "result.json"
        path.write_text(json.dumps(result))
        try:
            kept = verified_result(path, env_id)
        except UsageError as exc:
            return "rejected", str(exc).replace(tmp, "RUN")
    return "REWARDED", f"compare --resume kept an edited result: best {None if kept is None else kept['best']!r} (honest {base.score!r})"


def _failing_program(env: Any) -> str:
    return "int main() { return 1; }\n" if env.program_language == "cpp" else (
        f"def {env.program_entry}(*args, **kwargs):\n    raise RuntimeError('forged')\n")


def _forged_timing(env: Any, base: Any) -> tuple[str, str]:
    from discoverygym.search.archive import state_record
    from discoverygym.search.runlog import Replay, RunLog

    if not base.valid or base.score is None:
        return "not judged", "the honest initial program cannot be scored here, so neither can a forged one"
    problem = env.problem
    claimed = _twice_as_good(problem, float(base.score))
    forged = state_record(base)
    forged.update(code=_failing_program(env), score=claimed, reward=problem.reward(claimed))
    with tempfile.TemporaryDirectory(prefix="dgaudit-log") as tmp:
        log = RunLog(tmp)
        log.append({"kind": "init", "state": forged})
        log.close()
        try:
            replay = Replay.read(log, problem=problem,
                                 rerun=lambda state, seed: env.evaluate(state.code, seed=seed or 0, id=state.id))
        except ValueError as exc:
            return "rejected", str(exc).replace(tmp, "RUN")
    kept = replay.initial
    return "REWARDED", f"resume kept a failing program as its start: score {kept.score!r} (honest {base.score!r})"


def _timed_program(env: Any) -> bool:
    problem = getattr(env, "problem", None)
    return env.action_kind == "code" and problem is not None and not hasattr(problem, "verifier") and (
        bool(getattr(problem, "nondeterministic", False)) or bool(getattr(problem, "timed", False)))


def _has_verifier(env: Any) -> bool:
    return env.action_kind == "construction" and callable(getattr(env.problem, "verifier", None)) and \
        getattr(getattr(env, "spec", None), "id", None) is not None


#: the resume probes, in table order.
PROBES: tuple[Probe, ...] = (
    Probe("forged-result", "resume", "a compare run's result.json edited to twice the honest best; compare --resume "
          "must refuse it", _has_verifier, _forged_result),
    Probe("forged-timing", "resume", "a timed task's log starts from a failing program claiming twice the honest "
          "score; the resume measures it again and must refuse the log", _timed_program, _forged_timing),
)
