"""Code-mode prompts for every env, and reading a program back from an LLM response."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from discoverygym.agents.prompts import (
    FORCE_ANSWER,
    THINK_END,
    ResponseError,
    build_prompt,
    failed_program,
    needs_forcing,
    parse_response,
)
from discoverygym.envs.program import ProgramTask
from discoverygym.envs.registry import ENVS, PROGRAM_TASKS, get_problem
from discoverygym.rewards.common import Score
from discoverygym.types import State


class EchoTask(ProgramTask):
    """A made-up C++ program task (only its text attributes matter here)."""

    name = "echo"
    title = "Echo the input"
    quantity = "cases passed"
    direction = "max"
    language = "cpp"
    entry = "main"
    description = "Read integers and print them back."
    contract = "Read from stdin, write to stdout."

    def initial_program(self) -> str:
        return "int main() { return 0; }"

    def evaluate(self, source: str, *, seed: int) -> Score:
        return Score(0.0, {})


def _state(code: str | None, score: float | None = 1.25, **meta) -> State:
    return State(solution=None if code else [0.5, 0.5], score=score, reward=score or 0.0, valid=True, code=code,
                 id="s1", metadata=dict(meta))


@pytest.mark.parametrize("env_id", sorted(ENVS))
def test_every_math_env_prompt_has_statement_state_record_and_rules(env_id):
    problem = ENVS[env_id]
    text = build_prompt(problem, _state("def construct():\n    return [1]\n", 0.75))
    assert problem.title in text and problem.entry in text
    assert str(problem.sota["value"]) in text and "Gap" in text
    assert "0.75" in text and "def construct():" in text and "```python" in text


@pytest.mark.parametrize("env_id", sorted(PROGRAM_TASKS))
def test_every_program_env_prompt(env_id):
    try:
        task = get_problem(env_id)
    except (ImportError, ModuleNotFoundError, AttributeError) as exc:  # factory being written elsewhere
        pytest.skip(f"{env_id} factory not importable here: {exc}")
    text = build_prompt(task, _state(task.initial_program()))
    assert task.title in text and f"```{task.language}" in text


def test_program_task_prompt_uses_its_language_and_output_tail():
    task = EchoTask()
    text = build_prompt(task, _state("int main(){}", 3.0, stdout="x" * 5000 + "TAILMARK"))
    assert "```cpp\nint main(){}" in text and "TAILMARK" in text
    assert "x" * 2001 not in text  # only the tail of stdout is shown


def test_gap_direction_words():
    problem = ENVS["ErdosMinOverlap-v0"]  # minimised
    record = problem.sota["value"]
    assert "worse than the record" in build_prompt(problem, _state("x=1", record + 0.01))
    assert "better than the record" in build_prompt(problem, _state("x=1", record - 0.01))


def test_construction_state_without_program_is_explained():
    text = build_prompt(ENVS["CirclePacking-26-v0"], _state(None))
    assert "`parent`" in text


def test_inspirations_are_listed():
    a, b = _state("a = 1"), State(None, 2.0, 2.0, True, code="b = 2", id="s2")
    text = build_prompt(ENVS["CirclePacking-26-v0"], a, (a, b))
    assert "Other attempt 1" in text and "b = 2" in text and "Other attempt 2" not in text


# --------------------------------------------------------------------------- parsing
def test_last_complete_block_wins():
    text = "first\n```python\nx = 1\n```\nthen\n```python\ny = 2\n```\nbye"
    assert parse_response(text) == "y = 2\n"


def test_block_without_language_tag_and_cpp():
    assert parse_response("```\nint main(){}\n```") == "int main(){}\n"
    assert parse_response("```cpp\nint a;\n```", "cpp") == "int a;\n"


def test_think_block_is_removed():
    text = "<think>maybe ```python\nbad()\n``` no</think>\nanswer:\n```python\ngood()\n```"
    assert parse_response(text) == "good()\n"


def test_gpt_oss_channels():
    text = ("<|channel|>analysis<|message|>try ```python\nbad()\n```<|end|>"
            "<|start|>assistant<|channel|>final<|message|>```python\ngood()\n```<|return|>")
    assert parse_response(text) == "good()\n"


@pytest.mark.parametrize("text, reason", [
    ("no code here", "no fenced code block"),
    ("```python\nx = 1\n```\nmore ```python\ny = ", "unclosed"),
    ("```python\nunfinished", "unclosed"),
    ("<think>still thinking ```python\nx=1\n```", "inside <think>"),
    ("<|channel|>analysis<|message|>hmm", "analysis channel"),
    ("```python\n   \n```", "empty"),
])
def test_bad_responses_raise_clear_errors(text, reason):
    with pytest.raises(ResponseError, match=reason):
        parse_response(text)


def test_non_text_response():
    with pytest.raises(ResponseError, match="must be text"):
        parse_response(None)  # type: ignore[arg-type]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(list("`py\n <>/x|") + ["```", "</think>", "<think>", "```python\n",
                                                        "<|channel|>final<|message|>", "<|end|>"]),
                max_size=30).map("".join))
def test_parser_never_crashes(text):
    try:
        out = parse_response(text)
    except ResponseError:
        return
    assert isinstance(out, str) and out.strip()


def test_failed_program_is_a_comment_in_the_language():
    assert failed_program("no block\nhere").startswith("# ") and "\n" not in failed_program("a\nb").rstrip("\n")
    assert failed_program("x", "cpp").startswith("//")


def test_forcing_decision():
    assert needs_forcing("still reasoning", ended=False)
    assert not needs_forcing("still reasoning", ended=True)
    assert not needs_forcing(f"done {THINK_END} answer", ended=False)
    assert FORCE_ANSWER.rstrip().endswith(THINK_END)


# ---------------------------------------------------------------- parser cases found by QA
@pytest.mark.parametrize("text, language, expected", [
    # the last block in the env's language wins over a later block in another / no language
    ("```python\ngood()\n```\nexample output:\n```text\n1 2 3\n```", "python", "good()\n"),
    ("```python\nold()\n```\n```python\nnew()\n```\n```\nplain()\n```", "python", "new()\n"),
    ("```cpp\nint a;\n```\n```c++\nint b;\n```\n```\nint c;\n```", "cpp", "int b;\n"),
    ("```py\nshort_tag()\n```", "python", "short_tag()\n"),
    # else the last untagged block
    ("```\nfirst()\n```\n```\nsecond()\n```", "python", "second()\n"),
    # text after the language tag on the fence line
    ('```python title="a.py"\nx = 1\n```', "python", "x = 1\n"),
    ("```cpp {.numberLines}\nint x;\n```", "cpp", "int x;\n"),
    # an indented fence loses its indentation (relative indentation kept)
    ("Answer:\n    ```python\n    def f():\n        return 1\n    ```\n", "python", "def f():\n    return 1\n"),
    # ``` inside a string literal on a code line does not close the block
    ('```python\ns = "```"\nt = "a ``` b"\n```', "python", 's = "```"\nt = "a ``` b"\n'),
    ("````python\nprint('''\n```\n''')\n````", "python", "print('''\n```\n''')\n"),
    # '<think>' inside the program is code, not reasoning
    ("```python\nTAG = '<think>'\n```", "python", "TAG = '<think>'\n"),
    ("<think>plan</think>\n```python\nprint('<think>', '</think>')\n```", "python",
     "print('<think>', '</think>')\n"),
    # template-opened reasoning: everything up to </think> outside code is reasoning
    ("draft:\n```python\nbad()\n```\n</think>\n```python\ngood()\n```", "python", "good()\n"),
    # prose mentioning ``` after a valid closed block does not make it unclosed
    ("```python\nx = 1\n```\nI wrapped the code in ``` fences as asked.", "python", "x = 1\n"),
    ("```python\nx = 1\n```\nThe block above ends with ```.", "python", "x = 1\n"),
    # an opening fence after prose on the same line
    ("Here is the program: ```python\ny = 2\n```", "python", "y = 2\n"),
    # CRLF line ends
    ("```python\r\nz = 3\r\n```\r\n", "python", "z = 3\n"),
])
def test_parser_cases(text, language, expected):
    assert parse_response(text, language) == expected


@pytest.mark.parametrize("text, language, reason", [
    ("```cpp\nint main() {}\n```", "python", r"tagged ```cpp, but this problem takes python"),
    ("```python\nprint(1)\n```", "cpp", r"tagged ```python, but this problem takes cpp"),
    ("```python\nx = 1\n```\nmore\n```python\ny = ", "python", "unclosed"),
    ("```python\nx = '```'\n", "python", "unclosed"),
    ("answer\n<think>\nstill reasoning", "python", "inside <think>"),
    ("   <think>\nplan ```python\nx\n```", "python", "inside <think>"),
])
def test_parser_refusals(text, language, reason):
    with pytest.raises(ResponseError, match=reason):
        parse_response(text, language)


def test_parser_without_language_takes_the_last_block_whatever_its_tag():
    assert parse_response("```python\na()\n```\n```text\nb\n```") == "b\n"
