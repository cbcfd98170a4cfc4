"""Reading a real model's answers: code cut after a complete function, code without fences, the stop
condition, the example program in the prompt (issue 39, item 2: the harness's faults, not the model's)."""

from __future__ import annotations

import pytest

from discoverygym.agents.prompts import build_prompt
from discoverygym.agents.responses import (
    ResponseError,
    answer_complete,
    parse_response,
    salvage_program,
)
from discoverygym.policy import Outcome

FUNC = "import numpy as np\n\n\ndef construct(seed=0):\n    return np.ones(4)\n"


def test_block_cut_after_a_complete_function_is_read_up_to_the_function():
    text = f"Here you go:\n```python\n{FUNC}\n\nif __name__ == '__main__':\n    print(constr"
    assert parse_response(text, "python", entry="construct") == FUNC
    with pytest.raises(ResponseError) as err:  # without the entry the old rule stands
        parse_response(text, "python")
    assert err.value.outcome is Outcome.TRUNCATED


def test_block_cut_inside_the_function_stays_truncated():
    text = "```python\nimport numpy as np\n\ndef construct(seed=0):\n    h = np.ones(4)\n    for i in range(3):\n"
    with pytest.raises(ResponseError) as err:
        parse_response(text, "python", entry="construct")
    assert err.value.outcome is Outcome.TRUNCATED


def test_cut_second_block_falls_back_to_the_complete_first_one():
    text = f"```python\n{FUNC}```\n\nOr manually:\n\n```python\ndef construct(seed=0):\n    return [1, 1"
    assert parse_response(text, "python", entry="construct") == FUNC


def test_code_without_fences_is_read_when_it_defines_the_entry():
    text = f"Sure! Here is the program.\n\n{FUNC}\nThis returns ones."
    assert parse_response(text, "python", entry="construct", ended=True) == FUNC
    assert parse_response(f"{FUNC}", "python", entry="construct", ended=True) == FUNC
    with pytest.raises(ResponseError) as err:
        parse_response("I cannot write this program.", "python", entry="construct", ended=True)
    assert err.value.outcome is Outcome.NO_CODE


def test_salvage_refuses_other_functions_and_garbage():
    assert salvage_program("```python\ndef other():\n    return 1\n\nx = 1\n", "construct") is None
    assert salvage_program("no code at all", "construct") is None


def test_answer_complete_only_at_a_closing_fence_of_a_readable_answer():
    assert answer_complete(f"```python\n{FUNC}```", "python")
    assert answer_complete(f"```python\n{FUNC}```\n", "python")
    assert not answer_complete("```python\n", "python")        # an opening fence
    assert not answer_complete("```", "python")
    assert not answer_complete(f"```python\n{FUNC}", "python")  # still inside the block
    assert not answer_complete(f"<think>```python\n{FUNC}```", "python")  # reasoning still open


def test_prompt_shows_the_example_program_when_the_start_state_has_none():
    import gymnasium as gym

    import discoverygym  # noqa: F401

    env = gym.make("ErdosMinOverlap-v0", action_mode="code")
    _, info = env.reset(seed=0)
    text = build_prompt(env.unwrapped.problem, info["state"])
    assert "def construct(seed: int = 0, budget_s: float = 10.0, parent=None):" in text
    assert "write nothing after the block" in text
