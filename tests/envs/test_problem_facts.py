"""Issue 38, item 2: the problem is the one home of its facts (direction, bounds, graded violation,
example program, language, polish); no table keyed by problem names outside it."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import discoverygym
from discoverygym.envs.polish import get_polisher, slsqp_circles
from discoverygym.envs.problem import Direction, example_file
from discoverygym.envs.program import ProgramTask
from discoverygym.envs.registry import PROGRAM_TASKS, make_task
from discoverygym.errors import InvalidSolution
from discoverygym.rewards.circle_packing import circle_violation, slacks


def test_direction_is_a_string_enum_with_one_gap_convention():
    lo, hi = Direction("min"), Direction("max")
    assert lo == "min" and hi == "max" and f"{lo}" == "min" and str(hi) == "max"
    assert json.dumps({"d": lo}) == '{"d": "min"}'
    assert lo.better(1.0, 2.0) and not lo.better(2.0, 2.0) and hi.better(2.0, 1.0)
    assert lo.best([3.0, 1.0, 2.0]) == 1.0 and hi.best([3.0, 1.0, 2.0]) == 3.0
    assert lo.gap(1.5, 1.0) == hi.gap(1.5, 1.0) == 0.5  # value - record, whatever the direction
    assert lo.improvement(1.0, 1.5) == hi.improvement(1.5, 1.0) == 0.5
    assert lo.worst == math.inf and hi.worst == -math.inf
    assert (lo.comparative, hi.comparative) == ("lower", "higher")
    with pytest.raises(ValueError):
        Direction("lower")


def test_every_problem_declares_its_direction_and_language():
    for problem in discoverygym.ENVS.values():
        assert isinstance(problem.direction, Direction) and problem.language == "python"

    class Toy(ProgramTask):
        name = title = quantity = "toy"
        direction = "min"  # a plain string is converted when the subclass is defined

        def initial_program(self) -> str:
            return ""

        def evaluate(self, source, *, seed):
            raise NotImplementedError

    assert Toy.direction is Direction.MIN and Toy().example is None


def test_bundled_examples_are_the_problems_own():
    with_example = {e for e, p in discoverygym.ENVS.items() if p.example}
    assert {"CirclePacking-26-v0", "CirclePacking-32-v0", "ErdosMinOverlap-v0",
            "FirstAutocorrelation-v0"} == with_example
    for env_id in with_example:
        assert example_file(discoverygym.ENVS[env_id]).is_file()
    assert example_file(discoverygym.ENVS["Hadamard-29-v0"]) is None
    for env_id in ("AHC039-v0", "LassoPath-v0", "QubitRouting-v0", "TriMul-H100-v0"):
        if env_id in PROGRAM_TASKS:
            task = make_task(env_id)
            assert example_file(task).read_text() == task.initial_program(), env_id


def test_bounds_and_violation_live_on_the_problem():
    envs = discoverygym.ENVS
    assert envs["CirclePacking-32-v0"].bounds == (0.0, 1.0) and envs["Hadamard-29-v0"].bounds == (-1.0, 1.0)
    assert envs["SumDifference-v0"].bounds is None and envs["SumDifference-v0"].violation is None
    assert envs["CirclePacking-26-v0"].violation is circle_violation


def test_circle_violation_is_the_verifiers_slacks():
    rng = np.random.default_rng(0)
    for _ in range(50):
        xyr = rng.uniform(0.0, 1.0, (6, 3)) * [1, 1, 0.3]
        v = circle_violation(xyr)
        outside, _, _, overlap = slacks(xyr)
        assert v == pytest.approx(np.maximum(0, outside).sum() + np.maximum(0, overlap).sum())
        try:
            discoverygym.ENVS["CirclePacking-26-v0"].verifier.func(xyr, tol=0.0)
            assert v == 0.0
        except InvalidSolution:
            assert v > 0.0
    assert circle_violation([[0.5, 0.5, -0.1]]) == pytest.approx(0.1) and circle_violation([[1, 2]]) == math.inf


def test_polish_is_the_problems_or_a_polisher_by_its_name():
    cp = discoverygym.ENVS["CirclePacking-26-v0"]
    assert get_polisher("auto", cp) is cp.polish is slsqp_circles
    assert get_polisher("slsqp_circles") is slsqp_circles and get_polisher("none", cp) is None
    # the names polish= took before issue 38 still resolve (old commands, old run directories)
    assert get_polisher("circle_packing") is slsqp_circles
    with pytest.raises(ValueError, match="unknown polish 'circle_packin'"):
        get_polisher("circle_packin")
