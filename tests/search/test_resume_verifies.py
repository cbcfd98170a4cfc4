"""Issue 40 #4: resume does not trust ``archive.jsonl``.

On main one forged ``eval`` record (score 2.9, 26 identical circles of radius 0.5) became the
resumed search's best ("best score 2.9, gap to record +0.264", ``best.json`` valid). Now every valid
logged construction is scored again by the problem's verifier before the run continues, and a
mismatch is an error naming the file and line.
"""

from __future__ import annotations

import json

import pytest

from discoverygym.envs.registry import get_problem
from discoverygym.search.evolution import EvolutionarySearch, SearchConfig
from discoverygym.search.runlog import Replay, RunLog

ENV = "CirclePacking-26-v0"


def _run(run_dir, resume=False, L=2):
    search = EvolutionarySearch(SearchConfig(ENV, C=1, L=L, K=2, seed=0), run_dir, resume=resume,
                                executor="inline", tensorboard=False)
    return search.run()


def _killed_run(tmp_path):
    """A finished L=2 run whose config says L=3: a run killed after two of its three steps."""
    run_dir = tmp_path / "run"
    _run(run_dir)
    config = json.loads((run_dir / "config.json").read_text())
    (run_dir / "config.json").write_text(json.dumps({**config, "L": 3}))
    return run_dir


def _rewrite(run_dir, edit):
    """Apply ``edit(state)`` to the last ``eval`` record's state; returns its line number (1-based)."""
    path = run_dir / "archive.jsonl"
    lines = path.read_text().splitlines()
    i = max(n for n, line in enumerate(lines) if json.loads(line)["kind"] == "eval")
    record = json.loads(lines[i])
    edit(record["state"])
    lines[i] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n")
    return i + 1


def test_an_honest_log_resumes_and_every_valid_state_is_judged_again(tmp_path):
    run_dir = _killed_run(tmp_path)
    replay = Replay.read(RunLog(run_dir))
    assert replay.verify(get_problem(ENV)) == 1 + 4  # the initial state and the four candidates
    result = _run(run_dir, resume=True, L=3)
    assert result.evaluated_now == 2 and result.best.score < 2.0


def test_a_forged_eval_record_is_an_error_naming_file_and_line(tmp_path):
    run_dir = _killed_run(tmp_path)

    def forge(state):  # the attack: 26 identical circles of radius 0.5, claimed 2.9
        state["solution"] = [[0.5, 0.5, 0.5]] * 26
        state["score"] = state["reward"] = 2.9

    line = _rewrite(run_dir, forge)
    with pytest.raises(ValueError, match=rf"archive.jsonl:{line}: logged state 'c0-l1-k1' .*verifier rejects"):
        _run(run_dir, resume=True, L=3)
    assert json.loads((run_dir / "best.json").read_text())["score"] < 2.0  # best.json untouched


@pytest.mark.parametrize("changes, match", [
    ({"score": 1.4, "reward": 1.4}, "verifier scores its construction"),  # a real construction, a better claim
    ({"reward": 9.0}, "the reward of that score is"),
    ({"score": float("nan")}, "no finite score"),
])
def test_an_altered_score_or_reward_is_refused(tmp_path, changes, match):
    run_dir = _killed_run(tmp_path)
    line = _rewrite(run_dir, lambda state: state.update(changes))
    with pytest.raises(ValueError, match=rf"archive.jsonl:{line}: .*{match}"):
        Replay.read(RunLog(run_dir))
