"""Issue 41 (8): ``gym.make_vec(..., vectorization_mode="async")`` with the default shared memory."""

from __future__ import annotations

import gymnasium as gym
import pytest
from gymnasium.vector.utils import create_shared_memory, read_from_shared_memory, write_to_shared_memory

import discoverygym  # noqa: F401  (registers the envs)
from discoverygym.envs.spaces import UnicodeText


def test_unicode_text_round_trips_through_shared_memory():
    space = UnicodeText(20)
    memory = create_shared_memory(space, n=2)
    live = read_from_shared_memory(space, memory, n=2)  # read once, like AsyncVectorEnv: a live view
    write_to_shared_memory(space, 1, "# C5 ≤ 0.38\n", memory)  # Gymnasium's Text: KeyError('#')
    assert tuple(live) == ("", "# C5 ≤ 0.38\n")
    write_to_shared_memory(space, 1, "x", memory)
    assert live[1] == "x"
    with pytest.raises(ValueError, match="does not fit"):
        write_to_shared_memory(space, 0, "y" * 21, memory)


def test_async_vector_env_of_a_program_env_works_out_of_the_box():
    env = gym.make_vec("TriMul-H100-v0", num_envs=2, vectorization_mode="async")
    try:
        obs, _ = env.reset(seed=0)
        single = gym.make("TriMul-H100-v0")
        expected, _ = single.reset(seed=0)
        assert tuple(obs["prompt"]) == (expected["prompt"],) * 2 and expected["prompt"].startswith("#")
    finally:
        env.close()
