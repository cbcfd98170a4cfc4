"""Programs as actions: the env runs them in the sandbox and re-verifies what they return."""

from __future__ import annotations

import json
import math

import gymnasium as gym
import pytest

import discoverygym
import discoverygym.rewards.circle_packing as cp_module
from discoverygym.cli import example_path, main
from discoverygym.sandbox.python import SandboxLimits

LIMITS = SandboxLimits(timeout_s=20.0, memory_mb=2048)


def code_env(env_id: str = "CirclePacking-26-v0", **kwargs) -> gym.Env:
    env = gym.make(env_id, action_mode="code", sandbox=LIMITS, **kwargs)
    env.reset(seed=0)
    return env


def test_program_result_is_scored_by_the_parent():
    env = code_env("SumDifference-v0")
    _, reward, _, _, info = env.step("def construct():\n    return [0, 1, 3, 7]\n")
    expected = math.log(len({a + b for a in (0, 1, 3, 7) for b in (0, 1, 3, 7)}) / 4) / math.log(
        len({a - b for a in (0, 1, 3, 7) for b in (0, 1, 3, 7)}) / 4
    )
    assert info["valid"] and info["score"] == pytest.approx(expected, rel=1e-15)
    assert reward == info["score"] and info["state"].code.startswith("def construct")


def test_program_gets_parent_seed_and_budget():
    env = code_env("SumDifference-v0")
    parent = env.unwrapped.state.solution
    src = (
        "def construct(seed, budget_s, parent):\n"
        "    assert isinstance(seed, int) and 0 < budget_s <= 20\n"
        "    return [int(v) for v in parent] + [1000]\n"
    )
    _, _, _, _, info = env.step(src)
    assert info["valid"], info["error"]
    assert info["state"].solution == [int(v) for v in parent] + [1000]


def test_patching_the_verifier_inside_the_program_changes_nothing():
    env = code_env()
    src = (
        "import discoverygym.rewards.circle_packing as cp\n"
        "from discoverygym.rewards.common import Score\n"
        "cp.circle_packing = lambda *a, **k: Score(1e9, {})\n"
        "def construct():\n"
        "    return [[0.5, 0.5, 0.5]] * 26\n"  # 26 identical overlapping circles
    )
    _, reward, _, _, info = env.step(src)
    assert not info["valid"] and "overlap" in info["error"]
    assert reward == env.unwrapped.failure_reward
    assert cp_module.circle_packing.__name__ == "circle_packing"  # host module untouched


def test_printed_or_returned_fake_scores_are_ignored():
    env = code_env("SumDifference-v0")
    src = (
        "print('score: 999.0')\n"
        "def construct():\n"
        "    print('{\"score\": 999.0, \"valid\": true}')\n"
        "    return {'construction': [0, 1, 3, 7], 'score': 999.0}\n"
    )
    _, reward, _, _, info = env.step(src)
    assert not info["valid"] and reward == env.unwrapped.failure_reward
    assert "score: 999.0" in info["state"].metadata["stdout"]


@pytest.mark.parametrize(
    "body, message",
    [
        ("    return float('nan')", "must be a list or array"),
        ("    return [[float('nan'), 0.5, 0.1]] * 26", "circles[0, 0] = nan is not finite"),
        ("    return [[0.5, 0.5]] * 26", "rows must have 3 entries"),
        ("    raise ValueError('boom')", "ValueError: boom"),
        ("    return None", "must be a list or array"),
    ],
)
def test_bad_programs_get_the_failure_reward_with_a_message(body, message):
    env = code_env()
    _, reward, terminated, _, info = env.step("def construct():\n" + body + "\n")
    assert not info["valid"] and message in info["error"]
    assert reward == env.unwrapped.failure_reward and terminated


def test_syntax_error_and_missing_entry_function():
    env = code_env()
    _, _, _, _, info = env.step("def construct(:\n")
    assert not info["valid"] and "syntax error (line 1)" in info["error"]
    env.reset(seed=0)
    _, _, _, _, info = env.step("def build():\n    return []\n")
    assert not info["valid"] and "construct" in info["error"]


def test_non_text_action_in_code_mode():
    env = code_env()
    _, reward, _, _, info = env.step([[0.5, 0.5, 0.1]])
    assert not info["valid"] and "program text" in info["error"]


@pytest.mark.parametrize("env_id", sorted(e for e, p in discoverygym.ENVS.items() if p.example))
def test_bundled_examples_are_valid(env_id, capsys):
    assert main(["evaluate", env_id, "--json", "--timeout", "30"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["valid"], out["error"]
    env = code_env(env_id)  # the CLI evaluates with the env's seed-0 initial state as parent
    state = env.unwrapped.evaluate(example_path(env_id).read_text(), parent=env.unwrapped.state, seed=0)
    assert state.valid and out["score"] == env.unwrapped.problem.verifier(state.solution).value


def test_cli_usage_errors_exit_2(tmp_path, capsys):
    assert main(["evaluate", "NoSuchEnv-v0", str(tmp_path / "x.json")]) == 2
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert main(["evaluate", "Hadamard-29-v0", str(bad)]) == 2
    obj = tmp_path / "obj.json"
    obj.write_text('{"solution": [1, 2]}')
    assert main(["evaluate", "Hadamard-29-v0", str(obj)]) == 2
    invalid = tmp_path / "invalid.json"
    invalid.write_text("[[1, 2], [3, 4]]")
    assert main(["evaluate", "Hadamard-29-v0", str(invalid), "--json"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["valid"] is False and "29" in out["error"]


def test_cli_list(capsys):
    assert main(["list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    from discoverygym.envs.registry import PROGRAM_TASKS

    assert {r["env_id"] for r in rows} == set(discoverygym.ENVS) | set(PROGRAM_TASKS)
    math_rows = [r for r in rows if r["env_id"] in discoverygym.ENVS]
    assert all(r["direction"] in ("min", "max") and r["record"] > 0 and r["source"] for r in math_rows)


def test_every_program_env_has_a_bundled_example():
    """``discoverygym evaluate <id>`` without a FILE works for every program env (it refused the
    scaling-law and KernelBench ids); for those the example is the env's initial program."""
    from discoverygym.envs.registry import PROGRAM_TASKS, make_task

    for env_id in PROGRAM_TASKS:
        assert example_path(env_id).is_file(), env_id
        if env_id.startswith(("ScalingLaw-", "KernelBench-", "QubitRouting-")):
            assert example_path(env_id).read_text() == make_task(env_id).initial_program(), env_id
