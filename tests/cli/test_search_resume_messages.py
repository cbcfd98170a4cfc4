"""Issue 40 follow-up (40c), item 4: what ``discoverygym search`` says when a run stops with an error.

On main the CLI printed "the run directory ... is resumable" after resume had refused a forged log,
and after any error. A refused log now says it failed verification, names ``file:line`` and does
not offer ``--resume``; another error says where it was raised and that ``--resume`` continues
once its cause is fixed.
"""

from __future__ import annotations

import json

from discoverygym.cli.search import main as search_main
from discoverygym.search import evolution

ARGS = ["CirclePacking-26-v0", "-C", "1", "-K", "2", "--executor", "inline", "--no-tensorboard"]


def _search(run, L, *flags):
    return search_main([*ARGS, "-L", str(L), "--run-dir", str(run), *flags])


def test_a_forged_log_is_reported_as_failed_verification_not_resumable(tmp_path, capsys):
    run = tmp_path / "run"
    assert _search(run, 2) == 0
    config = json.loads((run / "config.json").read_text())
    (run / "config.json").write_text(json.dumps({**config, "L": 3}))  # as if killed after two steps
    path = run / "archive.jsonl"
    lines = path.read_text().splitlines()
    i = max(n for n, line in enumerate(lines) if json.loads(line)["kind"] == "eval")
    record = json.loads(lines[i])
    record["state"].update(solution=[[0.5, 0.5, 0.5]] * 26, score=2.9, reward=2.9)
    lines[i] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n")
    capsys.readouterr()
    assert _search(run, 3, "--resume") == 1
    err = capsys.readouterr().err
    assert f"the log failed verification: {path}:{i + 1}: logged state" in err
    assert "cannot be resumed" in err and "resumable" not in err and "--resume" not in err
    assert "Traceback" not in err


def test_an_error_mid_run_says_where_it_was_raised_and_how_to_continue(tmp_path, capsys, monkeypatch):
    def broken(self, batch, k):  # a programming error in the runner
        raise KeyError("oops")

    monkeypatch.setattr(evolution.EvolutionarySearch, "_task", broken)
    assert _search(tmp_path / "run", 1) == 1
    err = capsys.readouterr().err
    assert "failed: KeyError: 'oops' (raised at" in err and "in broken)" in err
    assert "is resumable" not in err and "once the cause is fixed, continue with:" in err and "--resume" in err
