"""The diff editor (discoverygym.agents.policies.edits) on realistic responses, and its logged rates.

Each case is a response a chat model plausibly writes in ``--edit-format diff``: exact blocks,
blocks whose whitespace drifted, wrong SEARCH text, several blocks, blocks outside the EVOLVE
markers, a full program instead of a diff, truncated or malformed answers, reasoning around it.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from discoverygym.agents.policies.edits import (
    DiffApplyError,
    DiffParseError,
    apply_blocks,
    apply_edit,
    check_edit_format,
    edit_stats,
    evolve_regions,
    full_program,
    parse_blocks,
)
from discoverygym.agents.policies.llm import make_sample
from discoverygym.agents.prompts import build_prompt
from discoverygym.types import State

PARENT = '''import numpy as np


def construct(parent=None):
    """Place points on a circle."""
    n = 26
    radius = 0.4
    angles = np.linspace(0, 2 * np.pi, n, endpoint=False)
    pts = 0.5 + radius * np.stack([np.cos(angles), np.sin(angles)], axis=1)
    return pts.tolist()
'''

MARKED = '''import numpy as np

SIZE = 26


def construct(parent=None):
    # EVOLVE-BLOCK-START
    radius = 0.4
    angles = np.linspace(0, 2 * np.pi, SIZE, endpoint=False)
    pts = 0.5 + radius * np.stack([np.cos(angles), np.sin(angles)], axis=1)
    # EVOLVE-BLOCK-END
    return pts.tolist()
'''

def st(code: str | None, solution=None) -> State:
    return State(solution, 1.0, 1.0, True, code=code)


S, D, R = "<<<<<<< SEARCH", "=======", ">>>>>>> REPLACE"


def block(search: str, replace: str) -> str:
    return f"{S}\n{search}\n{D}\n{replace}\n{R}\n"


FULL = '''def construct(parent=None):
    return [[0.5, 0.5]] * 26
'''

# (name, parent, response, expected mode, expected: a substring of the program | of the error)
CASES = [
    ("exact", PARENT, block("    radius = 0.4", "    radius = 0.45"), "diff", "    radius = 0.45\n"),
    ("exact-fenced", PARENT, "I enlarge the circle.\n```python\n" + block("    radius = 0.4", "    radius = 0.42")
     + "```\n", "diff", "radius = 0.42"),
    ("exact-multiline", PARENT, block("    n = 26\n    radius = 0.4", "    n = 26\n    radius = 0.3\n    jitter = 0.01"),
     "diff", "    radius = 0.3\n    jitter = 0.01\n"),
    ("trailing-whitespace", PARENT, block("    n = 26   \n    radius = 0.4\t", "    n = 26\n    radius = 0.41"),
     "diff", "    radius = 0.41\n"),
    ("dedented-search", PARENT, block("n = 26\nradius = 0.4", "n = 26\nradius = 0.44\nif n > 20:\n    radius -= 0.01"),
     "diff", "    radius = 0.44\n    if n > 20:\n        radius -= 0.01\n"),
    ("over-indented-search", PARENT, block("        n = 26\n        radius = 0.4", "        n = 27\n        radius = 0.4"),
     "diff", "\n    n = 27\n    radius = 0.4\n"),
    ("crlf", PARENT, block("    radius = 0.4", "    radius = 0.39").replace("\n", "\r\n"), "diff", "radius = 0.39"),
    ("blank-lines-around-search", PARENT, block("\n    radius = 0.4\n", "    radius = 0.38"), "diff",
     "    radius = 0.38\n"),
    ("several-blocks", PARENT, "Two changes:\n" + block("    n = 26", "    n = 26  # fixed")
     + "and\n" + block("    radius = 0.4", "    radius = 0.37"), "diff", "    n = 26  # fixed\n    radius = 0.37\n"),
    ("sequential-blocks", PARENT, block("    radius = 0.4", "    radius = 0.36") + block("    radius = 0.36",
     "    radius = 0.35"), "diff", "radius = 0.35"),
    ("delete-lines", PARENT, block('    """Place points on a circle."""\n', ""), "diff", "def construct(parent=None):\n    n = 26"),
    ("with-reasoning", PARENT, "<think>maybe\n" + block("    n = 26", "    n = 99") + "no, better:</think>\n"
     + block("    radius = 0.4", "    radius = 0.34"), "diff", "radius = 0.34"),
    ("wrong-search", PARENT, block("    radius = 0.5", "    radius = 0.6"), "failed", "does not match"),
    ("wrong-search-hallucinated", PARENT, block("def helper(x):\n    return x", "def helper(x):\n    return 2 * x"),
     "failed", "does not match"),
    ("second-block-wrong", PARENT, block("    radius = 0.4", "    radius = 0.33") + block("    m = 3", "    m = 4"),
     "failed", "block 2"),
    ("empty-search", PARENT, block("", "import math"), "failed", "SEARCH text is empty"),
    ("inside-markers", MARKED, block("    radius = 0.4", "    radius = 0.31"), "diff", "    radius = 0.31\n"),
    ("outside-markers", MARKED, block("SIZE = 26", "SIZE = 30"), "failed", "outside the EVOLVE-BLOCK-START"),
    ("outside-markers-return", MARKED, block("    return pts.tolist()", "    return pts.tolist()[:10]"), "failed",
     "outside"),
    ("removes-marker", MARKED, block("    # EVOLVE-BLOCK-END\n    return pts.tolist()", "    return pts.tolist()"),
     "failed", "marker"),
    ("full-program-instead", PARENT, "Here is a rewrite:\n```python\n" + FULL + "```\n", "fallback", "[[0.5, 0.5]] * 26"),
    ("full-program-after-failed-diff", PARENT, block("    radius = 0.9", "    radius = 1") + "\nOr simply:\n```python\n"
     + FULL + "```\n", "fallback", "[[0.5, 0.5]] * 26"),
    ("full-program-without-entry", PARENT, "```python\ndef helper():\n    return 1\n```\n", "failed", "no SEARCH/REPLACE"),
    ("full-program-syntax-error", PARENT, "```python\ndef construct(parent=None)\n    return 1\n```\n", "failed",
     "no SEARCH/REPLACE"),
    ("prose-only", PARENT, "I think the radius should be larger.", "failed", "no SEARCH/REPLACE"),
    ("truncated-block", PARENT, f"{S}\n    radius = 0.4\n{D}\n    radius = 0.", "failed", "not closed"),
    ("missing-divider", PARENT, f"{S}\n    radius = 0.4\n{R}\n", "failed", "no ======="),
    ("unfinished-reasoning", PARENT, "<think>let me see what to change", "failed", "inside <think>"),
    ("long-markers", PARENT, "<<<<<<<<< SEARCH\n    radius = 0.4\n=========\n    radius = 0.32\n>>>>>>>>> REPLACE\n",
     "diff", "radius = 0.32"),
]


@pytest.mark.parametrize(("name", "parent", "response", "mode", "expect"), CASES, ids=[c[0] for c in CASES])
def test_response(name, parent, response, mode, expect):
    result = apply_edit(response, parent, language="python", entry="construct")
    assert result.mode == mode, (name, result)
    if mode == "failed":
        assert result.program is None and result.error and expect in result.error, result
    else:
        assert result.error is None and expect in result.program, result.program
        assert result.program.endswith("\n")
        if mode == "diff":
            compile(result.program, name, "exec")  # edits keep the program valid Python


def test_case_count_and_logged_rates():
    """20+ responses; the logged rates are the shares of parse / apply failures and fallbacks."""
    assert len(CASES) >= 20
    samples = [make_sample(response, "python", ctx=SimpleNamespace(parent=st(parent),
                                                                   problem=SimpleNamespace(entry="construct")),
                           edit_format="diff", prompt_ids=[], completion_ids=[], logprobs=[], mask=[])
               for _, parent, response, _, _ in CASES]
    for sample, (_, _, _, mode, _) in zip(samples, CASES):
        assert sample.edit == mode
        assert (sample.parse_error or sample.apply_error) is None if mode != "failed" else sample.action.startswith("#")
    parse_fail = sum(s.parse_error is not None for s in samples)
    apply_fail = sum(s.apply_error is not None for s in samples)
    expected_apply = {"wrong-search", "wrong-search-hallucinated", "second-block-wrong", "empty-search",
                      "outside-markers", "outside-markers-return", "removes-marker"}
    assert {c[0] for c, s in zip(CASES, samples) if s.apply_error} == expected_apply
    assert parse_fail == 6 and apply_fail == 7
    stats = edit_stats(samples)
    n = len(CASES)
    assert stats == {"edit/parse_fail_rate": 6 / n, "edit/apply_fail_rate": 7 / n, "edit/fallback_rate": 2 / n}


def test_full_mode_unchanged():
    sample = make_sample("```python\n" + FULL + "```", "python", prompt_ids=[], completion_ids=[], logprobs=[], mask=[])
    assert sample.action == FULL and sample.edit == "full" and sample.apply_error is None
    # diff mode with a parent that has no program (a construction) reads a full program
    ctx = SimpleNamespace(parent=st(None, [0.0]), problem=SimpleNamespace(entry="construct"))
    sample = make_sample("```python\n" + FULL + "```", "python", ctx=ctx, edit_format="diff", prompt_ids=[],
                         completion_ids=[], logprobs=[], mask=[])
    assert sample.action == FULL
    assert edit_stats([]) == {"edit/parse_fail_rate": 0.0, "edit/apply_fail_rate": 0.0, "edit/fallback_rate": 0.0}


def test_helpers_raise_documented_errors():
    with pytest.raises(DiffParseError):
        parse_blocks(f"{S}\nx\n")
    with pytest.raises(DiffApplyError, match="never closed"):
        evolve_regions("# EVOLVE-BLOCK-START\nx = 1\n")
    with pytest.raises(DiffApplyError, match="without"):
        apply_blocks("x = 1\n# EVOLVE-BLOCK-END\n", [("x = 1", "x = 2")])
    with pytest.raises(ValueError, match="edit_format"):
        check_edit_format("udiff")
    assert evolve_regions("x = 1\n") is None
    assert evolve_regions(MARKED) == [(7, 10)]  # the three lines between the markers
    assert apply_blocks("a\nb\n", [("b", "c")]) == "a\nc\n"
    assert apply_blocks("a\nb\n", [("b", "c")], markers=False) == "a\nc\n"
    assert full_program("```cpp\nint main() { return 0; }\n```", "cpp", "main") == "int main() { return 0; }\n"


def test_first_match_inside_markers_wins():
    program = "x = 1\n# EVOLVE-BLOCK-START\nx = 1\n# EVOLVE-BLOCK-END\n"
    assert apply_blocks(program, [("x = 1", "x = 2")]) == "x = 1\n# EVOLVE-BLOCK-START\nx = 2\n# EVOLVE-BLOCK-END\n"
    assert apply_blocks(program, [("x = 1", "x = 2")], markers=False).startswith("x = 2\n")


def test_diff_prompt_explains_the_format():
    problem = SimpleNamespace(prompt=lambda: "Pack circles.", direction="max", sota={"value": 2.6}, entry="construct",
                              title="t", language="python")
    text = build_prompt(problem, st(MARKED), edit_format="diff")
    assert S in text and D in text and R in text and "EVOLVE-BLOCK-START" in text
    assert S not in build_prompt(problem, st(PARENT))
    assert "EVOLVE-BLOCK" not in build_prompt(problem, st(PARENT), edit_format="diff")


def test_train_config_edit_format():
    from discoverygym.agents.trainer import METRICS, TrainConfig

    assert {"edit/parse_fail_rate", "edit/apply_fail_rate", "edit/fallback_rate"} <= set(METRICS)
    with pytest.raises(ValueError, match="needs an LLM policy"):
        TrainConfig(env_id="CirclePacking-26-v0", policy="gaussian", edit_format="diff")
    with pytest.raises(ValueError, match="edit_format"):
        TrainConfig(env_id="CirclePacking-26-v0", policy="hf:x", edit_format="udiff")
    assert TrainConfig(env_id="CirclePacking-26-v0", policy="hf:x", edit_format="diff").to_dict()["llm"]["edit_format"] == "diff"
