"""Compile and run untrusted native (C++) programs under limits: the sandbox of the AtCoder envs.

:mod:`discoverygym.rewards.sandbox` runs Python programs; this module runs executables. Every run
goes through a small C *launcher* (source below, built once per machine with the system compiler
and cached under the temp directory) that forks the program, applies the limits in the child and
reports exactly how it ended:

* ``RLIMIT_AS`` (address space; stricter than AtCoder's resident-memory limit: a program that
  reserves much more virtual memory than it touches fails here), ``RLIMIT_CPU``, ``RLIMIT_FSIZE``
  (caps stdout/stderr, which go to files: a program printing past the cap is killed by
  ``SIGXFSZ``), no core dumps, ``PR_SET_PDEATHSIG``;
* ``no_new_privs`` and a seccomp filter (x86_64 and aarch64): ``fork``/``vfork`` and ``clone``
  without ``CLONE_THREAD`` fail with ``EPERM`` (threads stay allowed), ``clone3`` with ``ENOSYS``
  (glibc then falls back to ``clone``), ``socket``/``ptrace`` with ``EPERM``. Compilation uses the
  same filter without the fork rule (g++ starts cc1plus, as and ld);
* a wall-clock deadline: the launcher kills the child's whole process group at ``wall_limit_s``
  and reports wall time (fork to exit, monotonic clock) and user/system CPU time from ``wait4``.

Outside the launcher, **bubblewrap** (when installed and working) gives a new pid, ipc, uts and
network namespace and a file system holding only ``/usr`` (plus the ``/bin``, ``/lib*`` links),
``/etc/ld.so.cache``, private ``/tmp``, ``/dev`` and ``/proc``, and the one directory or file the
run needs: unlike the Python sandbox the program cannot read the user's files (home, projects,
``/etc``), and compile errors cannot leak them through ``#include "/path"``. Without bubblewrap
(``DISCOVERYGYM_SANDBOX_NO_BWRAP=1`` or ``use_bwrap=False``) the launcher's limits and seccomp
filter still apply but the program can read every file the user can read and shares the host's
pid namespace; network stays blocked by the filter.

Root is not confined by ``RLIMIT_NPROC``, so the fork rule is seccomp's. Where seccomp is not
available (other architectures) forks are still contained by the pid namespace and the
process-group kill, not prevented.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from functools import lru_cache

from discoverygym.errors import BackendUnavailable, SandboxError
from discoverygym.rewards.sandbox import NO_BWRAP_ENV

__all__ = [
    "CPP_FLAGS",
    "CompileResult",
    "NativeLimits",
    "NativeResult",
    "compile_cpp",
    "native_bwrap_available",
    "run_executable",
]

#: AtCoder's C++20 (GCC 12) flags, minus the libraries we do not ship (ac-library, Boost, GMP).
CPP_FLAGS = ("-std=gnu++20", "-O2", "-DONLINE_JUDGE", "-DATCODER", "-mtune=native")

_LAUNCHER_C = r"""
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* usage: launcher STATUS_FD AS_BYTES CPU_S FSIZE_BYTES WALL_MS FLAGS PROG [ARGS...]
   FLAGS: 1 = no fork (seccomp), 2 = no sockets/ptrace (seccomp). */

#if defined(__x86_64__)
#define ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ARCH AUDIT_ARCH_AARCH64
#endif

static int install_filter(int flags) {
#ifdef ARCH
    struct sock_filter f[64];
    int n = 0;
#define S(c, k) f[n++] = (struct sock_filter)BPF_STMT(c, k)
#define J(c, k, t, e) f[n++] = (struct sock_filter)BPF_JUMP(c, k, t, e)
#define DENY(nr, err) J(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 1); S(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (err))
    S(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
    J(BPF_JMP | BPF_JEQ | BPF_K, ARCH, 1, 0);
    S(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
    S(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
#if defined(__x86_64__)
    J(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1);
    S(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
#endif
    if (flags & 2) {
        DENY(__NR_socket, EPERM);
        DENY(__NR_ptrace, EPERM);
    }
    if (flags & 1) {
#ifdef __NR_fork
        DENY(__NR_fork, EPERM);
#endif
#ifdef __NR_vfork
        DENY(__NR_vfork, EPERM);
#endif
#ifdef __NR_clone3
        DENY(__NR_clone3, ENOSYS);
#endif
        J(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 0, 4);
        S(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0]));
        J(BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 0, 1);
        S(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
        S(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
    }
    S(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    struct sock_fprog prog = {(unsigned short)n, f};
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
#else
    (void)flags;
    return 0;
#endif
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    if (argc < 8) { fprintf(stderr, "launcher: bad arguments\n"); return 120; }
    int status_fd = atoi(argv[1]);
    rlim_t as_bytes = strtoull(argv[2], 0, 10), cpu_s = strtoull(argv[3], 0, 10);
    rlim_t fsize = strtoull(argv[4], 0, 10);
    long wall_ms = atol(argv[5]);
    int flags = atoi(argv[6]);
    sigset_t chld, old;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, &old);
    double start = now();
    pid_t pid = fork();
    if (pid < 0) { perror("launcher: fork"); return 121; }
    if (pid == 0) {
        setpgid(0, 0);
        sigprocmask(SIG_SETMASK, &old, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        close(status_fd);
        struct rlimit r;
        r.rlim_cur = r.rlim_max = as_bytes; setrlimit(RLIMIT_AS, &r);
        r.rlim_cur = cpu_s; r.rlim_max = cpu_s + 1; setrlimit(RLIMIT_CPU, &r);
        r.rlim_cur = r.rlim_max = fsize; setrlimit(RLIMIT_FSIZE, &r);
        r.rlim_cur = r.rlim_max = 0; setrlimit(RLIMIT_CORE, &r);
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || install_filter(flags) != 0) {
            perror("launcher: seccomp");
            _exit(122);
        }
        execv(argv[7], argv + 7);
        perror("launcher: exec");
        _exit(123);
    }
    setpgid(pid, pid);
    int timed_out = 0, st = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    for (;;) {
        pid_t w = wait4(pid, &st, WNOHANG, &ru);
        if (w == pid) break;
        double left = start + wall_ms / 1000.0 - now();
        if (left <= 0) {
            timed_out = 1;
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            wait4(pid, &st, 0, &ru);
            break;
        }
        struct timespec ts = {(time_t)left, (long)((left - (time_t)left) * 1e9)};
        sigtimedwait(&chld, 0, &ts);
    }
    double wall = now() - start;
    kill(-pid, SIGKILL); /* leftovers of the group (compiler helpers) */
    int code = WIFEXITED(st) ? WEXITSTATUS(st) : -1, sig = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
    dprintf(status_fd, "%d %d %d %.6f %.6f %.6f %ld\n", timed_out, code, sig, wall,
            ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6,
            ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6, ru.ru_maxrss);
    return 0;
}
"""


@dataclass(frozen=True)
class NativeLimits:
    """Limits of one native run (the AtCoder defaults: 2 s, 1 GiB).

    Attributes:
        time_limit_s: the program's time limit in seconds. A run is over the limit when its wall
            time (fork to exit in the launcher, so sandbox start-up is not counted) or its CPU time
            (user + system, all threads) exceeds it.
        kill_after_s: extra wall seconds granted before the launcher kills the process group
            (the verdict is still decided by ``time_limit_s``).
        memory_mb: address-space limit (``RLIMIT_AS``) in MiB.
        output_bytes: largest stdout (and stderr) file in bytes (``RLIMIT_FSIZE``).
        allow_fork: allow new processes (compilers need them; contest programs do not).
        use_bwrap: ``True`` requires bubblewrap, ``False`` never uses it, ``None`` when it works.

    Raises:
        ValueError: a non-positive limit.
    """

    time_limit_s: float = 2.0
    kill_after_s: float = 0.5
    memory_mb: int = 1024
    output_bytes: int = 64 << 20
    allow_fork: bool = False
    use_bwrap: bool | None = None

    def __post_init__(self) -> None:
        if not self.time_limit_s > 0 or self.kill_after_s < 0:
            raise ValueError("time_limit_s must be > 0 and kill_after_s >= 0")
        if self.memory_mb < 16 or self.output_bytes < 1:
            raise ValueError("memory_mb must be >= 16 and output_bytes >= 1")


@dataclass
class NativeResult:
    """How one native run ended.

    Attributes:
        status: ``"ok"`` (exit 0 within limits), ``"time_limit"``, ``"runtime_error"`` (non-zero
            exit or a signal), ``"memory_limit"`` (``std::bad_alloc`` / allocation failure seen on
            stderr), ``"output_limit"`` (``SIGXFSZ``) or ``"sandbox_error"``.
        message: human-readable reason (``None`` when ok).
        exit_code: exit status, ``None`` when killed by a signal.
        signal: terminating signal number or ``None``.
        wall_s: wall seconds from fork to exit; cpu_s: user + system CPU seconds.
        max_rss_mb: peak resident memory in MiB.
        stdout_path: file holding stdout (the caller deletes it with its directory).
        stderr: the last 2,000 characters of stderr.
        backend: ``"bwrap"`` or ``"fallback"``.
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
    if os.environ.get(NO_BWRAP_ENV, "") not in ("", "0"):
        return False
    return _bwrap_probe()


@lru_cache(maxsize=1)
def _bwrap_probe() -> bool:
    exe = shutil.which("bwrap")
    true = shutil.which("true")
    if exe is None or true is None or not os.path.realpath(true).startswith("/usr/"):
        return False
    try:
        done = subprocess.run([*_bwrap_args(exe, binds=[]), os.path.realpath(true)], check=False,
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=20, env=_env("/tmp"))
        return done.returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def _bwrap_args(exe: str, binds: list[tuple[str, str, str]], chdir: str = "/tmp") -> list[str]:
    """bwrap command up to the program: /usr and its links, ld cache, private /tmp, the binds.

    Args:
        binds: ``(option, host path, sandbox path)`` with option ``--bind`` or ``--ro-bind``.
    """
    args = [exe, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc",
            "--unshare-uts", "--unshare-net", "--unshare-cgroup-try"]
    if os.geteuid() == 0:
        args += ["--cap-drop", "ALL"]
    args += ["--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    args += ["--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache",
             "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    for option, host, inside in binds:
        args += [option, host, inside]
    return args + ["--chdir", chdir, "--"]


def _env(home: str) -> dict[str, str]:
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": home, "TMPDIR": "/tmp", "LANG": "C.UTF-8"}


@lru_cache(maxsize=1)
def _launcher() -> str:
    """Path of the compiled launcher (built once per machine, cached by its source hash).

    Raises:
        BackendUnavailable: no C compiler, or the launcher does not build.
    """
    cc = shutil.which("gcc") or shutil.which("cc") or shutil.which("g++")
    if cc is None:
        raise BackendUnavailable("no C/C++ compiler (gcc/g++) found: install g++ to judge C++ programs")
    digest = hashlib.sha256(_LAUNCHER_C.encode()).hexdigest()[:16]
    folder = os.path.join(tempfile.gettempdir(), f"discoverygym-launcher-{os.geteuid()}-{digest}")
    target = os.path.join(folder, "launcher")
    os.makedirs(folder, mode=0o755, exist_ok=True)
    if not (_owned_private(folder) and (not os.path.lexists(target) or _owned_private(target))):
        folder = tempfile.mkdtemp(prefix="discoverygym-launcher-")  # planted by someone else: build privately
        target = os.path.join(folder, "launcher")
    if os.path.isfile(target) and os.access(target, os.X_OK):
        return target
    build = tempfile.mkdtemp(prefix="build-", dir=folder)
    try:
        src = os.path.join(build, "launcher.c")
        with open(src, "w") as fh:
            fh.write(_LAUNCHER_C)
        cmd = [cc, "-O2", "-x", "c", "-o", os.path.join(build, "launcher"), src]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0:
            raise BackendUnavailable(f"could not build the sandbox launcher: {done.stderr[-2000:]}")
        os.chmod(os.path.join(build, "launcher"), 0o755)
        os.replace(os.path.join(build, "launcher"), target)  # atomic: concurrent builders agree
    finally:
        shutil.rmtree(build, ignore_errors=True)
    return target


def _owned_private(path: str) -> bool:
    """Whether ``path`` (not a symlink) belongs to us and is not writable by group or others."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return not os.path.islink(path) and info.st_uid == os.geteuid() and not info.st_mode & 0o022


def _backend(use_bwrap: bool | None) -> str:
    if use_bwrap is False:
        return "fallback"
    if native_bwrap_available():
        return "bwrap"
    if use_bwrap:
        raise BackendUnavailable("bubblewrap (bwrap) is not installed or cannot create a sandbox here "
                                 f"(or {NO_BWRAP_ENV} is set)")
    return "fallback"


def _launch(program: list[str], limits: NativeLimits, *, binds: list[tuple[str, str, str]],
            chdir_bwrap: str, cwd_fallback: str, stdin_path: str | None, stdout_path: str,
            stderr_path: str) -> NativeResult:
    """Run ``program`` (paths as seen inside the sandbox under bwrap) through the launcher."""
    backend = _backend(limits.use_bwrap)
    launcher = _launcher()
    wall_ms = round((limits.time_limit_s + limits.kill_after_s) * 1000)
    flags = 2 | (0 if limits.allow_fork else 1)
    status_r, status_w = os.pipe()
    head = [str(status_w), str(limits.memory_mb << 20), str(int(limits.time_limit_s) + 1),
            str(limits.output_bytes), str(wall_ms), str(flags)]
    if backend == "bwrap":
        exe = shutil.which("bwrap") or "bwrap"
        binds = [*binds, ("--ro-bind", launcher, "/.launcher")]
        cmd = [*_bwrap_args(exe, binds, chdir_bwrap), "/.launcher", *head, *program]
        home = chdir_bwrap
    else:
        cmd = [launcher, *head, *program]
        home = cwd_fallback
    with contextlib.ExitStack() as stack:
        stack.callback(os.close, status_r)
        stdin = stack.enter_context(open(stdin_path, "rb")) if stdin_path else subprocess.DEVNULL
        out = stack.enter_context(open(stdout_path, "wb"))
        err = stack.enter_context(open(stderr_path, "wb"))
        try:
            proc = subprocess.Popen(cmd, stdin=stdin, stdout=out, stderr=err, cwd=cwd_fallback,
                                    env=_env(home), start_new_session=True, pass_fds=(status_w,))
        except OSError as exc:
            raise SandboxError(f"could not start the native sandbox: {exc}") from exc
        finally:
            os.close(status_w)
        try:
            proc.wait(timeout=limits.time_limit_s + limits.kill_after_s + 30)
        except subprocess.TimeoutExpired:
            pass
        finally:  # the launcher has ended (or hangs): nothing of the run may survive it
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            proc.kill()
            proc.wait()
        status_line = _read_available(status_r).decode("ascii", "replace").split()
    stderr_tail = _tail(stderr_path, 2000)
    return _verdict(status_line, limits, stdout_path, stderr_tail, backend, proc.returncode)


def _read_available(fd: int) -> bytes:
    """What the launcher wrote on the status pipe (it has exited: no blocking)."""
    os.set_blocking(fd, False)
    try:
        return os.read(fd, 4096)
    except OSError:
        return b""


def _tail(path: str, chars: int) -> str:
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as fh:
            fh.seek(max(0, size - chars))
            return fh.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _verdict(status: list[str], limits: NativeLimits, stdout_path: str, stderr: str, backend: str,
             returncode: int | None) -> NativeResult:
    """Turn the launcher's status line into a :class:`NativeResult` verdict."""
    if len(status) != 7:
        why = f"the sandbox ended abnormally (exit {returncode}): {stderr.strip()[-500:]}"
        return NativeResult("sandbox_error", why, None, None, 0.0, 0.0, 0.0, stdout_path, stderr, backend)
    timed_out, code, sig = int(status[0]), int(status[1]), int(status[2])
    wall, cpu = float(status[3]), float(status[4]) + float(status[5])
    rss = int(status[6]) / 1024.0
    exit_code, signum = (code if sig == 0 else None), (sig or None)
    limit = limits.time_limit_s
    if timed_out or wall > limit or cpu > limit or signum == signal.SIGXCPU:
        state, msg = "time_limit", (f"time limit {limit:g} s exceeded (wall {wall:.2f} s, CPU {cpu:.2f} s"
                                    + (", killed)" if timed_out else ")"))
    elif signum == signal.SIGXFSZ:
        state, msg = "output_limit", f"output larger than {limits.output_bytes} bytes (killed by SIGXFSZ)"
    elif exit_code == 0:
        state, msg = "ok", None
    elif code in (122, 123) and "launcher:" in stderr:
        state, msg = "sandbox_error", f"the sandbox could not start the program: {stderr.strip()[-300:]}"
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
                memory_mb: int = 4096, use_bwrap: bool | None = None) -> CompileResult:
    """Compile one C++ source with g++ inside the sandbox.

    ``Main.cpp`` is written to ``workdir`` and compiled to ``workdir/a.out`` (AtCoder's names).
    Under bubblewrap the compiler sees only ``/usr``, the loader cache and ``workdir`` (as
    ``/box``), so ``#include`` of the user's files fails; it has no network and runs under the
    wall-clock ``timeout_s``, ``memory_mb`` of address space per process and a 256 MiB file cap.
    Without bubblewrap the compiler can ``#include`` any file the user can read, and the
    returned log can show parts of it: keep secrets away from that user.

    Args:
        source: C++ text.
        workdir: an existing private directory (the caller removes it).
        flags: compiler flags (default :data:`CPP_FLAGS`: ``-std=gnu++20 -O2 ...``).
        timeout_s: wall-clock limit of the whole compilation in seconds.
        memory_mb: address-space limit of each compiler process in MiB.
        use_bwrap: as in :class:`NativeLimits`.

    Returns:
        :class:`CompileResult` (``ok=False`` with the compiler's messages on any failure).

    Raises:
        BackendUnavailable: no g++ (or ``use_bwrap=True`` without bubblewrap).
    """
    gpp = shutil.which("g++")
    if gpp is None:
        raise BackendUnavailable("g++ is not installed: install it to judge C++ programs")
    gpp = os.path.realpath(gpp)
    with open(os.path.join(workdir, "Main.cpp"), "w", encoding="utf-8", errors="surrogatepass") as fh:
        fh.write(source)
    limits = NativeLimits(time_limit_s=timeout_s, kill_after_s=0.0, memory_mb=memory_mb,
                          output_bytes=256 << 20, allow_fork=True, use_bwrap=use_bwrap)
    backend = _backend(use_bwrap)
    base = "/box" if backend == "bwrap" else workdir
    program = [gpp, *flags, "-o", f"{base}/a.out", f"{base}/Main.cpp"]
    log_path = os.path.join(workdir, "compile.log")
    start = time.monotonic()
    result = _launch(program, limits, binds=[("--bind", workdir, "/box")], chdir_bwrap="/box",
                     cwd_fallback=workdir, stdin_path=None, stdout_path=os.path.join(workdir, "compile.out"),
                     stderr_path=log_path)
    elapsed = time.monotonic() - start
    log = _tail(log_path, 4000).replace("/box/Main.cpp", "Main.cpp").replace(f"{workdir}/Main.cpp", "Main.cpp")
    binary = os.path.join(workdir, "a.out")
    if result.ok and os.path.isfile(binary):
        return CompileResult(True, binary, log, elapsed, result.backend)
    if result.status == "time_limit":
        log = f"compilation exceeded {timeout_s:g} s\n" + log
    elif result.status != "runtime_error" or not log:
        log = f"compilation failed: {result.message}\n" + log
    return CompileResult(False, None, log, elapsed, result.backend)


def run_executable(binary: str, *, stdin_path: str, workdir: str,
                   limits: NativeLimits | None = None) -> NativeResult:
    """Run a compiled program on one input file under :class:`NativeLimits`.

    Under bubblewrap the binary is mounted read-only, the working directory is a private empty
    ``/tmp``, and the program sees only ``/usr`` besides. stdout goes to ``workdir/stdout.txt``
    and stderr to ``workdir/stderr.txt`` (both capped by ``limits.output_bytes``).

    Args:
        binary: path of the executable (e.g. :attr:`CompileResult.binary`).
        stdin_path: file fed to standard input.
        workdir: an existing private directory for the output files (the caller removes it).
        limits: :class:`NativeLimits` (default: 2 s, 1 GiB, 64 MiB output, no fork).

    Returns:
        :class:`NativeResult`; never raises for anything the program does.

    Raises:
        BackendUnavailable: ``use_bwrap=True`` without bubblewrap, or no compiler for the launcher.
        SandboxError: the sandbox process could not be started.
    """
    limits = limits or NativeLimits()
    backend = _backend(limits.use_bwrap)
    inside = "/.prog" if backend == "bwrap" else os.path.abspath(binary)
    return _launch([inside], limits, binds=[("--ro-bind", os.path.abspath(binary), "/.prog")],
                   chdir_bwrap="/tmp", cwd_fallback=workdir, stdin_path=stdin_path,
                   stdout_path=os.path.join(workdir, "stdout.txt"),
                   stderr_path=os.path.join(workdir, "stderr.txt"))
