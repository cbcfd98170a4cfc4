"""``discoverygym search`` on program envs (AHC039-v0 is a known env), task options, and clear
messages for the run-directory mix-ups between ``search`` and ``train``."""

from __future__ import annotations

import json
import re

import gymnasium as gym
import pytest

from discoverygym.agents.policies import POLICIES, register_policy
from discoverygym.cli.search import main as search_main
from discoverygym.envs.program import ProgramTask
from discoverygym.envs.registry import PROGRAM_TASKS, TaskSpec, register_task
from discoverygym.errors import InvalidSolution
from discoverygym.policy import Sample
from discoverygym.rewards.common import Score
from discoverygym.search.evolution import SearchConfig


class CountTask(ProgramTask):
    """Score = the integer after ``return`` in the program; must lie in [0, limit] (no sandbox)."""

    name = "count"
    title = "Count"
    quantity = "answer"
    direction = "max"
    entry = "answer"
    description = "Return a big integer."
    contract = "Define answer() -> int."

    def __init__(self, limit: int = 100) -> None:
        self.limit = limit

    @property
    def sota(self) -> dict:
        return {"value": self.limit, "source": "definition"}

    def initial_program(self) -> str:
        return "def answer():\n    return 1\n"

    def evaluate(self, source: str, *, seed: int) -> Score:
        m = re.search(r"return (\d+)", source)
        if not m:
            raise InvalidSolution("no return")
        value = int(m.group(1))
        if value > self.limit:
            raise InvalidSolution(f"answer {value} is above the limit {self.limit}")
        return Score(float(value), {"limit": self.limit})


class CountPolicy:
    """A code policy proposing ``return 3 + 2 k`` programs (k = candidate index)."""

    name = "count-code"
    action_modes = ("code",)

    def sample(self, contexts, n, rng):
        return [[Sample(action=f"def answer():\n    return {3 + 2 * k}\n") for k in range(n)] for _ in contexts]


@pytest.fixture(autouse=True)
def count_registered():
    register_task("Count-v0", TaskSpec(CountTask, "count"))
    register_policy("count-code", f"{__name__}:CountPolicy")
    yield
    PROGRAM_TASKS.pop("Count-v0", None)
    gym.registry.pop("Count-v0", None)
    POLICIES.pop("count-code", None)


def _search(run_dir, *flags):
    return search_main(["Count-v0", "--policy", "count-code", "-C", "1", "-L", "2", "-K", "3", "--executor",
                        "inline", "--no-tensorboard", "--run-dir", str(run_dir), *flags])


def test_search_runs_a_program_env_with_task_options(tmp_path, capsys):
    run = tmp_path / "run"
    assert _search(run, "--action-mode", "code", "--task-options", '{"limit": 6}') == 0
    config = json.loads((run / "config.json").read_text())
    assert config["env_kwargs"] == {"limit": 6} and config["action_mode"] == "code"
    best = json.loads((run / "best.json").read_text())
    assert best["score"] == 5.0  # 3 and 5 are valid under limit 6, 7 is not
    records = [json.loads(line) for line in (run / "archive.jsonl").read_text().splitlines()]
    judged = [r["state"] for r in records if r.get("kind") == "eval"]
    assert judged and all(s["metadata"].get("limit") == 6 for s in judged if s["valid"])
    # resume keeps the stored options; other options are refused
    assert _search(run, "--action-mode", "code", "--resume") == 0
    assert _search(run, "--action-mode", "code", "--task-options", '{"limit": 9}', "--resume") == 2
    assert "env_kwargs: stored {'limit': 6}" in capsys.readouterr().err


@pytest.mark.parametrize("flags, message", [
    (["--action-mode", "construction"], "candidates are programs: it needs action_mode 'code' (--action-mode code)"),
    (["--action-mode", "code", "--task-options", '{"bogus": 1}'], "bogus"),
    (["--action-mode", "code", "--task-options", "[1]"], "must be a JSON object"),
])
def test_program_env_usage_errors(tmp_path, capsys, flags, message):
    assert _search(tmp_path / "run", *flags) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "run").exists()


def test_a_program_env_searches_programs_without_the_flag(tmp_path):
    run = tmp_path / "run"
    assert _search(run) == 0
    assert json.loads((run / "config.json").read_text())["action_mode"] == "code"
    assert _search(run, "--resume") == 0 and _search(run, "--action-mode", "code", "--resume") == 0


def test_task_options_of_a_construction_env_are_refused(tmp_path, capsys):
    assert search_main(["CirclePacking-26-v0", "--task-options", '{"n_cases": 2}', "-C", "1", "-L", "1", "-K", "1",
                        "--run-dir", str(tmp_path / "r")]) == 2
    assert "takes no option 'n_cases'" in capsys.readouterr().err


def test_config_builds_the_task_with_its_options():
    cfg = SearchConfig(env_id="Count-v0", policy="count-code", action_mode="code", env_kwargs={"limit": 4})
    assert cfg.problem().limit == 4
    cfg.validate()


def test_search_refuses_to_resume_a_train_run(tmp_path, capsys):
    run = tmp_path / "train"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"env_id": "CirclePacking-26-v0", "policy": "hf:x", "steps": 2,
                                                 "groups": 2, "group_size": 4}))
    assert search_main(["CirclePacking-26-v0", "-C", "1", "--run-dir", str(run), "--resume"]) == 2
    err = capsys.readouterr().err
    assert f"{run} holds a train run, not a search run" in err and "conflicting" not in err


def test_search_run_dir_that_is_a_file(tmp_path, capsys):
    afile = tmp_path / "afile"
    afile.write_text("x")
    assert search_main(["CirclePacking-26-v0", "--run-dir", str(afile), "--resume"]) == 2
    assert "exists and is not a directory" in capsys.readouterr().err


@pytest.mark.parametrize("spec, code, message", [
    ("openai:http://127.0.0.1:9", 3, "cannot reach the OpenAI-compatible server at http://127.0.0.1:9"),
    ("openai:notaurl", 2, "openai:URL needs the base URL"),
    ("hf:/nonexistent/model/dir", 2, "no such directory: /nonexistent/model/dir"),
    ("foo:bar", 2, "hf:PATH_OR_ID, openai:URL, vllm:MODEL, tinker:MODEL"),
])
def test_llm_policy_errors_are_one_line(tmp_path, capsys, spec, code, message):
    pytest.importorskip("httpx")
    pytest.importorskip("transformers")
    rc = search_main(["CirclePacking-26-v0", "--action-mode", "code", "--policy", spec, "-C", "1", "-L", "1",
                      "-K", "1", "--run-dir", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert rc == code and message in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_llm_policy_in_a_directory_without_model(tmp_path, capsys):
    pytest.importorskip("transformers")
    empty = tmp_path / "empty"
    empty.mkdir()
    rc = search_main(["CirclePacking-26-v0", "--action-mode", "code", "--policy", f"hf:{empty}", "-C", "1",
                      "-L", "1", "-K", "1", "--run-dir", str(tmp_path / "r")])
    assert rc == 2 and f"no model files (config.json) in {empty}" in capsys.readouterr().err


def test_missing_backends_exit_3(tmp_path, capsys, monkeypatch):
    pytest.importorskip("tinker")
    monkeypatch.delenv("TINKER_API_KEY", raising=False)
    flags = ["--action-mode", "code", "-C", "1", "-L", "1", "-K", "1", "--run-dir", str(tmp_path / "r")]
    assert search_main(["CirclePacking-26-v0", "--policy", "tinker:m", *flags]) == 3
    assert "set TINKER_API_KEY" in capsys.readouterr().err
    monkeypatch.setenv("TINKER_API_KEY", "not-a-key")
    assert search_main(["CirclePacking-26-v0", "--policy", "tinker:m", *flags]) == 3
    err = capsys.readouterr().err
    assert "Tinker service is not available" in err and "Traceback" not in err


def test_search_run_dir_under_a_file(tmp_path, capsys):
    afile = tmp_path / "afile"
    afile.write_text("x")
    assert search_main(["CirclePacking-26-v0", "--run-dir", str(afile / "sub")]) == 2
    err = capsys.readouterr().err
    assert f"{afile} exists and is not a directory" in err and len(err.strip().splitlines()) == 1
    assert err.startswith("discoverygym search: error: cannot create the run directory")
