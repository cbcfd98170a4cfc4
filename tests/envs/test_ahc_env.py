"""AHC039-v0 / AHC058-v0 environments and the CLI: judging C++ programs on a few cases."""

from __future__ import annotations

import json
import math
import shutil

import gymnasium as gym
import numpy as np
import pytest

import discoverygym  # noqa: F401 (registers the envs)
from discoverygym import cli
from discoverygym.envs import ahc as ahc_env
from discoverygym.rewards.ahc import ahc039, ahc058


def _native_confinement() -> bool:
    from discoverygym.sandbox.native import native_bwrap_available, native_landlock_available

    return native_bwrap_available() or native_landlock_available()


pytestmark = [
    pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed"),
    pytest.mark.skipif(not _native_confinement(), reason="neither bubblewrap nor Landlock: native runs refused"),
]

FULL_SQUARE = ('#include <cstdio>\nint main(){ puts("4\\n0 0\\n100000 0\\n100000 100000\\n0 100000"); }')
BOX = ('#include <cstdio>\nint main(){ puts("4\\n30000 30000\\n60000 30000\\n60000 70000\\n30000 70000"); }')
LOOP = "int main(){ volatile long x = 0; for(;;) x++; }"
BUY_ONCE = ('#include <cstdio>\nint main(){ puts("0 0"); for(int t = 1; t < 500; t++) puts("-1"); }')
SHORT = '#include <cstdio>\nint main(){ for(int t = 1; t < 500; t++) puts("-1"); }'


def _box_score(text: str) -> int:
    inp = ahc039.parse_input(text)
    x, y = inp.points[:, 0], inp.points[:, 1]
    inside = (x >= 30000) & (x <= 60000) & (y >= 30000) & (y <= 70000)
    return max(0, int(inside[:inp.n].sum()) - int(inside[inp.n:].sum()) + 1)


def test_factories_are_cheap_and_validate_options(tmp_path):
    before = ahc_env._generated.cache_info().currsize
    task = ahc_env.make_ahc039()
    assert ahc_env._generated.cache_info().currsize == before
    assert task.language == "cpp" and task.sota["total"] == 567_062
    prompt = task.prompt()
    for words in ("Input (stdin)", "Output (stdout)", "max(0, a - b + 1)", "1000", "400000", "2 s"):
        assert words in prompt
    assert "log2" in ahc_env.make_ahc058().prompt()
    with pytest.raises(ValueError):
        ahc_env.make_ahc039(n_cases=0)
    with pytest.raises(ValueError):
        ahc_env.make_ahc039(cases_dir=str(tmp_path))   # no *.txt inside


def test_ahc039_env_reset_step_and_rewards():
    env = gym.make("AHC039-v0", n_cases=3)
    obs, info = env.reset(seed=0)
    assert info["valid"], info["error"]
    scores = info["metrics"]["case_scores"]
    assert len(scores) == 3 and all(s >= 1 for s in scores)
    assert math.isclose(info["score"], np.mean(scores))
    assert "#include" in obs["prompt"]
    _, reward, terminated, _, info = env.step(BOX)
    expected = [_box_score(ahc039.generate(seed)) for seed in range(3)]
    assert info["valid"] and info["metrics"]["case_scores"] == expected
    assert math.isclose(reward, np.mean(expected) / 1500) and terminated
    assert [c["verdict"] for c in info["metrics"]["cases"]] == ["accepted"] * 3
    _, reward, _, _, info = env.step(FULL_SQUARE)   # every fish caught: 5000 - 5000 + 1
    assert info["metrics"]["case_scores"] == [1, 1, 1] and math.isclose(reward, 1 / 1500)
    assert env.unwrapped.render_mode is None


def test_failures_give_zero_with_reason():
    env = gym.make("AHC039-v0", n_cases=2, time_limit_s=0.5, workers=1)
    env.reset(seed=0)
    _, reward, _, _, info = env.step("int main() { return missing; }")
    assert reward == 0.0 and not info["valid"] and info["error"].startswith("compile error")
    assert "missing" in info["metrics"]["compile_error"]
    _, reward, _, _, info = env.step(LOOP)
    assert reward == 0.0 and "time_limit" in info["error"]
    assert info["metrics"]["first_failure"]["case"] == "0000"
    assert [c["verdict"] for c in info["metrics"]["cases"]] == ["time_limit", "skipped"]
    _, reward, _, _, info = env.step('#include <cstdio>\nint main(){ puts("4\\n0 0\\n5 5\\n5 0\\n0 5"); }')
    assert reward == 0.0 and info["metrics"]["first_failure"]["rule"] == "axis"


def test_ahc058_env_scores_and_invalid_line_count():
    env = gym.make("AHC058-v0", n_cases=2)
    env.reset(seed=0)
    _, reward, _, _, info = env.step(BUY_ONCE)
    # buy machine (0, 0) for 1 apple at turn 0, then it adds A_0 = 1 apple per turn for 500 turns
    expected = round(1e5 * math.log2(500))
    assert info["valid"] and info["metrics"]["case_scores"] == [expected, expected]
    assert math.isclose(reward, expected / 3e6)
    _, reward, _, _, info = env.step(SHORT)
    assert reward == 0.0 and info["metrics"]["first_failure"]["rule"] == "not_enough_actions"


def test_cases_dir_and_cli_json(tmp_path, capsys):
    for seed in (7, 8):
        (tmp_path / f"case{seed}.txt").write_text(ahc039.generate(seed))
    program = tmp_path / "box.cpp"
    program.write_text(BOX)
    code = cli.main(["evaluate", "AHC039-v0", str(program), "--cases", str(tmp_path), "--json"])
    assert code == 0
    result = json.loads(capsys.readouterr().out)
    assert result["valid"]
    cases = result["metrics"]["cases"]
    assert [c["case"] for c in cases] == ["case7.txt", "case8.txt"]
    assert [c["score"] for c in cases] == [_box_score(ahc039.generate(s)) for s in (7, 8)]
    assert all(c["verdict"] == "accepted" for c in cases)
    assert "standing" in result["metrics"]


def test_generated_cases_follow_seed_option():
    fixed = ahc_env.make_ahc058(n_cases=2)
    assert [c.text for c in fixed.cases(1)] == [c.text for c in fixed.cases(2)] == [ahc058.generate(0), ahc058.generate(1)]
    vary = ahc_env.make_ahc058(n_cases=2, vary_cases=True)
    assert [c.text for c in vary.cases(1)] == [c.text for c in vary.cases(1)] != [c.text for c in vary.cases(2)]


# --------------------------------------------------------------------------- malformed options and case files
BAD_INPUTS = [("hello", "'hello' is not a non-negative integer"), (b"\xff\xfe", "not UTF-8"),
              ("3", "truncated"), ("", "empty")]


@pytest.mark.parametrize("content, problem", BAD_INPUTS)
def test_bad_case_files_are_refused_before_compiling(tmp_path, monkeypatch, capsys, content, problem):
    path = tmp_path / "a.txt"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    from discoverygym.sandbox import ahc_judge as judge

    def no_compile(*args, **kwargs):
        raise AssertionError("compiled before the cases were checked")

    monkeypatch.setattr(judge, "compile_cpp", no_compile)
    task = ahc_env.make_ahc039(cases_dir=str(tmp_path))
    with pytest.raises(ValueError, match=problem) as err:
        task.evaluate(FULL_SQUARE, seed=0)
    assert "a.txt" in str(err.value) and "\n" not in str(err.value)
    assert cli.main(["evaluate", "AHC039-v0", "--cases", str(tmp_path)]) == 2
    assert "a.txt" in capsys.readouterr().err


@pytest.mark.parametrize("options, error", [
    ({"time_limit_s": float("inf")}, ValueError), ({"time_limit_s": float("nan")}, ValueError),
    ({"time_limit_s": 0}, ValueError), ({"time_limit_s": "2"}, TypeError),
    ({"n_cases": 1.5}, TypeError), ({"n_cases": True}, TypeError), ({"workers": 1.7}, TypeError),
    ({"workers": 0}, ValueError), ({"memory_mb": 2.5}, TypeError), ({"memory_mb": 8}, ValueError),
])
def test_factory_validates_option_types_and_ranges(options, error):
    with pytest.raises(error):
        ahc_env.make_ahc039(**options)
    with pytest.raises(error):
        gym.make("AHC058-v0", **options)


def test_judge_refuses_bad_inputs_and_workers_up_front():
    from discoverygym.rewards.ahc.cases import Case
    from discoverygym.sandbox.ahc_judge import judge_program

    with pytest.raises(ValueError, match="case x: AHC058 input is truncated"):
        judge_program("int main(){}", [Case("x", "10 4 500 1\n1 2 3\n")], ahc058)
    with pytest.raises(TypeError):
        judge_program("int main(){}", [Case("0", ahc058.generate(0))], ahc058, workers=1.5)


@pytest.mark.parametrize("problem", ["AHC039-v0", "AHC058-v0"])
def test_output_over_the_problem_cap_is_output_too_large(problem):
    """Megabytes of valid tiny answers: a verdict, not seconds and gigabytes in the parent."""
    line = "4\\n0 0\\n0 1\\n1 1\\n1 0\\n" if problem == "AHC039-v0" else "-1\\n"
    src = ('#include <cstdio>\n#include <csignal>\nint main(){ signal(SIGXFSZ, SIG_IGN);'
           f' for(int i = 0; i < 400000; i++) fputs("{line}", stdout); }}')
    env = gym.make(problem, n_cases=1)
    state = env.unwrapped.evaluate(src, seed=0)
    assert not state.valid and state.reward == 0.0
    failure = state.metadata["first_failure"]
    assert failure["verdict"] == "output_limit" and failure["rule"] == "output_size"
    assert "too large" in failure["message"]
