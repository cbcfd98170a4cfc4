"""Per-case improvement over the initial state in ``info["metrics"]``, and its distribution (quantiles, histogram)."""

from __future__ import annotations

import math
import re
import shutil

import gymnasium as gym
import pytest

import discoverygym  # noqa: F401 - registers the envs
from discoverygym.casestats import case_improvement, distribution_text, quantiles, text_histogram
from discoverygym.envs.kernels import TriMulTask
from discoverygym.envs.program import ProgramEnv, ProgramTask
from discoverygym.errors import InvalidSolution
from discoverygym.rewards.common import Score


# ------------------------------------------------------------------ the arithmetic
def test_case_improvement_sign_and_scale_by_hand():
    assert case_improvement([110, 90, 100], [100, 100, 100], "max") == pytest.approx([0.1, -0.1, 0.0])
    # runtimes (lower is better): 100 against 200 is +50 %, 300 against 200 is -50 %
    assert case_improvement([100.0, 300.0], [200.0, 200.0], "min") == pytest.approx([0.5, -0.5])
    # negative baselines: the sign still says better (score went up) / worse
    assert case_improvement([-5.0], [-10.0], "max") == pytest.approx([0.5])
    assert case_improvement([3, 1], [0, math.inf], "max") == [None, None]
    with pytest.raises(ValueError, match="baseline"):
        case_improvement([1, 2], [1], "max")
    with pytest.raises(ValueError, match="direction"):
        case_improvement([1], [1], "up")


def test_quantiles_and_histogram_by_hand():
    values = [-0.5, 0.0, 0.25, 0.5, 1.0, None]
    q = quantiles(values)
    # sorted finite [-0.5, 0, .25, .5, 1]: positions (n-1)q = 4q, linear interpolation
    assert q[0.0] == -0.5 and q[1.0] == 1.0 and q[0.5] == 0.25
    assert q[0.25] == 0.0 and q[0.75] == 0.5
    assert q[0.1] == pytest.approx(-0.5 + 0.4 * 0.5)  # between -0.5 and 0 at 0.4
    assert q[0.9] == pytest.approx(0.5 + 0.6 * 0.5)  # between 0.5 and 1 at 0.6
    assert quantiles([None, float("nan")]) == {}
    # 3 equal-width bins over [-0.5, 1]: [-0.5, 0) 1, [0, .5) 2, [.5, 1] 2
    lines = text_histogram(values, bins=3, width=10)
    assert [int(re.search(r"[)\]]\s+(\d+)", ln).group(1)) for ln in lines] == [1, 2, 2]
    assert [ln.count("#") for ln in lines] == [5, 10, 10]
    assert text_histogram([]) == [] and len(text_histogram([2.0, 2.0])) == 1
    text = distribution_text(values)
    assert text.startswith("per-case improvement over the initial state: 5 cases (3 better, 1 equal, 1 worse)")
    assert "p50 +0.25" in text and "max +1" in text


# ------------------------------------------------------------------ through a program env
class ListTask(ProgramTask):
    """A program is ``"1,2,3"``: its per-case scores (lower is better); ``"bad"`` fails."""

    name = "list_task"
    title = "list task"
    quantity = "mean of the case scores"
    direction = "min"
    evaluate_initial = False

    def __init__(self) -> None:
        self.calls: list[str] = []

    def initial_program(self) -> str:
        return "2,4,8,10"

    def evaluate(self, source: str, *, seed: int) -> Score:
        self.calls.append(source)
        if source == "bad":
            raise InvalidSolution("bad program")
        scores = [float(x) for x in source.split(",")]
        return Score(sum(scores) / len(scores), {"case_scores": scores})


def test_program_env_reports_case_improvement_in_info_metrics():
    task = ListTask()
    env = ProgramEnv(task)
    env.reset(seed=0)
    assert task.calls == []  # evaluate_initial=False: nothing scored at reset
    _, _, _, _, info = env.step("1,4,16,5")
    # baseline 2,4,8,10 (the initial program, scored once, lazily): (b - s) / b
    assert info["metrics"]["case_improvement"] == pytest.approx([0.5, 0.0, -1.0, 0.5])
    assert task.calls == ["1,4,16,5", "2,4,8,10"]
    env.reset(seed=1)
    _, _, _, _, info = env.step("2,2,8,20")
    assert info["metrics"]["case_improvement"] == pytest.approx([0.0, 0.5, 0.0, -1.0])
    assert task.calls.count("2,4,8,10") == 1  # cached
    _, _, _, _, info = env.step("bad")
    assert "case_improvement" not in info["metrics"]
    _, _, _, _, info = env.step("1,2")  # other cases than the baseline: left out, not invented
    assert "case_improvement" not in info["metrics"]


def test_scoring_the_initial_program_fills_the_baseline():
    task = ListTask()
    env = ProgramEnv(task)
    env.reset(seed=0)
    _, _, _, _, info = env.step(task.initial_program())
    assert info["metrics"]["case_improvement"] == [0.0, 0.0, 0.0, 0.0]
    assert task.calls == ["2,4,8,10"]


def test_trimul_env_reports_case_improvement(monkeypatch):
    """Kernels: runtimes per timed case (lower is better), baseline = the initial program's runtimes."""
    def fake(self, source, *, seed):
        means = [100.0, 200.0, 400.0] if source == self.initial_program() else [50.0, 200.0, 800.0]
        return Score(math.exp(sum(map(math.log, means)) / 3), {"case_scores": means, "case_means_us": means})

    monkeypatch.setattr(TriMulTask, "evaluate", fake)
    env = gym.make("TriMul-MI300X-v0")
    env.reset(seed=0)
    _, _, _, _, info = env.step("def custom_kernel(data):\n    return data\n")
    assert info["metrics"]["case_improvement"] == pytest.approx([0.5, 0.0, -1.0])


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")
def test_ahc039_case_improvement_over_the_initial_program():
    from tests.envs.test_ahc_env import BOX, _native_confinement

    if not _native_confinement():
        pytest.skip("neither bubblewrap nor Landlock: native runs refused")
    env = gym.make("AHC039-v0", n_cases=3)
    _, info = env.reset(seed=0)
    initial = info["metrics"]["case_scores"]
    assert info["metrics"]["case_improvement"] == [0.0, 0.0, 0.0]
    _, _, _, _, info = env.step(BOX)
    box = info["metrics"]["case_scores"]
    assert info["metrics"]["case_improvement"] == pytest.approx([(b - a) / a for b, a in zip(box, initial)])


# ------------------------------------------------------------------ the search summary prints it
def test_search_summary_prints_the_case_histogram(tmp_path):
    from pathlib import Path

    from rich.console import Console

    from discoverygym.cli.search import _summary
    from discoverygym.search.config import SearchConfig
    from discoverygym.search.evolution import SearchResult
    from discoverygym.types import State

    best = State(None, 10.0, 1.0, True, code="x", id="b", metadata={"case_improvement": [0.5, 0.0, -1.0, 0.5]})
    result = SearchResult(best=best, evaluations=4, evaluated_now=4, wall_s=1.0, utilisation=1.0, timings={},
                          trajectories=[], run_dir=Path(tmp_path))
    console = Console(record=True, width=120)
    _summary(console, SearchConfig("AHC039-v0", action_mode="code"), result)
    text = console.export_text()
    assert "per-case improvement over the initial state: 4 cases (2 better, 1 equal, 1 worse)" in text
    assert "min -1 | p10 -0.7 | p25 -0.25 | p50 +0.25 | p75 +0.5 | p90 +0.5 | max +0.5" in text
    assert text.count("#") > 0
