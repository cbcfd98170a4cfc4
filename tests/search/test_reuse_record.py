"""``ReuseWrapper.record`` books a child judged outside the wrapper exactly as ``step`` does, and the
wrapper's own generator (not the env's) decides its picks, so seeded runs repeat."""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import numpy as np
import pytest

from discoverygym.envs.problem import Problem
from discoverygym.errors import InvalidSolution
from discoverygym.rewards.common import Score
from discoverygym.search.reuse import ReuseWrapper
from discoverygym.types import State


def _first(x):
    x = list(x)
    if len(x) != 2 or x[0] < 0:
        raise InvalidSolution("need two numbers, the first >= 0")
    return Score(float(x[0]))


#: reward = x[0]: each test chooses every reward.
FIRST = Problem(
    name="first", title="First", quantity="x[0]", direction="max", verifier=_first,
    initial=lambda rng: [1.0, 0.0], description="reward = x[0]", sota={"value": 10.0, "source": "test"},
    row_len=None, returns="two floats", render=lambda c, size: np.zeros((size, size, 3), np.uint8),
    failure_reward=-1.0,
)


def _wrapped(rule, **kwargs):
    return ReuseWrapper(gym.make("CirclePacking-26-v0", problem=FIRST), rule, **kwargs)


@pytest.mark.parametrize("rule", ["puct", "rpucg"])
def test_record_books_a_child_as_step_does(rule):
    stepping, recording = _wrapped(rule), _wrapped(rule)
    for env in (stepping, recording):
        env.reset(seed=0)
    for reward, tag in ((2.0, 1.0), (-3.0, 2.0), (4.0, 3.0), (0.5, 4.0)):
        starts = stepping.select(2)
        assert [s.id for s in recording.select(2)] == [s.id for s in starts]
        for start in starts:
            stepping.reset(options={"state": start})
            stepped = stepping.step([reward, tag])[4]["state"]
            # the same candidate judged outside the wrapper (e.g. in a thread), with the same id
            judged = recording.unwrapped.evaluate([reward, tag], parent=start, id=stepped.id)
            recorded = recording.record(judged, start)
            assert recorded == stepped  # including the prompt's parents under RPUCG
    for env in (stepping, recording):
        env.close_batch()
    assert recording.archive.states() == stepping.archive.states()
    assert recording.rule.state_dict() == stepping.rule.state_dict()
    assert len(stepping.archive) > 3


def test_record_lists_every_inspiration_under_a_dag_rule():
    env = _wrapped("rpucg", restart_every=None)
    env.reset(seed=0)
    root = env.archive.states()[0]

    def episode(start, value):
        env.reset(options={"state": start})
        return env.step([value, 0.0])[4]["state"]

    a = episode(root, 2.0)
    episode(root, -1.0)
    env.select(5)
    episode(a, 1.5)
    episode(a, 3.0)
    picks = env.select(5)  # the best child of a, and root (anti-inbreeding keeps a's line out)
    assert len(picks) == 2
    child = env.unwrapped.evaluate([5.0, 0.0], parent=picks[0])
    recorded = env.record(child, picks[0])
    assert recorded.parent_ids == (picks[0].id, picks[1].id) and child.parent_ids == (picks[0].id,)
    assert env.archive.get(recorded.id).parent_ids == recorded.parent_ids


def test_wrapper_reset_never_mutates_the_callers_state():
    env = _wrapped("puct")
    _, info = env.reset(seed=0)
    claimed = dataclasses.replace(info["state"], score=50.0, reward=50.0)
    _, started = env.reset(options={"state": claimed})
    assert claimed.score == 50.0 and started["state"].score == 1.0


def test_seeded_wrappers_repeat_without_touching_the_envs_generator():
    def run(seed):
        env = _wrapped("puct", seed=seed)
        env.unwrapped.reset(seed=99)  # the env's own stream: the wrapper never writes it
        ids = []
        for value in (2.0, 3.0, 1.5, 4.0):
            env.reset()
            ids.append(env.step([value, 0.0])[4]["state"].id)
        return ids, [s.id for s in env.archive.states()]

    assert run(1) == run(1)
    assert run(1) != run(2)


def test_initial_states_are_admitted_by_the_env():
    env = _wrapped("puct", initial_states=[State([2.0, 0.0], 99.0, 99.0, True, id="mine")])
    start = env.select(1)[0]
    assert start.id == "mine" and start.score == 2.0  # re-verified, whatever it claimed
    bad = _wrapped("puct", initial_states=[State([-1.0, 0.0], 1.0, 1.0, True, id="bad")])
    with pytest.raises(ValueError, match="initial state bad is invalid"):
        bad.select(1)
