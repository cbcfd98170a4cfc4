"""SIGTERM (kill, SLURM, a CI timeout) stops `discoverygym train` like Ctrl-C: exit 130, a resumable
checkpoint, and none of its worker processes left running."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.processes import group_gone


@pytest.mark.skipif(sys.platform != "linux", reason="process groups and SIGTERM as on Linux")
def test_sigterm_closes_the_worker_pool_and_leaves_a_resumable_run(tmp_path):
    run_dir = tmp_path / "run"
    cmd = [sys.executable, "-m", "discoverygym.cli", "train", "CirclePacking-26-v0", "--budget-s", "120",
           "--eval-workers", "2", "--run-dir", str(run_dir)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)  # its own process group: the workers are in it
    try:
        _stop_and_check(proc, run_dir)
    finally:  # never leave processes behind, whatever failed
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _stop_and_check(proc: subprocess.Popen, run_dir) -> None:
    metrics = run_dir / "metrics.jsonl"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and not (metrics.exists() and metrics.read_text().count("\n") >= 2):
        time.sleep(0.2)
    assert proc.poll() is None, proc.communicate()[0]
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130, out
    assert "--resume" in out
    # the forkserver exits once its parent is gone; a worker that outlived the trainer is still in the group
    assert group_gone(proc.pid, 15, poll_s=0.2), "worker processes outlived the trainer"
    latest = json.loads((run_dir / "checkpoints" / "latest.json").read_text())
    assert latest
