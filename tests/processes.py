"""Process helpers for the tests that kill or interrupt pools."""

from __future__ import annotations


def alive(pid: int) -> bool:
    """Whether ``pid`` runs, read from ``/proc`` (Linux): a zombie, dead but not reaped, counts as dead."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
