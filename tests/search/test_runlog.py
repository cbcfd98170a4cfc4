"""The run directory's resume side: ``RunLog.claim`` (may a directory start or continue a run) and
``Replay`` (the logged records read back and checked against the recomputed ones)."""

from __future__ import annotations

import pytest

from discoverygym.search.pipeline import PipelineOptions
from discoverygym.search.runlog import Replay, RunLog
from discoverygym.types import State


def _state(sid: str) -> dict:
    return State([0.0], 1.0, 1.0, True, id=sid).to_dict()


def test_claim_refuses_what_cannot_start_or_continue(tmp_path):
    config = {"env_id": "X", "C": 1}
    with pytest.raises(ValueError, match="no such run directory"):
        RunLog.claim(tmp_path / "missing", config, resume=True)
    with pytest.raises(ValueError, match="holds no run"):
        RunLog.claim(tmp_path, config, resume=True)
    log = RunLog.claim(tmp_path, config, resume=False)
    log.write_config(config)
    with pytest.raises(ValueError, match="already holds a run"):
        RunLog.claim(tmp_path, config, resume=False)
    with pytest.raises(ValueError, match=r"configuration differs \(stored, given\): \{'C': \(1, 2\)\}"):
        RunLog.claim(tmp_path, {**config, "C": 2}, resume=True)
    assert RunLog.claim(tmp_path, config, resume=True).dir == tmp_path


def test_replay_keys_the_log_and_checks_recomputed_decisions(tmp_path):
    log = RunLog(tmp_path)
    for record in (
        {"kind": "init", "state": _state("init")},
        {"kind": "batch", "traj": 0, "step": 0, "parents": ["init"], "actions": [[1.0], [2.0]], "seeds": [3, 4]},
        {"kind": "eval", "traj": 0, "step": 0, "k": 1, "state": _state("c0-l0-k1")},
        {"kind": "commit", "traj": 0, "step": 0, "committed": "c0-l0-k1"},
        {"kind": "restart", "traj": 0, "step": 0, "choice": "fresh"},
        {"kind": "budget", "round": 1, "limits": [2, 1]},
        {"kind": "note", "text": "other kinds are ignored"},
    ):
        log.append(record)
    log.close()
    replay = Replay.read(log)
    assert replay.initial.id == "init" and replay.evaluations == 1 and not replay.active
    record, results = replay.batch(0, 0, ["init"], 2)
    assert record["actions"] == [[1.0], [2.0]] and [r and r.id for r in results] == [None, "c0-l0-k1"]
    assert replay.batch(0, 1, ["init"], 2) is None  # never generated
    with pytest.raises(RuntimeError, match="logged parents"):
        replay.batch(0, 0, ["other"], 2)
    assert replay.logged({"kind": "commit", "traj": 0, "step": 0, "committed": "c0-l0-k1"})
    assert not replay.logged({"kind": "commit", "traj": 0, "step": 1, "committed": None})
    with pytest.raises(RuntimeError, match="trajectory 0 step 0: logged commit 'c0-l0-k1', recomputed None"):
        replay.logged({"kind": "commit", "traj": 0, "step": 0, "committed": None})
    with pytest.raises(RuntimeError, match="logged restart 'fresh', recomputed 'best'"):
        replay.logged({"kind": "restart", "traj": 0, "step": 0, "choice": "best"})
    with pytest.raises(RuntimeError, match=r"budget round 1: logged limits \[2, 1\], recomputed \[1, 2\]"):
        replay.logged({"kind": "budget", "round": 1, "limits": [1, 2]})
    assert Replay().initial is None and Replay().evaluations == 0  # a new run


def test_replay_refuses_a_record_of_the_wrong_shape(tmp_path):
    log = RunLog(tmp_path)
    log.append({"kind": "eval", "traj": 0, "step": "0", "k": 0, "state": _state("a")})
    log.close()
    with pytest.raises(ValueError, match=r"archive.jsonl:1 is corrupt \(a 'eval' record needs 'step' of type int"):
        Replay.read(log)


def test_pipeline_options_check_what_the_runner_used_to():
    with pytest.raises(ValueError, match="workers must be an integer >= 1, got 0"):
        PipelineOptions(workers=0)
    with pytest.raises(ValueError, match="unknown executor 'gpu'"):
        PipelineOptions(executor="gpu")
    assert PipelineOptions(ray_address="auto").executor == "ray"
    assert (PipelineOptions(prefetch=0).prefetch, PipelineOptions(generation_workers=0).generation_workers) == (1, 1)
