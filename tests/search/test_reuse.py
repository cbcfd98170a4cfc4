"""The reuse wrappers (gymnasium.Wrapper) pick exactly what the hand-computed rules pick.

A toy problem whose reward is the first number of the construction lets each test choose every
reward; expected scores are literal arithmetic from docs/algorithms.md.
"""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest

from discoverygym.envs.construction import DiscoveryEnv
from discoverygym.envs.problem import Problem
from discoverygym.errors import InvalidSolution
from discoverygym.rewards.common import Score
from discoverygym.search.reuse import ReuseWrapper


def _toy_verifier(x):
    x = list(x)
    if len(x) != 2 or not all(isinstance(v, (int, float)) for v in x):
        raise InvalidSolution("need two numbers")
    if x[0] < 0:
        raise InvalidSolution(f"x[0] = {x[0]} < 0")
    return Score(float(x[0]))


TOY = Problem(
    name="toy",
    title="Toy",
    quantity="x[0]",
    direction="max",
    verifier=_toy_verifier,
    initial=lambda rng: [1.0, 0.0],
    description="reward = x[0] (x[0] >= 0)",
    sota={"value": 10.0, "source": "test"},
    row_len=None,
    returns="two floats",
    render=lambda c, size: np.zeros((size, size, 3), np.uint8),
    failure_reward=-1.0,
)


def toy_env() -> gym.Env:
    return DiscoveryEnv(TOY)


def episode(env, reward, tag, state=None):
    """One episode: reset (optionally from ``state``) and propose [reward, tag]; returns the child."""
    _, info = env.reset(options={"state": state} if state is not None else None)
    _, _, terminated, _, info2 = env.step([reward, float(tag)])
    assert terminated
    return info["state"], info2["state"]


def test_puct_reuse_matches_hand_computed_scores():
    env = ReuseWrapper(toy_env(), "puct")
    _, info = env.reset(seed=0)
    root = info["state"]
    assert info["reuse"]["start_id"] == root.id and env.archive.initial_ids == [root.id]
    a = env.step([3.0, 1.0])[4]["state"]
    # next reset closes the batch: m(root) = 3, n(root) = 1, T = 1. H = {a 3, root 1}:
    # P a 2/3, root 1/3; scale over non-initial {a} = 0 -> 1e-6
    start, b = episode(env, 2.0, 2)
    assert start.id == a.id  # a: 3 + 1e-6 * 2/3 * sqrt(2) > root: 3 (m) + 1e-6 * 1/3 * sqrt(2) / 2
    # closes batch 2: m(a) = 2, n(a) = 1, n(root) = 2, T = 2. H = {a 3, b 2, root 1}, scale = 3 - 2
    env.close_batch()
    s3 = math.sqrt(3)
    expected = {a.id: 2 + 0.5 * s3 / 2, b.id: 2 + (2 / 6) * s3 / 1, root.id: 3 + (1 / 6) * s3 / 3}
    assert env.rule.scores(env.archive).as_dict() == pytest.approx(expected, rel=1e-14)
    _, info = env.reset()
    assert info["state"].id == root.id  # root wins: Q(root) = m(root) = 3
    assert [s.id for s in env.select(2)] == [root.id]  # every other state descends from root


@pytest.mark.parametrize("counting,T", [("rollout", 3), ("parent", 1)])
def test_puct_reuse_counting_unit(counting, T):
    env = ReuseWrapper(toy_env(), "puct", counting=counting)
    env.reset(seed=0)
    (start,) = env.select(1)
    for r in (2.0, -5.0, 4.0):  # one failure (x[0] < 0)
        episode(env, r, r, state=start)
    env.close_batch()
    assert env.rule.T == T and env.rule.n == {start.id: T} and env.rule.m == {start.id: 4.0}


def test_rpucg_reuse_matches_hand_computed_selection_and_dag():
    env = ReuseWrapper(toy_env(), "rpucg", restart_every=None)
    env.reset(seed=0)
    root = env.archive.states()[0]
    assert [s.id for s in env.select(5)] == [root.id]
    _, a = episode(env, 2.0, 1, state=root)
    episode(env, -1.0, 2, state=root)  # failure f
    # population root 1, a 2, f -inf: a 2/3 + 2/3 sqrt2 beats root 1/3 + 1/3 sqrt2 / 2; root excluded
    assert [s.id for s in env.select(5)] == [a.id]
    episode(env, 1.5, 3, state=a)
    _, c = episode(env, 3.0, 4, state=a)
    picks = env.select(5)
    assert [s.id for s in picks] == [c.id, root.id]
    t = env.rule.terms(env.archive)
    s3 = math.sqrt(3)
    assert t[c.id].score == pytest.approx(4 / 5 + 4 / 5 * s3, rel=1e-15)
    assert t[a.id].score == pytest.approx(3 / 5 + 3 / 5 * s3 / 2, rel=1e-15)
    assert t[root.id].score == pytest.approx(2 / 5 + 1 / 5 * s3 / 2, rel=1e-15)
    # a reset without a state starts from the best inspiration; children list every inspiration
    _, info = env.reset()
    assert info["state"].id == c.id and [s.id for s in info["inspirations"]] == [c.id, root.id]
    _, _, _, _, info = env.step([2.5, 5.0])
    assert info["state"].parent_ids == (c.id, root.id)


def test_epsilon_and_no_reuse():
    env = ReuseWrapper(toy_env(), "none")
    env.reset(seed=0)
    root = env.archive.states()[0]
    for r in (5.0, 6.0):
        start, _ = episode(env, r, r)
        assert start.id == root.id
    env = ReuseWrapper(toy_env(), "epsilon", epsilon=0.0)
    env.reset(seed=0)
    env.step([5.0, 1.0])
    start, _ = episode(env, 1.0, 2)
    assert start.reward == 5.0


@pytest.mark.parametrize("rule", ["puct", "rpucg", "epsilon"])
def test_seeded_runs_repeat_and_resume_exactly(rule, tmp_path):
    """Circle packing with Gaussian moves: save mid-run, load into a fresh wrapper, same archive."""

    def run(n, env=None, rng=None, start=0):
        env = env or ReuseWrapper(gym.make("CirclePacking-26-v0"), rule)
        rng = rng or np.random.default_rng(7)
        _, info = env.reset(seed=3) if start == 0 else env.reset()
        for i in range(start, n):
            sol = np.array(info["state"].solution)
            sol[:, :2] += rng.normal(0, 0.01, (26, 2))
            sol[:, 2] *= 1 + rng.normal(0, 0.02, 26)
            env.step(sol)
            if i < n - 1:
                _, info = env.reset()
        env.close_batch()
        return env, rng

    full, _ = run(40)
    half, rng = run(20)
    rng_state = rng.bit_generator.state
    half.save(tmp_path)
    resumed = ReuseWrapper(gym.make("CirclePacking-26-v0"), rule)
    resumed.load(tmp_path)
    rng = np.random.default_rng()
    rng.bit_generator.state = rng_state
    resumed, _ = run(40, env=resumed, rng=rng, start=20)
    assert resumed.archive.states() == full.archive.states()
    assert resumed.rule.state_dict() == full.rule.state_dict()
    assert len(full.archive) > 5  # the search did move


def test_reward_rtol_goes_on_the_default_archive_and_refuses_a_given_one():
    from discoverygym.search.archive import Archive

    assert ReuseWrapper(toy_env(), "puct", reward_rtol=1e-9).archive.reward_rtol == 1e-9
    assert ReuseWrapper(toy_env(), "puct").archive.reward_rtol is None
    with pytest.raises(ValueError, match="archive.reward_rtol"):
        ReuseWrapper(toy_env(), "puct", archive=Archive(), reward_rtol=1e-9)
    with pytest.raises(ValueError, match="reward_rtol"):
        ReuseWrapper(toy_env(), "epsilon", reward_rtol=-1.0)


def test_one_wrapper_takes_a_registered_name_or_a_rule_object():
    from discoverygym.search.puct import PUCT, PUCTConfig
    from discoverygym.search.selectors import SELECTORS

    by_name = ReuseWrapper(toy_env(), "puct", c=2.0, counting="parent")
    assert isinstance(by_name.rule, PUCT) and by_name.rule.config == PUCTConfig(c=2.0, counting="parent")
    by_object = ReuseWrapper(toy_env(), PUCT(c=2.0))
    assert by_object.rule.config.c == 2.0
    assert ReuseWrapper(toy_env(), "rpucg", inspirations=3).n_inspirations == 3
    assert ReuseWrapper(toy_env(), "rpucg").n_inspirations == 5  # TES default
    for name in SELECTORS:  # every registered rule wraps an env and starts an episode
        env = ReuseWrapper(toy_env(), name)
        _, info = env.reset(seed=0)
        assert info["reuse"]["rule"] == name
    with pytest.raises(ValueError, match="unknown selector 'nope'; known: rpucg"):
        ReuseWrapper(toy_env(), "nope")
    with pytest.raises(TypeError):
        ReuseWrapper(toy_env(), "puct", gamma=0.8)  # an RPUCG hyper-parameter
    with pytest.raises(TypeError, match="rule name, not a rule object"):
        ReuseWrapper(toy_env(), PUCT(), c=2.0)
