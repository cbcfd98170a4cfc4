"""Issue 16, item 2: wrappers for generic RL libraries (fixed-shape Box spaces, flat observation,
dense failure reward), async vector envs with shared memory, and Stable-Baselines3 PPO."""

from __future__ import annotations

import time
from functools import partial

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import discoverygym  # noqa: F401  (registers the envs)
from discoverygym.wrappers import (
    DenseFailureReward,
    FixedShapeConstruction,
    FlatObservation,
    circle_violation,
    make_box_env,
    step_height_violation,
)


@pytest.mark.parametrize("env_id, n, shape", [("CirclePacking-26-v0", None, (26, 3)),
                                              ("ErdosMinOverlap-v0", 64, (64,))])
@pytest.mark.parametrize("mode", ["absolute", "delta"])
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_sampled_actions_are_shape_correct_and_judged(env_id, n, shape, mode):
    env = make_box_env(env_id, n=n, mode=mode)
    check_env(env, skip_render_check=True)
    obs, info = env.reset(seed=0)
    assert obs.shape == shape and env.observation_space.contains(obs)
    action = env.action_space.sample()
    assert action.shape == shape and env.action_space.contains(action)
    obs, reward, *_, info = env.step(action)
    assert env.observation_space.contains(obs) and np.isfinite(reward)
    assert info["candidate"].shape == shape and np.all(info["candidate"] >= env.low)


def test_a_zero_delta_proposes_the_current_construction():
    env = make_box_env("CirclePacking-26-v0", mode="delta")
    _, info = env.reset(seed=0)
    _, reward, *_, step_info = env.step(np.zeros(env.action_space.shape, np.float32))
    assert step_info["valid"] and reward == pytest.approx(info["score"])
    np.testing.assert_allclose(step_info["candidate"], info["state"].solution)


def test_delta_steps_chain_with_a_horizon_and_are_bounded():
    env = FixedShapeConstruction(gym.make("CirclePacking-26-v0", horizon=3), mode="delta", max_delta=0.01)
    env.reset(seed=0)
    obs, *_ = env.step(np.zeros(env.action_space.shape, np.float32))
    _, *_, info = env.step(np.full(env.action_space.shape, -1.0, np.float32))
    assert np.abs(info["candidate"] - obs.astype(np.float64)).max() <= 0.01 + 1e-6


def test_n_resamples_a_variable_length_start_state():
    env = FixedShapeConstruction(gym.make("ErdosMinOverlap-v0"), n=600)
    obs, info = env.reset(seed=3)
    assert obs.shape == (600,) and len(info["state"].solution) != 600
    with pytest.raises(ValueError, match="n must be"):
        FixedShapeConstruction(gym.make("ErdosMinOverlap-v0"), n=0)
    with pytest.raises(ValueError, match="programs"):
        FixedShapeConstruction(gym.make("ErdosMinOverlap-v0", action_mode="code"))


def test_flat_observation_appends_the_score():
    env = FlatObservation(make_box_env("CirclePacking-26-v0"))
    obs, info = env.reset(seed=0)
    assert obs.shape == (26 * 3 + 1,) and obs[-1] == pytest.approx(info["score"])
    with pytest.raises(ValueError, match="Box observation"):
        FlatObservation(gym.make("CirclePacking-26-v0"))


def test_dense_failure_reward_grades_invalid_candidates_below_every_valid_one():
    env = DenseFailureReward(make_box_env("CirclePacking-26-v0"))
    env.reset(seed=0)
    base = env.unwrapped.reset(seed=0)[1]["state"].solution
    near = np.array(base, dtype=np.float32)
    near[:, 2] += 0.02  # slightly too large radii
    far = near.copy()
    far[:, 2] += 0.3
    r_near, i_near = env.step(near)[1], env.step(near)[4]
    r_far = env.step(far)[1]
    assert not i_near["valid"] and i_near["violation"] > 0
    assert -2.0 < r_far < r_near < env.unwrapped.failure_reward < 0.0
    assert circle_violation([[0.5, 0.5, 0.1]]) == 0.0 and circle_violation([[0.05, 0.5, 0.1]]) == pytest.approx(0.05)
    assert step_height_violation([0.5, 0.5]) == 0.0 and step_height_violation([3.0, 0.0, 0.0]) == pytest.approx(0.5 / 3)


def test_async_vector_env_with_shared_memory():
    vec = gym.make_vec("ErdosMinOverlap-v0", num_envs=2, vectorization_mode="async",
                       wrappers=[partial(FixedShapeConstruction, n=32)])
    try:
        obs, _ = vec.reset(seed=0)
        assert obs.shape == (2, 32)
        _, rewards, *_ = vec.step(vec.action_space.sample())
        assert rewards.shape == (2,)
    finally:
        vec.close()


def test_stable_baselines3_ppo_trains_on_wrapped_envs(capsys):
    sb3 = pytest.importorskip("stable_baselines3")
    t0 = time.perf_counter()
    for env in (make_box_env("CirclePacking-26-v0", mode="delta", dense=True),
                make_box_env("ErdosMinOverlap-v0", n=64, mode="delta", dense=True)):
        model = sb3.PPO("MlpPolicy", env, n_steps=64, batch_size=32, n_epochs=2, seed=0, device="cpu")
        model.learn(total_timesteps=256)
        assert model.num_timesteps == 256
        action, _ = model.predict(env.reset(seed=0)[0], deterministic=True)
        assert action.shape == env.action_space.shape
        assert np.isfinite(env.step(action)[1])
    with capsys.disabled():
        print(f"\nSB3 PPO, 2 x 256 steps: {time.perf_counter() - t0:.1f} s")
