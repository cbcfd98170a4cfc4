"""Issue 40 #7: `discoverygym evaluate` checks its input file before reading it (regular files only,
a size cap, a one-line error and exit 2), and SIGTERM ends it with one line, not a traceback.

On main, ``/dev/zero`` was read without bound (a ``MemoryError`` traceback or the OOM killer) and a
FIFO blocked forever; both run in a subprocess here so that a regression fails by its timeout
instead of hanging the suite.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from discoverygym.cli import main
from discoverygym.io import MAX_INPUT_BYTES, check_input_file

CLI = [sys.executable, "-m", "discoverygym.cli", "evaluate", "ErdosMinOverlap-v0"]


def _one_line_usage_error(proc: subprocess.CompletedProcess, what: str) -> None:
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and what in lines[0] and "Traceback" not in proc.stderr, proc.stderr[-2000:]


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
def test_a_device_is_refused_without_being_read():
    proc = subprocess.run([*CLI, "/dev/zero"], capture_output=True, text=True, timeout=120, check=False)
    _one_line_usage_error(proc, "/dev/zero is a device")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "candidate.json"
    os.mkfifo(fifo)
    proc = subprocess.run([*CLI, str(fifo)], capture_output=True, text=True, timeout=120, check=False)
    _one_line_usage_error(proc, "is a FIFO")


def test_a_file_over_the_size_cap_is_refused(tmp_path, capsys):
    big = tmp_path / "big.json"
    with open(big, "wb") as fh:
        fh.truncate(MAX_INPUT_BYTES + 1)  # sparse: no disk used
    assert main(["evaluate", "ErdosMinOverlap-v0", str(big)]) == 2
    err = capsys.readouterr().err
    assert f"more than the {MAX_INPUT_BYTES}-byte limit" in err and len(err.strip().splitlines()) == 1
    assert main(["evaluate", "ErdosMinOverlap-v0", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err
    small = tmp_path / "ok.json"
    small.write_text("[1]")
    assert check_input_file(small) == 3


@pytest.mark.skipif(sys.platform != "linux", reason="/proc children and SIGTERM as on Linux")
def test_sigterm_during_an_evaluation_is_one_line_and_exit_130(tmp_path):
    program = tmp_path / "slow.py"
    program.write_text("import time\ntime.sleep(120)\n")
    proc = subprocess.Popen([*CLI, str(program)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
        deadline = time.monotonic() + 120  # a bound on start-up only; the verdict does not depend on it
        while proc.poll() is None and time.monotonic() < deadline and not children.read_text().split():
            time.sleep(0.1)
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGTERM)  # the sandbox child runs: the command is inside its evaluation
        _, err = proc.communicate(timeout=60)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert proc.returncode == 130, err[-2000:]
    assert "Traceback" not in err and err.strip().splitlines() == ["discoverygym: evaluate interrupted"], err[-2000:]
