"""The program run inside the sandbox's child process (started by :mod:`discoverygym.sandbox.python`).

Usage: ``python -s _runner.py WORKDIR``. ``WORKDIR`` holds ``config.json`` (written by the
parent), ``program.py`` and ``kwargs.json``; the runner writes ``result.json`` there.

Two processes:

* the **supervisor** (this script's process) sets the resource limits, the CPU affinity and
  ``PR_SET_CHILD_SUBREAPER``, forks the worker and waits for it. When the worker has exited (or on
  ``SIGTERM`` from the parent) it kills every remaining descendant (orphans are re-parented to it,
  so none can escape by double-forking) and reports the worker's exit status as one JSON line on
  the status pipe, a channel the worker closed before any program code ran.
* the **worker** hardens itself at the kernel level (:func:`harden`: dies with the supervisor,
  drops root capabilities, Landlock write confinement, a seccomp filter, no-new-privileges),
  imports numpy, replaces ctypes' raw-memory helpers, installs an audit hook
  (:func:`_make_audit_hook`), runs the program in a fresh module namespace, calls the entry
  function and writes the returned value as plain JSON data (:func:`to_plain`).

Nothing here computes a score, and the parent trusts nothing the worker writes beyond data: the
program runs in the worker's process, so ``result.json`` is as untrusted as the returned value.
Only the standard library (plus numpy when importable) is used; this file must stay importable
without the discoverygym package: started as a script, it loads its two stdlib-only siblings
:mod:`.probes` and :mod:`.audit` from its own directory, never the package (whose import would
pull in gymnasium before the hardening).
"""

from __future__ import annotations

import io
import json
import os
import signal
import sys
import time

if __package__:
    from discoverygym.sandbox import audit, probes
else:  # started as a script (python -s -B _runner.py WORKDIR): the siblings, not the package
    import audit
    import probes

#: Exit status of the worker when the runner itself failed (not the program).
RUNNER_FAILURE_EXIT = 70
#: File the worker creates in the private directory just before it runs the program.
STARTED_MARKER = "started"

_PR_SET_PDEATHSIG = 1
_PR_CAPBSET_DROP = 24
_PR_SET_SECUREBITS = 28
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2


_libc, _prctl = probes.libc, probes.prctl


# --------------------------------------------------------------------------- supervisor


def _apply_rlimits(cfg: dict) -> None:
    """Set the address-space, CPU, file-size, core and process-count limits (soft = hard).

    Inherited by the worker and everything it starts. ``RLIMIT_NPROC`` is only set for non-root
    users (the kernel ignores it for root) and counts every task of the user, so it is set to the
    system's current task count plus a margin.
    """
    import resource

    def setlimit(which: int, soft: int, hard: int | None = None) -> None:
        hard = soft if hard is None else hard
        _, cur_hard = resource.getrlimit(which)
        if cur_hard != resource.RLIM_INFINITY:
            soft, hard = min(soft, cur_hard), min(hard, cur_hard)
        try:
            resource.setrlimit(which, (soft, hard))
        except (ValueError, OSError):
            pass

    setlimit(resource.RLIMIT_AS, cfg["memory_bytes"])
    setlimit(resource.RLIMIT_CPU, cfg["cpu_s"], cfg["cpu_s"] + 1)
    setlimit(resource.RLIMIT_FSIZE, cfg["fsize_bytes"])
    setlimit(resource.RLIMIT_CORE, 0)
    if os.geteuid() != 0:
        try:
            with open("/proc/loadavg", encoding="ascii") as fh:
                tasks = int(fh.read().split()[3].split("/")[1])
        except (OSError, ValueError, IndexError):
            tasks = 4096
        setlimit(resource.RLIMIT_NPROC, tasks + cfg["nproc_margin"])


def _children() -> list[int]:
    """Pids of this process's children (all threads), from /proc; falls back to a /proc scan."""
    me = os.getpid()
    kids: list[int] = []
    try:
        for tid in os.listdir(f"/proc/{me}/task"):
            with open(f"/proc/{me}/task/{tid}/children", encoding="ascii") as fh:
                kids.extend(int(p) for p in fh.read().split())
        return kids
    except (OSError, ValueError):
        pass
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", encoding="ascii", errors="replace") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == me:
            kids.append(int(name))
    return kids


def _kill_descendants(deadline_s: float = 5.0) -> bool:
    """SIGKILL and reap every descendant of this (subreaper) process.

    Orphaned grandchildren are re-parented to a subreaper, so repeatedly killing the direct
    children and reaping until ``waitpid`` reports none left reaches every descendant.

    Returns:
        True when no child is left, False when ``deadline_s`` seconds passed first.
    """
    deadline = time.monotonic() + deadline_s
    while True:
        for pid in _children():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.002)


def _report(status_fd: int, record: dict) -> None:
    """Write one JSON line to the status pipe (ignored when the parent is gone)."""
    try:
        os.write(status_fd, (json.dumps(record) + "\n").encode())
    except OSError:
        pass


def _status_record(wait_status: int) -> dict:
    """Describe a ``waitpid`` status as ``{"exit": code}`` or ``{"signal": number}``."""
    if os.WIFSIGNALED(wait_status):
        return {"signal": os.WTERMSIG(wait_status)}
    return {"exit": os.WEXITSTATUS(wait_status)}


def _prepare_supervisor(cfg: dict) -> None:
    """Die with the parent, become a subreaper, set the rlimits and the CPU affinity."""
    libc = _libc()
    _prctl(libc, _PR_SET_PDEATHSIG, signal.SIGKILL)
    _prctl(libc, _PR_SET_CHILD_SUBREAPER, 1)
    _apply_rlimits(cfg)
    if cfg["cpu_set"]:
        try:
            os.sched_setaffinity(0, cfg["cpu_set"])
        except OSError:
            pass


def supervise(workdir: str) -> None:
    """Entry point of the child: limits, subreaper, fork the worker, clean up, report. Never returns."""
    with open(os.path.join(workdir, "config.json"), encoding="utf-8") as fh:
        cfg = json.load(fh)
    status_fd = cfg["status_fd"]
    _prepare_supervisor(cfg)
    supervisor_pid = os.getpid()
    worker = os.fork()
    if worker == 0:
        try:
            os.close(status_fd)
            run_worker(workdir, cfg, supervisor_pid)
        except BaseException:  # noqa: BLE001 - a bug of the runner, not of the program
            import traceback

            traceback.print_exc()
            sys.stderr.flush()
        finally:
            os._exit(RUNNER_FAILURE_EXIT)

    def on_term(signum, frame):  # parent's wall-clock timeout
        clean = _kill_descendants()
        _report(status_fd, {"terminated": True, "clean": clean})
        os._exit(0)

    signal.signal(signal.SIGTERM, on_term)
    _, wait_status = os.waitpid(worker, 0)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    record = _status_record(wait_status)
    record["clean"] = _kill_descendants()
    _report(status_fd, record)
    os._exit(0)


# --------------------------------------------------------------------------- worker hardening

# name: (x86_64 number, aarch64 number); None where the syscall does not exist.
_SYSCALLS = {
    "socket": (41, 198), "clone": (56, 220), "fork": (57, None), "vfork": (58, None),
    "execve": (59, 221), "execveat": (322, 281), "kill": (62, 129), "tkill": (200, 130),
    "tgkill": (234, 131), "rt_sigqueueinfo": (129, 138), "rt_tgsigqueueinfo": (297, 240),
    "pidfd_send_signal": (424, 424), "pidfd_open": (434, 434), "pidfd_getfd": (438, 438),
    "clone3": (435, 435), "ptrace": (101, 117), "process_vm_readv": (310, 270),
    "process_vm_writev": (311, 271), "process_madvise": (440, 440), "mknod": (133, None),
    "mknodat": (259, 33), "mount": (165, 40), "umount2": (166, 39), "pivot_root": (155, 41),
    "chroot": (161, 51), "setns": (308, 268), "unshare": (272, 97), "keyctl": (250, 219),
    "add_key": (248, 217), "request_key": (249, 218), "bpf": (321, 280),
    "perf_event_open": (298, 241), "init_module": (175, 105), "finit_module": (313, 273),
    "delete_module": (176, 106), "kexec_load": (246, 104), "kexec_file_load": (320, 294),
    "reboot": (169, 142), "swapon": (167, 224), "swapoff": (168, 225), "setrlimit": (160, 164),
    "prlimit64": (302, 261), "userfaultfd": (323, 282), "io_uring_setup": (425, 425),
    "io_uring_enter": (426, 426), "io_uring_register": (427, 427),
    "open_by_handle_at": (304, 265), "name_to_handle_at": (303, 264), "link": (86, None),
    "linkat": (265, 37), "symlink": (88, None), "symlinkat": (266, 36), "acct": (163, 89),
    "iopl": (172, None), "ioperm": (173, None), "syslog": (103, 116), "fanotify_init": (300, 262),
    "open_tree": (428, 428), "move_mount": (429, 429), "fsopen": (430, 430),
    "fsconfig": (431, 431), "fsmount": (432, 432), "fspick": (433, 433),
    "mount_setattr": (442, 442), "settimeofday": (164, 170), "clock_settime": (227, 112),
    "adjtimex": (159, 171), "clock_adjtime": (305, 266), "sethostname": (170, 161),
    "setdomainname": (171, 162), "quotactl": (179, 60),
    # System V IPC and POSIX message queues (objects that outlive the process: issue 40)
    "shmget": (29, 194), "shmat": (30, 196), "shmctl": (31, 195), "shmdt": (67, 197),
    "semget": (64, 190), "semop": (65, 193), "semctl": (66, 191), "semtimedop": (220, 192),
    "msgget": (68, 186), "msgsnd": (69, 189), "msgrcv": (70, 188), "msgctl": (71, 187),
    "mq_open": (240, 180), "mq_unlink": (241, 181), "mq_timedsend": (242, 182),
    "mq_timedreceive": (243, 183), "mq_notify": (244, 184), "mq_getsetattr": (245, 185),
    # page-cache state of shared files: evict, or read without disturbing (issue 40)
    "fadvise64": (221, 223), "mincore": (27, 232), "cachestat": (451, 451),
    "madvise": (28, 233), "preadv2": (327, 286), "pwritev2": (328, 287),
}
_ARCHES = {"x86_64": (0, 0xC000003E), "aarch64": (1, 0xC00000B7)}

#: System V IPC and POSIX message queues: their objects outlive the process (and, without an IPC
#: namespace, the sandbox), so a program could keep answers between runs (issue 40: a SysV
#: shared-memory cache replayed LASSO paths 66x faster). Refused on every backend.
IPC_SYSCALLS = ("shmget", "shmat", "shmctl", "shmdt", "semget", "semop", "semctl", "semtimedop",
                "msgget", "msgsnd", "msgrcv", "msgctl", "mq_open", "mq_unlink", "mq_timedsend",
                "mq_timedreceive", "mq_notify", "mq_getsetattr")
#: Calls that evict pages of a shared file from the page cache or read its residency without
#: changing it: the primitives of a page-cache channel between sandboxes (issue 40). ``madvise``
#: is refused only for MADV_COLD / MADV_PAGEOUT, ``preadv2`` / ``pwritev2`` only with RWF_NOWAIT.
PAGE_CACHE_SYSCALLS = ("fadvise64", "mincore", "cachestat")
_MADV_COLD, _MADV_PAGEOUT, _RWF_NOWAIT = 20, 21, 0x8

# Denied in every mode: kernel, mount, tracing and link operations a program never needs.
_ALWAYS_DENIED = (
    "ptrace", "process_vm_readv", "process_vm_writev", "process_madvise", "mknod", "mknodat",
    "mount", "umount2", "pivot_root", "chroot", "setns", "unshare", "keyctl", "add_key",
    "request_key", "bpf", "perf_event_open", "init_module", "finit_module", "delete_module",
    "kexec_load", "kexec_file_load", "reboot", "swapon", "swapoff", "setrlimit", "userfaultfd",
    "io_uring_setup", "io_uring_enter", "io_uring_register", "open_by_handle_at",
    "name_to_handle_at", "link", "linkat", "symlink", "symlinkat", "acct", "iopl", "ioperm",
    "syslog", "fanotify_init", "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount",
    "fspick", "mount_setattr", "settimeofday", "clock_settime", "adjtimex", "clock_adjtime",
    "sethostname", "setdomainname", "quotactl", "pidfd_getfd",
    *IPC_SYSCALLS, *PAGE_CACHE_SYSCALLS,
)
# Denied unless subprocesses are allowed (clone is allowed for threads, see below).
_PROCESS_DENIED = ("fork", "vfork", "execve", "execveat", "tkill", "pidfd_open", "pidfd_send_signal")
# Signal-sending calls whose first argument is a pid: allowed only on the worker itself.
_SELF_ONLY = ("kill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo")

_BPF_LD_W_ABS, _BPF_JEQ, _BPF_JGE, _BPF_JSET, _BPF_RET = 0x20, 0x15, 0x35, 0x45, 0x06
_RET_ALLOW, _RET_ERRNO = 0x7FFF0000, 0x00050000
_EPERM, _ENOSYS, _CLONE_THREAD = 1, 38, 0x00010000


def _arg_low(i: int) -> int:
    """Offset of the low 32 bits of syscall argument ``i`` in ``struct seccomp_data`` (little endian)."""
    return 16 + 8 * i


def seccomp_program(arch: str, network: bool, subprocess_ok: bool, self_pid: int) -> list[tuple]:
    """The seccomp BPF filter as ``(code, jt, jf, k)`` instructions.

    Denies (EPERM) the syscalls in ``_ALWAYS_DENIED`` (System V IPC and POSIX message queues,
    :data:`IPC_SYSCALLS`, and the page-cache primitives, :data:`PAGE_CACHE_SYSCALLS`, included);
    ``madvise`` with MADV_COLD / MADV_PAGEOUT and ``preadv2`` / ``pwritev2`` with RWF_NOWAIT;
    ``prlimit64`` that sets a limit; unless
    ``subprocess_ok``: process creation (``clone`` without ``CLONE_THREAD``; ``clone3`` answers
    ENOSYS so the C library falls back to ``clone``), ``execve`` and signals to other processes;
    unless ``network``: ``socket``. Any other architecture than ``arch`` (e.g. 32-bit syscalls)
    is denied entirely.

    Args:
        arch: ``"x86_64"`` or ``"aarch64"``.
        network: allow ``socket``.
        subprocess_ok: allow fork, exec and signals to other processes.
        self_pid: pid the signal calls may target.

    Returns:
        list of instruction tuples, at most a few hundred.
    """
    index, audit_arch = _ARCHES[arch]
    deny, allow = (_BPF_RET, 0, 0, _RET_ERRNO | _EPERM), (_BPF_RET, 0, 0, _RET_ALLOW)
    prog = [(_BPF_LD_W_ABS, 0, 0, 4), (_BPF_JEQ, 1, 0, audit_arch), deny, (_BPF_LD_W_ABS, 0, 0, 0)]
    if arch == "x86_64":  # x32 ABI syscalls carry bit 30
        prog += [(_BPF_JGE, 0, 1, 0x40000000), deny]

    def number(name: str) -> int | None:
        return _SYSCALLS[name][index]

    def deny_all(names) -> None:
        for nr in filter(lambda n: n is not None, map(number, names)):
            prog.extend([(_BPF_JEQ, 0, 1, nr), deny])

    deny_all(_ALWAYS_DENIED)
    # madvise(addr, len, advice): refuse the advices that push file pages out of the cache.
    prog += [
        (_BPF_JEQ, 0, 5, number("madvise")), (_BPF_LD_W_ABS, 0, 0, _arg_low(2)),
        (_BPF_JEQ, 2, 0, _MADV_COLD), (_BPF_JEQ, 1, 0, _MADV_PAGEOUT), allow, deny,
    ]
    # preadv2/pwritev2(fd, iov, n, pos_l, pos_h, flags): refuse RWF_NOWAIT (a residency probe).
    for name in ("preadv2", "pwritev2"):
        prog += [
            (_BPF_JEQ, 0, 4, number(name)), (_BPF_LD_W_ABS, 0, 0, _arg_low(5)),
            (_BPF_JSET, 0, 1, _RWF_NOWAIT), deny, allow,
        ]
    if not network:
        deny_all(["socket"])
    # prlimit64(pid, resource, new_limit, old_limit): allow reads only (new_limit == NULL).
    prog += [
        (_BPF_JEQ, 0, 6, number("prlimit64")),
        (_BPF_LD_W_ABS, 0, 0, _arg_low(2)), (_BPF_JEQ, 0, 3, 0),
        (_BPF_LD_W_ABS, 0, 0, _arg_low(2) + 4), (_BPF_JEQ, 0, 1, 0),
        allow, deny,
    ]
    if not subprocess_ok:
        deny_all(_PROCESS_DENIED)
        prog += [(_BPF_JEQ, 0, 1, number("clone3")), (_BPF_RET, 0, 0, _RET_ERRNO | _ENOSYS)]
        prog += [
            (_BPF_JEQ, 0, 4, number("clone")), (_BPF_LD_W_ABS, 0, 0, _arg_low(0)),
            (_BPF_JSET, 0, 1, _CLONE_THREAD), allow, deny,
        ]
        for name in _SELF_ONLY:
            prog += [
                (_BPF_JEQ, 0, 4, number(name)), (_BPF_LD_W_ABS, 0, 0, _arg_low(0)),
                (_BPF_JEQ, 0, 1, self_pid), allow, deny,
            ]
    prog.append(allow)
    return prog


_LANDLOCK_CREATE_RULESET, _LANDLOCK_ADD_RULE, _LANDLOCK_RESTRICT_SELF = probes.LANDLOCK_CREATE_RULESET, 445, 446
# LANDLOCK_ACCESS_FS_*: WRITE_FILE, REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR, MAKE_REG,
# MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM (ABI 1); REFER (ABI 2); TRUNCATE (ABI 3).
_LANDLOCK_WRITE_V1 = (1 << 1) | (1 << 4) | (1 << 5) | (1 << 6) | (1 << 7) | (1 << 8) | (1 << 9) \
    | (1 << 10) | (1 << 11) | (1 << 12)
_LANDLOCK_REFER, _LANDLOCK_TRUNCATE, _LANDLOCK_WRITE_FILE = 1 << 13, 1 << 14, 1 << 1


landlock_abi = probes.landlock_abi


def install_landlock(libc, workdir: str) -> bool:
    """Restrict this process with Landlock: file-system changes only below ``workdir`` (and /dev/null).

    Reading and executing stay allowed. Needs Linux 5.13+ with Landlock enabled; sets
    no-new-privileges.

    Returns:
        True when the restriction is active, False when the kernel does not offer Landlock.
    """
    import ctypes

    abi = landlock_abi(libc)
    if abi < 1 or not _prctl(libc, _PR_SET_NO_NEW_PRIVS, 1):
        return False
    syscall = libc.syscall
    handled = _LANDLOCK_WRITE_V1 | (_LANDLOCK_REFER if abi >= 2 else 0) | (
        _LANDLOCK_TRUNCATE if abi >= 3 else 0)

    class PathBeneath(ctypes.Structure):
        _pack_ = 1
        _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]

    attr = ctypes.c_uint64(handled)  # struct landlock_ruleset_attr, handled_access_fs only
    ruleset = syscall(ctypes.c_long(_LANDLOCK_CREATE_RULESET), ctypes.byref(attr),
                      ctypes.c_size_t(8), ctypes.c_uint32(0))
    if ruleset < 0:
        return False
    try:
        rules = ((workdir, handled), ("/dev/null", handled & (_LANDLOCK_WRITE_FILE | _LANDLOCK_TRUNCATE)))
        for path, allowed in rules:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            try:
                rule = PathBeneath(allowed, fd)
                if syscall(ctypes.c_long(_LANDLOCK_ADD_RULE), ctypes.c_int(ruleset), ctypes.c_int(1),
                           ctypes.byref(rule), ctypes.c_uint32(0)) != 0:
                    return False
            finally:
                os.close(fd)
        return syscall(ctypes.c_long(_LANDLOCK_RESTRICT_SELF), ctypes.c_int(ruleset),
                       ctypes.c_uint32(0)) == 0
    finally:
        os.close(ruleset)


def install_seccomp(libc, network: bool, subprocess_ok: bool) -> bool:
    """Install :func:`seccomp_program` for this process (inherited by its children).

    Sets no-new-privileges first (required without CAP_SYS_ADMIN).

    Returns:
        True when the filter is active; False on an unsupported architecture or kernel.
    """
    import ctypes
    import platform

    arch = platform.machine()
    if libc is None or arch not in _ARCHES or not _prctl(libc, _PR_SET_NO_NEW_PRIVS, 1):
        return False

    class SockFilter(ctypes.Structure):
        _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8),
                    ("k", ctypes.c_uint32)]

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(SockFilter))]

    prog = seccomp_program(arch, network, subprocess_ok, os.getpid())
    filters = (SockFilter * len(prog))(*[SockFilter(*ins) for ins in prog])
    fprog = SockFprog(len(prog), filters)
    rc = libc.prctl(_PR_SET_SECCOMP, ctypes.c_ulong(_SECCOMP_MODE_FILTER), ctypes.byref(fprog),
                    ctypes.c_ulong(0), ctypes.c_ulong(0))
    return rc == 0


def drop_capabilities(libc) -> None:
    """For root: lock the root-gains-capabilities rules, empty the bounding set, drop all capabilities.

    Afterwards uid 0 keeps owning its files but cannot bypass permissions of other users' files,
    create device nodes, kill other users' processes or regain capabilities through exec.
    A no-op for other users (they hold no capabilities).
    """
    if libc is None or os.geteuid() != 0:
        return
    import ctypes

    _prctl(libc, _PR_SET_SECUREBITS, 0x2F)  # NOROOT, NO_SETUID_FIXUP (both locked), KEEP_CAPS_LOCKED
    for cap in range(64):
        if not _prctl(libc, _PR_CAPBSET_DROP, cap) and ctypes.get_errno() == 22:  # EINVAL: no more caps
            break

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]

    header, data = Header(0x20080522, 0), (Data * 2)()  # _LINUX_CAPABILITY_VERSION_3
    libc.capset(ctypes.byref(header), data)


# --------------------------------------------------------------------------- the audit hook

_O_WRITE = audit.WRITE_FLAGS
_O_DIR = os.O_DIRECTORY | getattr(os, "O_PATH", 0)
_PATH_EVENTS, _PATH_EVENT_NAMES, _PROCESS_EVENTS = audit.PATH_EVENTS, audit.PATH_EVENT_NAMES, audit.PROCESS_EVENTS
_NETWORK_EVENTS = frozenset({
    "urllib.Request", "http.client.connect", "ftplib.connect", "smtplib.connect",
    "poplib.connect", "imaplib.open", "nntplib.connect", "telnetlib.Telnet.open",
    "webbrowser.open", "syslog.openlog", "syslog.syslog",
})
_INTROSPECTION_EVENTS = frozenset({
    "sys.settrace", "sys.setprofile", "gc.get_objects", "gc.get_referrers",
    "gc.get_referents", "resource.setrlimit", "resource.prlimit",
    "sqlite3.enable_load_extension", "sqlite3.load_extension", "cpython.PyInterpreterState_New",
})
# C extension modules refused in every configuration (ImportError): their C code writes files
# without raising audit events, or starts interpreters that the audit hook does not reach
# (sub-interpreters have no Python audit hooks; ``_testcapi.run_in_subinterp`` does not even raise
# ``cpython.PyInterpreterState_New`` where the hook sees it). None has a use in a program here.
_UNAUDITED_MODULES = frozenset({
    "_dbm", "_gdbm",  # dbm.ndbm / dbm.gnu open database files in C
    "readline",  # write_history_file, append_history_file
    "_curses", "_curses_panel",  # putwin's temporary file, terminal control
    "_tkinter",  # a Tcl interpreter: its `open` and `file` commands write any file
    "ossaudiodev",  # opens device paths in C
    "_testcapi", "_testinternalcapi", "_testmultiphase", "_testsinglephase", "_testbuffer",
    "_testclinic", "_testimportmultiple", "_ctypes_test",  # C-API test helpers
    "_xxsubinterpreters", "_xxinterpchannels", "_interpreters", "_interpchannels",
    "_interpqueues",  # sub-interpreters
})
# Refused only where no kernel layer confines file-system changes (no bubblewrap, no Landlock):
# their C code creates or deletes files outside the private directory without audit events, but
# they have uses, and bubblewrap's read-only root or Landlock stops those writes.
_UNCONFINED_MODULES = frozenset({
    "_sqlite3",  # ATTACH DATABASE and VACUUM INTO write to any path
    "_posixshmem",  # shm_open / shm_unlink in the host's /dev/shm
    "_multiprocessing",  # sem_unlink in the host's /dev/shm; see _disarm_sem_unlink
})
# /proc entries that reveal or expose memory (a ctypes exploit would need addresses from them).
_PROC_MEMORY_ENTRIES = frozenset({
    "mem", "maps", "smaps", "smaps_rollup", "numa_maps", "map_files", "pagemap", "auxv",
    "syscall", "stack", "kcore", "kallsyms",
})
#: Entries of ``/proc/<pid>`` (and ``/proc/<pid>/task/<tid>``) that are "magic" links into another
#: file-system view or to open descriptors: a path through them is refused, never resolved.
_PROC_ROUTES = frozenset({"root", "cwd", "fd"})
#: Most symbolic links followed while resolving one path (the kernel's limit).
_MAX_LINKS = 40
_HARMLESS_CTYPES = frozenset({
    "ctypes.addressof", "ctypes.cdata/buffer", "ctypes.create_string_buffer",
    "ctypes.create_unicode_buffer", "ctypes.get_errno", "ctypes.set_errno",
})


def _make_audit_hook(root: str, network: bool, subprocess_ok: bool, seccomp_active: bool,
                     files_confined: bool = False, hidden: tuple[str, ...] = ()):
    """Build the audit hook that confines the program (installed with ``sys.addaudithook``).

    The hook raises ``PermissionError("sandbox: ...")`` on: network use (unless ``network``);
    process creation, exec and signals to other processes (unless ``subprocess_ok``); loading
    libraries, symbol lookups and raw memory access through ctypes; writes (except to /dev/null),
    deletes, renames, mode/owner/time changes and directory creation outside ``root`` (paths are
    made absolute against the working directory or the ``dir_fd``, then checked both as written,
    normalised, and as their real path, symbolic links followed component by component as the
    kernel does; links cannot be created); reads of ``hidden`` paths under any name (real path,
    and the hidden files' device and inode, so a link or bind mount does not help); any path
    through ``/proc/<pid|self|thread-self>[/task/<tid>]/{root,cwd,fd}`` (``/dev/fd``,
    ``/dev/stdin`` included), which lead into other file-system views or to open descriptors;
    ``chdir`` out of ``root``; directory handles outside ``root``
    and ``..`` in relative ``os.open`` paths (the hook cannot see ``os.open``'s ``dir_fd``);
    other processes' ``/proc`` entries and its own memory maps; tracing, ``gc`` object walks,
    sub-interpreters, syslog (unless ``network``), resource-limit changes, and changing the hook's
    own functions. Importing a C extension module whose C code writes files or starts
    interpreters without audit events raises ``ImportError("sandbox: module ... is disabled")``:
    always ``readline``, the dbm, curses and Tcl/Tk modules, ``ossaudiodev``, the C-API test and
    sub-interpreter modules (:data:`_UNAUDITED_MODULES`); unless ``files_confined``, also
    ``sqlite3``, ``_posixshmem`` and a fresh copy of ``_multiprocessing``
    (:data:`_UNCONFINED_MODULES`; the worker loads that one first, disarmed, because gymnasium
    imports it). The check sees every load of an extension module that runs its C initialisation,
    whatever name or loader is used; none of these modules is loaded before the hook, except
    ``_multiprocessing`` as said. ``os.mkfifo`` and ``os.mknod`` raise no audit event
    either; the seccomp filter refuses them. Reading files is allowed, and so is
    ``sys.addaudithook``: a program's own hook runs after this one and can only refuse more.
    ctypes pointers and function pointers reach raw memory without audit events, so a determined
    program can defeat this hook; the kernel layers (bubblewrap, :func:`harden`) are what stops a
    program that gets that far.

    The hook and its helpers reach everything they use through default arguments bound here to
    immutable built-ins (no globals, no closures; tuples and frozensets, never dicts, lists or
    sets, since the hook's frames and their locals are reachable from a traceback), so a program
    that patches modules, builtins or this runner's globals cannot change what the hook checks.

    Args:
        root: real path of the private directory (the working directory).
        network: allow sockets.
        subprocess_ok: allow process creation and signals to other processes.
        seccomp_active: the seccomp filter blocks ``_posixsubprocess.fork_exec`` (which raises no
            audit event); without it, importing ``_posixsubprocess`` is refused.
        files_confined: a kernel layer (bubblewrap's read-only root or Landlock) already stops
            file-system changes outside ``root``; without it the modules in
            :data:`_UNCONFINED_MODULES` are refused too.
        hidden: absolute paths (files or directories) the program must not open for reading.

    Returns:
        the hook function ``hook(event, args)``.
    """
    from posix import getcwd, lstat, readlink, stat
    from stat import S_ISDIR, S_ISLNK

    self_pid = os.getpid()
    blocked_modules = _UNAUDITED_MODULES | (frozenset() if files_confined else _UNCONFINED_MODULES)
    if not seccomp_active and not subprocess_ok:
        blocked_modules |= {"_posixsubprocess"}

    def deny(what, _error=PermissionError):
        raise _error("sandbox: " + what)

    def normalize(path, _split=str.split, _join="/".join):
        parts = []
        for part in _split(path, "/"):
            if part == "..":
                if parts:
                    parts.pop()
            elif part and part != ".":
                parts.append(part)
        return "/" + _join(parts)

    def fd_path(fd, _readlink=readlink):
        try:
            return _readlink(f"/proc/self/fd/{fd}")
        except (OSError, TypeError, ValueError, OverflowError):
            return ""

    def absolute(path, dir_fd=None, _type=type, _str=str, _bytes=bytes, _int=int, _bool=bool,
                 _getcwd=getcwd, _fd_path=fd_path, _deny=deny):
        kind = _type(path)
        if kind is _int or kind is _bool:
            return _fd_path(path)
        if kind is _bytes:
            path = _bytes.decode(path, "utf-8", "surrogateescape")
        elif kind is not _str:
            _deny(f"file operations need str or bytes paths, got {kind.__name__}; use str(path)")
        if not _str.startswith(path, "/"):
            base = _getcwd() if dir_fd is None or dir_fd == -1 else _fd_path(dir_fd)
            path = base + "/" + path
        return path

    def proc_route(parts, _len=len, _isdigit=str.isdigit, _routes=_PROC_ROUTES):
        # parts: components resolved so far; True when they end in /proc/<pid>[/task/<tid>]/{root,cwd,fd}
        n = _len(parts)
        if n < 3 or parts[0] != "proc" or not _isdigit(parts[1]):
            return False
        return (n == 3 and parts[2] in _routes) or (
            n == 5 and parts[2] == "task" and _isdigit(parts[3]) and parts[4] in _routes)

    def real(path, _lstat=lstat, _readlink=readlink, _islink=S_ISLNK, _split=str.split,
             _join="/".join, _startswith=str.startswith, _reversed=reversed, _list=list,
             _proc_route=proc_route, _deny=deny, _max_links=_MAX_LINKS):
        # The real path of an absolute path, as the kernel resolves it: symbolic links followed
        # component by component (".." after a link climbs from the link's target), the part
        # from the first missing component on kept textually. Paths through /proc/*/root, cwd or
        # fd are refused: those links lead into other file-system views or to open descriptors.
        todo = _list(_reversed(_split(path, "/")))
        done = []
        links, missing = 0, False
        while todo:
            part = todo.pop()
            if not part or part == ".":
                continue
            if part == "..":
                if done:
                    done.pop()
                continue
            done.append(part)
            if _proc_route(done):
                _deny(f"paths through /proc/<pid>/root, cwd or fd are not allowed ({path})")
            if missing:
                continue
            current = "/" + _join(done)
            try:
                is_link = _islink(_lstat(current).st_mode)
            except (OSError, ValueError):
                missing = True
                continue
            if is_link:
                links += 1
                if links > _max_links:
                    _deny(f"too many symbolic links in {path}")
                try:
                    target = _readlink(current)
                except (OSError, ValueError):
                    missing = True
                    continue
                done.pop()
                if _startswith(target, "/"):
                    done.clear()
                todo.extend(_reversed(_split(target, "/")))
        return "/" + _join(done)

    def inside(path, strict=True, _root=root, _prefix=root + "/", _startswith=str.startswith):
        return _startswith(path, _prefix) or (not strict and path == _root)

    def check_write(event, path, dir_fd=None, strict=True, _absolute=absolute, _normalize=normalize,
                    _real=real, _inside=inside, _startswith=str.startswith, _deny=deny):
        raw = _absolute(path, dir_fd)
        if raw and not _startswith(raw, "/"):
            return  # a descriptor of a pipe, socket or other non-file object
        target = _normalize(raw) if raw else raw
        if not _inside(target, strict) or not _inside(_real(raw), strict):
            _deny(f"{event} outside the sandbox directory is not allowed ({target or path})")

    def check_proc(path, _startswith=str.startswith, _split=str.split, _self=f"/proc/{self_pid}",
                   _other=audit.names_other_process, _secrets=_PROC_MEMORY_ENTRIES, _deny=deny):
        if not _startswith(path, "/proc/"):
            return
        if _other(path, _self):
            _deny(f"access to other processes' /proc entries is disabled ({path})")
        for part in _split(path, "/"):
            if part in _secrets:
                _deny(f"reading process memory and memory maps is disabled ({path})")

    hidden_real = tuple(os.path.realpath(h) for h in hidden)
    hidden_ids = []
    for secret in hidden_real:  # the files' identities: a hard link or bind mount has another name
        try:
            info = stat(secret)
        except OSError:
            continue
        hidden_ids.append((info.st_dev, info.st_ino))
    hidden_ids = frozenset(hidden_ids)

    def check_hidden(target, _str=str, _hidden=hidden_real, _deny=deny):
        for secret in _hidden:
            if target == secret or _str.startswith(target, secret + "/"):
                _deny(f"reading {secret} is not allowed (hidden from programs)")

    def check_open(args, _type=type, _str=str, _int=int, _stat=stat, _isdir=S_ISDIR,
                   _o_write=_O_WRITE, _o_dir=_O_DIR, _absolute=absolute, _normalize=normalize,
                   _real=real, _inside=inside, _check_write=check_write, _check_proc=check_proc,
                   _check_hidden=check_hidden, _deny=deny, _hidden_ids=hidden_ids):
        path, mode, flags = args[0], args[1], args[2]
        flags = flags if _type(flags) is _int else _o_write
        from_os_open = mode is None
        relative = from_os_open and _type(path) is _str and not _str.startswith(path, "/")
        if relative and ".." in _str.split(path, "/"):
            _deny(f"os.open with '..' in a relative path is not allowed ({path})")
        raw = _absolute(path)
        target = _normalize(raw) if _str.startswith(raw, "/") else raw
        _check_proc(target)
        _check_hidden(target)
        if _str.startswith(raw, "/"):  # the real path: aliases through links name the same file
            real_target = _real(raw)
            _check_proc(real_target)
            _check_hidden(real_target)
            if _hidden_ids:
                try:
                    info = _stat(real_target)
                except (OSError, ValueError):
                    info = None
                if info is not None and (info.st_dev, info.st_ino) in _hidden_ids:
                    _deny(f"reading {path} is not allowed (a hidden file under another name)")
        if flags & _o_write:
            if target != "/dev/null":
                _check_write("writing", path, None, False)  # root itself: NamedTemporaryFile(opener=)
        elif from_os_open and not _inside(target, False):
            try:
                is_dir = (flags & _o_dir) or _isdir(_stat(target).st_mode)
            except (OSError, ValueError):
                is_dir = False
            if is_dir:
                _deny("opening a directory handle outside the sandbox directory is not allowed")

    def hook(event, args, _str=str, _bytes=bytes, _type=type, _len=len, _self=self_pid,
             _path_events=_PATH_EVENTS, _path_event_names=_PATH_EVENT_NAMES,
             _process_events=_PROCESS_EVENTS, _network_events=_NETWORK_EVENTS,
             _introspection=_INTROSPECTION_EVENTS, _harmless_ctypes=_HARMLESS_CTYPES,
             _network=network, _subprocess_ok=subprocess_ok,
             _blocked_modules=blocked_modules, _always_blocked=_UNAUDITED_MODULES,
             _check_open=check_open, _check_write=check_write, _deny=deny,
             _import_error=ImportError, _mine=()):
        if event == "open":
            _check_open(args)
        elif event in _path_event_names:
            for name, paths in _path_events:
                if name == event:
                    for path_i, fd_i in paths:
                        dir_fd = args[fd_i] if fd_i is not None and fd_i < _len(args) else None
                        _check_write(event, args[path_i], dir_fd)
        elif event == "os.chdir":
            _check_write("changing directory", args[0], None, False)
        elif event == "sqlite3.connect":
            name = args[0]
            if (_type(name) is _str and _str.startswith(name, "file:")) or (
                    _type(name) is _bytes and _bytes.startswith(name, b"file:")):
                _deny("sqlite3 URI file names are disabled")
            _check_write(event, args[0], None, False)
        elif event == "import":
            # Raised by import statements and, with the spec's name, whenever an extension module
            # is loaded (also through importlib or a loader called directly). The C code names
            # the init function after the last component, so that is what is checked.
            name = _str.__str__(args[0]).rpartition(".")[2]
            if name == "_posixsubprocess" and name in _blocked_modules:
                _deny("process creation is disabled (import _posixsubprocess)")
            elif name in _blocked_modules:
                why = ("it writes files or starts interpreters without audit events"
                       if name in _always_blocked else "it writes files without audit events, and "
                       "neither bubblewrap nor Landlock confines file changes here")
                raise _import_error(f"sandbox: module {name} is disabled ({why})")
        elif event == "os.symlink" or event == "os.link":
            _deny(f"creating links is disabled ({event})")
        elif event == "object.__setattr__" or event == "object.__delattr__":
            for own in _mine:
                if own is args[0]:
                    _deny("changing the sandbox's audit hook is disabled")
        elif event in _introspection:
            _deny(f"{event} is disabled")
        elif _str.startswith(event, "ctypes."):
            if event not in _harmless_ctypes:
                _deny(f"ctypes is disabled ({event})")
        elif not _network and (_str.startswith(event, "socket.") or event in _network_events):
            _deny(f"network access is disabled ({event})")
        elif not _subprocess_ok:
            if event in _process_events:
                _deny(f"process creation is disabled ({event})")
            elif event == "os.kill" and args[0] != _self:
                _deny("sending signals to other processes is disabled")

    own_functions = (deny, normalize, fd_path, absolute, proc_route, real, inside, check_write,
                     check_proc, check_hidden, check_open, audit.names_other_process)  # the shared one too: its __code__ must not change
    hook.__defaults__ = hook.__defaults__[:-1] + (own_functions + (hook,),)
    return hook


# --------------------------------------------------------------------------- the worker


class _CappedRaw(io.RawIOBase):
    """A raw binary stream writing the first ``cap + 1`` bytes to ``fd`` and dropping the rest.

    The one extra byte lets the parent see that output was truncated without reading further.
    """

    def __init__(self, fd: int, cap: int):
        super().__init__()
        self._fd, self._room = fd, cap + 1

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        size = len(data)
        if self._room > 0:
            chunk = bytes(data[: self._room])
            self._room -= len(chunk)
            while chunk:
                chunk = chunk[os.write(self._fd, chunk):]
        return size


def _capped_stdio(cap: int) -> None:
    """Point ``sys.stdout``/``sys.stderr`` (and the ``__std*__`` names) at capped UTF-8 streams."""
    for name, fd in (("stdout", 1), ("stderr", 2)):
        stream = io.TextIOWrapper(io.BufferedWriter(_CappedRaw(fd, cap)), encoding="utf-8",
                                  errors="backslashreplace", line_buffering=True)
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)


def _memory_error(cfg: dict) -> str:
    return f"memory limit {cfg['memory_bytes'] >> 20} MB exceeded (MemoryError)"


def _describe_exception(exc: BaseException, program_file: str) -> str:
    """``"program raised T: message"`` plus the last lines of the traceback from the program on."""
    import traceback

    try:
        message = str(exc)[:2000]
    except BaseException:  # noqa: BLE001 - a hostile __str__
        message = "<unprintable message>"
    name = type(exc).__name__
    head = f"program raised {name}: {message}" if message else f"program raised {name}"
    try:
        tb = exc.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename != program_file:
            tb = tb.tb_next
        lines = "".join(traceback.format_exception(type(exc), exc, tb)).rstrip().splitlines()
    except BaseException:  # noqa: BLE001
        lines = []
    tail = "\n".join(lines[-20:])[-3000:]
    return head + ("\n" + tail if tail else "")


def _exit_message(code) -> str:
    """The error for ``SystemExit(code)`` raised before the entry function returned."""
    if code is None:
        code = 0
    elif type(code) is not int:
        code = 1
    return f"program exited with code {code} before returning a value"


def _select_kwargs(fn, kwargs: dict) -> dict:
    """The part of ``kwargs`` that ``fn``'s signature accepts (all of it when it has ``**kwargs``)."""
    import inspect

    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return dict(kwargs)
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return dict(kwargs)
    accepted = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    named = {p.name for p in params if p.kind in accepted}
    return {k: v for k, v in kwargs.items() if k in named}


class NotData(Exception):
    """The returned value cannot be turned into plain JSON data (the message says why)."""


class TooLarge(Exception):
    """The returned value's JSON encoding would exceed the result cap."""


class NumpyRefs:
    """numpy's array and scalar types, captured before the program runs (it may patch numpy)."""

    def __init__(self, np):
        self.ndarray, self.asarray, self.float64 = np.ndarray, np.asarray, np.float64
        self.scalar_types = frozenset(t for t in np.sctypeDict.values() if isinstance(t, type))


def to_plain(value, budget: list, np: NumpyRefs | None = None, depth: int = 0):
    """Convert a returned value to plain JSON data without trusting its methods.

    Subclasses of list/tuple/dict/str/int/float are read through the base type's own methods;
    numpy arrays (subclasses included) through a plain ``np.ndarray`` view: floating dtypes give
    float64 values, integer dtypes Python ints, boolean dtypes bools, object arrays are converted
    entry by entry; numpy scalars likewise. NaN and infinities are kept.

    Args:
        value: what the entry function returned.
        budget: one-element list holding a lower bound on the JSON bytes still allowed; each
            converted entry uses at least 2.
        np: numpy's types (:class:`NumpyRefs`), or None when numpy is not loaded.
        depth: current nesting depth; deeper than 200 is rejected.

    Returns:
        None, bool, int, float, str, or lists / str-keyed dicts of these.

    Raises:
        NotData: an unsupported type (complex, arbitrary objects, non-str dict keys...) or nesting
            deeper than 200 levels.
        TooLarge: the budget went below zero.
    """
    if depth > 200:
        raise NotData("nested more than 200 levels deep")
    budget[0] -= 2
    if budget[0] < 0:
        raise TooLarge()
    kind = type(value)
    if value is None or kind is bool or kind is int or kind is float:
        return value
    if isinstance(value, str):
        budget[0] -= len(value)
        return str.__str__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, (list, tuple)):
        items = list.__iter__(value) if isinstance(value, list) else tuple.__iter__(value)
        return [to_plain(item, budget, np, depth + 1) for item in items]
    if isinstance(value, dict):
        out = {}
        for key, item in dict.items(value):
            if not isinstance(key, str):
                raise NotData(f"dict keys must be str, got {type(key).__name__}")
            out[str.__str__(key)] = to_plain(item, budget, np, depth + 1)
        return out
    if np is not None and isinstance(value, np.ndarray):
        return _array_to_plain(np.ndarray.view(value, np.ndarray), budget, np, depth)
    if np is not None and kind in np.scalar_types:
        return _array_to_plain(np.asarray(value), budget, np, depth)
    raise NotData(f"values of type {kind.__name__} are not supported")


def _array_to_plain(arr, budget: list, np: NumpyRefs, depth: int):
    """Convert an exact ``np.ndarray`` (see :func:`to_plain`)."""
    budget[0] -= 2 * arr.size
    if budget[0] < 0:
        raise TooLarge()
    kind = arr.dtype.kind
    if kind == "f":
        return arr.astype(np.float64).tolist()
    if kind in "iub":
        return arr.tolist()
    if kind == "O":
        return to_plain(arr.tolist(), budget, np, depth + 1)
    raise NotData(f"numpy arrays of dtype {arr.dtype} are not supported")


def _not_data(reason) -> dict:
    return {"ok": False, "error": f"returned value is not JSON-serialisable numeric data: {reason}"}


def encode_value(value, cfg: dict, np: NumpyRefs | None) -> dict:
    """The result record for a returned value.

    Returns:
        ``{"text": json}`` with the encoded ``{"ok": true, "value": ...}`` record, or an error
        record ``{"ok": false, "error": ...}`` (not data, too large, out of memory).
    """
    cap = cfg["result_bytes"]
    too_large = {"ok": False, "error": f"result larger than {cap} bytes"}
    try:
        plain = to_plain(value, [cap], np)
        text = json.dumps({"ok": True, "value": plain}, allow_nan=True, separators=(",", ":"))
    except TooLarge:
        return too_large
    except NotData as exc:
        return _not_data(exc)
    except RecursionError:
        return _not_data("nested too deeply (or contains itself)")
    except ValueError as exc:  # e.g. an int with more digits than int -> str allows
        return _not_data(exc)
    except MemoryError:
        return {"ok": False, "error": _memory_error(cfg) + " while serialising the result"}
    if len(text) - len('{"ok":true,"value":}') > cap:
        return too_large
    return {"text": text}


def _run_program(workdir: str, cfg: dict, np: NumpyRefs | None) -> dict:
    """Execute ``program.py`` in a fresh module, call the entry function, return the result record."""
    import types

    program_file = "program.py"
    with open(os.path.join(workdir, program_file), encoding="utf-8") as fh:
        source = fh.read()
    with open(os.path.join(workdir, "kwargs.json"), encoding="utf-8") as fh:
        kwargs = json.load(fh)
    entry = cfg["entry"]
    module = types.ModuleType("program")
    module.__file__ = program_file
    sys.modules["program"] = module
    try:
        exec(compile(source, program_file, "exec", dont_inherit=True), module.__dict__)  # noqa: S102
        fn = module.__dict__.get(entry)
        if not callable(fn):
            what = "not defined" if fn is None else f"not callable (it is a {type(fn).__name__})"
            return {"ok": False, "error": f"entry function {entry!r} {what}"}
        value = fn(**_select_kwargs(fn, kwargs))
    except SystemExit as exc:
        return {"ok": False, "error": _exit_message(exc.code)}
    except MemoryError:
        return {"ok": False, "error": _memory_error(cfg)}
    except BaseException as exc:  # noqa: BLE001 - every program failure becomes a record
        return {"ok": False, "error": _describe_exception(exc, program_file)}
    return encode_value(value, cfg, np)


_CTYPES_PRIMITIVES = ("memmove", "memset", "string_at", "wstring_at", "_string_at", "_wstring_at",
                      "_memmove_addr", "_memset_addr", "_cast_addr", "_string_at_addr",
                      "_wstring_at_addr")


def _ctypes_disabled(*args, **kwargs):
    raise PermissionError("sandbox: ctypes is disabled (raw memory access)")


def _disarm_ctypes() -> None:
    """Replace ctypes' ready-made raw-memory functions by stubs (their calls raise no audit event).

    ctypes itself stays importable and ``cast`` stays (scipy uses both at import time); loading
    libraries and looking up symbols is refused by the audit hook. This only raises the bar:
    ctypes pointers still reach arbitrary memory, which is why the kernel layers exist.
    """
    for name in ("ctypes", "_ctypes"):
        module = sys.modules.get(name)
        if module is None:
            continue
        for attr in _CTYPES_PRIMITIVES:
            if attr in module.__dict__:
                if attr.endswith("_addr") or name == "_ctypes":
                    del module.__dict__[attr]
                else:
                    module.__dict__[attr] = _ctypes_disabled


def _sem_unlink_disabled(*args, **kwargs):
    raise PermissionError("sandbox: sem_unlink is disabled (it deletes files in /dev/shm without "
                          "audit events, and neither bubblewrap nor Landlock confines that here)")


def _disarm_sem_unlink() -> None:
    """Load ``_multiprocessing`` and replace its ``sem_unlink`` by a stub (weakest configuration).

    ``sem_unlink`` deletes ``/dev/shm/sem.*`` entries in C without an audit event, but the module
    must stay importable: ``multiprocessing.synchronize`` needs it and gymnasium (so discoverygym)
    imports that. The module uses multi-phase initialisation, so a second copy cannot come from a
    cache: loading one raises the ``import`` audit event, which the hook refuses.
    """
    try:
        import _multiprocessing
    except ImportError:
        return
    _multiprocessing.sem_unlink = _sem_unlink_disabled


def _preimport() -> NumpyRefs | None:
    """Import numpy and common standard modules before the audit hook is installed."""
    import functools  # noqa: F401
    import inspect  # noqa: F401
    import itertools  # noqa: F401
    import math  # noqa: F401
    import random  # noqa: F401
    import traceback  # noqa: F401
    import types  # noqa: F401

    try:
        import numpy
    except (ImportError, MemoryError):
        return None
    return NumpyRefs(numpy)


def _write_result(path: str, record: dict) -> None:
    """Write the result record; exit with :data:`RUNNER_FAILURE_EXIT` when that is impossible."""
    try:
        with open(path, "w", encoding="ascii") as fh:
            fh.write(record["text"] if "text" in record else json.dumps(record))
    except (OSError, MemoryError) as exc:
        os.write(2, f"sandbox: could not write the result: {exc}\n".encode())
        os._exit(RUNNER_FAILURE_EXIT)


def harden(workdir: str, network: bool, subprocess_ok: bool, supervisor_pid: int | None = None,
           landlock: bool = True) -> dict:
    """Apply the kernel-level confinement to this process (inherited by its children).

    In order: die with the supervisor, drop root capabilities, Landlock (writes only below
    ``workdir`` and to /dev/null), seccomp. The C library handle is local to this function, so no
    ctypes function object outlives it.

    Args:
        workdir: the private directory.
        network: leave sockets allowed.
        subprocess_ok: leave fork/exec/signals allowed.
        supervisor_pid: when given, exit at once if the parent is no longer that process.
        landlock: ``False`` skips Landlock, as on a kernel without it (for tests: the parent sets
            it from ``DISCOVERYGYM_SANDBOX_NO_LANDLOCK``).

    Returns:
        ``{"landlock": bool, "seccomp": bool}``, which layers are active.
    """
    libc = _libc()
    _prctl(libc, _PR_SET_PDEATHSIG, signal.SIGKILL)
    if supervisor_pid is not None and os.getppid() != supervisor_pid:
        os._exit(RUNNER_FAILURE_EXIT)
    drop_capabilities(libc)
    landlock = install_landlock(libc, workdir) if landlock else False
    seccomp = install_seccomp(libc, network, subprocess_ok)
    return {"landlock": landlock, "seccomp": seccomp}


def run_worker(workdir: str, cfg: dict, supervisor_pid: int | None = None) -> None:
    """Harden this process, run the program and write ``result.json``. Never returns."""
    if sys.path and sys.path[0] == os.path.dirname(os.path.abspath(__file__)):
        del sys.path[0]
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # over-long writes fail with EFBIG instead
    layers = harden(workdir, cfg["network"], cfg["allow_subprocess"], supervisor_pid,
                    landlock=cfg.get("landlock", True))
    np = _preimport()
    _disarm_ctypes()
    files_confined = layers["landlock"] or cfg.get("bwrap", False)
    if not files_confined:
        _disarm_sem_unlink()
    _capped_stdio(cfg["output_bytes"])
    with open(os.path.join(workdir, STARTED_MARKER), "w"):
        pass
    sys.addaudithook(_make_audit_hook(workdir, cfg["network"], cfg["allow_subprocess"],
                                      layers["seccomp"], files_confined, tuple(cfg.get("hidden_paths", ()))))
    try:
        record = _run_program(workdir, cfg, np)
    except MemoryError:
        record = {"ok": False, "error": _memory_error(cfg)}
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001, S110 - the program may have replaced or closed them
            pass
    _write_result(os.path.join(workdir, "result.json"), record)
    os._exit(0)


if __name__ == "__main__":
    supervise(sys.argv[1])
