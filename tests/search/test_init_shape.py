"""``search --init`` from a construction whose size differs from the env's default start (issue 50).

``search ErdosMinOverlap-v0 --init erdos_together_ai_2026.json`` (600 pieces) failed at its first
child: the default --init policy (gaussian, polish=auto) was shaped like the env's own 178-piece start,
"parent shape (600,) differs from the policy's (178,)". ``train --init`` shapes its policy by the start.
"""

from __future__ import annotations

import json

from discoverygym.cli import main


def test_search_init_of_another_size_runs(tmp_path, capsys):
    init = tmp_path / "init.json"
    init.write_text(json.dumps([0.5] * 40))  # 40 pieces, a valid Erdős step function (C5 = 0.5)
    run_dir = tmp_path / "run"
    argv = ["search", "ErdosMinOverlap-v0", "--init", str(init), "-C", "1", "-L", "1", "-K", "2",
            "--executor", "inline", "--no-tensorboard", "--run-dir", str(run_dir)]
    assert main(argv) == 0, capsys.readouterr()
    best = json.loads((run_dir / "best.json").read_text())
    assert len(best["state"]["solution"]) == 40


def test_search_init_in_code_mode_is_refused_before_any_policy_note(tmp_path, capsys):
    init = tmp_path / "init.json"
    init.write_text(json.dumps([0.5] * 40))
    argv = ["search", "ErdosMinOverlap-v0", "--action-mode", "code", "--init", str(init), "-C", "1", "-L", "1",
            "-K", "1", "--run-dir", str(tmp_path / "run")]
    assert main(argv) == 2
    out = capsys.readouterr()
    assert "needs --action-mode construction" in out.err
    assert "--init: policy" not in out.out  # no note about a policy the run will never use
