"""Diff mode keeps the answer prefix and the stop rule (issue 49), and an answer without code says so."""

from __future__ import annotations

import numpy as np
import pytest

from discoverygym.agents.policies import SamplingContext
from discoverygym.agents.policies.edits import DIFF_PREFIX, answer_prefix, diff_answer_complete
from discoverygym.agents.policies.llm import make_sample
from discoverygym.envs.registry import ENVS
from discoverygym.types import State

PARENT = "def construct():\n    return [[0.5, 0.5, 0.1]]\n"


def _ctx(code: str | None = PARENT) -> SamplingContext:
    problem = ENVS["CirclePacking-26-v0"]
    parent = State(solution=[[0.5, 0.5, 0.1]], score=0.1, reward=0.1, valid=True, code=code)
    return SamplingContext(parent=parent, inspirations=(parent,), problem=problem, action_mode="code")


def test_the_diff_prefix_starts_a_block_that_reaches_the_parser():
    assert answer_prefix("python", "diff") == DIFF_PREFIX == "<<<<<<< SEARCH\n"
    assert answer_prefix("python", "diff", has_program=False) == "```python\n"  # the prompt asks for a program
    assert answer_prefix("cpp", "full") == "```cpp\n" and answer_prefix("python", "diff", reasoning=True) == ""
    # what a small model writes after the prefix: the rest of one block, then it would ramble on
    text = DIFF_PREFIX + "    return [[0.5, 0.5, 0.1]]\n=======\n    return [[0.5, 0.5, 0.2]]\n>>>>>>> REPLACE"
    sample = make_sample(text, "python", ctx=_ctx(), edit_format="diff", finish_reason="stop")
    assert sample.edit == "diff" and sample.error is None and "0.2" in sample.action


def test_the_diff_stop_rule_ends_an_answer_after_its_first_block():
    block = DIFF_PREFIX + "    x = 1\n=======\n    x = 2\n>>>>>>> REPLACE"
    assert diff_answer_complete(block) and diff_answer_complete(block + "\n")
    assert not diff_answer_complete(DIFF_PREFIX + "    x = 1\n=======\n    x = 2\n")  # not closed yet
    assert not diff_answer_complete(DIFF_PREFIX + "    x = 1\n>>>>>>> REPLACE")  # malformed: no divider
    assert not diff_answer_complete("<think>" + block)  # still reasoning
    assert diff_answer_complete("```python\ndef construct():\n    return []\n```", "python")  # a full program


def test_hf_policy_keeps_prefix_and_stop_rule_in_diff_mode(tmp_path_factory, monkeypatch):
    pytest.importorskip("torch")
    from discoverygym.agents.policies.hf import HFPolicy
    from tests.llm_fixtures import tiny_model_dir

    path = tiny_model_dir(tmp_path_factory.getbasetemp())
    pol = HFPolicy(path, device="cpu", lora_rank=4, max_new_tokens=6, edit_format="diff")
    assert pol._answer_prefix("python", _ctx()) == DIFF_PREFIX
    assert pol._answer_prefix("python", _ctx(None)) == "```python\n"
    stops = []
    real = pol.generate_ids
    monkeypatch.setattr(pol, "generate_ids", lambda *a, stop=None, **k: stops.append(stop) or real(*a, stop=stop, **k))
    samples = pol.sample([_ctx()], 2, np.random.default_rng(0))[0]
    prefix_ids = pol.tokenizer(DIFF_PREFIX, add_special_tokens=False)["input_ids"]
    for s in samples:
        assert s.text.startswith(DIFF_PREFIX)  # the parser sees the block's first line
        assert s.prompt_ids[-len(prefix_ids):] == prefix_ids  # given, not sampled, not trained on
    stop = stops[0]
    assert stop is not None  # the stop rule is kept in diff mode
    closing = pol.tokenizer("    x = 1\n=======\n    x = 2\n>>>>>>> REPLACE", add_special_tokens=False)["input_ids"]
    assert stop(list(closing)) and not stop(list(closing[:-2]))
    assert any(t in pol._stop_token_ids() for t in closing[-2:])  # the check runs at the closing line


def test_trl_answer_prefix_follows_the_edit_format():
    from discoverygym.interop.trl import answer_prefix_for

    class Tokenizer:
        chat_template = "{% for m in messages %}...{% endfor %}"

    assert answer_prefix_for(Tokenizer(), "python", "diff") == DIFF_PREFIX
    assert answer_prefix_for(Tokenizer(), "python", "diff", has_program=False) == "```python\n"
    assert answer_prefix_for(Tokenizer(), "python") == "```python\n"


def test_a_response_without_code_is_reported_as_such():
    """Not as "entry function 'construct' not defined" (the stub's missing entry): in the env's verdict,
    hence in train, search and the TRL adapter's states alike."""
    import gymnasium as gym

    from discoverygym.interop.trl import reward_function
    from discoverygym.outcomes import classify, classify_error
    from discoverygym.policy import Outcome

    env = gym.make("ErdosMinOverlap-v0", action_mode="code", disable_env_checker=True)
    _, info = env.reset(seed=0)
    sample = make_sample("I would use a step function.", "python")
    state = env.unwrapped.evaluate(sample.action, parent=info["state"], seed=0)
    assert not state.valid and state.reward == env.unwrapped.failure_reward
    assert state.error.startswith("no code in the response: ") and "entry function" not in state.error
    assert classify(sample, state) is classify(None, state) is Outcome.NO_CODE
    cut = make_sample("```python\ndef construct(", "python", finish_reason="length")
    assert classify_error(env.unwrapped.evaluate(cut.action, seed=0).error) is Outcome.TRUNCATED
    reward = reward_function("ErdosMinOverlap-v0", workers=1)
    assert reward(prompts=["p"], completions=["No code today."]) == [env.unwrapped.failure_reward]
    (judged,) = reward.last_states
    assert judged.error.startswith("no code in the response") and "entry function" not in judged.error
