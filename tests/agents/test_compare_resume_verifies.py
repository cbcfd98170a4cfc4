"""``compare --resume`` re-judges every run result it reads back (issue 52, #13).

A finished study's ``result.json`` edited to best 0.30 (true 0.38135) went into the table and
``summary.json`` unchecked. :func:`~discoverygym.agents.bench.verified_result` now judges the
result's best and initial states with the env's verifier and its trace against them.
"""

from __future__ import annotations

import json
import re

import pytest

from discoverygym.agents.bench import verified_result
from discoverygym.envs.construction import DiscoveryEnv
from discoverygym.envs.registry import ENVS
from discoverygym.errors import UsageError

ENV = "ErdosMinOverlap-v0"


def _result(tmp_path, **changes):
    """An honest result of a short run: start [1, 1, 0, 0] (C5 = 1), best [1, 1, 1, 0.5, 0, 0] (lower C5)."""
    env = DiscoveryEnv(ENVS[ENV])
    start, best = env.evaluate([1.0, 1.0, 0.0, 0.0]), env.evaluate([1.0, 1.0, 1.0, 0.5, 0.0, 0.0])
    assert start.valid and best.valid and best.score < start.score
    result = {"env_id": ENV, "config": "full", "seed": 0, "budget_s": None, "best": best.score,
              "initial": start.score, "trace": [[0.1, start.score], [0.5, best.score]], "steps": 2,
              "evaluations": 8, "wall_s": 0.5, "curve": [[4, start.score], [8, best.score]], "elapsed_s": 0.6,
              "best_in_budget": best.score, "late": False, "over_s": 0.0,
              "best_state": best.to_dict(), "initial_state": start.to_dict()}
    result.update(changes)
    path = tmp_path / "result.json"
    path.write_text(json.dumps(result))
    return path, result


def test_an_honest_result_is_read_back(tmp_path):
    path, result = _result(tmp_path)
    assert verified_result(path, ENV)["best"] == result["best"]


def test_an_edited_best_is_refused_with_the_figure(tmp_path):
    _, honest = _result(tmp_path)
    path, _ = _result(tmp_path, best=0.30, best_in_budget=0.30)
    with pytest.raises(UsageError, match=rf"result.json: best 0\.3, but its best_state is {re.escape(repr(honest['best']))}"):
        verified_result(path, ENV)


def test_a_forged_state_is_refused_by_the_verifier(tmp_path):
    path, result = _result(tmp_path)
    state = dict(result["best_state"], score=0.30, reward=1 / 0.30)  # the state itself claims 0.30
    path, _ = _result(tmp_path, best=0.30, best_state=state, best_in_budget=0.30)
    with pytest.raises(UsageError, match="verifier scores its construction"):
        verified_result(path, ENV)


def test_a_trace_better_than_the_verified_best_is_refused(tmp_path):
    path, _ = _result(tmp_path, trace=[[0.1, 1.0], [0.5, 0.30]])
    with pytest.raises(UsageError, match=r"trace reaches 0\.3, better than the verified best"):
        verified_result(path, ENV)


def test_a_result_without_states_is_run_again_and_kept_aside(tmp_path):
    path, result = _result(tmp_path)
    del result["best_state"]
    path.write_text(json.dumps(result))
    assert verified_result(path, ENV) is None
    assert not path.exists() and (tmp_path / "result.unverified.json").exists()
