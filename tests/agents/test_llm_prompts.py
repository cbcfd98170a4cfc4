"""Code-mode prompts for every env, and reading a program back from an LLM response."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from discoverygym.agents.prompts import build_prompt
from discoverygym.agents.responses import (
    FORCE_ANSWER,
    THINK_END,
    ResponseError,
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


# ---------------------------------------------------------------- parser cases: hostile and malformed responses
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


# ---------------------------------------------------------------- parser cases: fences, tags and line endings
@pytest.mark.parametrize("text, expected", [
    # P1: template-opened reasoning (no <think>) with an abandoned, unclosed draft fence
    ("Plan:\n```python\ndraft = 0\n\nno, better idea\n</think>\nAnswer:\n```python\nanswer = 1\n```\n", "answer = 1\n"),
    ("hmm ```python\nx = 0\n</think>```python\nx = 2\n```", "x = 2\n"),
    ("think\n~~~python\nunfinished(\n</think>\n~~~python\nok()\n~~~", "ok()\n"),
    # ... the reasoning quoted </think>: the answer after the last </think> is read
    ("I will end with </think> soon.\n```python\ndraft()\n</think>\n```python\nfinal()\n```", "final()\n"),
    # ... a </think> inside the answer's code is code
    ("plan\n</think>\n```python\nEND = '</think>'\nprint(END)\n```", "END = '</think>'\nprint(END)\n"),
])
def test_p1_reasoning_is_removed_before_fences_are_read(text, expected):
    assert parse_response(text, "python") == expected


@pytest.mark.parametrize("char", ["\u2028", "\u2029", "\x1c", "\x1d", "\x1e", "\x85", "\x0b", "\x0c"])
def test_p2_only_lf_cr_end_lines(char):
    text = f"```python\nsep = 'left{char}right'\nprint(sep)\n```\n"
    assert parse_response(text, "python") == f"sep = 'left{char}right'\nprint(sep)\n"


@pytest.mark.parametrize("text, expected", [
    ("<think>ok</think>\n```python\nrun()\n```\nYou never need a <think> tag here.", "run()\n"),
    ("done\n</think>\n```python\nrun()\n```\nNote: <think> is only for reasoning.\n", "run()\n"),
    ("```python\nfirst()\n```\nI could add <think> later, but\n```python\nsecond()\n```", "second()\n"),
])
def test_p3_think_mentioned_in_a_complete_answer(text, expected):
    assert parse_response(text, "python") == expected


@pytest.mark.parametrize("text, expected", [
    ("Old:\n```python\nold()\n```\nNew:\n~~~python\nnew()\n~~~\n", "new()\n"),
    ("~~~~python\ns = '''\n~~~\n```\n'''\n~~~~", "s = '''\n~~~\n```\n'''\n"),  # shorter ~~~ and ``` are code
    ("```python\nt = '''\n~~~\n'''\n```", "t = '''\n~~~\n'''\n"),  # a ~~~ line does not close a ``` block
    ("~~~ {.python}\nplain()\n~~~", "plain()\n"),
])
def test_p4_tilde_fences(text, expected):
    assert parse_response(text, "python") == expected


@pytest.mark.parametrize("text, expected", [
    ("```python\nreal()\n```\nAlways wrap code in ```python\nblocks, closed with\n```\n", "real()\n"),
    ("```python\nreal()\n```\nWrap code in ```python\nblocks like\n```\nthis one.\n", "real()\n"),
    ("```python\nreal()\n```\nI used ```python fences.\nDone.", "real()\n"),
    ("Here it comes: ```python\nonly()\n```", "only()\n"),  # no line-start block: the prose fence counts
])
def test_p5_prose_ending_in_a_fence(text, expected):
    assert parse_response(text, "python") == expected


@pytest.mark.parametrize("tag, language", [
    ("c++17", "cpp"), ("cpp20", "cpp"), ("C++", "cpp"), ("cc", "cpp"), ("cxx", "cpp"), ("gnu++17", "cpp"),
    ("python3.11", "python"), ("py", "python"), ("python3", "python"), ("Python", "python"), ("py3", "python"),
    ("cpp", "c++17"), ("python", "python3"),
])
def test_p6_tag_variants_beat_an_earlier_untagged_block(tag, language):
    text = f"Input example:\n```\n5\n1 2 3 4 5\n```\nProgram:\n```{tag}\nPROGRAM\n```\n"
    assert parse_response(text, language) == "PROGRAM\n"


def test_p6_other_languages_still_refused():
    with pytest.raises(ResponseError, match="tagged ```rust"):
        parse_response("```rust2021\nfn main() {}\n```", "cpp")
    with pytest.raises(ResponseError, match="tagged ```c,"):
        parse_response("```c\nint main(){}\n```", "cpp")


@pytest.mark.parametrize("text", [
    "prose " + "`" * 200_000 + "!\n```python\nprint(1)\n```\n",
    "x" + "`" * 200_000 + "python\nprint(1)\n" + "`" * 200_000,
    "`" * 200_000,
    "~" * 200_000,
    "a ```py\n" * 50_000,
    "</think>\n" * 50_000 + "```python\nx\n```",
    ("`" * 40 + "py </think> <think> ~~~\n") * 5_000,
])
def test_p7_long_fence_runs_parse_in_linear_time(text):
    try:
        out = parse_response(text, "python")
    except ResponseError:
        return
    assert isinstance(out, str) and out.strip()
