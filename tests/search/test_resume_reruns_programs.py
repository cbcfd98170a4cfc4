"""Issue 40 follow-ups (40c) for the search resume.

* Program tasks: a logged program state has no construction to verify, so on main a forged
  ``eval`` record whose reward is that of its (forged) score became the resumed run's best. Now the
  best logged program runs once more through the env (with its logged seed) and must reproduce
  its score; tasks with timed scores (issue 52, #14) are measured again, the new score kept, a failing program refused.
* ``problem=`` (a caller's own problem under a registered env id): the resume judged the log with
  the registered problem of ``config.json`` (refusing an honest log) instead of the run's own.
"""

from __future__ import annotations

import json
from typing import ClassVar

import gymnasium as gym
import numpy as np
import pytest

from discoverygym.envs.problem import Problem
from discoverygym.envs.program import ProgramTask
from discoverygym.envs.registry import PROGRAM_TASKS, TaskSpec, register_task
from discoverygym.errors import InvalidSolution
from discoverygym.policy import POLICIES, Sample, register_policy
from discoverygym.rewards.common import Score
from discoverygym.search.evolution import EvolutionarySearch, SearchConfig
from discoverygym.search.runlog import Replay, RunLog


class SeededTask(ProgramTask):
    """``return N`` scores N + seed/10^12 (a re-run must use the logged seed); ``timed`` marks the
    task's scores as measurements."""

    name = "seeded"
    title = "Seeded"
    quantity = "answer"
    entry = "answer"
    runs: ClassVar[list] = []  # every evaluated program, across instances

    def __init__(self, timed: bool = False) -> None:
        self.nondeterministic = timed

    @property
    def sota(self) -> dict:
        return {"value": 100.0, "source": "definition"}

    def initial_program(self) -> str:
        return "def answer():\n    return 1\n"

    def evaluate(self, source: str, *, seed: int) -> Score:
        SeededTask.runs.append(source)
        try:
            value = int(source.split("return ")[1])
        except (IndexError, ValueError):
            raise InvalidSolution("no return") from None
        return Score(value + seed / 1e12, {})


class ReturnPolicy:
    """Proposes ``return 3 + 2k`` for candidate k."""

    name = "return-code"
    action_modes = ("code",)

    def sample(self, contexts, n, rng):
        return [[Sample(action=f"def answer():\n    return {3 + 2 * k}\n") for k in range(n)] for _ in contexts]


@pytest.fixture(autouse=True)
def seeded_registered():
    register_task("Seeded-v0", TaskSpec(SeededTask, "seeded"))
    register_policy("return-code", f"{__name__}:ReturnPolicy")
    yield
    PROGRAM_TASKS.pop("Seeded-v0", None)
    gym.registry.pop("Seeded-v0", None)
    POLICIES.pop("return-code", None)


def _search(run_dir, L, resume=False, **env_kwargs):
    config = SearchConfig("Seeded-v0", policy="return-code", action_mode="code", C=1, L=L, K=2, seed=0,
                          env_kwargs=env_kwargs)
    return EvolutionarySearch(config, run_dir, resume=resume, executor="inline", tensorboard=False).run()


def _killed(tmp_path, **env_kwargs):
    """A finished L=1 run whose config says L=2 (killed after its first step)."""
    run = tmp_path / "run"
    _search(run, 1, **env_kwargs)
    config = json.loads((run / "config.json").read_text())
    (run / "config.json").write_text(json.dumps({**config, "L": 2}))
    return run


def _forge_best(run):
    """The best eval record ("return 5") now claims 9 with the reward of 9 (reward = score here)."""
    path = run / "archive.jsonl"
    lines = path.read_text().splitlines()
    i = next(n for n, line in enumerate(lines) if '"kind":"eval"' in line and "return 5" in line)
    record = json.loads(lines[i])
    record["state"]["score"] = record["state"]["reward"] = 9.0
    lines[i] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n")
    return i + 1


def test_the_best_logged_program_runs_again_with_its_seed(tmp_path):
    run = _killed(tmp_path)
    SeededTask.runs = []
    replay = Replay.read(RunLog(run), problem=SeededTask(), rerun=lambda s, seed: _rerun(s, seed))
    assert replay.checked.rerun == 1 and replay.checked.skipped is None
    SeededTask.runs = []
    result = _search(run, 2, resume=True)
    assert result.evaluated_now == 2
    assert SeededTask.runs[0].endswith("return 5\n")  # the best program first, then the new step's two


def _rerun(state, seed):
    from discoverygym.envs.program import ProgramEnv

    return ProgramEnv(SeededTask()).evaluate(state.code, seed=seed, id=state.id)


def test_a_forged_program_record_with_a_consistent_reward_is_refused(tmp_path):
    run = _killed(tmp_path)
    line = _forge_best(run)
    with pytest.raises(ValueError, match=rf"archive.jsonl:{line}: logged state 'c0-l0-k1' .*score 9.0, reward 9.0"
                                         r"\), but its program scores 5\.\d+ when run again"):
        _search(run, 2, resume=True)
    assert json.loads((run / "best.json").read_text())["score"] < 6


def test_timed_scores_are_measured_again_and_the_measurement_replaces_the_log(tmp_path):
    """Issue 52, #14: a timed task's best logged program runs again; its fresh score is the one kept."""
    run = _killed(tmp_path, timed=True)
    _forge_best(run)  # "return 5" claims 9: a timing cannot be reproduced, but it is not trusted either
    SeededTask.runs = []
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "taken from the log" warning any more
        _search(run, 2, resume=True, timed=True)
    assert SeededTask.runs[0].endswith("return 5\n")  # measured again first, then the new step's two
    best = json.loads((run / "best.json").read_text())
    assert best["score"] != 9.0 and best["score"] < 8  # the re-measured 5.x or a new step's 7.x, never the log's 9


def test_a_timed_program_that_fails_when_run_again_refuses_the_resume(tmp_path):
    """Issue 52, #14: the forged record "int main(){return 1;}" with score 0.001 became best; now refused."""
    run = _killed(tmp_path, timed=True)
    path = run / "archive.jsonl"
    lines = path.read_text().splitlines()
    i = next(n for n, line in enumerate(lines) if '"kind":"eval"' in line and "return 5" in line)
    record = json.loads(lines[i])
    record["state"]["code"] = "def answer():\n    pass\n"  # fails: no return
    record["state"]["score"] = record["state"]["reward"] = 9.0
    lines[i] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=rf"archive.jsonl:{i + 1}: .*its program fails when run again"):
        _search(run, 2, resume=True, timed=True)


def _first(x):
    x = list(x)
    if len(x) != 2:
        raise InvalidSolution("need two numbers")
    return Score(float(x[0]))


#: a caller's own problem (not in the registry): score = x[0]
FIRST = Problem(
    name="first", title="First", quantity="x[0]", direction="max", verifier=_first,
    initial=lambda rng: [1.0, 0.0], description="score = x[0]", sota={"value": 10.0, "source": "test"},
    row_len=None, returns="two floats", render=lambda c, size: np.zeros((size, size, 3), np.uint8),
)


def _own_problem_search(run_dir, L, resume=False):
    config = SearchConfig("CirclePacking-26-v0", policy="gaussian", C=1, L=L, K=2, seed=0)
    return EvolutionarySearch(config, run_dir, resume=resume, executor="inline", tensorboard=False,
                              problem=FIRST).run()


def test_a_search_with_its_own_problem_is_judged_by_it_on_resume(tmp_path):
    run = tmp_path / "run"
    _own_problem_search(run, 1)
    config = json.loads((run / "config.json").read_text())
    (run / "config.json").write_text(json.dumps({**config, "L": 2}))
    honest = (run / "archive.jsonl").read_text()
    assert _own_problem_search(run, 2, resume=True).evaluated_now == 2  # was refused by circle packing's verifier
    (run / "archive.jsonl").write_text(honest)
    (run / "best.json").unlink()
    line = _forge_best_first(run)
    with pytest.raises(ValueError, match=rf"archive.jsonl:{line}: .*verifier scores its construction"):
        _own_problem_search(run, 2, resume=True)


def _forge_best_first(run):
    """The last eval record keeps its construction but claims x[0] + 5."""
    path = run / "archive.jsonl"
    lines = path.read_text().splitlines()
    i = max(n for n, line in enumerate(lines) if json.loads(line)["kind"] == "eval")
    record = json.loads(lines[i])
    record["state"]["score"] = record["state"]["reward"] = record["state"]["score"] + 5
    lines[i] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n")
    return i + 1
