"""Run-directory readers open each file once and check the open descriptor (issue 52, #8).

A FIFO or a device planted where a reader expects a file (after any earlier check) must be refused
or skipped, never read: a FIFO without a writer would block the reader for ever, ``/dev/zero`` would
be read until memory runs out.
"""

from __future__ import annotations

import os

import pytest

from discoverygym.report.collect import _read_json, _read_jsonl
from discoverygym.search.archive import Archive
from discoverygym.search.runlog import LogRejected, RunLog
from discoverygym.tensorboard import read_scalars


@pytest.fixture
def planted(tmp_path):
    """A run directory whose files are a FIFO, and links to /dev/zero."""
    os.mkfifo(tmp_path / "events.out.tfevents.1")
    os.mkfifo(tmp_path / "archive.jsonl")
    (tmp_path / "archive.json").symlink_to("/dev/zero")
    (tmp_path / "best.json").symlink_to("/dev/zero")
    return tmp_path


def test_a_planted_fifo_or_device_is_refused_not_read(planted):
    assert read_scalars(planted) == {}
    assert _read_json(planted / "best.json") is None and _read_jsonl(planted / "archive.jsonl") == []
    with pytest.raises(ValueError, match="a device"):
        Archive.load(planted / "archive.json")
    with pytest.raises(LogRejected, match="a FIFO"):
        RunLog(planted).read_records()
