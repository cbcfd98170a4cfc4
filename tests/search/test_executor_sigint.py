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

from tests.processes import alive

SCRIPT = textwrap.dedent("""
    from discoverygym.search.executors import EvaluatorSpec, LocalEvaluator

    if __name__ == "__main__":
        ev = LocalEvaluator(EvaluatorSpec("CirclePacking-26-v0"), workers=4)
        print("ready", flush=True)
        try:
            ev.warm_up()
            print("warm", flush=True)
            ev.close(cancel=True)  # a fast machine may be here already when the Ctrl-C comes
        except KeyboardInterrupt:
            print("parent interrupted", flush=True)
            ev.close(cancel=True)
""")

CLOSE_SCRIPT = textwrap.dedent("""
    import time

    from discoverygym.search.executors import EvaluatorSpec, LocalEvaluator

    if __name__ == "__main__":
        ev = LocalEvaluator(EvaluatorSpec("CirclePacking-26-v0"), workers=2)
        ev.warm_up()
        print(" ".join(map(str, ev._pool._processes)), flush=True)  # the worker pids
        ev._pool.submit(time.sleep, 60)  # a task that outlasts the test's patience
        print("closing", flush=True)
        try:
            ev.close()
        except KeyboardInterrupt:
            print("parent interrupted", flush=True)
""")


def _start(tmp_path: Path, text: str) -> subprocess.Popen:
    """Run ``text`` as a script in its own process group (a terminal's Ctrl-C reaches the whole group)."""
    script = tmp_path / "script.py"
    script.write_text(text)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    return subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True, env=env)


@pytest.mark.skipif(not hasattr(signal, "pthread_sigmask"), reason="POSIX signal masks")
@pytest.mark.parametrize("delay_s", [0.2, 0.6])
def test_ctrl_c_during_worker_start_up_prints_no_worker_traceback(tmp_path, delay_s):
    proc = _start(tmp_path, SCRIPT)
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
    # the parent alone handles it, once, wherever the Ctrl-C found it
    assert out.strip().splitlines() in (["parent interrupted"], ["warm"], ["warm", "parent interrupted"]), out


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and POSIX signal masks")
def test_ctrl_c_while_close_waits_kills_the_workers_at_once(tmp_path):
    """close() waiting on a 60 s task: a Ctrl-C stops it now, with no worker left and no traceback."""
    proc = _start(tmp_path, CLOSE_SCRIPT)
    try:
        pids = [int(p) for p in proc.stdout.readline().split()]
        assert len(pids) == 2
        assert proc.stdout.readline().strip() == "closing"
        time.sleep(1.0)  # close() is now waiting on the sleeping task
        start = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        waited = time.monotonic() - start
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert out.strip() == "parent interrupted", (out, err[-3000:])
    assert "Traceback" not in err, err[-3000:]
    assert proc.returncode == 0
    assert waited < 30
    assert not [pid for pid in pids if alive(pid)]
