"""Helpers shared by the Python-sandbox tests: the backends, stray-process checks, snapshots.

Every behaviour test runs on both backends: ``bwrap`` (skipped where bubblewrap is missing or
unusable) and ``fallback`` (always). Each run gets a unique token (in the child's environment)
and afterwards no process may carry it; programs that start processes also put a marker in the
command line, checked the same way.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from discoverygym.sandbox import probes
from discoverygym.sandbox.python import SandboxResult, bwrap_available

REPO = Path(__file__).resolve().parents[2]
PACKAGE_DIR = REPO / "discoverygym" / "sandbox"

#: Landlock confines the fallback backend's writes here (the kernel offers it and it is not
#: switched off, as DISCOVERYGYM_SANDBOX_NO_LANDLOCK=1 does to simulate a machine without it).
LANDLOCK = probes.landlock_available()

BACKENDS = [
    pytest.param(True, id="bwrap",
                 marks=pytest.mark.skipif(not bwrap_available(), reason="bubblewrap unavailable")),
    pytest.param(False, id="fallback"),
]


def processes_containing(marker: str, settle_s: float = 5.0) -> list[int]:
    """Pids (not ours) whose command line or environment contains ``marker``, still there after
    ``settle_s`` seconds: a killed sandbox's processes leave ``/proc`` asynchronously (a PID
    namespace is torn down after its init dies; on a loaded machine that took a moment and a check
    made at once saw a process on its way out), so only one that stays counts as a survivor."""
    deadline = time.monotonic() + settle_s
    while True:
        found = _processes_containing(marker)
        if not found or time.monotonic() >= deadline:
            return found
        time.sleep(0.05)


def _processes_containing(marker: str) -> list[int]:
    """Pids (not ours) whose command line or environment contains ``marker``, now."""
    needle, found = marker.encode(), []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        for part in ("cmdline", "environ"):
            try:
                with open(f"/proc/{name}/{part}", "rb") as fh:
                    if needle in fh.read():
                        found.append(int(name))
                        break
            except OSError:
                continue
    return found


def snapshot(path: Path) -> dict:
    """Names, sizes, modes and contents of everything below ``path``."""
    state = {}
    for item in sorted(path.rglob("*")):
        info = item.lstat()
        state[str(item)] = (info.st_mode, info.st_size,
                            item.read_bytes() if item.is_file() and not item.is_symlink() else None)
    return state


def assert_failed(result: SandboxResult, *fragments: str) -> None:
    assert result.ok is False, result
    assert result.value is None
    for fragment in fragments:
        assert fragment in (result.error or ""), result.error

