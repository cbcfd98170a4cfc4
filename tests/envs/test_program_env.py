"""ProgramEnv / ProgramTask: the shared base of program-judged problems, tested with a toy task.

The toy task runs a Python program in the real sandbox and scores the integer it returns, so
every path (compile failure, crash, rule broken, valid) goes through the same code as the real
families (kernels, AtCoder, denoising).
"""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import discoverygym  # noqa: F401 - registers the envs
from discoverygym.cli import main
from discoverygym.envs.program import ProgramEnv, ProgramTask
from discoverygym.envs.registry import PROGRAM_TASKS, TaskSpec, make_env, make_task, register_task
from discoverygym.errors import InvalidSolution
from discoverygym.rewards.common import Score
from discoverygym.sandbox.python import SandboxLimits, run_program
from discoverygym.types import State


class ToyTask(ProgramTask):
    """Score = the integer returned by ``answer()``, which must lie in [0, limit]."""

    name = "toy"
    title = "Toy"
    quantity = "answer"
    direction = "max"
    entry = "answer"
    description = "Return a big integer."
    contract = "Define answer() -> int."

    def __init__(self, limit: int = 100, evaluate_initial: bool = True) -> None:
        self.limit = limit
        self.evaluate_initial = evaluate_initial
        self.calls = 0

    @property
    def sota(self) -> dict:
        return {"value": self.limit, "source": "definition"}

    def initial_program(self) -> str:
        return "def answer():\n    return 1\n"

    def evaluate(self, source: str, *, seed: int) -> Score:
        self.calls += 1
        run = run_program(source, entry=self.entry, limits=SandboxLimits(timeout_s=10))
        if not run.ok:
            raise InvalidSolution(f"program failed: {run.error}")
        value = run.value
        if type(value) is not int or not 0 <= value <= self.limit:
            raise InvalidSolution(f"answer {value!r} is not an integer in [0, {self.limit}]",
                                  metrics={"returned": repr(value)[:50]})
        return Score(float(value), {"cases": [{"case": "only", "score": value}], "case_scores": [value]})

    def report(self, state: State) -> list[tuple[str, str]]:
        return [("limit", str(self.limit))]


@pytest.fixture(autouse=True)
def toy_registered():
    register_task("Toy-v0", TaskSpec(ToyTask, "toy"))
    yield
    PROGRAM_TASKS.pop("Toy-v0", None)
    gym.registry.pop("Toy-v0", None)


def test_gym_make_builds_program_env_with_task_options():
    env = gym.make("Toy-v0", limit=7)
    assert isinstance(env.unwrapped, ProgramEnv)
    assert env.unwrapped.task.limit == 7
    assert env.unwrapped.action_mode == "code"


def test_check_env_passes():
    check_env(ProgramEnv(ToyTask()), skip_render_check=True)


def test_reset_scores_initial_program_and_step_scores_children():
    env = ProgramEnv(ToyTask())
    obs, info = env.reset(seed=0)
    assert info["valid"] and info["score"] == 1.0
    assert "def answer" in obs["prompt"] and obs["score"][0] == 1.0
    _, reward, terminated, truncated, info = env.step("def answer():\n    return 42\n")
    assert (reward, terminated, truncated, info["score"]) == (42.0, True, False, 42.0)
    assert info["state"].parent_ids and info["state"].code.startswith("def answer")
    assert info["metrics"]["cases"] == [{"case": "only", "score": 42}]


@pytest.mark.parametrize(
    ("program", "needle"),
    [
        ("def answer(:\n", "syntax error"),
        ("def answer():\n    raise RuntimeError('boom')\n", "boom"),
        ("def answer():\n    return 1000\n", "not an integer in [0, 100]"),
        ("def answer():\n    return 3.5\n", "not an integer"),
        (b"bytes", "must be program text"),
        (None, "must be program text"),
    ],
)
def test_invalid_programs_get_failure_reward_and_reason(program, needle):
    env = ProgramEnv(ToyTask())
    env.reset(seed=0)
    _, reward, _, _, info = env.step(program)
    assert reward == env.failure_reward == 0.0
    assert not info["valid"] and info["score"] is None
    assert needle in info["error"]
    assert env.state.score == 1.0  # the parent is kept


def test_failure_metrics_reach_info():
    env = ProgramEnv(ToyTask())
    env.reset(seed=0)
    info = env.step("def answer():\n    return -5\n")[-1]
    assert info["metrics"]["returned"] == "-5"


def test_horizon_chains_valid_children():
    env = ProgramEnv(ToyTask(), horizon=2)
    env.reset(seed=0)
    *_, terminated, _, _ = env.step("def answer():\n    return 5\n")
    assert not terminated and env.state.score == 5.0
    *_, terminated, _, info = env.step("def answer():\n    return 6\n")
    assert terminated and info["state"].parent_ids != ()


def test_injected_state_object_is_trusted_but_dict_is_rejudged():
    task = ToyTask()
    env = ProgramEnv(task)
    claimed = State(None, 99.0, 99.0, True, code="def answer():\n    return 3\n", id="x")
    _, info = env.reset(options={"state": claimed})
    assert info["score"] == 99.0 and task.calls == 0  # an in-process State is the env's own record
    _, info = env.reset(options={"state": claimed.to_dict()})
    assert info["score"] == 3.0  # from disk: the program is run again, the claim ignored
    with pytest.raises(ValueError, match="no program"):
        env.reset(options={"state": {**claimed.to_dict(), "code": None}})
    bad = {**claimed.to_dict(), "code": "def answer():\n    return -1\n"}
    with pytest.raises(ValueError, match="fails"):
        env.reset(options={"state": bad})


def test_unscored_initial_state_when_evaluate_initial_is_false():
    task = ToyTask(evaluate_initial=False)
    obs, info = ProgramEnv(task).reset(seed=0)
    assert task.calls == 0 and info["score"] is None and obs["score"][0] == -np.inf
    assert "not scored" in info["error"]


def test_seeded_episodes_repeat():
    a, b = ProgramEnv(ToyTask()), ProgramEnv(ToyTask())
    ia, ib = a.reset(seed=3)[1], b.reset(seed=3)[1]
    assert ia["state"].id == ib["state"].id


def test_constructor_errors():
    with pytest.raises(ValueError, match="action_mode must be 'code'"):
        ProgramEnv(ToyTask(), action_mode="construction")
    with pytest.raises(ValueError, match="horizon"):
        ProgramEnv(ToyTask(), horizon=0)
    with pytest.raises(ValueError, match="render_mode"):
        ProgramEnv(ToyTask(), render_mode="human")
    with pytest.raises(ValueError, match="need a task name"):
        ProgramEnv(ToyTask(), limit=3)
    with pytest.raises(ValueError, match="unknown program env"):
        make_task("Nope-v0")
    with pytest.raises(ValueError, match="unknown env id"):
        make_env("Nope-v0")
    with pytest.raises(TypeError):
        make_task("Toy-v0", no_such_option=1)


def test_render_modes():
    env = ProgramEnv(ToyTask(), render_mode="rgb_array")
    env.reset(seed=0)
    env.step("def answer():\n    return 9\n")
    image = env.render()
    assert image.shape == (256, 256, 3) and image.dtype == np.uint8 and image.min() < 255
    env = ProgramEnv(ToyTask(), render_mode="ansi")
    env.reset(seed=0)
    text = env.render()
    assert "score 1" in text and "limit: 100" in text


def test_cli_evaluates_program_env(tmp_path, capsys):
    program = tmp_path / "p.py"
    program.write_text("def answer():\n    return 12\n")
    assert main(["evaluate", "Toy-v0", str(program), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["valid"] and out["score"] == 12.0 and out["metrics"]["cases"][0]["score"] == 12
    assert main(["evaluate", "Toy-v0", str(program)]) == 0
    text = capsys.readouterr().out
    assert "1 cases" in text and "limit" in text


def test_cli_refuses_options_an_env_does_not_take(tmp_path, capsys):
    program = tmp_path / "p.py"
    program.write_text("def answer():\n    return 12\n")
    assert main(["evaluate", "Toy-v0", str(program), "--dataset", "x"]) == 2
    assert "Toy-v0" in capsys.readouterr().err
    assert main(["evaluate", "ErdosMinOverlap-v0", str(program), "--n-cases", "3"]) == 2
    assert "--n-cases" in capsys.readouterr().err


def test_search_executor_spec_builds_program_env():
    from discoverygym.search.executors import EvalTask, EvaluatorSpec, evaluate_task

    env = EvaluatorSpec("Toy-v0", {"action_mode": "code"}).make()
    assert isinstance(env.unwrapped, ProgramEnv)
    task = EvalTask(id="a", action="def answer():\n    return 4\n", parent_ids=("p",), parent_solution=None,
                    seed=0, metadata={})
    result = evaluate_task(env, task)
    assert result.state.valid and result.state.score == 4.0 and result.state.parent_ids == ("p",)


def test_cli_bundled_examples_of_program_envs(capsys):
    """`discoverygym evaluate ENV` without FILE judges the bundled example of each program family."""
    import shutil

    from discoverygym.sandbox.native import native_bwrap_available, native_landlock_available

    if shutil.which("g++") is None:
        pytest.skip("g++ is not installed")
    if not (native_bwrap_available() or native_landlock_available()):
        pytest.skip("neither bubblewrap nor Landlock: native programs are refused here")
    assert main(["evaluate", "AHC039-v0", "--n-cases", "3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["valid"], out["error"]
    assert len(out["metrics"]["cases"]) == 3 and out["score"] > 0


def _no_gpu() -> bool:
    torch = pytest.importorskip("torch")
    return not torch.cuda.is_available()


def test_cli_kernel_on_cpu_checks_correctness_then_exits_3(capsys):
    if not _no_gpu():
        pytest.skip("checks the behaviour without a GPU")
    code = main(["evaluate", "TriMul-H100-v0", "--n-cases", "1"])  # default device: no GPU here
    err = capsys.readouterr().err
    assert code == 3 and "GPU" in err


def test_cli_kernel_with_device_cpu_prints_a_labelled_proxy(capsys):
    pytest.importorskip("torch")
    assert main(["evaluate", "TriMul-H100-v0", "--device", "cpu", "--n-cases", "1"]) == 0
    text = " ".join(capsys.readouterr().out.replace("│", " ").split())  # the table wraps long cells
    assert "CPU proxy, not comparable with the GPU record" in text


def test_cli_unavailable_backend_keeps_json_promise(capsys):
    if not _no_gpu():
        pytest.skip("checks the behaviour without a GPU")
    assert main(["evaluate", "TriMul-H100-v0", "--n-cases", "1", "--json"]) == 3
    out = json.loads(capsys.readouterr().out)
    assert out["unavailable"] is True and out["valid"] is None and "GPU" in out["error"]


def test_unknown_task_option_names_the_known_ones():
    with pytest.raises(TypeError, match="takes no option 'colour'.*limit"):
        make_task("Toy-v0", colour="red")


def test_initial_evaluation_is_cached_per_seed():
    # check_env on AHC/denoising used to re-score the baseline on every reset
    task = ToyTask()
    env = ProgramEnv(task)
    _, first = env.reset(seed=0)
    _, again = env.reset(seed=0)
    assert task.calls == 1 and again["state"] == first["state"] and again["state"] is not first["state"]
    env.reset(seed=1)
    assert task.calls == 2
    env.reset(seed=0)
    assert task.calls == 2
    env.reset()  # a new program seed from the env's generator: judged
    assert task.calls == 3
    noisy = ToyTask()
    noisy.nondeterministic = True  # measurements are taken anew
    env = ProgramEnv(noisy)
    env.reset(seed=0)
    env.reset(seed=0)
    assert noisy.calls == 2


def test_cached_initial_states_share_no_data():
    env = ProgramEnv(ToyTask())
    _, first = env.reset(seed=0)
    first["state"].metadata["cases"][0]["score"] = -1  # a caller changing what it was given
    _, again = env.reset(seed=0)
    assert again["state"].metadata["cases"][0]["score"] == 1
