"""The Gymnasium contract of every registered environment, in both action modes."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import discoverygym
from discoverygym import State
from discoverygym.sandbox.python import SandboxLimits

ENV_IDS = list(discoverygym.ENVS)
FAST_SANDBOX = SandboxLimits(timeout_s=20.0, memory_mb=2048)


def make(env_id: str, **kwargs) -> gym.Env:
    if kwargs.get("action_mode") == "code":
        kwargs.setdefault("sandbox", FAST_SANDBOX)
    return gym.make(env_id, **kwargs)


def test_all_issue_envs_are_registered():
    expected = {
        "ErdosMinOverlap-v0", "FirstAutocorrelation-v0", "SecondAutocorrelation-v0",
        "ThirdAutocorrelation-v0", "CirclePacking-26-v0", "CirclePacking-32-v0",
        "SumDifference-v0", "Hadamard-29-v0",
    }
    assert expected <= set(gym.registry)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_check_env_construction_mode(env_id):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_env(make(env_id).unwrapped)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_check_env_code_mode(env_id):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_env(make(env_id, action_mode="code").unwrapped)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_initial_state_is_valid_seeded_and_described(env_id):
    env = make(env_id)
    obs, info = env.reset(seed=3)
    obs2, info2 = env.reset(seed=3)
    assert info["valid"] and info["error"] is None and np.isfinite(info["score"])
    assert info["state"].solution == info2["state"].solution
    assert obs["score"][0] == info["score"]
    assert info["sota"]["value"] > 0 and info["sota"]["source"]
    assert env.unwrapped.problem.title in obs["prompt"] and "def construct(" in obs["prompt"]
    assert env.observation_space.contains(obs)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_failure_reward_is_below_the_initial_reward(env_id):
    env = make(env_id)
    _, info = env.reset(seed=0)
    row_len = env.unwrapped.problem.row_len
    nan = [float("nan")] if row_len is None else [[float("nan")] * row_len] * row_len
    _, reward, terminated, truncated, bad = env.step(nan)
    assert not bad["valid"] and "= nan is not finite" in bad["error"]
    assert reward == env.unwrapped.failure_reward < info["state"].reward
    assert terminated and not truncated
    assert bad["score"] is None and bad["state"].parent_ids == (info["state"].id,)


@pytest.mark.parametrize("env_id", ENV_IDS)
@pytest.mark.parametrize("mode", ["ansi", "rgb_array"])
def test_render(env_id, mode):
    env = make(env_id, render_mode=mode)
    env.reset(seed=0)
    out = env.render()
    if mode == "ansi":
        assert "score" in out and env.unwrapped.problem.title in out
    else:
        assert out.dtype == np.uint8 and out.ndim == 3 and out.shape[2] == 3
        assert (out != 255).any(), "the picture is blank"


def test_reset_with_injected_state_reverifies_it():
    env = make("CirclePacking-26-v0")
    _, info = env.reset(seed=0)
    forged = State(solution=info["state"].solution, score=99.0, reward=99.0, valid=True, id="x")
    _, info2 = env.reset(options={"state": forged})
    assert info2["state"].id == "x"
    assert info2["score"] == pytest.approx(info["score"]) and info2["score"] != 99.0
    broken = State(solution=[[0.5, 0.5, 0.9]] * 26, score=99.0, reward=99.0, valid=True)
    with pytest.raises(ValueError, match="not a valid circle_packing_26"):
        env.reset(options={"state": broken})
    _, info3 = env.reset(options={"state": forged.to_dict()})
    assert info3["score"] == pytest.approx(info["score"])


def test_horizon_chains_valid_children():
    env = make("SumDifference-v0", horizon=3)
    env.reset(seed=0)
    _, r1, t1, _, i1 = env.step([0, 1, 3, 7])
    _, r2, t2, _, i2 = env.step([0, 1, 2])  # |A+A| = 5 > 3, |A-A| = 5: valid
    _, r3, t3, _, i3 = env.step([1, 1])  # invalid: one distinct element
    assert (t1, t2, t3) == (False, False, True)
    assert i2["state"].parent_ids == (i1["state"].id,)
    assert i3["state"].parent_ids == (i2["state"].id,) and not i3["valid"]
    assert env.unwrapped.state.id == i2["state"].id  # an invalid child does not replace the parent


def test_minimised_reward_is_inverse_score():
    env = make("FirstAutocorrelation-v0")
    env.reset(seed=0)
    _, reward, _, _, info = env.step([1.0, 1.0, 1.0, 1.0])
    assert info["score"] == pytest.approx(2 * 4 * 4 / 16)
    assert reward == pytest.approx(1 / info["score"])


def test_bad_constructor_arguments():
    with pytest.raises(ValueError, match="action_mode"):
        gym.make("Hadamard-29-v0", action_mode="text")
    with pytest.raises(ValueError, match="horizon"):
        gym.make("Hadamard-29-v0", horizon=0)
    with pytest.raises(ValueError, match="unknown problem"):
        gym.make("Hadamard-29-v0", problem="no_such_problem")
    with pytest.raises(TypeError, match="takes a Problem"):  # the class takes objects; gym.make resolves names
        discoverygym.DiscoveryEnv("hadamard_29")


@pytest.mark.parametrize("kwargs, match", [
    ({"horizon": float("nan")}, "horizon"),
    ({"horizon": 2.5}, "horizon"),
    ({"horizon": True}, "horizon"),
    ({"action_mode": "code", "program_budget_s": -1}, "program_budget_s"),
    ({"action_mode": "code", "program_budget_s": float("nan")}, "program_budget_s"),
    ({"action_mode": "code", "program_budget_s": float("inf")}, "program_budget_s"),
])
def test_nan_and_negative_env_options_are_refused(kwargs, match):
    """Issue 14, item 6: ``horizon=nan`` and ``program_budget_s=-1/nan`` were accepted silently."""
    with pytest.raises(ValueError, match=match):
        gym.make("CirclePacking-26-v0", **kwargs)


def test_program_returning_millions_of_rows_is_refused_before_parsing(monkeypatch):
    """Issue 14, item 5: the entry cap was checked after the parse, the nested-list scan and
    ``np.array``; the code-mode env caps the returned value's size on its raw bytes instead."""
    from discoverygym.rewards import common

    monkeypatch.setattr(common, "MAX_ENTRIES", 1000)
    env = gym.make("CirclePacking-26-v0", action_mode="code", sandbox=SandboxLimits(timeout_s=20)).unwrapped
    state = env.evaluate("def construct(**kwargs):\n    return [[0]] * 3000\n")
    assert not state.valid and "refused before parsing" in state.error, state.error
    assert env.sandbox.result_values == 2001


def test_parent_side_verification_has_a_time_budget():
    """Issue 14, item 5: a spent budget is a clear failure of the candidate (budget 0: at once)."""
    env = gym.make("CirclePacking-26-v0").unwrapped
    circles = [[0.1 + 0.03 * i, 0.5, 0.01] for i in range(26)]
    assert env.evaluate(circles).valid
    env.verify_budget_s = 0.0
    state = env.evaluate(circles)
    assert not state.valid and "time budget of 0 s" in state.error, state.error
