"""Issue 40 #7, follow-up (40c): every CLI command that reads a user's file checks it first.

``evaluate`` and ``export --initial`` did (``discoverygym.io.check_input_file``); ``train --init``,
``compare --init``, ``certify`` and ``report`` (the files of its run directory) read a device
without bound or blocked on a FIFO. Each now exits 2 with one line. The device and FIFO cases run
in a subprocess so that a regression fails by its timeout instead of hanging the suite.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from discoverygym.cli import main
from discoverygym.io import MAX_INPUT_BYTES, check_run_files

CLI = [sys.executable, "-m", "discoverygym.cli"]
needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo") or not os.path.exists("/dev/zero"),
                                reason="no FIFOs or /dev/zero here")


def _one_line_usage_error(argv: list[str], what: str) -> None:
    proc = subprocess.run([*CLI, *argv], capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and what in lines[0] and "Traceback" not in proc.stderr, proc.stderr[-2000:]


@needs_fifo
@pytest.mark.parametrize("argv", [
    ["train", "ErdosMinOverlap-v0", "--steps", "1", "--init", "{file}", "--run-dir", "{tmp}/run"],
    ["compare", "ErdosMinOverlap-v0", "--steps", "1", "--init", "{file}", "--run-dir", "{tmp}/run"],
    ["certify", "ErdosMinOverlap-v0", "{file}"],
], ids=["train", "compare", "certify"])
def test_init_and_certify_files_refuse_a_fifo_and_a_device(tmp_path, argv):
    fifo = tmp_path / "init.json"
    os.mkfifo(fifo)
    cases = [(fifo, "is a FIFO")] + ([("/dev/zero", "/dev/zero is a device")] if argv[0] == "certify" else [])
    for file, what in cases:  # train and compare share the --init reader: one subprocess each (torch import)
        _one_line_usage_error([a.format(file=file, tmp=tmp_path) for a in argv], what)
    assert not (tmp_path / "run").exists()


def test_an_init_file_over_the_cap_is_refused(tmp_path, capsys):
    big = tmp_path / "big.json"
    with open(big, "wb") as fh:
        fh.truncate(MAX_INPUT_BYTES + 1)  # sparse: no disk used
    assert main(["certify", "ErdosMinOverlap-v0", str(big)]) == 2
    assert f"more than the {MAX_INPUT_BYTES}-byte limit" in capsys.readouterr().err


@needs_fifo
def test_report_refuses_a_fifo_or_device_among_the_run_files(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"kind": "search", "env_id": "CirclePacking-26-v0"}))
    os.mkfifo(run / "archive.jsonl")
    _one_line_usage_error(["report", str(run)], "archive.jsonl is a FIFO")
    os.unlink(run / "archive.jsonl")
    os.symlink("/dev/zero", run / "best.json")
    _one_line_usage_error(["report", str(run)], "best.json is a device")


def test_check_run_files_passes_a_plain_run_directory(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "archive.jsonl").write_text("")
    check_run_files(tmp_path)  # nothing raised
    check_run_files(tmp_path / "missing")  # not a directory: left to the reader
