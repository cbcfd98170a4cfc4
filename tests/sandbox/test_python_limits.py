"""The Python sandbox's limits: wall clock, CPU time, memory, processes, daemons, output size.

Each behaviour test runs on both backends (see ``support.py``).
"""

from __future__ import annotations

import os
import subprocess
import time
import uuid

import pytest

from discoverygym.sandbox import python as sandbox
from tests.sandbox.support import (
    assert_failed,
)


def test_infinite_loop_times_out(run):
    result = run("def construct():\n    while True:\n        pass\n", timeout_s=1.5)
    assert_failed(result, "timed out after 1.5 s (wall clock)")
    assert result.timed_out and result.elapsed_s >= 1.5  # killed at the limit (an upper bound is the load's)


def test_cpu_time_limit(run):
    # a wall limit far above the CPU limit: on a loaded machine 1 s of CPU can take several seconds of wall
    result = run("def construct():\n    while True:\n        pass\n", timeout_s=60.0, cpu_s=1)
    assert_failed(result, "CPU time limit 1 s exceeded")
    assert not result.timed_out


@pytest.mark.parametrize("bomb", [
    "x = []\n    while True:\n        x.append(bytearray(10**7))",
    "import numpy as np\n    return np.ones(10**9)",
])
def test_memory_bomb(run, bomb):
    result = run(f"def construct():\n    {bomb}\n", memory_mb=256)
    assert_failed(result, "memory limit 256 MB exceeded (MemoryError)")


@pytest.mark.parametrize("code, event", [
    ("import os\n    while True:\n        os.fork()", "os.fork"),
    ("import os\n    os.system('echo {marker}')", "os.system"),
    ("import subprocess\n    subprocess.run(['sh', '-c', ':(){{ :|:& }};: {marker}'])", "subprocess.Popen"),
    ("import os\n    os.posix_spawn('/bin/sh', ['sh', '-c', 'sleep 9 # {marker}'], {{}})", "os.posix_spawn"),
    ("import os\n    os.execv('/bin/sh', ['sh', '-c', 'sleep 9 # {marker}'])", "os.exec"),
    ("import multiprocessing as mp\n    mp.get_context('fork').Process(target=print).start()", "os.fork"),
])
def test_fork_bomb_and_process_creation_are_blocked(run, marker, code, event):
    result = run(f"def construct():\n    {code.format(marker=marker)}\n")
    assert_failed(result, "PermissionError: sandbox: process creation is disabled", event)


DAEMON = """
    import os, time
    def construct():
        r, w = os.pipe()
        if os.fork() == 0:                      # child
            os.setsid()
            if os.fork() == 0:                  # grandchild: the daemon
                os.write(w, b"up")
                {daemon}
            os._exit(0)
        os.waitpid(-1, 0)
        started = os.read(r, 2).decode()
        {after}
        return [started]
"""
DAEMON_KINDS = {
    "python": "time.sleep(60)",
    "exec_clean_env": "os.execve('/bin/sh', ['sh', '-c', 'sleep 60; : {marker}'], {{}})",
}


def test_daemon_is_blocked_by_default(run):
    source = DAEMON.format(daemon="time.sleep(60)", after="")
    assert_failed(run(source), "PermissionError: sandbox: process creation is disabled (os.fork)")


@pytest.mark.parametrize("kind", sorted(DAEMON_KINDS))
def test_double_forked_daemon_is_killed_by_the_supervisor(run, marker, monkeypatch, kind):
    monkeypatch.setattr(sandbox, "_sweep", lambda token: None)  # only the subreaper may clean up
    source = DAEMON.format(daemon=DAEMON_KINDS[kind].format(marker=marker), after="")
    result = run(source, allow_subprocess=True)
    assert result.ok and result.value == ["up"], result.error


def test_daemon_is_killed_after_timeout(run, marker):
    source = DAEMON.format(daemon=DAEMON_KINDS["exec_clean_env"].format(marker=marker),
                           after="while True: pass")
    result = run(source, allow_subprocess=True, timeout_s=1.5)
    assert_failed(result, "timed out after 1.5 s")


def test_printing_100_mb(run):
    source = """
        import sys
        def construct():
            for _ in range(100):
                sys.stdout.write("x" * 10**6)
            return [1]
    """
    result = run(source, output_bytes=1000)
    assert result.ok and result.value == [1]
    assert result.stdout == "x" * 1000 + "\n[output truncated after 1000 bytes]"


def test_raw_writes_to_stdout_are_stopped_by_file_size_limit(run):
    source = "import os\ndef construct():\n    for _ in range(100):\n        os.write(1, b'y' * 10**6)\n"
    result = run(source, output_bytes=1000, result_bytes=1000)
    assert_failed(result, "program raised OSError", "File too large")
    assert result.stdout == "y" * 1000 + "\n[output truncated after 1000 bytes]"


def test_too_little_memory_for_python_is_reported_as_a_sandbox_failure(run):
    result = run("def construct():\n    return [1]\n", memory_mb=16)
    assert_failed(result, "the sandbox ")
    assert "failed before the program started" in result.error or "ended abnormally" in result.error


def test_host_side_sweep_kills_processes_carrying_the_token():
    token = uuid.uuid4().hex
    env = dict(os.environ, **{sandbox.TOKEN_ENV: token})
    procs = [subprocess.Popen(["sleep", "30"], env=env, start_new_session=True) for _ in range(3)]
    try:
        deadline = time.monotonic() + 5
        while len(sandbox._pids_with_env(f"{sandbox.TOKEN_ENV}={token}".encode())) < 3:
            assert time.monotonic() < deadline, "the test processes never showed the token"
            time.sleep(0.01)
        sandbox._sweep(token)
        assert [p.wait(timeout=5) for p in procs] == [-9, -9, -9]
    finally:
        for p in procs:
            p.kill()
            p.wait()
