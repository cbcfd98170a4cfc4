"""`discoverygym search` and `discoverygym train` share one policy registry, and every run records its kind."""

from __future__ import annotations

import json

import pytest

from discoverygym.cli import main
from discoverygym.io import run_kind
from discoverygym.policy import POLICIES, make_policy

pytest.importorskip("torch")
pytest.importorskip("scipy")


def test_search_runs_the_trainable_gaussian_policy_frozen_with_the_problems_polisher(tmp_path, capsys):
    run = tmp_path / "g"
    rc = main(["search", "CirclePacking-26-v0", "--policy", "gaussian", "--policy-kwargs", '{"polish": "auto"}',
               "-C", "2", "-L", "2", "-K", "2", "--run-dir", str(run)])
    assert rc == 0
    # the seeded start is a 5x5 grid packing (Σr = 1.3); SLSQP from any proposal reaches > 2.3
    assert json.loads((run / "best.json").read_text())["score"] > 2.3
    assert json.loads((run / "config.json").read_text())["kind"] == "search"
    assert run_kind(run) == "search"
    # resume of the finished run (the stored kind does not count as a changed setting)
    assert main(["search", "CirclePacking-26-v0", "--policy", "gaussian", "--policy-kwargs", '{"polish": "auto"}',
                 "-C", "2", "-L", "2", "-K", "2", "--run-dir", str(run), "--resume"]) == 0


def test_the_registry_serves_both_commands():
    assert {"mutation", "gaussian"} <= set(POLICIES)
    policy = make_policy("gaussian", shape=(26, 3))
    assert policy.shape == (26, 3)
    with pytest.raises(ValueError, match="needs the construction's shape"):
        make_policy("gaussian")
    with pytest.raises(ValueError, match="unknown policy 'nope'"):
        make_policy("nope")


def test_train_and_search_runs_are_told_apart_by_their_recorded_kind(tmp_path, capsys):
    train = tmp_path / "t"
    assert main(["train", "CirclePacking-26-v0", "--steps", "1", "--groups", "1", "--group-size", "2",
                 "--run-dir", str(train), "--json"]) == 0
    assert json.loads((train / "config.json").read_text())["kind"] == "train"
    assert run_kind(train) == "train"
    capsys.readouterr()
    # a search into the train run's directory is refused with the kind named
    assert main(["search", "CirclePacking-26-v0", "-C", "1", "-L", "1", "-K", "1", "--run-dir", str(train),
                 "--resume"]) == 2
    assert "holds a train run" in capsys.readouterr().err


def test_run_kind_of_directories_written_before_kinds_were_recorded(tmp_path):
    old_train = tmp_path / "a"
    old_train.mkdir()
    (old_train / "config.json").write_text(json.dumps({"env_id": "X", "groups": 2, "group_size": 4}))
    old_search = tmp_path / "b"
    old_search.mkdir()
    (old_search / "config.json").write_text(json.dumps({"env_id": "X", "C": 1, "L": 1, "K": 1, "selector": "rpucg"}))
    odd = tmp_path / "c"
    odd.mkdir()
    (odd / "config.json").write_text("[1, 2]")
    assert [run_kind(d) for d in (old_train, old_search, odd, tmp_path / "missing")] == ["train", "search", "other",
                                                                                        None]


@pytest.mark.parametrize("argv, message", [
    (["search", "Hadamard-29-v0", "--policy", "gaussian", "-C", "1", "-L", "1", "-K", "2"], "integer constructions"),
    (["search", "CirclePacking-26-v0", "--policy", "gaussian", "--policy-kwargs", '{"polish": "bogus"}',
      "-C", "1", "-L", "1", "-K", "2"], "unknown polish 'bogus'"),
    (["train", "ErdosMinOverlap-v0", "--polish", "auto", "--polish-kwargs", '{"bogus": 1}', "--steps", "1"],
     "do not fit erdos_smooth_max"),
    (["train", "CirclePacking-26-v0", "--policy", "mutation", "--steps", "1"], "cannot be trained"),
    (["compare", "AHC039-v0", "--configs", "full", "--seeds", "1", "--steps", "1"], "AHC039-v0 takes programs"),
])
def test_policy_mistakes_are_refused_before_the_run_directory_exists(argv, message, tmp_path, capsys):
    run = tmp_path / "run"
    assert main([*argv, "--run-dir", str(run)]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not run.exists()


def test_train_lists_only_trainable_policies(tmp_path, capsys):
    assert main(["train", "CirclePacking-26-v0", "--policy", "nosuch", "--run-dir", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "trainable: gaussian," in err and "mutation" not in err
