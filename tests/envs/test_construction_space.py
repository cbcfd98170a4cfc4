"""The construction space: Gymnasium's env checker runs without the "Casting input x to numpy array"
flood (issue 41: ~900 warnings on ErdosMinOverlap-v0), and membership is Gymnasium's verdict."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.utils.env_checker import check_env

import discoverygym  # noqa: F401  (registers the envs)
from discoverygym.envs.spaces import StackedSequence


@pytest.mark.parametrize("env_id", ["ErdosMinOverlap-v0", "SumDifference-v0", "CirclePacking-26-v0"])
def test_check_env_does_not_flood_casting_warnings(env_id):
    env = gym.make(env_id).unwrapped
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env)
    casting = [w for w in caught if "Casting input x to numpy array" in str(w.message)]
    assert casting == []
    assert len(caught) < 10  # what is left: Gymnasium's notes on the unbounded score Box


@pytest.mark.parametrize("row", [(), (3,)])
def test_membership_matches_gymnasium_sequence(row):
    box = spaces.Box(-1.0, 1.0, shape=row, dtype=np.float64)
    ours, theirs = StackedSequence(box), spaces.Sequence(box, stack=True)
    width = row[0] if row else None

    def arr(n, fill=0.5, dtype=np.float64):
        return np.full((n, *row), fill, dtype=dtype)

    candidates = [
        arr(0), arr(1), arr(5), arr(4, 1.0), arr(4, -1.0), arr(4, 1.5), arr(4, np.nan),
        arr(4, 0, np.int64), arr(4, 0.5, np.float32), arr(4, True, np.bool_),
        arr(4).tolist(), tuple(arr(2).tolist()), [], arr(4, 2.0).tolist(),
        np.zeros((4, 2)), np.zeros((2, 3, 1)),
    ]
    if width:
        candidates += [[[0.0] * width, [0.0] * (width + 1)], np.zeros((4, width + 1))]
    else:
        candidates += [np.zeros((4, 1))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = [theirs.contains(c) for c in candidates]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = [ours.contains(c) for c in candidates]
    assert got == expected
    assert ours.contains(ours.sample()) and ours == theirs


def test_zero_d_is_not_a_member_and_element_must_be_a_box():
    assert not StackedSequence(spaces.Box(-1.0, 1.0, shape=(), dtype=np.float64)).contains(np.float64(0.5))
    with pytest.raises(TypeError, match="Box"):
        StackedSequence(spaces.Discrete(3))
