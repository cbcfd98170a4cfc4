"""One outcome per sample (discoverygym.outcomes): the judge's real messages, and the run's record."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

import discoverygym  # noqa: F401 - registers the ids
from discoverygym.outcomes import OutcomeLog, classify, classify_error
from discoverygym.policy import Outcome, Sample
from discoverygym.sandbox.python import SandboxLimits
from discoverygym.types import State


@pytest.fixture(scope="module")
def judge():
    env = gym.make("SumDifference-v0", action_mode="code", sandbox=SandboxLimits(timeout_s=2.0, memory_mb=1024))
    env.reset(seed=0)
    return env.unwrapped.evaluate


@pytest.mark.parametrize("source, expected", [
    ("def construct():\n    return [0, 1, 3, 7]\n", Outcome.VALID),
    ("def construct():\n    return [0, 0, -1.5]\n", Outcome.INVALID),
    ("def construct(:\n    return 1\n", Outcome.SYNTAX_ERROR),
    ("def build():\n    return [0, 1]\n", Outcome.WRONG_ENTRY),
    ("def construct():\n    raise ValueError('no')\n", Outcome.RUNTIME_ERROR),
    ("def construct():\n    while True:\n        pass\n", Outcome.TIMEOUT),
])
def test_the_judges_messages_map_to_their_category(judge, source, expected):
    state = judge(source)
    assert classify(Sample(action=source), state) is expected, state.error
    assert classify(Sample(action=source), {"valid": state.valid, "error": state.error}) is expected


def test_the_parsers_category_wins_over_the_judge():
    stub = State(None, None, 0.0, False, error="program failed: entry function 'construct' not defined")
    assert classify(Sample(action="#", outcome=Outcome.NO_CODE), stub) is Outcome.NO_CODE
    assert classify(Sample(action="#", parse_error="response ends inside an unclosed code block (truncated)"),
                    stub) is Outcome.TRUNCATED
    assert classify(Sample(action="#", parse_error="response contains no fenced code block"), stub) is Outcome.NO_CODE
    unscored = State(None, None, 0.0, False, error="unscored: no GPU", metadata={"unscored": True})
    assert classify(Sample(action="x"), unscored) is None


def test_program_env_messages():
    assert classify_error("fit on the fit split failed: program raised NameError: the program must define a "
                          "function fit(...)") is Outcome.WRONG_ENTRY
    assert classify_error("fit on the fit split failed: timed out after 20.0 s (wall clock)") is Outcome.TIMEOUT
    assert classify_error("compile error: main.cpp:3: expected ';'") is Outcome.SYNTAX_ERROR
    assert classify_error("fit() for group 'a': params[0] = nan is not finite") is Outcome.INVALID


def test_outcome_log_writes_counts_and_texts_and_continues_after_a_restart(tmp_path):
    log = OutcomeLog(tmp_path, min_interval_s=0)
    valid = State(None, 1.0, 1.0, True)
    log.record(Sample(action="x", text="```python\nx\n```"), valid, step=0)
    log.record(Sample(action="#", text="no code", outcome=Outcome.NO_CODE), valid, step=0)
    log.record(Sample(action=[1.0]), valid)  # a numeric sample: counted, no line
    data = json.loads((tmp_path / "outcomes.json").read_text())
    assert data["counts"]["valid"] == 2 and data["counts"]["no_code"] == 1 and data["total"] == 3
    lines = [json.loads(x) for x in (tmp_path / "samples.jsonl").read_text().splitlines()]
    assert [x["outcome"] for x in lines] == ["valid", "no_code"] and lines[1]["text"] == "no code"
    assert log.scalars()["outcome/no_code"] == 1.0 and set(log.scalars()) >= {f"outcome/{o.value}" for o in Outcome}
    again = OutcomeLog(tmp_path, min_interval_s=0)  # --resume
    assert again.counts["valid"] == 2 and again.total == 3
    again.record(Sample(action="#", text="t", outcome=Outcome.TRUNCATED), valid)
    assert json.loads((tmp_path / "outcomes.json").read_text())["counts"]["truncated"] == 1


def test_a_resume_sets_outcomes_back_to_the_checkpoint_with_the_samples(tmp_path):
    """The tester's finding: a train run killed mid-step and resumed kept the dropped step's answers in
    ``outcomes.json`` (16) while ``samples.jsonl`` and ``metrics.jsonl`` were cut back (12)."""
    from discoverygym.agents.train_log import TrainLog

    log = OutcomeLog(tmp_path, min_interval_s=0.0)
    history = []
    for step, outcome in ((1, Outcome.TRUNCATED), (2, Outcome.SYNTAX_ERROR), (3, Outcome.NO_CODE)):
        for _ in range(4):
            log.record(Sample(text=f"answer of step {step}", outcome=outcome), None, step=step)
        history.append({"step": step, **log.scalars()})  # what the trainer logs per step
    log.flush()
    assert log.total == 12
    TrainLog(tmp_path).rewind(history[:2], 2)  # the checkpoint is after step 2; step 3 is done again
    restored = json.loads((tmp_path / "outcomes.json").read_text())
    assert restored["total"] == 8 and restored["counts"]["no_code"] == 0 and restored["counts"]["truncated"] == 4
    assert len((tmp_path / "samples.jsonl").read_text().splitlines()) == 8
    assert OutcomeLog(tmp_path).total == 8  # the resumed run counts on from the checkpoint
    TrainLog(tmp_path).rewind([], 0)  # no checkpoint: everything is done again
    assert not (tmp_path / "outcomes.json").exists() and OutcomeLog(tmp_path).total == 0
