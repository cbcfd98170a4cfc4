"""Issue 41 (4): ``--plugin FILE`` brings a registered algorithm into ``compare``; verl-style estimators."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="the agents need torch")
pytest.importorskip("scipy", reason="the rank test needs scipy")

from discoverygym.agents import config as config_mod
from discoverygym.agents import objectives as objectives_mod
from discoverygym.cli import main

PLUGIN = Path(__file__).resolve().parents[2] / "examples" / "algorithms" / "grpo_objective.py"


@pytest.fixture
def registries(monkeypatch):
    """The registries as they are; what a plugin registers is dropped after the test."""
    monkeypatch.setattr(config_mod, "ABLATIONS", dict(config_mod.ABLATIONS))
    monkeypatch.setattr(config_mod, "ABLATION_DOCS", dict(config_mod.ABLATION_DOCS))
    monkeypatch.setattr(objectives_mod, "OBJECTIVES", dict(objectives_mod.OBJECTIVES))
    yield
    sys.modules.pop("discoverygym_plugin_grpo_objective", None)


def test_plugin_config_enters_the_study(tmp_path, capsys, registries):
    argv = ["compare", "CirclePacking-26-v0", "--configs", "full,grpo", "--seeds", "1", "--steps", "1", "--groups", "2",
            "--group-size", "4", "--policy", "gaussian", "--run-dir", str(tmp_path / "s"), "--json"]
    assert main(argv) == 2  # without the plugin, grpo is unknown
    assert "unknown config 'grpo'" in capsys.readouterr().err
    assert main([*argv, "--plugin", str(PLUGIN)]) == 0
    got = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert [r["config"] for r in got["rows"]] == ["full", "grpo"] and got["rows"][1]["changes"] == "objective"
    stored = json.loads((tmp_path / "s" / "grpo-seed0" / "config.json").read_text())
    assert stored["objective"] == "grpo" and stored["reuse"] == "puct"  # full but for the objective


def test_a_broken_plugin_is_a_one_line_usage_error(tmp_path, capsys, registries):
    bad = tmp_path / "bad.py"
    bad.write_text("raise RuntimeError('no such estimator')\n")
    assert main(["compare", "CirclePacking-26-v0", "--plugin", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "failed to import: RuntimeError: no such estimator" in err
    assert main(["compare", "CirclePacking-26-v0", "--plugin", str(tmp_path / "missing.py")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_a_plugin_path_that_is_no_file_or_exits_is_a_one_line_usage_error(tmp_path, capsys, registries):
    """Tester report (fix, item 7): a directory or a device said "no such file"; sys.exit(0) ended compare silently."""
    exits = tmp_path / "exits.py"
    exits.write_text("import sys\nsys.exit(0)\n")
    for path, said in ((tmp_path, "is a directory"), ("/dev/zero", "is a device"),
                       (exits, "called sys.exit(0) at import")):
        assert main(["compare", "CirclePacking-26-v0", "--plugin", str(path)]) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and said in err, err


def test_a_plugin_objective_that_raises_in_a_study_is_one_line_with_the_resume_command(tmp_path, capsys, registries):
    """Tester report (fix, item 3): the plugin's run-time error was a raw traceback with exit 1."""
    boom = tmp_path / "boom_obj.py"
    boom.write_text("from discoverygym.agents.config import register_config\n"
                    "from discoverygym.agents.objectives import register_objective\n"
                    "def factory(**kw):\n"
                    "    def obj(rewards, *a, **k):\n"
                    "        raise RuntimeError('BOOM objective was called')\n"
                    "    return obj\n"
                    "register_objective('boom', factory)\n"
                    "register_config('boom', {'objective': 'boom'}, 'objective that raises')\n")
    study = tmp_path / "s"
    argv = ["compare", "CirclePacking-26-v0", "--configs", "boom", "--seeds", "1", "--steps", "1", "--groups", "1",
            "--group-size", "2", "--policy", "gaussian", "--plugin", str(boom), "--run-dir", str(study)]
    try:
        assert main(argv) == 2
    finally:
        sys.modules.pop("discoverygym_plugin_boom_obj", None)
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0, err
    assert "in config 'boom' seed 0" in err and f"{boom}, line 5, in obj: RuntimeError: BOOM" in err
    assert err.endswith(f"--plugin {boom} --run-dir {study} --resume`")


def test_verl_style_estimator_gives_the_grpo_advantages(registries):
    import runpy

    ns = runpy.run_path(str(PLUGIN), run_name="plugin")
    r = torch.tensor([[1.0, 2.0, 3.0], [2.0, 2.0, 2.0], [0.0, 5.0, 1.0]], dtype=torch.float64)
    verl = objectives_mod.make_objective("grpo-verl")(r)
    assert torch.allclose(verl.adv, ns["grpo"](r).adv)  # the same normalisation through the verl adapter
    assert verl.keep.tolist() == [True, False, True] and torch.all(verl.adv[1] == 0)
    third = (r[2] - r[2].mean()) / (r[2].std() + 1e-6)  # DeepSeekMath §4.1: (r - mean) / std within the group
    assert torch.allclose(verl.adv[2], third)
