"""One problem registry: ``register_problem`` beside ``register_task``, one lookup (``find_env``) and one
unknown-env error that suggests close ids (as Gymnasium's ``_find_spec`` does)."""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import pytest

import discoverygym  # noqa: F401 - registers the envs
from discoverygym.cli import main
from discoverygym.envs import registry
from discoverygym.envs.registry import (
    ENVS,
    PROGRAM_TASKS,
    TaskSpec,
    find_env,
    register_problem,
    register_task,
)
from discoverygym.errors import UnknownEnvError
from discoverygym.search.config import check_env_id


def test_find_env_returns_the_entry_of_either_registry():
    assert find_env("CirclePacking-26-v0") is ENVS["CirclePacking-26-v0"]
    assert find_env("AHC039-v0") is PROGRAM_TASKS["AHC039-v0"]


@pytest.mark.parametrize("asked, meant", [
    ("CirclePacking-62-v0", "CirclePacking-26-v0"),
    ("circlepacking-26-v0", "CirclePacking-26-v0"),
    ("ErdosMinOverlap-v1", "ErdosMinOverlap-v0"),
    ("AHC039", "AHC039-v0"),
])
def test_an_unknown_id_suggests_the_close_ones(asked, meant):
    with pytest.raises(UnknownEnvError) as caught:
        find_env(asked)
    assert meant in caught.value.suggestions
    assert str(caught.value).startswith(f"unknown env {asked!r} (did you mean ")
    assert f"{meant!r}" in str(caught.value) and str(caught.value).endswith("; run `discoverygym list`")
    assert isinstance(caught.value, ValueError)  # callers that catch ValueError keep catching it


def test_an_id_close_to_nothing_gets_no_suggestion():
    with pytest.raises(UnknownEnvError, match=r"^unknown env 'Nope-v0'; run `discoverygym list`$"):
        check_env_id("Nope-v0")


@pytest.mark.parametrize("argv", [
    ["train", "CirclePackng-26-v0", "--run-dir", "{tmp}/r"],
    ["compare", "CirclePackng-26-v0"],
    ["search", "CirclePackng-26-v0", "--run-dir", "{tmp}/r"],
    ["audit", "CirclePackng-26-v0"],
    ["evaluate", "CirclePackng-26-v0"],
    ["certify", "CirclePackng-26-v0", "{tmp}/best.json"],
])
def test_every_command_says_the_one_error_with_the_suggestion(argv, tmp_path, capsys):
    assert main([a.format(tmp=tmp_path) for a in argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "unknown env 'CirclePackng-26-v0' (did you mean 'CirclePacking-26-v0'" in err
    assert not (tmp_path / "r").exists()


def test_register_problem_adds_a_construction_env(monkeypatch):
    monkeypatch.setattr(registry, "ENVS", dict(ENVS))
    problem = dataclasses.replace(ENVS["CirclePacking-26-v0"], name="my_packing", title="My packing")
    try:
        register_problem("MyPacking-v0", problem)
        assert find_env("MyPacking-v0") is problem
        env = gym.make("MyPacking-v0").unwrapped
        assert env.problem is problem
        with pytest.raises(ValueError, match="taken by MyPacking-v0"):
            register_problem("MyOtherPacking-v0", dataclasses.replace(problem))
        with pytest.raises(ValueError, match="construction env id"):
            register_task("MyPacking-v0", TaskSpec(lambda: None, "no"))
        with pytest.raises(ValueError, match="program env id"):
            register_problem("AHC039-v0", problem)
    finally:
        gym.registry.pop("MyPacking-v0", None)
