"""Bad train/compare arguments are usage errors (exit 2) before anything runs ."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch", reason="the agents need torch (pip install 'discoverygym[rl]')")

from discoverygym.cli import main


@pytest.mark.parametrize(
    "args, message",
    [
        (["--groups", "0"], "groups must be an integer >= 1"),
        (["--group-size", "1"], "group_size must be an integer >= 2"),
        (["--steps", "0"], "steps must be an integer >= 1"),
        (["--budget-s", "0"], "budget_s must be positive"),
        (["--polish", "foo"], "unknown polish 'foo'"),
    ],
)
def test_train_refuses_settings_that_cannot_train(tmp_path, capsys, args, message):
    run_dir = tmp_path / "run"
    assert main(["train", "ErdosMinOverlap-v0", *args, "--run-dir", str(run_dir)]) == 2
    assert message in capsys.readouterr().err
    assert not (run_dir / "checkpoints").exists()


def test_gaussian_policy_refuses_integer_constructions(tmp_path, capsys):
    assert main(["train", "Hadamard-29-v0", "--steps", "1", "--run-dir", str(tmp_path / "h")]) == 2
    assert "integer constructions" in capsys.readouterr().err


def test_compare_needs_a_seed(tmp_path, capsys):
    assert main(["compare", "ErdosMinOverlap-v0", "--seeds", "0", "--run-dir", str(tmp_path / "c")]) == 2
    assert "--seeds must be >= 1" in capsys.readouterr().err


def test_resume_refuses_changed_hyperparameters(tmp_path, capsys):
    run_dir = str(tmp_path / "r")
    assert main(["train", "ErdosMinOverlap-v0", "--steps", "1", "--groups", "2", "--group-size", "4",
                 "--run-dir", run_dir, "--json"]) == 0
    capsys.readouterr()
    assert main(["train", "ErdosMinOverlap-v0", "--steps", "2", "--groups", "3", "--run-dir", run_dir,
                 "--resume"]) == 2
    assert "differ from it: groups" in capsys.readouterr().err
    assert main(["train", "ErdosMinOverlap-v0", "--steps", "2", "--run-dir", run_dir, "--resume", "--json"]) == 0


# ---------------------------------------------------------------- non-finite numbers, run-directory misuse
def _one_line(err: str) -> bool:
    return "Traceback" not in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("lr", ["inf", "-inf", "nan", "0", "-1"])
@pytest.mark.parametrize("policy", [[], ["--policy", "hf:/nonexistent/model"]])
def test_non_finite_or_non_positive_lr_is_refused(tmp_path, capsys, lr, policy):
    run_dir = tmp_path / "run"
    assert main(["train", "ErdosMinOverlap-v0", *policy, f"--lr={lr}", "--steps", "1", "--run-dir", str(run_dir)]) == 2
    err = capsys.readouterr().err
    assert "--lr must be a finite number > 0" in err and _one_line(err)
    assert not run_dir.exists()


def test_llm_config_refuses_bad_numbers():
    from discoverygym.agents.trainer import TrainConfig

    for bad in ({"lr": float("inf")}, {"lr": 0.0}, {"kl_coef": float("nan")}, {"temperature": 0.0},
                {"adam_beta1": 1.0}, {"env_kwargs": [1]}):
        with pytest.raises(ValueError):
            TrainConfig(policy="hf:x", **bad)


@pytest.mark.parametrize("policy", [[], ["--policy", "hf:/nonexistent/model"]])
def test_run_dir_that_is_a_file_or_under_one(tmp_path, capsys, policy):
    afile = tmp_path / "afile"
    afile.write_text("x")
    for run_dir, message in ((afile, f"{afile} exists and is not a directory"),
                             (afile / "sub", f"{afile} exists and is not a directory")):
        assert main(["train", "ErdosMinOverlap-v0", *policy, "--steps", "1", "--run-dir", str(run_dir)]) == 2
        err = capsys.readouterr().err
        assert message in err and "Errno" not in err and _one_line(err)


def _train_run(tmp_path, capsys, env="CirclePacking-26-v0"):
    run_dir = tmp_path / "train"
    assert main(["train", env, "--steps", "1", "--groups", "1", "--group-size", "2", "--run-dir", str(run_dir),
                 "--json"]) == 0
    capsys.readouterr()
    return run_dir


def test_resume_of_another_env_is_refused(tmp_path, capsys):
    run_dir = _train_run(tmp_path, capsys)
    before = (run_dir / "metrics.jsonl").read_text()
    for policy in ([], ["--policy", "gaussian"]):
        assert main(["train", "ErdosMinOverlap-v0", *policy, "--steps", "2", "--run-dir", str(run_dir),
                     "--resume"]) == 2
        err = capsys.readouterr().err
        assert "holds a train run of CirclePacking-26-v0, not ErdosMinOverlap-v0" in err and _one_line(err)
    assert (run_dir / "metrics.jsonl").read_text() == before


def test_llm_resume_of_another_env_is_refused_before_loading_the_model(tmp_path, capsys):
    run_dir = tmp_path / "llm"
    run_dir.mkdir()
    (run_dir / "config.json").write_text(json.dumps({"env_id": "CirclePacking-26-v0", "policy": "hf:/no/model",
                                                     "steps": 2, "groups": 1, "group_size": 2}))
    assert main(["train", "ErdosMinOverlap-v0", "--policy", "hf:/no/model", "--run-dir", str(run_dir),
                 "--resume"]) == 2
    assert "holds a train run of CirclePacking-26-v0, not ErdosMinOverlap-v0" in capsys.readouterr().err


def test_train_refuses_to_resume_a_search_run(tmp_path, capsys):
    from discoverygym.cli.search import main as search_main

    run_dir = tmp_path / "search"
    assert search_main(["CirclePacking-26-v0", "-C", "1", "-L", "1", "-K", "1", "--executor", "inline",
                        "--no-tensorboard", "--run-dir", str(run_dir)]) == 0
    capsys.readouterr()
    for policy in ([], ["--policy", "hf:/no/model"]):
        assert main(["train", "CirclePacking-26-v0", *policy, "--run-dir", str(run_dir), "--resume"]) == 2
        err = capsys.readouterr().err
        assert f"{run_dir} holds a search run, not a train run" in err and _one_line(err)
    # and a new train run is not written into it
    assert main(["train", "CirclePacking-26-v0", "--steps", "1", "--run-dir", str(run_dir)]) == 2
    assert "holds a search run" in capsys.readouterr().err


@pytest.mark.parametrize("spec, code, message", [
    ("hf:/nonexistent/model", 2, "no such directory: /nonexistent/model"),
    ("foo:bar", 2, "hf:PATH_OR_ID, openai:URL, vllm:MODEL, tinker:MODEL"),
    ("openai:notaurl", 2, "openai:URL needs the base URL"),
])
def test_llm_spec_errors_are_one_line(tmp_path, capsys, spec, code, message):
    rc = main(["train", "CirclePacking-26-v0", "--policy", spec, "--steps", "1", "--train-model", "/no/model",
               "--run-dir", str(tmp_path / "r")] if spec.startswith("openai") else
              ["train", "CirclePacking-26-v0", "--policy", spec, "--steps", "1", "--run-dir", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert rc == code and message in err and _one_line(err)


def test_model_directory_without_model_files(tmp_path, capsys):
    pytest.importorskip("transformers")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["train", "CirclePacking-26-v0", "--policy", f"hf:{empty}", "--run-dir", str(tmp_path / "r")]) == 2
    assert f"no model files (config.json) in {empty}" in capsys.readouterr().err
    (empty / "config.json").write_text('{"env_id": "CirclePacking-26-v0"}')  # a run's config, not a model's
    assert main(["train", "CirclePacking-26-v0", "--policy", f"hf:{empty}", "--run-dir", str(tmp_path / "r")]) == 2
    assert "no model files in" in capsys.readouterr().err


def test_missing_backends_exit_3(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("TINKER_API_KEY", raising=False)
    try:
        import vllm  # noqa: F401
    except ImportError:
        assert main(["train", "CirclePacking-26-v0", "--policy", "vllm:x", "--run-dir", str(tmp_path / "v")]) == 3
        err = capsys.readouterr().err
        assert "unavailable here" in err and "vllm" in err and _one_line(err)
    assert main(["train", "CirclePacking-26-v0", "--policy", "tinker:x", "--run-dir", str(tmp_path / "t")]) == 3
    err = capsys.readouterr().err
    assert ("TINKER_API_KEY" in err or "tinker" in err) and _one_line(err)


def test_gaussian_policy_on_a_program_env_is_refused_in_one_line(tmp_path, capsys):
    # the Gaussian policy proposes constructions, TriMul takes programs: refused before anything runs
    run_dir = tmp_path / "k"
    assert main(["train", "TriMul-H100-v0", "--steps", "1", "--run-dir", str(run_dir)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "TriMul-H100-v0 takes programs" in err and "policy 'gaussian' cannot write" in err
    assert "unknown env" not in err and not run_dir.exists()
