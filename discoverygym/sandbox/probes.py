"""What this machine offers the sandboxes: the switches that turn layers off, and the probes.

Shared by the Python sandbox (:mod:`.python` and its child :mod:`._runner`), the native launcher
(:mod:`.native`) and the kernel stages (:mod:`.kernels`):

* :data:`NO_BWRAP_ENV`, :data:`NO_LANDLOCK_ENV` and :func:`switched_off`: environment switches
  that simulate a machine without bubblewrap or without Landlock (to test weaker configurations);
* :func:`libc` and :func:`prctl`: the C library through ctypes;
* :func:`landlock_abi`, :func:`kernel_landlock_abi`, :func:`landlock_available`: the kernel's
  Landlock ABI version (``landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)``);
* :func:`command_succeeds` and :func:`bwrap_has_size`: bubblewrap probes (each sandbox builds its
  own bubblewrap command line and probes that).

Standard library only and no discoverygym import, and nothing imported at module level beyond
``os`` and ``functools``: the Python sandbox's child process (started as a script, before any
package is imported) loads this file from its own directory, and a module such as ``subprocess``
loaded there before the audit hook would hand the program ``_posixsubprocess`` without an import
event.
"""

from __future__ import annotations

import os
from functools import lru_cache

__all__ = [
    "NO_BWRAP_ENV",
    "NO_LANDLOCK_ENV",
    "bwrap_has_size",
    "command_succeeds",
    "kernel_landlock_abi",
    "landlock_abi",
    "landlock_available",
    "libc",
    "prctl",
    "switched_off",
]

#: Set to 1 to never use bubblewrap (forces the fallback backend, e.g. to test it).
NO_BWRAP_ENV = "DISCOVERYGYM_SANDBOX_NO_BWRAP"
#: Set to 1 to leave Landlock off (simulates an older kernel, e.g. to test the weakest
#: configuration together with ``NO_BWRAP_ENV``). Read at each run.
NO_LANDLOCK_ENV = "DISCOVERYGYM_SANDBOX_NO_LANDLOCK"

#: ``landlock_create_ruleset`` syscall number (the same on x86_64 and aarch64).
LANDLOCK_CREATE_RULESET = 444


def switched_off(name: str) -> bool:
    """Whether the environment variable ``name`` is set to anything but ``""`` or ``"0"``."""
    return os.environ.get(name, "") not in ("", "0")


def libc():
    """The C library through ctypes (``CDLL(None, use_errno=True)``), or None when unavailable."""
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True)
    except (ImportError, OSError):
        return None


def prctl(lib, option: int, arg2: int = 0) -> bool:
    """Call ``prctl(option, arg2, 0, 0, 0)`` through ``lib`` (from :func:`libc`).

    Returns:
        True when it succeeded; False when it failed or ``lib`` is None.
    """
    if lib is None:
        return False
    import ctypes

    c_ulong = ctypes.c_ulong
    return lib.prctl(option, c_ulong(arg2), c_ulong(0), c_ulong(0), c_ulong(0)) == 0


def landlock_abi(lib=None) -> int:
    """The kernel's Landlock ABI version (Linux 5.13+: 1 and up), asked afresh.

    Args:
        lib: the C library from :func:`libc` (loaded here when None).

    Returns:
        the version, or 0 when Landlock is unavailable (old kernel, LSM disabled, no ctypes).
    """
    lib = libc() if lib is None else lib
    if lib is None:
        return 0
    import ctypes

    try:
        syscall = lib.syscall
        syscall.restype = ctypes.c_long
        abi = syscall(ctypes.c_long(LANDLOCK_CREATE_RULESET), None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    except (OSError, AttributeError):
        return 0
    return max(int(abi), 0)


@lru_cache(maxsize=1)
def kernel_landlock_abi() -> int:
    """:func:`landlock_abi` asked once per process (the kernel does not change under us)."""
    return landlock_abi()


def landlock_available() -> bool:
    """Whether the kernel offers Landlock (ABI >= 1) and :data:`NO_LANDLOCK_ENV` does not switch it off."""
    return not switched_off(NO_LANDLOCK_ENV) and kernel_landlock_abi() >= 1


def command_succeeds(cmd: list[str], env: dict[str, str] | None = None, timeout_s: float = 20.0) -> bool:
    """Run a probe command (no input, output discarded) and say whether it exited with status 0.

    Args:
        cmd: the command line, e.g. a bubblewrap prefix followed by a trivial program.
        env: its whole environment (None: ours).
        timeout_s: seconds before the probe counts as failed.

    Returns:
        True on exit status 0; False on any other status, a timeout or a failure to start.
    """
    import subprocess

    try:
        done = subprocess.run(cmd, check=False, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=timeout_s, env=env)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


@lru_cache(maxsize=1)
def bwrap_has_size() -> bool:
    """Whether the installed bubblewrap accepts ``--size BYTES`` before ``--tmpfs`` (bubblewrap 0.5+).

    Asked once per process from ``bwrap --help``; False when bubblewrap is missing.
    """
    import shutil
    import subprocess

    exe = shutil.which("bwrap")
    if exe is None:
        return False
    try:
        done = subprocess.run([exe, "--help"], check=False, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return False
    return "--size" in done.stdout + done.stderr
