"""Published records are the ground truth: every verifier path must reproduce expected_value."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest

import discoverygym
from discoverygym.cli import main
from discoverygym.envs import get_problem

REL_TOL = 1e-9


def _env_id(problem_name: str) -> str:
    return next(env_id for env_id, p in discoverygym.ENVS.items() if p.name == problem_name)


def test_env_step_reproduces_expected_value(published):
    env = gym.make(_env_id(published["problem"]))
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step(published["construction"])
    assert info["valid"], info["error"]
    assert abs(info["score"] - published["expected_value"]) <= REL_TOL * abs(published["expected_value"])
    problem = get_problem(published["problem"])
    expected_reward = (
        published["expected_value"] if problem.direction == "max" else 1.0 / published["expected_value"]
    )
    assert abs(reward - expected_reward) <= REL_TOL * abs(expected_reward)
    assert terminated


def test_every_convolution_method_agrees(published):
    """The FFT paths must give the direct value (well inside 1e-12 relative)."""
    problem = get_problem(published["problem"])
    func = problem.verifier
    if "method" not in inspect.signature(func).parameters:
        pytest.skip(f"{published['problem']} has no convolution method to compare")
    values = {m: func(published["construction"], method=m).value for m in ("direct", "fft", "auto")}
    for method, value in values.items():
        assert abs(value - values["direct"]) <= 1e-12 * abs(values["direct"]), method
    assert abs(values["auto"] - published["expected_value"]) <= REL_TOL * published["expected_value"]


def test_numpy_array_input_gives_same_score(published):
    env = gym.make(_env_id(published["problem"]))
    env.reset(seed=0)
    _, _, _, _, info = env.step(np.asarray(published["construction"], dtype=np.float64))
    assert abs(info["score"] - published["expected_value"]) <= REL_TOL * published["expected_value"]


def test_cli_evaluate_json_reproduces_expected_value(published, capsys):
    code = main(["evaluate", _env_id(published["problem"]), str(published["path"]), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert out["valid"] is True and out["error"] is None
    assert abs(out["score"] - published["expected_value"]) <= REL_TOL * published["expected_value"]


def test_cli_installed_command_runs(published):
    """The console script itself (a fresh process), for one record per problem family."""
    if published["problem"] not in ("circle_packing_26", "hadamard_29"):
        pytest.skip("one subprocess per problem family is enough")
    proc = subprocess.run(
        [sys.executable, "-m", "discoverygym.cli", "evaluate", _env_id(published["problem"]),
         str(published["path"]), "--json"],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert abs(json.loads(proc.stdout)["score"] - published["expected_value"]) <= REL_TOL * published["expected_value"]
