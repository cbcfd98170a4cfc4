"""Issue 41 (7): a train run's report draws evicted states as evicted (with their score, not as
invalid) and shows a running run's states so far."""

from __future__ import annotations

import json

import pytest

from discoverygym.report.collect import EVICTED, collect


def test_evicted_states_keep_their_judged_score(tmp_path):
    run = tmp_path / "train"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"env_id": "ErdosMinOverlap-v0", "kind": "train", "groups": 1,
                                                 "group_size": 2}))
    kept = {"solution": [0.5] * 4, "score": 0.51, "reward": 1 / 0.51, "valid": True, "code": None, "id": "a",
            "parent_ids": [], "error": None, "metadata": {}}
    (run / "archive.json").write_text(json.dumps({"config": {}, "states": [kept], "initial_ids": ["a"],
                                                  "lineage": {"a": [], "b": ["a"], "c": ["a"]}, "evictions": 2}))
    (run / "states.jsonl").write_text(json.dumps({"id": "b", "parents": ["a"], "score": 0.45, "reward": 1 / 0.45,
                                                  "valid": True, "unscored": False, "step": 1}) + "\n")
    nodes = {n.id: n for n in collect(run).nodes}
    assert nodes["b"].valid and nodes["b"].score == pytest.approx(0.45) and nodes["b"].tail == EVICTED
    assert nodes["b"].error is None  # before issue 41: valid=False, "not kept in the archive (pruned)"
    assert not nodes["c"].valid and nodes["c"].score is None and nodes["c"].error.startswith(EVICTED)  # no record


def test_a_running_train_run_shows_its_states_so_far(tmp_path):
    pytest.importorskip("torch", reason="the trainer needs torch")
    from discoverygym.agents.trainer import TrainConfig, Trainer

    run, seen = tmp_path / "train", []
    config = TrainConfig(env_id="CirclePacking-26-v0", policy="gaussian", steps=2, groups=1, group_size=4,
                         eval_workers=1, image_every=0)
    Trainer(config, run, callback=lambda m: seen.append(len(collect(run).nodes))).run()
    assert seen[0] >= 1  # after the first step, mid-run (before issue 41: no archive.json until the end: 0)
    lines = (run / "states.jsonl").read_text().splitlines()
    assert len(lines) == 8 and {json.loads(x)["step"] for x in lines} == {1, 2}
