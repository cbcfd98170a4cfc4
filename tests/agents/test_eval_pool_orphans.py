"""The trainer's rollout pool dies with the trainer even when it is killed outright (SIGKILL, or a
SIGTERM a script does not handle): no worker and no forkserver is left running."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.processes import alive, group_gone

SCRIPT = textwrap.dedent("""
    import os, signal
    import gymnasium as gym
    import discoverygym  # noqa: F401 - registers the envs
    from discoverygym.agents.trainer import rollout_pool

    if __name__ == "__main__":
        pool = rollout_pool(gym.make("CirclePacking-26-v0").unwrapped, 2)
        pids = {f.result() for f in [pool._pool.submit(os.getpid) for _ in range(8)]}
        print(" ".join(map(str, sorted(pids))), flush=True)
        os.kill(os.getpid(), signal.SIGKILL)  # no finally block, no atexit: the pool is not closed
""")




@pytest.mark.skipif(sys.platform != "linux", reason="/proc and process groups as on Linux")
def test_a_killed_trainer_leaves_no_pool_worker(tmp_path):
    script = tmp_path / "pool.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, start_new_session=True, env=env)
    try:
        pids = [int(p) for p in proc.stdout.readline().split()]
        proc.wait(timeout=60)
        assert proc.returncode == -signal.SIGKILL
        assert pids, "the pool ran no task"
        deadline = time.monotonic() + 10  # the watchdog looks every 0.2 s
        while time.monotonic() < deadline and any(alive(p) for p in pids):
            time.sleep(0.1)
        assert not [p for p in pids if alive(p)], "pool workers outlived the trainer"
        # then the forkserver, left without clients, exits too
        assert group_gone(proc.pid, 10), "a process of the trainer's group (the forkserver?) outlived it"
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
