"""Bad train/compare arguments are usage errors (exit 2) before anything runs (QA findings)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch", reason="the agents need torch (pip install 'discoverygym[rl]')")

from discoverygym.cli import main  # noqa: E402


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
