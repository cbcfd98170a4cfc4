"""Issue 38, item 1: every policy returns typed, frozen :class:`~discoverygym.policy.Sample` records,
and their readers (search, IRFT recording, the edit rates) use fields."""

from __future__ import annotations

import dataclasses
import json
from types import SimpleNamespace

import numpy as np
import pytest

from discoverygym.agents.policies.edits import edit_stats as edits_edit_stats
from discoverygym.agents.policies.llm import LLMSample, make_sample
from discoverygym.agents.responses import ResponseError, parse_response
from discoverygym.envs.registry import ENVS
from discoverygym.policy import Outcome, Sample, SamplingContext, edit_stats, make_policy
from discoverygym.types import State

PROGRAM = "def construct():\n    return [1.0]\n"
PARENT = "def construct():\n    return [0.0]\n"


def _ctx(env_id: str = "CirclePacking-26-v0") -> SamplingContext:
    problem = ENVS[env_id]
    x = np.asarray(problem.initial(np.random.default_rng(0)), dtype=np.float64)
    parent = State(solution=x.tolist(), score=1.0, reward=1.0, valid=True, id="p")
    return SamplingContext(parent=parent, inspirations=(parent,), problem=problem)


@pytest.mark.parametrize("name", ["mutation", "gaussian", "operators"])
def test_every_numeric_policy_returns_frozen_samples(name):
    pytest.importorskip("torch")
    from discoverygym.agents.policies.operators import OperatorPolicy

    ctx = _ctx()
    kwargs = OperatorPolicy.problem_kwargs(ctx.problem) if name == "operators" else {}
    policy = make_policy(name, shape=(26, 3), **kwargs)
    groups = policy.sample([ctx, ctx], 3, np.random.default_rng(0))
    assert [len(g) for g in groups] == [3, 3]
    for c, group in enumerate(groups):
        for s in group:
            assert isinstance(s, Sample) and s.context == c and s.parent_id == "p"
            assert s.parse_error is None and s.edit is None and s.outcome is None
            with pytest.raises(dataclasses.FrozenInstanceError):
                s.action = None  # type: ignore[misc]
            done = s.resolved()
            assert type(done) is type(s) and done.pending is None
            assert np.shape(done.action) == (26, 3)
            assert s.with_action(done.action).action is done.action
    if name == "operators":  # the operator runs in pending: nothing computed until resolved
        s = groups[0][0]
        assert s.action is None and s.pending is not None and s.operator in ctx.problem.operators[s.op].name


def test_llm_sample_outcome_from_the_parser():
    ok = make_sample(f"```python\n{PROGRAM}```", "python", finish_reason="stop")
    assert isinstance(ok, LLMSample) and ok.outcome is None and ok.action == PROGRAM and ok.edit == "full"
    cut = make_sample("```python\ndef construct():\n", "python")
    assert cut.outcome is Outcome.TRUNCATED and cut.parse_error and cut.edit == "failed"
    prose = make_sample("I would place the circles on a grid.", "python")
    assert prose.outcome is Outcome.NO_CODE and "no fenced code block" in prose.parse_error
    # ran out of tokens before writing any code: truncated, whatever the parser says
    long = make_sample("Let me think about the grid ...", "python", finish_reason="length")
    assert long.outcome is Outcome.TRUNCATED and long.finish_reason == "length"
    # a program was read although the budget ran out afterwards: the judge decides
    late = make_sample(f"```python\n{PROGRAM}```\nNow let me expl", "python", finish_reason="length")
    assert late.outcome is None and late.action == PROGRAM
    with pytest.raises(ResponseError) as exc:
        parse_response("<think>still reasoning", "python")
    assert exc.value.outcome is Outcome.TRUNCATED
    with pytest.raises(ResponseError) as exc:
        parse_response("```rust\nfn main() {}\n```", "python")
    assert exc.value.outcome is Outcome.NO_CODE


def test_llm_sample_outcome_in_diff_mode():
    parent = State(solution=None, score=None, reward=0.0, valid=False, code=PARENT, id="p")
    ctx = SimpleNamespace(parent=parent, problem=SimpleNamespace(entry="construct"))
    diff = "<<<<<<< SEARCH\n    return [0.0]\n=======\n    return [2.0]\n>>>>>>> REPLACE\n"
    ok = make_sample(diff, "python", ctx=ctx, edit_format="diff")
    assert ok.edit == "diff" and ok.outcome is None and "[2.0]" in ok.action
    wrong = make_sample(diff.replace("[0.0]", "[9.0]", 1), "python", ctx=ctx, edit_format="diff")
    assert wrong.apply_error and wrong.outcome is Outcome.NO_CODE and wrong.error == wrong.apply_error
    cut = make_sample("<think>planning the edit", "python", ctx=ctx, edit_format="diff")
    assert cut.parse_error and cut.outcome is Outcome.TRUNCATED


def test_edit_stats_lives_on_the_ground_floor():
    samples = [Sample(action="a", edit="full"), Sample(edit="failed", parse_error="no block"),
               Sample(edit="failed", apply_error="no match"), Sample(action="b", edit="fallback"), Sample(action=[1.0])]
    assert edits_edit_stats is edit_stats
    assert edit_stats(samples) == {"edit/parse_fail_rate": 0.2, "edit/apply_fail_rate": 0.2, "edit/fallback_rate": 0.2}


def test_recording_policy_resolves_pending_once(tmp_path):
    from discoverygym.agents.irft.recording import PROMPTS_FILE, RecordingPolicy

    calls = []

    def job():
        calls.append(1)
        return [0.5]

    class Deferred:
        name, action_modes = "deferred", ("construction",)

        def sample(self, contexts, n, rng):
            return [[Sample(pending=job) for _ in range(n)] for _ in contexts]

    out = RecordingPolicy(Deferred(), tmp_path).sample([_ctx()], 2, np.random.default_rng(0))
    assert [s.action for s in out[0]] == [[0.5], [0.5]] and len(calls) == 2
    line = json.loads((tmp_path / PROMPTS_FILE).read_text())
    assert line["actions"] == [[0.5], [0.5]] and line["prompt_ids"] == [None, None]


def test_search_refuses_a_policy_that_returns_bare_actions(tmp_path):
    from discoverygym.search.evolution import EvolutionarySearch, SearchConfig

    class Bare:
        name, action_modes = "bare", ("construction",)

        def sample(self, contexts, n, rng):
            return [[list(c.parent.solution) for _ in range(n)] for c in contexts]

    cfg = SearchConfig("CirclePacking-26-v0", policy="bare", C=1, L=1, K=2, seed=0)
    with pytest.raises(TypeError, match=r"returned a list; a policy returns discoverygym.policy.Sample"):
        EvolutionarySearch(cfg, tmp_path / "bare", policy=Bare(), tensorboard=False).run()
