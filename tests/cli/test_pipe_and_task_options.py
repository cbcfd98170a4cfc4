"""Issue 41 follow-ups in the CLI: a reader that closes the pipe early (``list --json | head -1``)
ends the command quietly, and an unknown ``--task-options`` key is a one-line usage error in
``train`` and ``compare`` (it was a ``TypeError`` traceback from ``gym.make``), as in ``search``."""

from __future__ import annotations

import subprocess
import sys

import pytest

from discoverygym.cli import main


def test_list_json_into_a_closed_pipe_exits_quietly():
    proc = subprocess.Popen([sys.executable, "-m", "discoverygym.cli", "list", "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader is gone before the command writes (as `| head -1` once it has its line)
    _, err = proc.communicate(timeout=120)
    assert b"Traceback" not in err and b"BrokenPipeError" not in err, err.decode()[-600:]
    assert err.strip() == b""
    assert proc.returncode == 141  # 128 + SIGPIPE (before: 1, with a BrokenPipeError traceback)


@pytest.mark.parametrize("command", ["train", "compare", "search"])
def test_an_unknown_task_option_is_a_one_line_usage_error(command, tmp_path, capsys):
    run_dir = tmp_path / "run"
    argv = [command, "ErdosMinOverlap-v0", "--task-options", '{"a": 1}']
    argv += ["--run-dir", str(run_dir)] + (["--steps", "1"] if command == "compare" else [])
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "'a'" in err and "Traceback" not in err, err
    assert not run_dir.exists()  # refused before anything was written


def test_task_options_must_be_an_object(tmp_path, capsys):
    assert main(["train", "ErdosMinOverlap-v0", "--task-options", "[1]", "--run-dir", str(tmp_path / "r")]) == 2
    assert "must be a JSON object" in capsys.readouterr().err
