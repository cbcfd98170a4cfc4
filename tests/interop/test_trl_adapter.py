"""The TRL adapter (:mod:`discoverygym.interop.trl`): discoverygym's prompts as a dataset, the env as the reward.

A completion holding the problem's example program must get exactly the reward the env gives that
program against the same start state; a completion without a program, with a broken one or with one
that crashes gets the failure reward; the dataset's prompts are discoverygym's own. The last test runs
one real ``GRPOTrainer`` step (tiny random model) so that TRL's own calling convention reaches the
reward function. Skipped without ``datasets`` (and the last one without ``trl``).
"""

from __future__ import annotations

from importlib import resources

import gymnasium as gym
import pytest

pytest.importorskip("datasets")

from discoverygym.agents.prompts import build_messages
from discoverygym.interop.trl import completion_text, prompt_dataset, reward_function
from tests.llm_fixtures import tiny_model_path  # noqa: F401  (pytest fixture)

ENV_ID = "ErdosMinOverlap-v0"
EXAMPLE = (resources.files("discoverygym") / "examples" / "erdos_min_overlap.py").read_text()


def _env_reward(program: str, start_seed: int) -> tuple[float, float]:
    """``(reward, failure reward)`` of ``program`` judged directly by the env against the start state of
    ``start_seed`` (program seed = start seed, as the adapter does)."""
    env = gym.make(ENV_ID, action_mode="code", disable_env_checker=True)
    _, info = env.reset(seed=start_seed)
    state = env.unwrapped.evaluate(program, parent=info["state"], seed=start_seed)
    assert state.valid, state.error
    return float(state.reward), float(env.unwrapped.failure_reward)


class FakeTokenizer:
    """A chat template of its own (enough for the standard-format prompts)."""

    def __init__(self, template: str = "{% for m in messages %}...{% endfor %}") -> None:
        self.chat_template = template

    def apply_chat_template(self, messages, tokenize=False, add_generation_prompt=False):
        assert tokenize is False and add_generation_prompt is True
        return "".join(f"<{m['role']}>{m['content']}</{m['role']}>" for m in messages) + "<assistant>"


def test_the_example_program_gets_the_envs_reward_and_garbage_the_failure_reward():
    expected, failure = _env_reward(EXAMPLE, start_seed=3)
    assert expected > failure  # a real score, so equality below says something
    reward = reward_function(ENV_ID, workers=2)
    fenced = f"Here is my program.\n```python\n{EXAMPLE}```\n"
    completions = [
        fenced,  # standard format
        [{"role": "assistant", "content": fenced}],  # conversational format
        [{"role": "assistant", "content": [{"type": "text", "text": fenced}]}],  # content as parts
        EXAMPLE + "```\n",  # the answer prefix opened the fence (below)
        "I cannot write this program.",  # no code
        "```python\ndef construct(seed, budget_s, parent:\n    return [1]\n```\n",  # syntax error
        "```python\ndef construct(seed=0, budget_s=1.0, parent=None):\n    raise RuntimeError('no')\n```\n",
        "```python\ndef construct(seed=0, budget_s=1.0, parent=None):\n    return [2.0, -1.0]\n```\n",  # invalid h
        [{"role": "user", "content": fenced}],  # not the assistant's text: nothing to judge
    ]
    prefixes = ["", "", "", "```python\n", "", "", "", "", ""]
    rewards = reward(prompts=["p"] * len(completions), completions=completions, completion_ids=[[1]] * len(completions),
                     start_seed=[3] * len(completions), answer_prefix=prefixes, trainer_state=None)
    assert rewards[:4] == [expected] * 4
    assert rewards[4:] == [failure] * 5
    errors = [s.error for s in reward.last_states[4:]]
    assert all(errors), errors
    assert "RuntimeError" in errors[2]


def test_a_completion_is_judged_against_its_own_start_state():
    """The program receives the start state's construction as ``parent``: a program returning it scores
    that start state, so the two start seeds must give their own initial states' rewards."""
    echo = "```python\ndef construct(seed=0, budget_s=1.0, parent=None):\n    return parent\n```\n"
    reward = reward_function(ENV_ID, workers=1)
    got = reward(prompts=["a", "b"], completions=[echo, echo], start_seed=[0, 5])
    env = gym.make(ENV_ID, action_mode="code", disable_env_checker=True)
    want = [float(env.reset(seed=s)[1]["state"].reward) for s in (0, 5)]
    assert got == pytest.approx(want, rel=1e-12)
    assert want[0] != want[1]  # distinct start states, so a mix-up would show
    assert reward(prompts=["a"], completions=[echo]) == pytest.approx(want[:1], rel=1e-12)  # no column: seed=0


def test_the_dataset_holds_discoverygyms_prompts():
    data = prompt_dataset(ENV_ID, 3, seed=4)
    assert len(data) == 3 and data["start_seed"] == [4, 5, 6] and data["answer_prefix"] == ["", "", ""]
    env = gym.make(ENV_ID, action_mode="code", disable_env_checker=True)
    for i, row in enumerate(data):
        start = env.reset(seed=4 + i)[1]["state"]
        assert row["prompt"] == build_messages(env.unwrapped.problem, start, (start,))
        assert EXAMPLE.strip() in row["prompt"][-1]["content"]  # no program yet: the example is shown

    text = prompt_dataset(ENV_ID, 1, tokenizer=FakeTokenizer(), system="Be brief.")
    prompt = text[0]["prompt"]
    assert prompt.startswith("<system>Be brief.</system><user># ")
    assert prompt.endswith("</user><assistant>```python\n") and text[0]["answer_prefix"] == "```python\n"
    thinking = prompt_dataset(ENV_ID, 1, tokenizer=FakeTokenizer("{{ '<think>' }}"))
    assert thinking[0]["answer_prefix"] == "" and thinking[0]["prompt"].endswith("<assistant>")
    assert prompt_dataset(ENV_ID, 1, tokenizer=FakeTokenizer(), answer_prefix=None)[0]["answer_prefix"] == ""
    plain = prompt_dataset(ENV_ID, 1, seed=4, tokenizer=FakeTokenizer(None))[0]  # no template: content + newline
    assert plain["prompt"] == data[0]["prompt"][-1]["content"] + "\n```python\n"


def test_completion_text_reads_every_trl_format():
    assert completion_text("abc") == "abc"
    assert completion_text([{"role": "assistant", "content": "a"}, {"role": "assistant", "content": "b"}]) == "ab"
    assert completion_text({"role": "assistant", "content": "x"}) == "x"
    assert completion_text([{"role": "tool", "content": "x"}]) == ""
    assert completion_text(None) == "" and completion_text(7) == ""


@pytest.mark.parametrize("call, message", [
    (lambda: prompt_dataset(ENV_ID, 0), "n must be"),
    (lambda: prompt_dataset("NoSuchEnv-v0", 1), "unknown env"),
    (lambda: prompt_dataset(ENV_ID, 1, action_mode="construction"), "action_mode"),
    (lambda: reward_function(ENV_ID, workers=0), "workers"),
    (lambda: reward_function(ENV_ID)(prompts=["a"], completions=[]), "1 prompts but 0 completions"),
])
def test_bad_arguments_are_refused(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_one_grpo_step_calls_the_reward_with_the_dataset_columns(tiny_model_path, tmp_path):  # noqa: F811
    """TRL's own trainer (tiny random model, one step): the reward function receives the dataset's
    ``start_seed`` / ``answer_prefix`` columns and returns one reward per completion."""
    trl = pytest.importorskip("trl")
    import torch
    import transformers

    torch.manual_seed(0)
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(tiny_model_path))
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = transformers.AutoModelForCausalLM.from_pretrained(str(tiny_model_path))
    data = prompt_dataset(ENV_ID, 1, seed=2, tokenizer=tokenizer, answer_prefix="```python\n")
    judge = reward_function(ENV_ID, workers=1)
    calls = []

    def reward(prompts, completions, **kwargs):
        values = judge(prompts, completions, **kwargs)
        calls.append((list(kwargs["start_seed"]), list(kwargs["answer_prefix"]), list(completions), values))
        return values

    reward.__name__ = "discoverygym"
    args = trl.GRPOConfig(output_dir=str(tmp_path), use_cpu=True, max_steps=1, num_generations=2,
                          per_device_train_batch_size=2, max_completion_length=8, report_to="none",
                          save_strategy="no", logging_steps=1, disable_tqdm=True, bf16=False)
    trainer = trl.GRPOTrainer(model=model, processing_class=tokenizer, reward_funcs=reward, train_dataset=data,
                              args=args)
    trainer.train()
    assert len(calls) == 1
    seeds, prefixes, completions, values = calls[0]
    assert seeds == [2, 2] and prefixes == ["```python\n"] * 2
    assert len(completions) == 2 and all(isinstance(c, str) for c in completions)
    assert values == [judge.env.unwrapped.failure_reward] * 2  # random tokens: no program
