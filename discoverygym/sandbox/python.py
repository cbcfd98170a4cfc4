"""Run an untrusted Python program in a sandboxed child process and bring back the data it returns.

The program is Python source defining an entry function (``construct`` by default). It runs in
a fresh process, its return value comes back as plain JSON data (lists, floats, ints, bools,
strings, str-keyed dicts, ``None``; NaN and infinities kept), and nothing else crosses back: the
sandbox never computes, reads or trusts a score. Verifiers score the returned data afterwards.

Isolation, outermost first:

* **bubblewrap** when available (``bwrap``): new pid, ipc, uts and (unless ``network``) network
  namespaces, the whole file system read-only except the private directory, a private ``/tmp``,
  ``/dev`` and ``/proc``, no capabilities, a new session, killed with its parent. Read-only still
  means readable: the program can read every file the user can read outside ``/tmp``. Under
  ``/tmp`` it sees only what it may need: the interpreter and numpy, the ``discoverygym``
  package, the ``sys.path`` entries and the current working directory (all read-only, so a
  project cloned below ``/tmp`` works as anywhere else), never the temp directory holding the
  runs' private directories (where ``TMPDIR`` puts that outside ``/tmp``, it is readable too).
* **supervisor**: the child's first process sets the rlimits (address space, CPU time, file size,
  core dumps, process count for non-root users), the CPU affinity and ``PR_SET_CHILD_SUBREAPER``,
  forks the worker and, when the worker ends, kills every remaining descendant, double-forked
  daemons included. After the wall-clock timeout the parent has the supervisor kill the tree,
  then kills the process group and any process still carrying this run's token in its
  environment.
* **worker**, kernel level: root capabilities dropped, no-new-privileges, Landlock (Linux 5.13+
  where enabled: file-system changes only inside the private directory), a seccomp filter
  (x86_64 and aarch64: no fork/exec, no signals to other processes, no sockets unless
  ``network``, no ptrace, mounts, device nodes, links, io_uring, ...).
* **worker**, Python level: an audit hook (no writes outside the private directory, no ctypes
  library loading, no network, no subprocesses, no tracing or ``gc`` walks), then the program.

Without bubblewrap (``SandboxLimits(use_bwrap=False)``, ``DISCOVERYGYM_SANDBOX_NO_BWRAP=1``, or
bwrap missing) the program can read every file the user can read, ``/tmp`` included, and where
the kernel offers no Landlock either (``DISCOVERYGYM_SANDBOX_NO_LANDLOCK=1`` simulates that),
files outside the private directory are protected by the audit hook alone, which a determined
program can defeat through ctypes pointers; see :func:`run_program`.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import select
import shutil
import signal
import site
import stat
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from functools import lru_cache
from importlib.util import find_spec
from typing import Any

from discoverygym.errors import SandboxError
from discoverygym.sandbox._process import (
    bwrap_usr_args,
    choose_backend,
    kill_group,
    read_available,
    remove_tree,
)
from discoverygym.sandbox._runner import RUNNER_FAILURE_EXIT, STARTED_MARKER
from discoverygym.sandbox.probes import NO_BWRAP_ENV, NO_LANDLOCK_ENV, command_succeeds, switched_off

__all__ = ["NO_BWRAP_ENV", "NO_LANDLOCK_ENV", "SandboxLimits", "SandboxResult", "bwrap_available",
           "run_program"]

#: Environment variable carrying each run's unique token (used to find stray processes).
TOKEN_ENV = "DISCOVERYGYM_SANDBOX_TOKEN"

_RUNNER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_runner.py")
_THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "BLIS_NUM_THREADS")
_RECORD_OVERHEAD = 4096  # bytes of a result record beyond the value itself
_cpu_rotation = itertools.count()


@dataclass(frozen=True)
class SandboxLimits:
    """Resource limits and permissions of one sandboxed run.

    Attributes:
        timeout_s: wall-clock limit in seconds, start-up included; after it the whole process
            tree is killed (SIGKILL). Capped by the wall deadline of a budget run when one is set
            (:func:`~discoverygym.envs.operators.deadline.deadline_at`; the error then says so).
        memory_mb: address-space limit (``RLIMIT_AS``) of the child in MiB; allocations beyond it
            raise ``MemoryError`` in the program. Python plus numpy needs about 150.
        cpu_s: CPU-time limit (``RLIMIT_CPU``) in seconds; ``None`` means ``ceil(timeout_s) + 1``.
        cpus: number of CPUs the child may use (affinity and the OMP/MKL/OpenBLAS/numexpr thread
            variables).
        output_bytes: how much of stdout and of stderr is kept (each; the head is kept and the
            truncation is marked).
        result_bytes: largest JSON encoding of the returned value accepted, in bytes (checked on
            the result file's size before it is read).
        result_values: largest number of JSON values (numbers, strings, ``None``, lists and
            dicts, each counted once) accepted in the returned value, or ``None`` for no cap
            beyond ``result_bytes``. Counted on the raw bytes (commas and opening brackets, an
            upper bound) before anything is parsed, so a value of millions of tiny rows costs the
            parent a byte scan, not a parse.
        network: allow sockets (also leaves the network namespace shared). Off by default.
        use_bwrap: ``True`` requires bubblewrap, ``False`` never uses it, ``None`` uses it when
            it is installed and works.
        allow_subprocess: allow fork/exec/signals to other processes inside the sandbox (for
            trusted programs and tests only: exec'd programs are not under the audit hook).
        hidden_paths: absolute paths (files or directories) the program must not read, e.g. the
            raw data behind a held-out split. Under bubblewrap they are replaced by an empty file
            / empty directory (hidden from every library); without bubblewrap only Python-level
            opens are refused (the audit hook), so C libraries such as HDF5 can still read them.
        minimal_fs: under bubblewrap, show the program only what running Python needs instead of
            the whole (read-only) file system: ``/usr`` and the ``/bin``, ``/lib*`` tops, ``/etc``,
            the interpreter's prefixes (the virtual environment and its site-packages included),
            numpy's directory and the sandbox runner's own directory, plus the private
            directory, ``/tmp``, ``/dev`` and ``/proc``. Home directories, checkouts (and their
            ``.git``), caches and other copies of a data set are then absent, so ``hidden_paths``
            covers the one copy that remains (the installed package's). For problems whose
            labels are public files (held-out splits); without bubblewrap it changes nothing.

    Raises:
        ValueError: a limit out of range. TypeError: a limit of the wrong type.
    """

    timeout_s: float = 10.0
    memory_mb: int = 2048
    cpu_s: int | None = None
    cpus: int = 1
    output_bytes: int = 64_000
    result_bytes: int = 64_000_000
    result_values: int | None = None
    network: bool = False
    use_bwrap: bool | None = None
    allow_subprocess: bool = False
    hidden_paths: tuple[str, ...] = ()
    minimal_fs: bool = False

    def __post_init__(self) -> None:
        _require_number("timeout_s", self.timeout_s, 0.0, exclusive=True)
        for name, low in (("memory_mb", 16), ("cpus", 1), ("output_bytes", 0), ("result_bytes", 1)):
            _require_int(name, getattr(self, name), low)
        if self.cpu_s is not None:
            _require_int("cpu_s", self.cpu_s, 1)
        if self.result_values is not None:
            _require_int("result_values", self.result_values, 1)
        if not isinstance(self.hidden_paths, tuple) or not all(
                isinstance(p, str) and os.path.isabs(p) for p in self.hidden_paths):
            raise TypeError(f"hidden_paths must be a tuple of absolute paths, got {self.hidden_paths!r}")
        for name in ("network", "allow_subprocess", "minimal_fs"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"SandboxLimits.{name} must be a bool")
        if self.use_bwrap is not None and not isinstance(self.use_bwrap, bool):
            raise TypeError("SandboxLimits.use_bwrap must be True, False or None")

    @property
    def cpu_limit_s(self) -> int:
        """The effective CPU-time limit in seconds (``cpu_s`` or ``ceil(timeout_s) + 1``)."""
        return self.cpu_s if self.cpu_s is not None else math.ceil(self.timeout_s) + 1


def _require_number(name: str, value: Any, low: float, exclusive: bool = False) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"SandboxLimits.{name} must be a number, got {type(value).__name__}")
    if not math.isfinite(value) or value < low or (exclusive and value == low):
        raise ValueError(f"SandboxLimits.{name} must be a finite number > {low}, got {value!r}")


def _require_int(name: str, value: Any, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"SandboxLimits.{name} must be an int, got {type(value).__name__}")
    if value < low:
        raise ValueError(f"SandboxLimits.{name} must be >= {low}, got {value}")


@dataclass
class SandboxResult:
    """What a sandboxed run produced.

    Attributes:
        ok: the program ran and its entry function returned a value that was brought back.
        value: that value as plain JSON data (lists, floats, ints, bools, str, str-keyed dicts,
            ``None``; NaN/inf preserved); ``None`` when not ``ok``. Untrusted: verify it.
        error: ``None`` when ``ok``, else a human-readable reason, e.g. ``"timed out after 2.0 s
            (wall clock)"``, ``"memory limit 512 MB exceeded (MemoryError)"``, ``"program raised
            ValueError: ..."`` followed by the last traceback lines.
        stdout: the program's standard output, at most ``output_bytes`` (UTF-8, truncation marked).
        stderr: its standard error, likewise.
        elapsed_s: wall-clock seconds from process start to exit (compile time for syntax errors).
        returncode: exit status of the sandbox process (negative: killed by that signal); ``None``
            when no process was started.
        timed_out: the wall-clock limit was hit.
        backend: ``"bwrap"`` or ``"fallback"``.
    """

    ok: bool
    value: Any
    error: str | None
    stdout: str
    stderr: str
    elapsed_s: float
    returncode: int | None
    timed_out: bool
    backend: str


def bwrap_available() -> bool:
    """Whether bubblewrap is installed and can create this module's sandbox here.

    Tried once per process (about 10 ms) and cached; returns False whenever the environment
    variable ``DISCOVERYGYM_SANDBOX_NO_BWRAP`` is set to anything but ``""`` or ``"0"``.

    Returns:
        True when ``run_program`` can use the ``"bwrap"`` backend.
    """
    return not switched_off(NO_BWRAP_ENV) and _bwrap_works()


@lru_cache(maxsize=1)
def _bwrap_works() -> bool:
    exe = shutil.which("bwrap")
    if exe is None or not sys.executable:
        return False
    probe_dir = os.path.realpath(tempfile.mkdtemp(prefix="discoverygym-bwrap-probe-"))
    try:
        return command_succeeds(_bwrap_prefix(exe, probe_dir, network=False) + [sys.executable, "-S", "-c", ""])
    finally:
        remove_tree(probe_dir)


def _bwrap_prefix(exe: str, workdir: str, network: bool, hidden: tuple[str, ...] = (),
                  minimal_fs: bool = False) -> list[str]:
    """The bwrap command line up to ``--``: read-only root, private /tmp, /dev, /proc, rw workdir.

    What lies under /tmp and the program needs or may expect to read is bound back read-only
    (:func:`_visible_paths_under_tmp`), so a project cloned below /tmp behaves as anywhere else;
    the directory holding the sandbox directories stays hidden even when one of those paths
    contains it. With ``minimal_fs`` the root is empty instead and only :func:`_minimal_paths`
    are bound read-only (see :attr:`SandboxLimits.minimal_fs`).
    """
    args = [exe, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc",
            "--unshare-uts", "--unshare-cgroup-try"]
    if not network:
        args.append("--unshare-net")
    if os.geteuid() == 0:
        args += ["--cap-drop", "ALL"]
    temp_root = os.path.dirname(workdir)
    if minimal_fs:
        args += [*bwrap_usr_args(), "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
        shown = [p for p in _minimal_paths() if not p.startswith("/usr/")]
        for path in shown:  # sorted: an ancestor comes before what lies below it
            args += ["--ro-bind", path, path]
        if any(_is_within(temp_root, p) for p in shown):
            args += ["--tmpfs", temp_root]
    else:
        args += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
        covering, others = [], []
        for path in _visible_paths_under_tmp():
            (covering if _is_within(temp_root, path) else others).append(path)
        if covering:  # ancestors of the temp root: bind the outermost, then hide the temp root again
            args += ["--ro-bind", covering[0], covering[0], "--tmpfs", temp_root]
        kept: list[str] = []
        for path in others:  # sorted: an ancestor comes before what lies below it
            shown_already = any(_is_within(path, k) for k in kept) or (
                bool(covering) and _is_within(path, covering[0]) and not _is_within(path, temp_root))
            if not shown_already:
                kept.append(path)
                args += ["--ro-bind", path, path]
    for path in hidden:  # after the binds above, so they cover what those exposed
        real = os.path.realpath(path)
        if os.path.isdir(real):
            args += ["--tmpfs", real]
        elif os.path.exists(real):
            args += ["--ro-bind", "/dev/null", real]
    return args + ["--bind", workdir, workdir, "--chdir", workdir, "--"]


def _minimal_paths() -> list[str]:
    """What a ``minimal_fs`` sandbox shows besides ``/usr`` (existing paths, outermost only, sorted).

    ``/etc``, the interpreter's prefixes and directory (as given and resolved: a virtual
    environment is a prefix, its site-packages inside it), numpy's directory and the runner's
    directory. Never ``sys.path`` entries or the working directory (a checkout), and never the
    ``discoverygym`` package beyond ``sandbox/``.
    """
    candidates = {"/etc"}
    for path in _interpreter_paths():
        candidates.update({os.path.abspath(path), os.path.realpath(path)})
    found = sorted(p for p in candidates if os.path.exists(p) and p != "/")
    outermost: list[str] = []
    for path in found:
        if not any(_is_within(path, kept) for kept in outermost):
            outermost.append(path)
    return outermost


def _is_within(path: str, ancestor: str) -> bool:
    """Whether ``path`` is ``ancestor`` or lies below it (both absolute and normalised)."""
    return path == ancestor or path.startswith(ancestor.rstrip("/") + "/")


def _visible_paths_under_tmp() -> list[str]:
    """Existing paths strictly below /tmp to bind back read-only into the sandbox, sorted.

    The interpreter, its libraries and numpy (cached), and, read at each call: every
    ``sys.path`` entry, the directory of the ``discoverygym`` package (an editable install
    imports it from there) and the current working directory. Both the path as given and its
    real path are used, so symbolic links resolve inside the sandbox as outside. /tmp itself is
    never bound (it would expose other runs' private directories).
    """
    candidates = set(_interpreter_paths())
    candidates.update(entry for entry in sys.path if isinstance(entry, str))
    candidates.add(os.path.dirname(os.path.dirname(_RUNNER)))  # the discoverygym package
    try:
        candidates.add(os.getcwd())
    except OSError:
        pass
    found = set()
    for path in candidates:
        try:
            variants = {os.path.abspath(path), os.path.realpath(path)}
        except (OSError, ValueError):
            continue
        for variant in variants:
            if variant.startswith("/tmp/") and os.path.exists(variant):
                found.add(variant)
    return sorted(found)


@lru_cache(maxsize=1)
def _interpreter_paths() -> tuple[str, ...]:
    """The interpreter's prefixes and directory, this runner's directory and numpy's directory."""
    candidates = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
                  os.path.dirname(os.path.abspath(sys.executable)),
                  os.path.dirname(os.path.realpath(sys.executable)), os.path.dirname(_RUNNER)}
    numpy_dir = _numpy_site_dir()
    if numpy_dir:
        candidates.add(numpy_dir)
    return tuple(sorted(candidates))


@lru_cache(maxsize=1)
def _numpy_site_dir() -> str | None:
    """The directory numpy is imported from, or None when numpy is not installed."""
    try:
        spec = find_spec("numpy")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    return os.path.dirname(os.path.dirname(os.path.abspath(spec.origin)))


def _extra_pythonpath() -> str | None:
    """numpy's directory when the interpreter would not find it by itself (e.g. via PYTHONPATH)."""
    numpy_dir = _numpy_site_dir()
    if numpy_dir is None:
        return None
    site_dirs = {os.path.realpath(p) for p in getattr(site, "getsitepackages", list)()}
    return None if os.path.realpath(numpy_dir) in site_dirs else numpy_dir


def run_program(source: str, entry: str = "construct", kwargs: dict | None = None,
                limits: SandboxLimits | None = None) -> SandboxResult:
    """Run ``source`` in the sandbox, call its entry function and return the value it returns.

    The source is compiled here first (a syntax error returns at once, no process started), then
    executed as module ``program`` in a fresh child process whose working directory, ``HOME``
    and ``TMPDIR`` are a private temporary directory (removed afterwards). The entry function
    receives the items of ``kwargs`` its signature accepts (all of them if it takes
    ``**kwargs``). Its return value is converted in the child to plain JSON data: lists/tuples,
    ints, floats (NaN/inf kept), bools, str, str-keyed dicts, ``None``; numpy arrays and scalars
    (subclasses included, read through a plain ``ndarray`` view, never through overridden
    methods): floating dtypes become floats, integer dtypes ints, boolean dtypes bools.

    Everything the program does, including crashing, hanging, exhausting memory or attacking the
    sandbox, comes back as ``ok=False`` with a specific ``error``; this function only raises for
    bad arguments or when the sandbox itself cannot start.

    Known limits: the program can read any file the user can read (other processes' ``/proc``
    entries excepted); with bubblewrap, ``/tmp`` is private apart from the paths bound back
    read-only (interpreter, numpy, the ``discoverygym`` package, ``sys.path`` entries and the
    current working directory when they lie below ``/tmp``). Without bubblewrap it also sees the
    host's processes and network namespace (sockets stay blocked by seccomp and the audit hook).
    Without bubblewrap and without Landlock, writes outside the private directory are refused
    only by the audit hook, which ctypes pointer tricks or third-party C extensions that open
    files themselves can get around (the standard library's modules that do so are refused);
    seccomp still blocks process creation, signals to other processes, sockets and device nodes
    or FIFOs at the kernel level (x86_64 and aarch64 only). A program may fill the disk with many
    files in its private directory until the time limit (each file is capped by
    ``RLIMIT_FSIZE``). The result file is written by the program's own process, so the value is
    exactly as trustworthy as the program.

    Args:
        source: Python source code defining the entry function.
        entry: name of the function to call (an identifier), ``"construct"`` by default.
        kwargs: JSON-serialisable keyword arguments (str keys; lists, numbers, str, dicts; numpy
            arrays are converted to lists), e.g. ``{"seed": 0, "parent": [...]}``.
        limits: resource limits and permissions; ``SandboxLimits()`` by default.

    Returns:
        :class:`SandboxResult`.

    Raises:
        TypeError: ``source``/``entry`` not str, ``kwargs`` not a str-keyed dict or not
            JSON-serialisable, ``limits`` not a :class:`SandboxLimits`.
        ValueError: ``entry`` not an identifier, ``kwargs`` circular.
        BackendUnavailable: ``limits.use_bwrap`` is True but bubblewrap does not work here.
        SandboxError: the child process could not be started at all.
    """
    limits = _check_arguments(source, entry, kwargs, limits)
    kwargs_text = _encode_kwargs(kwargs or {})
    backend = _choose_backend(limits)
    start = time.monotonic()
    compile_error = _compile_error(source)
    if compile_error is not None:
        return SandboxResult(False, None, compile_error, "", "", time.monotonic() - start, None,
                             False, backend)
    workdir = os.path.realpath(tempfile.mkdtemp(prefix="discoverygym-sandbox-"))
    try:
        return _run_in(workdir, source, entry, kwargs_text, limits, backend)
    finally:
        remove_tree(workdir)


def _check_arguments(source: Any, entry: Any, kwargs: Any, limits: Any) -> SandboxLimits:
    if not isinstance(source, str):
        raise TypeError(f"source must be a str, got {type(source).__name__}")
    if not isinstance(entry, str):
        raise TypeError(f"entry must be a str, got {type(entry).__name__}")
    if not entry.isidentifier():
        raise ValueError(f"entry must be a Python identifier, got {entry!r}")
    if kwargs is not None and not isinstance(kwargs, dict):
        raise TypeError(f"kwargs must be a dict or None, got {type(kwargs).__name__}")
    if kwargs and not all(isinstance(key, str) for key in kwargs):
        raise TypeError("kwargs keys must all be str")
    if limits is None:
        return SandboxLimits()
    if not isinstance(limits, SandboxLimits):
        raise TypeError(f"limits must be a SandboxLimits, got {type(limits).__name__}")
    return limits


def _json_default(obj: Any) -> Any:
    """``json.dumps`` fallback for kwargs: numpy arrays and scalars become lists and numbers."""
    if type(obj).__module__ == "numpy" and hasattr(obj, "tolist"):
        return obj.tolist()
    raise TypeError(f"kwargs value of type {type(obj).__name__} is not JSON-serialisable")


def _encode_kwargs(kwargs: dict) -> str:
    try:
        return json.dumps(kwargs, allow_nan=True, default=_json_default)
    except TypeError as exc:
        raise TypeError(f"kwargs must be JSON-serialisable: {exc}") from None
    except ValueError as exc:
        raise ValueError(f"kwargs must be JSON-serialisable: {exc}") from None


def _choose_backend(limits: SandboxLimits) -> str:
    return choose_backend(limits.use_bwrap, limits.use_bwrap is not False and bwrap_available(),
                          "bubblewrap (bwrap) is not installed or cannot create a sandbox here "
                          f"(or {NO_BWRAP_ENV} is set); use SandboxLimits(use_bwrap=None) to fall back")


def _compile_error(source: str) -> str | None:
    """The error message when ``source`` does not compile, else None."""
    try:
        compile(source, "program.py", "exec", dont_inherit=True)
    except SyntaxError as exc:
        where = f" (line {exc.lineno})" if exc.lineno else ""
        text = f"\n    {exc.text.strip()}" if exc.text and exc.text.strip() else ""
        return f"program has a syntax error{where}: {exc.msg}{text}"
    except (ValueError, OverflowError, RecursionError, MemoryError) as exc:
        return f"program could not be compiled: {type(exc).__name__}: {exc}"
    return None


def _cpu_set(cpus: int) -> list[int]:
    """``cpus`` CPUs from this process's affinity mask, rotating between calls."""
    try:
        allowed = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return []
    if cpus >= len(allowed):
        return allowed
    first = next(_cpu_rotation) * cpus
    return [allowed[(first + i) % len(allowed)] for i in range(cpus)]


def _write_inputs(workdir: str, source: str, kwargs_text: str, entry: str,
                  limits: SandboxLimits, status_fd: int, backend: str) -> None:
    """Write program.py, kwargs.json and config.json (read by the runner) into ``workdir``."""
    config = {
        "entry": entry,
        "status_fd": status_fd,
        "memory_bytes": limits.memory_mb << 20,
        "cpu_s": limits.cpu_limit_s,
        "fsize_bytes": limits.result_bytes + 2 * limits.output_bytes + (1 << 20),
        "nproc_margin": 256 if limits.allow_subprocess else 64,
        "cpu_set": _cpu_set(limits.cpus),
        "network": limits.network,
        "allow_subprocess": limits.allow_subprocess,
        "landlock": not switched_off(NO_LANDLOCK_ENV),
        "bwrap": backend == "bwrap",
        "output_bytes": limits.output_bytes,
        "result_bytes": limits.result_bytes,
        "hidden_paths": [os.path.realpath(p) for p in limits.hidden_paths],
    }
    files = {"program.py": source, "kwargs.json": kwargs_text, "config.json": json.dumps(config)}
    for name, text in files.items():
        with open(os.path.join(workdir, name), "w", encoding="utf-8", errors="surrogatepass") as fh:
            fh.write(text)


def _child_env(workdir: str, limits: SandboxLimits, token: str) -> dict[str, str]:
    """The child's whole environment: minimal, thread counts pinned, this run's token."""
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": workdir,
        "TMPDIR": workdir,
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
        "PYTHONNOUSERSITE": "1",
        "MALLOC_ARENA_MAX": "2",
        TOKEN_ENV: token,
    }
    env.update(dict.fromkeys(_THREAD_VARS, str(limits.cpus)))
    extra = _extra_pythonpath()
    if extra:
        env["PYTHONPATH"] = extra
    return env


def _command(workdir: str, limits: SandboxLimits, backend: str) -> list[str]:
    if not sys.executable:
        raise SandboxError("sys.executable is unknown; cannot start a Python child process")
    python = [sys.executable, "-s", "-B", _RUNNER, workdir]
    if backend == "bwrap":
        prefix = _bwrap_prefix(shutil.which("bwrap") or "bwrap", workdir, limits.network, limits.hidden_paths,
                               limits.minimal_fs)
        return prefix + python
    return python


def _run_deadline_left() -> float:
    """Seconds left before the wall deadline of the run this process serves (``inf`` without one).

    A budget run (``discoverygym train --budget-s``) sets it around each step
    (:func:`~discoverygym.envs.operators.deadline.deadline_at`); a program's timeout is capped by
    it, so that no program runs past the budget. Read without importing the env package.
    """
    deadline = sys.modules.get("discoverygym.envs.operators.deadline")
    return deadline.remaining() if deadline is not None else math.inf


def _new_token() -> str:
    """A fresh random token identifying one run's processes."""
    return uuid.uuid4().hex


def _run_in(workdir: str, source: str, entry: str, kwargs_text: str, limits: SandboxLimits,
            backend: str) -> SandboxResult:
    """Start the child in ``workdir``, wait for it, clean up and read what it left."""
    token = _new_token()
    status_r, status_w = os.pipe()
    try:
        _write_inputs(workdir, source, kwargs_text, entry, limits, status_w, backend)
        cmd, env = _command(workdir, limits, backend), _child_env(workdir, limits, token)
        with open(os.path.join(workdir, "stdout.txt"), "w+b") as out, \
                open(os.path.join(workdir, "stderr.txt"), "w+b") as err:
            start = time.monotonic()
            try:
                proc = _start(cmd, env, workdir, out, err, status_w)
            finally:
                os.close(status_w)  # the child holds the write end now
                status_w = -1
            until = start + limits.timeout_s
            left = _run_deadline_left()
            cut = left < limits.timeout_s  # a budget run's wall deadline comes first (issue 49)
            if cut:
                until = start + max(0.0, left)
            status, timed_out = _wait(proc, status_r, until, backend)
            elapsed = time.monotonic() - start
            if timed_out or not status.get("clean"):
                _sweep(token)
            stdout, stderr = _read_output(out, limits.output_bytes), _read_output(err, limits.output_bytes)
    finally:
        for fd in (status_r, status_w):
            if fd >= 0:
                os.close(fd)
    if timed_out and cut:
        ok, value, error = False, None, (f"timed out at the run's wall deadline after {elapsed:.1f} s (its "
                                         f"own limit {float(limits.timeout_s)} s)")
    elif timed_out:
        ok, value, error = False, None, f"timed out after {float(limits.timeout_s)} s (wall clock)"
    elif not status:
        ok, value, error = False, None, _abnormal_end("ended abnormally", proc.returncode, stderr)
    else:
        ok, value, error = _outcome(workdir, status, limits, stderr)
    return SandboxResult(ok, value, error, stdout, stderr, elapsed, proc.returncode, timed_out, backend)


def _start(cmd: list[str], env: dict, workdir: str, out, err, status_w: int) -> subprocess.Popen:
    """Popen the child in a new session, stdout/stderr to files, the status pipe's write end kept."""
    try:
        return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=err, cwd=workdir,
                                env=env, start_new_session=True, pass_fds=(status_w,))
    except OSError as exc:
        raise SandboxError(f"could not start the sandbox process: {exc}") from exc


def _wait(proc: subprocess.Popen, status_r: int, deadline: float, backend: str) -> tuple[dict, bool]:
    """Wait for the status pipe to close (all sandbox processes gone) or the deadline.

    Returns:
        (the supervisor's status record or ``{}``, whether the deadline passed). The process is
        reaped in both cases; after the deadline the tree is killed first.
    """
    data, timed_out = b"", True
    try:
        data, timed_out = _read_until_eof(status_r, deadline)
        if timed_out:
            _stop(proc, backend)
            data += read_available(status_r)
        else:
            try:
                proc.wait(timeout=5.0)
            except subprocess.TimeoutExpired:
                _stop(proc, backend)
    except BaseException:
        _stop(proc, backend)
        raise
    try:
        status = json.loads(data.split(b"\n", 1)[0] or b"{}")
    except ValueError:
        status = {}
    return (status if isinstance(status, dict) else {}), timed_out


def _read_until_eof(fd: int, deadline: float) -> tuple[bytes, bool]:
    """Read ``fd`` until end of file; returns (data, True) if ``deadline`` came first."""
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP)
    chunks = []
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return b"".join(chunks), True
        if not poller.poll(max(1, math.ceil(remaining * 1000))):
            continue
        data = os.read(fd, 65536)
        if not data:
            return b"".join(chunks), False
        chunks.append(data)


def _stop(proc: subprocess.Popen, backend: str) -> None:
    """Kill the sandbox: ask the supervisor to kill its tree, then SIGKILL the process group."""
    if proc.poll() is not None:
        return
    if backend == "fallback":
        try:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=1.0)
            return
        except subprocess.TimeoutExpired:
            pass
    kill_group(proc)


def _sweep(token: str, rounds: int = 50) -> None:
    """SIGKILL every process whose environment carries ``token`` until none is left."""
    needle = f"{TOKEN_ENV}={token}".encode()
    for _ in range(rounds):
        victims = _pids_with_env(needle)
        if not victims:
            return
        for pid in victims:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.01)


def _pids_with_env(needle: bytes) -> list[int]:
    """Pids (other than ours) whose /proc environ contains the entry ``needle``."""
    me, found = os.getpid(), []
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as fh:
                if needle in fh.read().split(b"\0"):
                    found.append(int(name))
        except OSError:
            continue
    return found


def _read_output(fh, cap: int) -> str:
    """The first ``cap`` bytes of a captured stream as text, with a truncation marker."""
    fh.seek(0)
    data = fh.read(cap + 1)
    text = data[:cap].decode("utf-8", "replace")
    return text + f"\n[output truncated after {cap} bytes]" if len(data) > cap else text


def _abnormal_end(what: str, returncode: int | None, stderr: str) -> str:
    """The error when the sandbox failed on its own (before the program ran, or its supervisor died)."""
    how = f"signal {-returncode}" if returncode is not None and returncode < 0 else f"exit code {returncode}"
    detail = stderr.strip()[-800:]
    return f"the sandbox {what} ({how})" + (f": {detail}" if detail else "")


def _outcome(workdir: str, status: dict, limits: SandboxLimits, stderr: str) -> tuple[bool, Any, str | None]:
    """(ok, value, error) from the result record and the worker's exit status."""
    record = _read_record(os.path.join(workdir, "result.json"), limits.result_bytes, limits.result_values)
    if isinstance(record, str):
        return False, None, record
    exit_code, signum = _worker_exit(status)
    if record is None and not os.path.lexists(os.path.join(workdir, STARTED_MARKER)):
        returncode = -signum if signum is not None else exit_code
        return False, None, _abnormal_end("failed before the program started, e.g. memory_mb too small "
                                          "for Python and numpy", returncode, stderr)
    if record is None or (record["ok"] and exit_code != 0):
        return False, None, _exit_error(exit_code, signum, limits)
    if record["ok"]:
        return True, record["value"], None
    return False, None, record["error"]


def _read_record(path: str, cap: int, max_values: int | None = None) -> dict | str | None:
    """The worker's result record; None when absent, an error message when unusable.

    The parent's work is bounded before any parsing: first the file's size (``cap`` bytes plus
    the record's own overhead), then, when ``max_values`` is given, the number of JSON values
    counted on the raw bytes (commas plus opening brackets and braces: an upper bound, C speed),
    and only then ``json.loads``.
    """
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return "sandbox protocol error: result.json is not a regular file"
    if info.st_size > cap + _RECORD_OVERHEAD:
        return f"result larger than {cap} bytes"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as fh:
            raw = fh.read(cap + _RECORD_OVERHEAD + 1)
    except OSError as exc:
        return f"sandbox protocol error: result.json is unreadable ({type(exc).__name__})"
    if max_values is not None:
        values = raw.count(b",") + raw.count(b"[") + raw.count(b"{") - 2  # the record's own { and ,
        if values > max_values:
            return (f"result holds more than {max_values} values (numbers and lists), the limit here; "
                    "refused before parsing")
    try:
        record = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        return f"sandbox protocol error: result.json is not valid JSON ({type(exc).__name__})"
    valid = isinstance(record, dict) and isinstance(record.get("ok"), bool) and (
        "value" in record if record["ok"] else isinstance(record.get("error"), str))
    return record if valid else "sandbox protocol error: malformed result record"


def _worker_exit(status: dict) -> tuple[int | None, int | None]:
    """(exit code, signal) of the worker from the supervisor's status record."""
    if isinstance(status.get("signal"), int):
        return None, status["signal"]
    exit_code = status.get("exit")
    return (exit_code if isinstance(exit_code, int) else None), None


def _exit_error(exit_code: int | None, signum: int | None, limits: SandboxLimits) -> str:
    """Why the worker ended without a usable result."""
    if signum is None:
        note = " (or the sandbox runner failed; see stderr)" if exit_code == RUNNER_FAILURE_EXIT else ""
        return f"program exited with code {exit_code} before returning a value{note}"
    if signum == signal.SIGXCPU:
        return f"CPU time limit {limits.cpu_limit_s} s exceeded (SIGXCPU)"
    if signum == signal.SIGKILL:
        return "program killed by SIGKILL (CPU time hard limit, out of memory, or killed)"
    if signum == signal.SIGSEGV:
        return "program crashed with SIGSEGV (segmentation fault, e.g. too deep recursion in C code)"
    try:
        name = signal.Signals(signum).name
    except ValueError:
        name = f"signal {signum}"
    return f"program killed by {name}"
