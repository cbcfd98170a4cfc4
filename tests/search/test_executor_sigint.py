"""Ctrl-C while the local pool starts its workers: one orderly stop in the parent, no worker traceback."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

SCRIPT = textwrap.dedent("""
    from discoverygym.search.executors import EvaluatorSpec, LocalEvaluator

    if __name__ == "__main__":
        ev = LocalEvaluator(EvaluatorSpec("CirclePacking-26-v0"), workers=4)
        print("ready", flush=True)
        try:
            ev.warm_up()
            print("warm", flush=True)
        except KeyboardInterrupt:
            print("parent interrupted", flush=True)
        ev.close(cancel=True)
""")


@pytest.mark.skipif(not hasattr(signal, "pthread_sigmask"), reason="POSIX signal masks")
@pytest.mark.parametrize("delay_s", [0.2, 0.6])
def test_ctrl_c_during_worker_start_up_prints_no_worker_traceback(tmp_path, delay_s):
    script = tmp_path / "pool.py"
    script.write_text(SCRIPT)
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=str(root))
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True, env=env)
    try:
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(delay_s)  # the workers are importing (spawn): a terminal's Ctrl-C reaches the whole group
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert "Traceback" not in err, err[-3000:]
    assert "KeyboardInterrupt" not in err
    assert out.strip() in ("parent interrupted", "warm")  # the parent alone handles it
