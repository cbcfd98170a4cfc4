"""Compile and run untrusted native (C++) programs under limits: the sandbox of the AtCoder envs.

:mod:`discoverygym.sandbox.python` runs Python programs; this module runs executables. Every run
goes through a small C *launcher* (``launcher.c``, package data next to this module, built once per
process with the system compiler into a private directory, its SHA-256 checked before every launch) that forks the program, applies
the limits in the child and reports exactly how it ended:

* ``RLIMIT_AS`` (address space; stricter than AtCoder's resident-memory limit: a program that
  reserves much more virtual memory than it touches fails here), ``RLIMIT_CPU``, ``RLIMIT_FSIZE``
  (caps stdout/stderr, which go to files the parent opened: output past ``output_bytes`` is the
  verdict ``output_limit``, whether the program dies of ``SIGXFSZ`` or ignores it), no core dumps,
  ``PR_SET_PDEATHSIG``;
* **Landlock** (Linux 5.13+): the program may create, change or delete files only in its own
  directory (and write to ``/dev/null``); reading stays allowed. From Landlock ABI 6 it also
  cannot signal, or reach the abstract sockets of, processes outside the sandbox (signals are
  confined by the seccomp filter below in any case; abstract sockets need ``socket``, refused);
* when we are **root** and bubblewrap is not used, the program runs as uid/gid
  :data:`SANDBOX_UID` (``nobody``), in a directory handed to that uid for the run; the executable
  is opened before the switch and run through its descriptor;
* ``no_new_privs`` and a seccomp filter (x86_64 and aarch64): ``fork``/``vfork`` and ``clone``
  without ``CLONE_THREAD`` fail with ``EPERM`` (threads stay allowed), ``clone3`` with ``ENOSYS``
  (glibc then falls back to ``clone``), ``socket``/``ptrace`` with ``EPERM``. For programs (not
  the compiler) the filter also confines signals, on both backends and whatever the kernel's
  Landlock ABI: ``kill``/``rt_sigqueueinfo`` only to the program's own pid, its process group
  (``0``) or ``-pgid`` (the launcher puts the program in a group of its own and writes its pid,
  read with ``getpid()`` in the child just before ``exec``, into the filter as a constant; only
  the low 32 bits of the argument are compared, as the kernel reads a ``pid_t``),
  ``tgkill``/``rt_tgsigqueueinfo``/``tkill`` only with the program's own tgid (so threads signal
  each other, ``raise`` and ``abort`` work; ``tkill`` to another thread's tid is refused), and
  ``pidfd_send_signal``, ``pidfd_getfd``, ``process_vm_readv``/``process_vm_writev`` fail with
  ``EPERM``: a program without Landlock ABI 6 (or without Landlock, ``allow_unconfined``) cannot
  signal, or read and write the memory of, the user's other processes. Compilation uses the
  filter without the fork and signal rules (g++ starts and waits for cc1plus, as and ld). System V
  IPC (``shmget``, ``semget``, ``msgget`` and their calls) and POSIX message queues fail with
  ``EPERM`` for programs and the compiler alike: without bubblewrap's IPC namespace their objects
  outlive the run, and a program kept a shared-memory cache of answers between runs (issue 40:
  a LASSO path replayed 66x faster); under bubblewrap ``--unshare-ipc`` already gives each run
  its own namespace;
* a wall-clock deadline: the launcher kills the child's whole process group at ``wall_limit_s``
  and reports wall time (fork to exit, monotonic clock) and user/system CPU time from ``wait4``.

Outside the launcher, **bubblewrap** (when installed and working) gives a new pid, ipc, uts and
network namespace and a file system holding only ``/usr`` (plus the ``/bin``, ``/lib*`` links),
``/etc/ld.so.cache``, private ``/tmp``, ``/dev`` and ``/proc``, and the one directory or file the
run needs: unlike the Python sandbox the program cannot read the user's files (home, projects,
``/etc``), and compile errors cannot leak them through ``#include "/path"``. Without bubblewrap
(``DISCOVERYGYM_SANDBOX_NO_BWRAP=1`` or ``use_bwrap=False``) the program runs in
``workdir/box`` and can read every file its user can read and shares the host's pid namespace;
writes are confined by Landlock, network is blocked by the filter. Where neither bubblewrap nor
Landlock is available (``DISCOVERYGYM_SANDBOX_NO_LANDLOCK=1`` simulates a kernel without it),
runs are refused with :class:`BackendUnavailable` unless ``allow_unconfined=True``.

The parent never follows a path the program could have changed: stdout and stderr are files it
creates (``O_NOFOLLOW``, outside the program's writable directory) and reads back, at most
``output_bytes``, through its own descriptors (:attr:`NativeResult.stdout`).

What a program may write is bounded as follows (runs, not compilation; :attr:`NativeLimits.max_files`
and :attr:`NativeLimits.scratch_mb`; over a cap the run's verdict is ``output_limit`` with a message
naming the limit, the judge fails that case alone and removes its directory as usual). Each
program holds at most 256 open descriptors (``RLIMIT_NOFILE``), so files it unlinks but keeps
open (invisible to any count, freed when it dies) are bounded by 256 x ``output_bytes``.

* Under bubblewrap its only writable place is the private ``/tmp``, a tmpfs (RAM, not counted by
  ``RLIMIT_AS``) capped at ``scratch_mb`` with ``bwrap --size`` (bubblewrap 0.5+; an older bwrap
  mounts it without a cap): writes past it fail with ``ENOSPC`` while it runs. ``--size`` caps
  bytes only, not inodes (each costs kernel memory outside the size), so the launcher reads the
  tmpfs's used inodes with ``statfs`` before the run, every 10 ms during it and after it, and
  kills the program once it has added more than ``max_files`` (the count can overshoot by what
  the program creates in 10 ms before the kill). The sandbox's root and ``/dev`` tmpfs are
  remounted read-only (they would otherwise be writable where Landlock is missing); everything
  is freed when the sandbox ends.
* Without bubblewrap the program writes to disk below ``workdir/box``: ``RLIMIT_FSIZE`` caps each
  file at ``output_bytes`` while it runs, but there is **no total quota during the run** (no
  per-directory quota or inode limit exists without privileges): within its time limit a
  program can still fill the disk at disk speed (about 0.8 GB in 1.2 s was measured) or create
  files as fast as the file system allows. After the run (the program and its group dead)
  the parent counts what it left with :func:`~discoverygym.sandbox._process.measure_tree`, an
  iterative walk that stops past ``max_files`` entries (so its work is bounded whatever was
  left; unreadable directories are made readable, links are not followed): more than
  ``max_files`` entries or ``scratch_mb`` of allocated bytes fails the run. The caller removes
  the tree right after with :func:`remove_tree` (iterative, so depth cannot crash it, and time
  bounded: 120 s for the walk, then ``rm -rf`` under the same timeout). Where the disk matters
  during the run, use bubblewrap.

Root is not confined by ``RLIMIT_NPROC``, so the fork rule is seccomp's. Where seccomp is not
available (other architectures) forks are still contained by the pid namespace and the
process-group kill, not prevented.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import math
import os
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from discoverygym.errors import BackendUnavailable, SandboxError
from discoverygym.sandbox._process import (
    bwrap_usr_args,
    choose_backend,
    kill_group,
    measure_tree,
    read_available,
    remove_tree,
)
from discoverygym.sandbox.probes import (
    NO_BWRAP_ENV,
    NO_LANDLOCK_ENV,
    bwrap_has_size,
    command_succeeds,
    landlock_available,
    switched_off,
)

__all__ = [
    "CPP_FLAGS",
    "CompileResult",
    "NativeLimits",
    "NativeResult",
    "compile_cpp",
    "native_bwrap_available",
    "native_landlock_available",
    "remove_tree",
    "run_executable",
]

#: AtCoder's C++20 (GCC 12) flags, minus the libraries we do not ship (ac-library, Boost, GMP).
CPP_FLAGS = ("-std=gnu++20", "-O2", "-DONLINE_JUDGE", "-DATCODER", "-mtune=native")
#: uid and gid programs run as when we are root and bubblewrap is not used ("nobody").
SANDBOX_UID = 65534
#: Largest time limit accepted (seconds).
MAX_TIME_LIMIT_S = 3600.0



@dataclass(frozen=True)
class NativeLimits:
    """Limits of one native run (the AtCoder defaults: 2 s, 1 GiB).

    Attributes:
        time_limit_s: the program's time limit in seconds. A run is over the limit when its wall
            time (fork to exit in the launcher, so sandbox start-up is not counted) or its CPU time
            (user + system, all threads) exceeds it; with ``wall_limit_s`` set, only the CPU time.
        kill_after_s: extra wall seconds granted before the launcher kills the process group
            (the verdict is still decided by ``time_limit_s``).
        memory_mb: address-space limit (``RLIMIT_AS``) in MiB.
        output_bytes: largest stdout (and stderr) in bytes: more is the verdict ``output_limit``
            (``RLIMIT_FSIZE`` stops the program one byte past it).
        allow_fork: allow new processes (compilers need them; contest programs do not).
        use_bwrap: ``True`` requires bubblewrap, ``False`` never uses it, ``None`` when it works.
        allow_unconfined: without bubblewrap the program's file-system writes are confined by
            Landlock; where the kernel has no Landlock either, runs are refused
            (:class:`BackendUnavailable`) unless this is ``True`` (the program may then write
            every file its user can: a dedicated unprivileged account is the only protection).
        scratch_mb: size in MiB of the program's private ``/tmp`` under bubblewrap (a tmpfs, so
            held in RAM outside ``memory_mb``): writing more fails with ``ENOSPC``. Without
            bubblewrap files go to disk in the work directory and only ``RLIMIT_FSIZE`` (per
            file) bounds them while it runs; what it leaves there is checked after the run: more
            than ``scratch_mb`` is the verdict ``output_limit`` (see the module notes).
        wall_limit_s: ``None`` (default): ``time_limit_s`` bounds wall and CPU time alike (AtCoder's
            rule). A number (``>= time_limit_s``): ``time_limit_s`` bounds the CPU time only and
            this the wall time, so a verdict does not depend on how loaded the machine is (a
            program that waits instead of computing still ends at this bound).
        max_files: most files, directories and links a program may create in its working
            directory (``output_limit`` past it). Under bubblewrap the launcher watches the private
            ``/tmp``'s inode count while the program runs and kills it past the cap; without
            bubblewrap what it left is counted after the run. Compilation is not capped.

    Raises:
        ValueError: a limit that is not a positive finite number (or out of its range).
        TypeError: a limit of the wrong type.
    """

    time_limit_s: float = 2.0
    kill_after_s: float = 0.5
    memory_mb: int = 1024
    output_bytes: int = 64 << 20
    allow_fork: bool = False
    use_bwrap: bool | None = None
    allow_unconfined: bool = False
    scratch_mb: int = 256
    max_files: int = 10_000
    wall_limit_s: float | None = None

    def __post_init__(self) -> None:
        for name in ("time_limit_s", "kill_after_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"{name} must be a number of seconds, got {value!r}")
        for name in ("memory_mb", "output_bytes", "scratch_mb", "max_files"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{name} must be an int, got {value!r}")
        if not (math.isfinite(self.time_limit_s) and 0 < self.time_limit_s <= MAX_TIME_LIMIT_S):
            raise ValueError(f"time_limit_s must be > 0 and <= {MAX_TIME_LIMIT_S:g} s, got {self.time_limit_s!r}")
        if not (math.isfinite(self.kill_after_s) and 0 <= self.kill_after_s <= MAX_TIME_LIMIT_S):
            raise ValueError(f"kill_after_s must be >= 0 and <= {MAX_TIME_LIMIT_S:g} s, got {self.kill_after_s!r}")
        if not 16 <= self.memory_mb <= 1 << 24 or not 1 <= self.output_bytes <= 1 << 40:
            raise ValueError("memory_mb must be in [16, 2^24] and output_bytes in [1, 2^40]")
        if not 1 <= self.scratch_mb <= 1 << 24:
            raise ValueError(f"scratch_mb must be in [1, 2^24], got {self.scratch_mb}")
        if not 1 <= self.max_files <= 1 << 40:
            raise ValueError(f"max_files must be in [1, 2^40], got {self.max_files}")
        if self.wall_limit_s is not None:
            if isinstance(self.wall_limit_s, bool) or not isinstance(self.wall_limit_s, (int, float)):
                raise TypeError(f"wall_limit_s must be None or a number of seconds, got {self.wall_limit_s!r}")
            if not (math.isfinite(self.wall_limit_s) and self.time_limit_s <= self.wall_limit_s <= MAX_TIME_LIMIT_S):
                raise ValueError(f"wall_limit_s must be in [time_limit_s, {MAX_TIME_LIMIT_S:g}] s, got "
                                 f"{self.wall_limit_s!r}")

    @property
    def wall_s(self) -> float:
        """The wall-clock limit: ``wall_limit_s``, or ``time_limit_s`` when that is None."""
        return self.time_limit_s if self.wall_limit_s is None else float(self.wall_limit_s)


@dataclass
class NativeResult:
    """How one native run ended.

    Attributes:
        status: ``"ok"`` (exit 0 within limits), ``"time_limit"``, ``"runtime_error"`` (non-zero
            exit or a signal), ``"memory_limit"`` (``std::bad_alloc`` / allocation failure seen on
            stderr), ``"output_limit"`` (more than ``output_bytes`` written) or ``"sandbox_error"``.
        message: human-readable reason (``None`` when ok).
        exit_code: exit status, ``None`` when killed by a signal.
        signal: terminating signal number or ``None``.
        wall_s: wall seconds from fork to exit; cpu_s: user + system CPU seconds.
        max_rss_mb: peak resident memory in MiB.
        stdout_path: file holding stdout (the caller deletes it with its directory).
        stderr: the last 2,000 characters of stderr.
        backend: ``"bwrap"`` or ``"fallback"``.
        stdout: the program's stdout (at most ``output_bytes`` bytes), read through the
            descriptor the program wrote to (whatever the program did to the file's path).
    """

    status: str
    message: str | None
    exit_code: int | None
    signal: int | None
    wall_s: float
    cpu_s: float
    max_rss_mb: float
    stdout_path: str
    stderr: str
    backend: str
    stdout: bytes = b""

    @property
    def ok(self) -> bool:
        """Whether the program exited with code 0 within every limit."""
        return self.status == "ok"


@dataclass
class CompileResult:
    """Outcome of :func:`compile_cpp`: ``ok``, the ``binary`` path, the compiler ``log``
    (truncated to 4,000 characters), ``elapsed_s`` and ``backend``."""

    ok: bool
    binary: str | None
    log: str
    elapsed_s: float
    backend: str


def native_bwrap_available() -> bool:
    """Whether bubblewrap can build this module's minimal file system here (cached probe).

    Returns False when ``DISCOVERYGYM_SANDBOX_NO_BWRAP`` is set to anything but ``""``/``"0"``.
    """
    return not switched_off(NO_BWRAP_ENV) and _bwrap_probe()


def native_landlock_available() -> bool:
    """Whether the kernel offers Landlock (ABI >= 1); False when ``DISCOVERYGYM_SANDBOX_NO_LANDLOCK``
    is set to anything but ``""``/``"0"`` (to test the refusal)."""
    return landlock_available()


@lru_cache(maxsize=1)
def _bwrap_probe() -> bool:
    exe = shutil.which("bwrap")
    true = shutil.which("true")
    if exe is None or true is None or not os.path.realpath(true).startswith("/usr/"):
        return False
    return command_succeeds([*_bwrap_args(exe, binds=[]), os.path.realpath(true)], env=_env("/tmp"))


def _bwrap_args(exe: str, binds: list[tuple[str, str, str]], chdir: str = "/tmp",
                tmp_bytes: int = 256 << 20) -> list[str]:
    """bwrap command up to the program: /usr and its links, ld cache, private /tmp, the binds.

    The private ``/tmp`` is a tmpfs of at most ``tmp_bytes`` (where bubblewrap has ``--size``;
    older ones mount it unbounded), and the sandbox's root and ``/dev`` (tmpfs too) are remounted
    read-only, so that writes in RAM are bounded even where Landlock is missing.

    Args:
        binds: ``(option, host path, sandbox path)`` with option ``--bind`` or ``--ro-bind``.
    """
    args = [exe, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc",
            "--unshare-uts", "--unshare-net", "--unshare-cgroup-try"]
    if os.geteuid() == 0:
        args += ["--cap-drop", "ALL"]
    args += bwrap_usr_args()
    args += ["--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache", "--dev", "/dev", "--proc", "/proc"]
    if bwrap_has_size():
        args += ["--size", str(int(tmp_bytes))]
    args += ["--tmpfs", "/tmp"]
    for option, host, inside in binds:
        args += [option, host, inside]
    return args + ["--remount-ro", "/dev", "--remount-ro", "/", "--chdir", chdir, "--"]


def _env(home: str, tmpdir: str = "/tmp") -> dict[str, str]:
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": home, "TMPDIR": tmpdir, "LANG": "C.UTF-8"}


@lru_cache(maxsize=1)
def _launcher() -> tuple[str, str]:
    """Path and SHA-256 of the launcher, built once per process into a private directory.

    The directory (``mkdtemp``: mode 0700, owned by this user) is removed at exit; programs
    cannot write there (Landlock, bubblewrap's read-only view, or another uid), and every launch
    checks the binary's hash first, so a replaced launcher is never run.

    Raises:
        BackendUnavailable: no C compiler, or the launcher does not build.
    """
    cc = shutil.which("gcc") or shutil.which("cc") or shutil.which("g++")
    if cc is None:
        raise BackendUnavailable("no C/C++ compiler (gcc/g++) found: install g++ to judge C++ programs")
    folder = tempfile.mkdtemp(prefix="discoverygym-launcher-")
    owner = os.getpid()
    atexit.register(lambda: os.getpid() == owner and shutil.rmtree(folder, ignore_errors=True))
    src = os.path.join(folder, "launcher.c")
    target = os.path.join(folder, "launcher")
    with open(src, "w") as fh:
        fh.write(_launcher_source())
    done = subprocess.run([cc, "-O2", "-x", "c", "-o", target, src], capture_output=True, text=True,
                          timeout=120, check=False)
    if done.returncode != 0:
        shutil.rmtree(folder, ignore_errors=True)
        raise BackendUnavailable(f"could not build the sandbox launcher: {done.stderr[-2000:]}")
    os.chmod(target, 0o755)
    os.chmod(folder, 0o755)  # others may traverse (bwrap binds it as root); only we may write
    return target, _sha256(target)


def _launcher_source() -> str:
    """The launcher's C source, ``launcher.c`` shipped as package data next to this module."""
    return resources.files("discoverygym.sandbox").joinpath("launcher.c").read_text(encoding="utf-8")


def _sha256(path: str) -> str:
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


def _checked_launcher() -> str:
    """The launcher's path after checking it is still the binary this process built.

    Raises:
        SandboxError: the launcher was replaced or changed.
    """
    path, digest = _launcher()
    try:
        info = os.lstat(path)
        same = (stat.S_ISREG(info.st_mode) and info.st_uid == os.geteuid() and not info.st_mode & 0o022
                and _sha256(path) == digest)
    except OSError:
        same = False
    if not same:
        raise SandboxError(f"the sandbox launcher {path} was changed or removed; refusing to run it")
    return path


def _backend(use_bwrap: bool | None) -> str:
    return choose_backend(use_bwrap, use_bwrap is not False and native_bwrap_available(),
                          "bubblewrap (bwrap) is not installed or cannot create a sandbox here "
                          f"(or {NO_BWRAP_ENV} is set)")


@dataclass(frozen=True)
class _Confinement:
    backend: str
    landlock: int  # launcher flag bits: 4 = when available, 8 = required, 0 = none
    uid: int  # -1: keep ours
    gid: int


def _confinement(limits: NativeLimits) -> _Confinement:
    """How a run is confined: bubblewrap, else Landlock (required), plus another uid as root.

    Raises:
        BackendUnavailable: bubblewrap required and missing, or neither bubblewrap nor Landlock
            without ``allow_unconfined``.
    """
    backend = _backend(limits.use_bwrap)
    landlock = native_landlock_available()
    if backend == "bwrap":
        return _Confinement(backend, 4 if landlock else 0, -1, -1)
    if not landlock and not limits.allow_unconfined:
        raise BackendUnavailable(
            "cannot confine native programs here: bubblewrap (bwrap) is "
            + ("disabled (use_bwrap=False)" if limits.use_bwrap is False else
               f"missing or not working (or {NO_BWRAP_ENV} is set)")
            + " and the kernel offers no Landlock (Linux 5.13+ with the landlock LSM enabled"
            + (f"; {NO_LANDLOCK_ENV} is set" if switched_off(NO_LANDLOCK_ENV) else "")
            + "), so a program could write every file this user can. Install bubblewrap, or pass "
            "allow_unconfined=True to run anyway.")
    uid = SANDBOX_UID if os.geteuid() == 0 and _sandbox_id_mapped() else -1
    return _Confinement(backend, 8 if landlock else 0, uid, uid)


@lru_cache(maxsize=1)
def _sandbox_id_mapped() -> bool:
    """Whether :data:`SANDBOX_UID` exists as a uid and a gid in our user namespace (a rootless
    container may map only uid 0: runs then keep our uid, Landlock still confining writes)."""
    for name in ("uid_map", "gid_map"):
        try:
            with open(f"/proc/self/{name}") as fh:
                ranges = [tuple(int(x) for x in line.split()) for line in fh if line.strip()]
        except (OSError, ValueError):
            return True  # no user namespaces here: every id exists
        if not any(len(r) == 3 and r[0] <= SANDBOX_UID < r[0] + r[2] for r in ranges):
            return False
    return True


def _open_output(path: str) -> int:
    """Create (or truncate) an output file without following links; a read/write descriptor."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise SandboxError(f"{path} is not a regular file")
    return fd


def _pread_all(fd: int, size: int, offset: int = 0) -> bytes:
    """Up to ``size`` bytes at ``offset`` of a regular file (never more, whatever the file is)."""
    chunks, got = [], 0
    while got < size:
        chunk = os.pread(fd, min(size - got, 1 << 20), offset + got)
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _launch(program: list[str], limits: NativeLimits, *, binds: list[tuple[str, str, str]],
            chdir_bwrap: str, cwd_fallback: str, stdin_path: str | None, stdout_path: str,
            stderr_path: str, tmpdir_fallback: str | None = None, tail_bytes: int = 2000,
            count_files: bool = False) -> NativeResult:
    """Run ``program`` (paths as seen inside the sandbox under bwrap) through the launcher.

    Under bwrap the program may change files only below ``chdir_bwrap`` (inside the sandbox);
    otherwise only below ``cwd_fallback`` (Landlock), which becomes the sandbox uid's when we are
    root. stdout and stderr are files opened here; they are read back through these descriptors.
    With ``count_files`` the files the program creates count against ``limits.max_files`` (and,
    without bwrap, the bytes it leaves against ``limits.scratch_mb``).
    """
    conf = _confinement(limits)
    launcher = _checked_launcher()
    wall_ms = round((limits.wall_s + limits.kill_after_s) * 1000)
    flags = 2 | (0 if limits.allow_fork else (1 | 16)) | conf.landlock
    status_r, status_w = os.pipe()
    if conf.backend == "bwrap":
        exe = shutil.which("bwrap") or "bwrap"
        binds = [*binds, ("--ro-bind", launcher, "/.launcher")]
        head = [str(status_w), str(limits.memory_mb << 20), str(int(limits.time_limit_s) + 1),
                str(limits.output_bytes + 1), str(wall_ms), str(flags), chdir_bwrap, "-1", "-1",
                str(limits.max_files if count_files else -1)]
        cmd = [*_bwrap_args(exe, binds, chdir_bwrap, limits.scratch_mb << 20), "/.launcher", *head, *program]
        env = _env(chdir_bwrap, chdir_bwrap)
    else:
        if conf.uid >= 0:
            os.chown(cwd_fallback, conf.uid, conf.gid)
        head = [str(status_w), str(limits.memory_mb << 20), str(int(limits.time_limit_s) + 1),
                str(limits.output_bytes + 1), str(wall_ms), str(flags), cwd_fallback,
                str(conf.uid), str(conf.gid), "-1"]
        cmd = [launcher, *head, *program]
        env = _env(cwd_fallback, tmpdir_fallback or cwd_fallback)
    with contextlib.ExitStack() as stack:
        stack.callback(os.close, status_r)
        if stdin_path:
            stdin = os.open(stdin_path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            stack.callback(os.close, stdin)
        else:
            stdin = subprocess.DEVNULL
        out = _open_output(stdout_path)
        stack.callback(os.close, out)
        err = _open_output(stderr_path)
        stack.callback(os.close, err)
        try:
            proc = subprocess.Popen(cmd, stdin=stdin, stdout=out, stderr=err, cwd=cwd_fallback,
                                    env=env, start_new_session=True, pass_fds=(status_w,))
        except OSError as exc:
            raise SandboxError(f"could not start the native sandbox: {exc}") from exc
        finally:
            os.close(status_w)
        try:
            proc.wait(timeout=limits.wall_s + limits.kill_after_s + 30)
        except subprocess.TimeoutExpired:
            pass
        finally:  # the launcher has ended (or hangs): nothing of the run may survive it
            kill_group(proc)
        status_line = read_available(status_r, 4096).decode("ascii", "replace").split()
        out_size = os.fstat(out).st_size
        stdout = _pread_all(out, min(out_size, limits.output_bytes))
        err_size = os.fstat(err).st_size
        start = max(0, min(err_size, limits.output_bytes + 1) - tail_bytes)
        stderr_tail = _pread_all(err, tail_bytes, start).decode("utf-8", "replace")
    left = None
    if count_files and conf.backend != "bwrap" and len(status_line) == 9:
        _reclaim(cwd_fallback)
        left = measure_tree(cwd_fallback, limits.max_files)
    result = _verdict(status_line, limits, stdout_path, stderr_tail, conf.backend, proc.returncode,
                      out_size > limits.output_bytes or err_size > limits.output_bytes, left)
    result.stdout = stdout
    return result


def _verdict(status: list[str], limits: NativeLimits, stdout_path: str, stderr: str, backend: str,
             returncode: int | None, too_much_output: bool = False,
             left: tuple[int, int] | None = None) -> NativeResult:
    """Turn the launcher's status line into a :class:`NativeResult` verdict.

    ``left``: ``(entries, bytes)`` the program left in its working directory (fallback backend).
    """
    if len(status) != 9:
        why = f"the sandbox ended abnormally (exit {returncode}): {stderr.strip()[-500:]}"
        return NativeResult("sandbox_error", why, None, None, 0.0, 0.0, 0.0, stdout_path, stderr, backend)
    timed_out, code, sig = int(status[0]), int(status[1]), int(status[2])
    wall, cpu = float(status[3]), float(status[4]) + float(status[5])
    rss = int(status[6]) / 1024.0
    files_over = status[7] == "1" or (left is not None and left[0] > limits.max_files)
    bytes_over = left is not None and left[1] > limits.scratch_mb << 20
    exit_code, signum = (code if sig == 0 else None), (sig or None)
    limit = limits.time_limit_s
    if timed_out or wall > limits.wall_s or cpu > limit or signum == signal.SIGXCPU:
        which = f"time limit {limit:g} s" if limits.wall_limit_s is None else (
            f"CPU-time limit {limit:g} s (wall-clock limit {limits.wall_s:g} s)")
        state, msg = "time_limit", (f"{which} exceeded (wall {wall:.2f} s, CPU {cpu:.2f} s"
                                    + (", killed)" if timed_out else ")"))
    elif signum == signal.SIGXFSZ or too_much_output:
        state, msg = "output_limit", (f"output too large: more than {limits.output_bytes} bytes"
                                      + (" (killed by SIGXFSZ)" if signum == signal.SIGXFSZ else ""))
    elif files_over:
        state, msg = "output_limit", (f"the program created more than {limits.max_files} files or directories"
                                      f" in its working directory (limit max_files={limits.max_files})")
    elif bytes_over:
        state, msg = "output_limit", (f"the program left {left[1]} bytes of files in its working directory,"
                                      f" more than {limits.scratch_mb} MiB (limit scratch_mb)")
    elif code in (122, 123, 124) and "launcher:" in stderr:
        state, msg = "sandbox_error", f"the sandbox could not start the program: {stderr.strip()[-300:]}"
    elif exit_code == 0:
        state, msg = "ok", None
    elif "bad_alloc" in stderr or "Cannot allocate memory" in stderr:
        state, msg = "memory_limit", f"memory limit {limits.memory_mb} MiB exceeded (allocation failed)"
    elif signum is not None:
        try:
            name = signal.Signals(signum).name
        except ValueError:
            name = f"signal {signum}"
        state, msg = "runtime_error", f"runtime error: killed by {name}"
    else:
        state, msg = "runtime_error", f"runtime error: exit code {exit_code}"
    return NativeResult(state, msg, exit_code, signum, wall, cpu, rss, stdout_path, stderr, backend)


def compile_cpp(source: str, workdir: str, *, flags: tuple[str, ...] = CPP_FLAGS, timeout_s: float = 60.0,
                memory_mb: int = 4096, use_bwrap: bool | None = None,
                allow_unconfined: bool = False) -> CompileResult:
    """Compile one C++ source with g++ inside the sandbox.

    ``Main.cpp`` is written to ``workdir`` and compiled to ``workdir/a.out`` (AtCoder's names).
    Under bubblewrap the compiler sees only ``/usr``, the loader cache and ``workdir`` (as
    ``/box``), so ``#include`` of the user's files fails; it has no network and runs under the
    wall-clock ``timeout_s``, ``memory_mb`` of address space per process and a 256 MiB file cap.
    Without bubblewrap the compiler may change files only in ``workdir`` (Landlock; run as an
    unprivileged uid when we are root) but can ``#include`` any file it can read, and the
    returned log can show parts of it: keep secrets away from that user.

    Args:
        source: C++ text.
        workdir: an existing private directory (the caller removes it).
        flags: compiler flags (default :data:`CPP_FLAGS`: ``-std=gnu++20 -O2 ...``).
        timeout_s: wall-clock limit of the whole compilation in seconds.
        memory_mb: address-space limit of each compiler process in MiB.
        use_bwrap, allow_unconfined: as in :class:`NativeLimits`.

    Returns:
        :class:`CompileResult` (``ok=False`` with the compiler's messages on any failure).

    Raises:
        BackendUnavailable: no g++, ``use_bwrap=True`` without bubblewrap, or neither bubblewrap
            nor Landlock (without ``allow_unconfined``).
    """
    gpp = shutil.which("g++")
    if gpp is None:
        raise BackendUnavailable("g++ is not installed: install it to judge C++ programs")
    gpp = os.path.realpath(gpp)
    limits = NativeLimits(time_limit_s=timeout_s, kill_after_s=0.0, memory_mb=memory_mb,
                          output_bytes=256 << 20, allow_fork=True, use_bwrap=use_bwrap,
                          allow_unconfined=allow_unconfined)
    backend = _confinement(limits).backend  # refuses before anything is written
    workdir = os.path.abspath(workdir)
    with open(os.path.join(workdir, "Main.cpp"), "w", encoding="utf-8", errors="surrogatepass") as fh:
        fh.write(source)
    # Relative paths: the compiler may run as another uid that cannot walk down to workdir.
    program = ([gpp, *flags, "-o", "/box/a.out", "/box/Main.cpp"] if backend == "bwrap"
               else [gpp, *flags, "-o", "a.out", "Main.cpp"])
    log_path = os.path.join(workdir, "compile.log")
    start = time.monotonic()
    try:
        result = _launch(program, limits, binds=[("--bind", workdir, "/box")], chdir_bwrap="/box",
                         cwd_fallback=workdir, stdin_path=None, stdout_path=os.path.join(workdir, "compile.out"),
                         stderr_path=log_path, tmpdir_fallback=".", tail_bytes=4000)
    finally:
        _reclaim(workdir)
    elapsed = time.monotonic() - start
    log = result.stderr
    log = log.replace("/box/Main.cpp", "Main.cpp").replace(f"{workdir}/Main.cpp", "Main.cpp")
    binary = os.path.join(workdir, "a.out")
    if result.ok and os.path.isfile(binary) and not os.path.islink(binary):
        return CompileResult(True, binary, log, elapsed, result.backend)
    if result.status == "time_limit":
        log = f"compilation exceeded {timeout_s:g} s\n" + log
    elif result.status != "runtime_error" or not log:
        log = f"compilation failed: {result.message}\n" + log
    return CompileResult(False, None, log, elapsed, result.backend)


def _reclaim(folder: str) -> None:
    """Give a folder the sandbox uid wrote in back to us (root), with what it holds directly."""
    if os.geteuid() != 0:
        return
    with contextlib.suppress(OSError):
        if os.lstat(folder).st_uid != 0:
            os.chown(folder, 0, 0, follow_symlinks=False)
            os.chmod(folder, 0o700)
        for name in os.listdir(folder):
            path = os.path.join(folder, name)
            info = os.lstat(path)
            if info.st_uid != 0:
                os.chown(path, 0, 0, follow_symlinks=False)
                if stat.S_ISREG(info.st_mode):
                    os.chmod(path, info.st_mode & 0o755)


def run_executable(binary: str, *, stdin_path: str, workdir: str,
                   limits: NativeLimits | None = None) -> NativeResult:
    """Run a compiled program on one input file under :class:`NativeLimits`.

    Under bubblewrap the binary is mounted read-only, the working directory is a private empty
    ``/tmp``, and the program sees only ``/usr`` besides. Without it the working directory is
    ``workdir/box``, the only place the program may change files (Landlock), owned by the
    sandbox uid when we are root. stdout goes to ``workdir/stdout.txt`` and stderr to
    ``workdir/stderr.txt`` (outside the program's reach; both capped by ``limits.output_bytes``);
    :attr:`NativeResult.stdout` holds stdout as read back through the descriptor.

    Args:
        binary: path of the executable (e.g. :attr:`CompileResult.binary`).
        stdin_path: file fed to standard input.
        workdir: an existing private directory for the output files (the caller removes it).
        limits: :class:`NativeLimits` (default: 2 s, 1 GiB, 64 MiB output, no fork).

    Returns:
        :class:`NativeResult`; never raises for anything the program does.

    Raises:
        BackendUnavailable: ``use_bwrap=True`` without bubblewrap, neither bubblewrap nor
            Landlock (without ``allow_unconfined``), or no compiler for the launcher.
        SandboxError: the sandbox process could not be started.
    """
    limits = limits or NativeLimits()
    backend = _confinement(limits).backend
    workdir = os.path.abspath(workdir)
    box = os.path.join(workdir, "box")
    if backend != "bwrap":
        os.makedirs(box, mode=0o700, exist_ok=True)
    inside = "/.prog" if backend == "bwrap" else os.path.abspath(binary)
    try:
        return _launch([inside], limits, binds=[("--ro-bind", os.path.abspath(binary), "/.prog")],
                       chdir_bwrap="/tmp", cwd_fallback=box if backend != "bwrap" else workdir,
                       stdin_path=stdin_path, stdout_path=os.path.join(workdir, "stdout.txt"),
                       stderr_path=os.path.join(workdir, "stderr.txt"), count_files=True)
    finally:
        if backend != "bwrap":
            _reclaim(box)
