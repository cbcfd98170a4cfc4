"""Process helpers for the tests that kill or interrupt pools."""

from __future__ import annotations

import os
import time


def alive(pid: int) -> bool:
    """Whether ``pid`` runs, read from ``/proc`` (Linux): a zombie, dead but not reaped, counts as dead."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def group_gone(pgid: int, timeout_s: float, poll_s: float = 0.1) -> bool:
    """Wait up to ``timeout_s`` seconds for process group ``pgid`` to be empty; ``True`` once it is."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(poll_s)
