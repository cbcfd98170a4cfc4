"""``CandidateEnv.evaluate`` judges a candidate exactly as ``step`` does, without touching the episode;
``reset(options={"state": s})`` starts from a copy of ``s``; every id is built by ``gym.make``."""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import pytest

import discoverygym
from discoverygym import State
from discoverygym.envs.program import ProgramEnv
from discoverygym.envs.registry import PROGRAM_TASKS, TaskSpec, register_task
from discoverygym.errors import BackendUnavailable
from discoverygym.protocols import ConstructionProblemProtocol, ProblemProtocol, ProgramTaskProtocol
from discoverygym.sandbox.python import SandboxLimits
from tests.envs.test_program_env import ToyTask

FAST = SandboxLimits(timeout_s=20.0, memory_mb=2048)
#: a CirclePacking-26 program that returns its parent unchanged (so it scores the parent's score).
ECHO = "import numpy as np\n\ndef construct(seed, budget_s, parent):\n    return np.asarray(parent).tolist()\n"


@pytest.fixture(autouse=True)
def toy_registered():
    register_task("ToyEval-v0", TaskSpec(ToyTask, "toy"))
    yield
    PROGRAM_TASKS.pop("ToyEval-v0", None)
    gym.registry.pop("ToyEval-v0", None)


def _pair(env_id: str, **kwargs):
    """Two envs of ``env_id`` reset with the same seed (one steps, one evaluates)."""
    a, b = gym.make(env_id, **kwargs), gym.make(env_id, **kwargs)
    ia, ib = a.reset(seed=5)[1], b.reset(seed=5)[1]
    assert ia["state"] == ib["state"]
    return a, b, ia["state"]


def _same_child(stepped: State, evaluated: State) -> None:
    assert evaluated == stepped  # every field but metadata (timings) compares
    timings = ("elapsed_s", "sandbox_s", "stdout", "stderr")
    assert {k: v for k, v in evaluated.metadata.items() if k not in timings} == {
        k: v for k, v in stepped.metadata.items() if k not in timings}


def test_construction_env_evaluate_equals_step_and_leaves_the_episode_alone():
    a, b, start = _pair("CirclePacking-26-v0")
    moved = [[x + 0.001, y, r] for x, y, r in start.solution]  # may or may not stay valid: both agree
    stepped = a.step(moved)[4]["state"]
    evaluated = b.unwrapped.evaluate(moved, parent=start, metadata={"step": 0})
    _same_child(stepped, evaluated)
    assert evaluated.parent_ids == (start.id,) and evaluated.metadata["step"] == 0
    assert b.unwrapped.state is not None and b.unwrapped.state.id == start.id  # the episode did not move
    _, _, terminated, _, info = b.step(start.solution)  # step still works: evaluate used no step
    assert terminated and info["valid"]


def test_evaluate_takes_explicit_fields_and_never_raises_for_a_bad_candidate():
    env = gym.make("CirclePacking-26-v0").unwrapped  # no reset: evaluate needs no episode
    bad = env.evaluate([[0.5, 0.5, 0.9]] * 26, id="child", parent_ids=("p1", "p2"), metadata={"k": 1})
    assert not bad.valid and bad.reward == env.failure_reward and bad.error
    assert bad.id == "child" and bad.parent_ids == ("p1", "p2") and bad.metadata["k"] == 1
    assert env.state is None


def test_code_mode_math_env_evaluate_equals_step():
    a, b, start = _pair("CirclePacking-26-v0", action_mode="code", sandbox=FAST)
    assert a.unwrapped.action_kind == "code"
    stepped = a.step(ECHO)[4]["state"]
    evaluated = b.unwrapped.evaluate(ECHO, parent=start, metadata={"step": 0})
    _same_child(stepped, evaluated)
    assert evaluated.valid and evaluated.code == ECHO and evaluated.score == start.score


def test_code_mode_passes_the_given_seed_to_the_program():
    env = gym.make("CirclePacking-26-v0", action_mode="code", sandbox=FAST).unwrapped
    _, info = env.reset(seed=0)
    program = "def construct(seed, parent):\n    print('seed', seed)\n    return [list(row) for row in parent]\n"
    child = env.evaluate(program, parent=info["state"], seed=1234)
    assert child.valid and "seed 1234" in child.metadata["stdout"]


def test_program_env_evaluate_equals_step():
    a, b, start = _pair("ToyEval-v0", limit=50)
    program = "def answer():\n    return 42\n"
    stepped = a.step(program)[4]["state"]
    evaluated = b.unwrapped.evaluate(program, parent=start, metadata={"step": 0})
    _same_child(stepped, evaluated)
    assert evaluated.valid and evaluated.score == 42.0 and evaluated.parent_ids == (start.id,)
    too_big = b.unwrapped.evaluate("def answer():\n    return 51\n", seed=0)
    assert not too_big.valid and "not an integer in [0, 50]" in too_big.error


def test_the_env_says_what_it_accepts():
    construction = gym.make("Hadamard-29-v0").unwrapped
    code = gym.make("Hadamard-29-v0", action_mode="code").unwrapped
    program = gym.make("ToyEval-v0").unwrapped
    assert (construction.action_kind, code.action_kind, program.action_kind) == ("construction", "code", "code")
    assert construction.thread_safe_evaluate and code.thread_safe_evaluate
    assert program.thread_safe_evaluate is False  # ProgramTask's default: tasks may share hardware


@pytest.mark.parametrize("env_id", sorted([*discoverygym.ENVS, *PROGRAM_TASKS]))
def test_code_mode_is_built_by_gym_make_for_every_registered_id(env_id):
    try:
        env = gym.make(env_id, action_mode="code").unwrapped
    except (BackendUnavailable, ImportError) as exc:  # an optional family without its extra
        pytest.skip(f"{env_id}: {exc}")
    assert env.action_kind == "code"
    assert isinstance(env.problem, ProblemProtocol)
    expected = ProgramTaskProtocol if env_id in PROGRAM_TASKS else ConstructionProblemProtocol
    assert isinstance(env.problem, expected)


def test_gym_make_takes_a_problem_object_for_either_kind():
    toy = ToyTask(limit=3)
    env = gym.make("ToyEval-v0", problem=toy).unwrapped
    assert env.problem is toy
    problem = dataclasses.replace(discoverygym.ENVS["Hadamard-29-v0"], title="renamed")
    assert gym.make("Hadamard-29-v0", problem=problem).unwrapped.problem.title == "renamed"


def test_env_classes_take_objects_only():
    with pytest.raises(TypeError, match="gym.make"):
        ProgramEnv("ToyEval-v0")


def test_reset_from_a_state_never_mutates_it():
    env = gym.make("CirclePacking-26-v0")
    _, info = env.reset(seed=0)
    claimed = dataclasses.replace(info["state"], score=99.0, reward=99.0, metadata={"note": "mine"})
    _, started = env.reset(options={"state": claimed})
    assert claimed.score == 99.0 and claimed.reward == 99.0  # the caller's object is untouched
    assert started["state"] is not claimed and started["state"].score == info["state"].score
    started["state"].metadata["extra"] = 1
    assert claimed.metadata == {"note": "mine"}


def test_program_env_reset_from_a_state_starts_from_a_copy():
    env = gym.make("ToyEval-v0")
    given = State(None, 7.0, 7.0, True, code="def answer():\n    return 7\n", id="s", metadata={"note": "mine"})
    _, info = env.reset(options={"state": given})
    assert info["state"] == given and info["state"] is not given  # taken as scored, but copied
    env.step("def answer():\n    return 8\n")
    info["state"].metadata["extra"] = 1
    assert given.metadata == {"note": "mine"} and given.score == 7.0


def test_admit_rejudges_what_it_cannot_trust():
    env = gym.make("CirclePacking-26-v0").unwrapped
    with pytest.raises(ValueError, match="not a valid"):
        env.admit(State([[0.5, 0.5, 0.9]] * 26, 3.0, 3.0, True))
    program = gym.make("ToyEval-v0", limit=5).unwrapped
    with pytest.raises(ValueError, match="fails"):  # a dict (from disk) is judged again
        program.admit(State(None, 9.0, 9.0, True, code="def answer():\n    return 9\n").to_dict())
