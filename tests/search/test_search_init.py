"""``discoverygym search --init FILE``: a search starts from a given construction, and keeps it on resume.

Ground truth: the classic MSTD set {0, 2, 3, 4, 7, 11, 12, 14} has |A+A| = 26 and |A−A| = 25
(Nathanson, "Sets with more sums than differences", 2007), so C(A) = log(26/8) / log(25/8).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex

import pytest

from discoverygym.cli import main
from discoverygym.cli.search import _resume_hint

MSTD = [0, 2, 3, 4, 7, 11, 12, 14]
SMALL = ["-C", "1", "-L", "2", "-K", "2", "--executor", "inline", "--no-tensorboard"]


def records(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_search_starts_from_the_file_and_resumes_from_it(tmp_path):
    init = tmp_path / "start.json"
    init.write_text(json.dumps({"construction": MSTD}))
    run = tmp_path / "run"
    assert main(["search", "SumDifference-v0", "--init", str(init), *SMALL, "--run-dir", str(run)]) == 0
    first = records(run / "archive.jsonl")[0]
    assert first["kind"] == "init" and first["state"]["solution"] == MSTD
    assert first["state"]["score"] == pytest.approx(math.log(26 / 8) / math.log(25 / 8), rel=1e-15)
    batch = next(r for r in records(run / "archive.jsonl") if r["kind"] == "batch")
    assert batch["parents"] == ["init"]
    assert json.loads((run / "config.json").read_text())["initial"] == MSTD
    best = json.loads((run / "best.json").read_text())
    assert best["score"] >= first["state"]["score"]
    # the stored start is re-verified on resume, without --init
    assert main(["search", "SumDifference-v0", *SMALL, "--run-dir", str(run), "--resume"]) == 0
    assert records(run / "archive.jsonl")[0] == first


def test_bad_init_is_refused_before_anything_runs(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([0.5, 2, 3]))
    code = main(["search", "SumDifference-v0", "--init", str(bad), *SMALL, "--run-dir", str(tmp_path / "r1")])
    assert code == 2 and "not a valid construction" in capsys.readouterr().err
    assert not (tmp_path / "r1" / "archive.jsonl").exists()
    code = main(["search", "SumDifference-v0", "--init", str(tmp_path / "missing.json"), *SMALL,
                 "--run-dir", str(tmp_path / "r2")])
    assert code == 2 and "cannot read" in capsys.readouterr().err


def test_init_needs_construction_mode_and_a_new_run(tmp_path, capsys):
    init = tmp_path / "start.json"
    init.write_text(json.dumps(MSTD))
    code = main(["search", "SumDifference-v0", "--init", str(init), "--action-mode", "code", *SMALL,
                 "--run-dir", str(tmp_path / "r1")])
    assert code == 2 and "construction" in capsys.readouterr().err
    run = tmp_path / "r2"
    assert main(["search", "SumDifference-v0", *SMALL, "--run-dir", str(run)]) == 0
    code = main(["search", "SumDifference-v0", "--init", str(init), *SMALL, "--run-dir", str(run), "--resume"])
    assert code == 2 and "leave out --init" in capsys.readouterr().err


def test_init_refuses_a_fifo_and_a_program_env(tmp_path, capsys):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    code = main(["search", "SumDifference-v0", "--init", str(fifo), *SMALL, "--run-dir", str(tmp_path / "r1")])
    assert code == 2 and "FIFO" in capsys.readouterr().err
    init = tmp_path / "start.json"
    init.write_text(json.dumps(MSTD))
    code = main(["search", "AHC039-v0", "--init", str(init), *SMALL, "--run-dir", str(tmp_path / "r2")])
    assert code == 2 and "takes programs only" in capsys.readouterr().err


def test_the_printed_resume_command_leaves_out_init():
    args = argparse.Namespace(argv=["search", "SumDifference-v0", "--init", "a b.json", "-C", "2",
                                    "--init=x.json", "--run-dir", "runs/r"], env_id="SumDifference-v0",
                              run_dir="runs/r")
    hint = shlex.split(_resume_hint(args))
    assert hint == ["discoverygym", "search", "SumDifference-v0", "-C", "2", "--run-dir", "runs/r", "--resume"]
