"""``discoverygym search --edit-format diff`` end to end: a loopback OpenAI-compatible server answers
with canned SEARCH/REPLACE diffs; the applied programs are what gets evaluated, and the step's
apply-failure rate reaches TensorBoard and the log.
"""

from __future__ import annotations

import json
import re

import pytest

from discoverygym.cli import main
from tests.llm_fixtures import tiny_model_path  # noqa: F401  (pytest fixture)
from tests.openai_server import serve_canned

PROGRAM = """def construct():
    # EVOLVE-BLOCK-START
    r = 0.08
    # EVOLVE-BLOCK-END
    return [[(i % 6) / 6 + 1 / 12, (i // 6) / 5 + 0.1, r] for i in range(26)]
"""
FIRST = "```python\n" + PROGRAM + "```\n"


def _current_program(prompt: str) -> str | None:
    """The program of the prompt's "Current state" block (None: a construction without program)."""
    head = prompt.split("## Current state", 1)[1].split("Published record", 1)[0]
    if "There is no program for this state yet" in head:  # the block shown is the problem's example program
        return None
    found = re.search(r"```python\n(.*?)\n```", head, re.DOTALL)
    return found.group(1) if found else None


def responder(prompt: str, index: int) -> str:
    """Choice 0: a diff that grows the radius by 0.001; choice 1: a diff outside the EVOLVE markers."""
    program = _current_program(prompt)
    if program is None:
        return "A first program:\n" + FIRST
    line = next(x for x in program.split("\n") if x.strip().startswith("r = "))
    radius = float(line.split("=", 1)[1])
    if index == 0:
        # the model drops the indentation: the editor re-indents by the found offset
        return f"Grow the circles.\n<<<<<<< SEARCH\n{line.strip()}\n=======\nr = {radius + 0.001:.3f}\n>>>>>>> REPLACE\n"
    tail = next(x for x in program.split("\n") if x.strip().startswith("return "))
    return f"<<<<<<< SEARCH\n{tail}\n=======\n    return []\n>>>>>>> REPLACE\n"


def test_search_with_diff_edits(tiny_model_path, tmp_path):  # noqa: F811
    run = tmp_path / "run"
    with serve_canned(tiny_model_path, responder) as (url, model):
        code = main(["search", "CirclePacking-26-v0", "--action-mode", "code", "--policy", f"openai:{url}",
                     "--policy-kwargs", json.dumps({"max_new_tokens": 64}), "--edit-format", "diff",
                     "--selector", "greedy", "-C", "1", "-L", "3", "-K", "2", "--executor", "inline",
                     "--run-dir", str(run)])
    assert code == 0
    assert "SEARCH/REPLACE" in model.prompts[-1] and "EVOLVE-BLOCK-START and EVOLVE-BLOCK-END" in model.prompts[-1]
    config = json.loads((run / "config.json").read_text())
    assert config["policy_kwargs"]["edit_format"] == "diff"
    records = [json.loads(x) for x in (run / "archive.jsonl").read_text().splitlines()]
    batches = [r for r in records if r["kind"] == "batch"]
    assert [b["edit"]["modes"] for b in batches] == [["full", "full"], ["diff", "failed"], ["diff", "failed"]]
    assert all("outside the EVOLVE-BLOCK-START" in b["edit"]["errors"][1] for b in batches[1:])
    evals = {r["state"]["id"]: r["state"] for r in records if r["kind"] == "eval"}
    # the applied programs were evaluated: step 1 grew r to 0.081, step 2 to 0.082
    assert evals["c0-l1-k0"]["code"] == PROGRAM.replace("r = 0.08", "r = 0.081")
    assert evals["c0-l1-k0"]["valid"] and evals["c0-l1-k0"]["score"] == pytest.approx(26 * 0.081)
    assert evals["c0-l2-k0"]["code"] == PROGRAM.replace("r = 0.08", "r = 0.082")
    assert evals["c0-l2-k0"]["score"] == pytest.approx(26 * 0.082)
    assert not evals["c0-l2-k1"]["valid"]  # the rejected diff became a failing stub, never the parent
    pytest.importorskip("tensorboard")
    from discoverygym.tensorboard import read_scalars

    scalars = read_scalars(run)
    assert [v for _, v, _ in scalars["edit/apply_fail_rate"]] == [0.0, 0.5, 0.5]
    assert [v for _, v, _ in scalars["edit/parse_fail_rate"]] == [0.0, 0.0, 0.0]


def test_edit_format_needs_an_llm_policy(tmp_path, capsys):
    code = main(["search", "SumDifference-v0", "--edit-format", "diff", "--run-dir", str(tmp_path / "r")])
    assert code == 2 and "needs an LLM policy" in capsys.readouterr().err
