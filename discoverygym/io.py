"""Ground-floor helpers for run directories: atomic JSON writes and the CPUs this process may use.

Every layer that writes a run directory (search archives, trainers, IRFT rounds) writes through
:func:`atomic_write_json`, so a kill at any moment leaves either the old file or the new one.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["CONFIG_FILE", "MAX_INPUT_BYTES", "MAX_RUN_FILE_BYTES", "RUN_FILES", "RUN_KINDS", "atomic_write_json", "atomic_write_text",
           "available_cpus", "check_input_file", "check_run_files", "file_in_the_way", "json_lines",
           "limit_native_threads", "read_input_bytes", "read_input_text", "run_kind", "script_json"]

#: largest candidate file (program or construction) the CLI reads: 64 MiB. The largest bundled
#: construction is a few MB; a 1.6 M-point autocorrelation step function as JSON is about 30 MB.
MAX_INPUT_BYTES = 64 << 20


def _open_regular(path: str | os.PathLike, max_bytes: int) -> tuple[int, int]:
    """Open ``path`` once and check the open descriptor (``fstat``): ``(fd, size)`` of a regular file
    of at most ``max_bytes``; the caller closes ``fd``.

    ``O_NONBLOCK`` keeps a FIFO from blocking the open, and the checks run on what was opened, so a
    path that flips between a file and ``/dev/zero`` (a symlink swapped between a check and a read,
    issue 52, #8) is judged by what is actually read.

    Raises:
        ValueError: missing or unreadable, not a regular file (a directory, FIFO, socket or device),
            or larger than ``max_bytes``; one line naming the path.
    """
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except IsADirectoryError:
        raise ValueError(f"{path} is a directory; give a regular file") from None
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = ("a directory" if stat.S_ISDIR(info.st_mode) else "a FIFO" if stat.S_ISFIFO(info.st_mode)
                    else "a device" if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode)
                    else "a socket" if stat.S_ISSOCK(info.st_mode) else "not a regular file")
            raise ValueError(f"{path} is {kind}; give a regular file")
        if info.st_size > max_bytes:
            raise ValueError(f"{path} is {info.st_size} bytes, more than the {max_bytes}-byte limit on input files")
    except BaseException:
        os.close(fd)
        raise
    return fd, info.st_size


def check_input_file(path: str | os.PathLike, max_bytes: int = MAX_INPUT_BYTES) -> int:
    """Check that ``path`` is a regular file of at most ``max_bytes``; returns its size.

    The file is opened (non-blocking) and checked on the open descriptor, so a FIFO cannot block the
    caller and a device (``/dev/zero``, ``/dev/urandom``) is refused (issue 40, #7). A caller that
    reads the file afterwards should read it with :func:`read_input_bytes` / :func:`read_input_text`
    instead, which check and read one descriptor (no check-then-open window; issue 52, #8).

    Raises:
        ValueError: missing, not a regular file (a directory, FIFO, socket or device), or larger
            than ``max_bytes``; one line naming the path.
    """
    fd, size = _open_regular(path, max_bytes)
    os.close(fd)
    return size


def read_input_bytes(path: str | os.PathLike, max_bytes: int = MAX_INPUT_BYTES) -> bytes:
    """The content of the regular file ``path`` (at most ``max_bytes``), opened once and checked with
    ``fstat`` on that descriptor before it is read; a file that grows past the cap while being read
    is refused too (at most ``max_bytes + 1`` bytes are ever read).

    Raises:
        ValueError: as :func:`check_input_file`, or unreadable (one line naming the path).
    """
    fd, _ = _open_regular(path, max_bytes)
    try:
        os.set_blocking(fd, True)
        chunks, left = [], max_bytes + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror}") from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > max_bytes:
        raise ValueError(f"{path} grew past the {max_bytes}-byte limit on input files while being read")
    return data


def read_input_text(path: str | os.PathLike, max_bytes: int = MAX_INPUT_BYTES) -> str:
    """:func:`read_input_bytes` decoded as UTF-8.

    Raises:
        ValueError: as :func:`read_input_bytes`, or not UTF-8 text (one line naming the path).
    """
    try:
        return read_input_bytes(path, max_bytes).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None


#: largest file of a run directory read back (resume, report): 4 GiB. A run's own logs can be large
#: (every evaluated program, every response); the cap only stops a sparse or runaway file.
MAX_RUN_FILE_BYTES = 4 << 30

#: the configuration file of every run directory (train, search, post-train); :mod:`discoverygym.rundir`
#: hands it on with the one "free or resumable" check.
CONFIG_FILE = "config.json"

#: the files of a run directory that ``report`` and the resumes read back (those present are checked).
RUN_FILES = (CONFIG_FILE, "best.json", "archive.json", "usage.json", "outcomes.json", "archive.jsonl",
             "states.jsonl", "metrics.jsonl", "samples.jsonl", "rounds.jsonl", "buffer.jsonl", "state.json")


def check_run_files(run_dir: str | os.PathLike, max_bytes: int = MAX_RUN_FILE_BYTES) -> None:
    """Check the files a reader of ``run_dir`` will open (:data:`RUN_FILES`, post-train rounds'
    ``rounds/*/*/*/archive.jsonl``, TensorBoard event files), as :func:`check_input_file` does:
    each one present must be a regular file of at most ``max_bytes``, so a FIFO or a link to a
    device planted in a run directory cannot hang or flood the reader. A ``run_dir`` that is not a
    directory is left to the reader to refuse (it says what the path holds).

    Raises:
        ValueError: one line naming the first offending file.
    """
    root = Path(run_dir)
    if not root.is_dir():
        return
    paths = [root / name for name in RUN_FILES]
    paths += sorted(root.glob("rounds/*/*/*/archive.jsonl")) + sorted(root.glob("events.out.tfevents.*"))
    for path in paths:
        if os.path.lexists(path):
            check_input_file(path, max_bytes)



#: characters that must not appear literally inside a ``<script>`` block's data: ``<`` (``</script``,
#: ``<!--`` and ``<script`` change the HTML tokenizer's script-data state), ``>`` and ``&`` (for
#: good measure, as Django's ``json_script`` does) and U+2028/U+2029 (line terminators in old JS).
_SCRIPT_ESCAPES = {ord("<"): "\\u003c", ord(">"): "\\u003e", ord("&"): "\\u0026",
                   0x2028: "\\u2028", 0x2029: "\\u2029"}


def script_json(obj: Any) -> str:
    """``obj`` as JSON that is safe to embed in ``<script type="application/json">`` (the report's data).

    ``<``, ``>``, ``&``, U+2028 and U+2029 are written as JSON ``\\uXXXX`` escapes, so no candidate
    text (an error, a program, a stdout tail) can end the block or put the HTML tokenizer into the
    "script data escaped" state: ``<!--<script`` in a program swallowed the page's own script
    (issue 40, #5) when only ``</`` was escaped (WHATWG HTML §13.2.5.4 ff., script data states).
    ``JSON.parse`` of the block gives back ``obj`` exactly.

    Raises:
        ValueError: a non-finite float in ``obj`` (``allow_nan=False``).
    """
    return json.dumps(obj, separators=(",", ":"), allow_nan=False).translate(_SCRIPT_ESCAPES)


def json_lines(text: str) -> list[dict]:
    """The JSON-object lines of a JSON-lines text, in order; a torn or corrupt line (a run killed
    mid-write, or nested too deeply to parse), or a line holding anything but an object, is skipped.
    Only ``"\n"`` ends a line: ``str.splitlines`` would also split at U+2028, U+2029 and U+0085,
    which ``json.dumps(..., ensure_ascii=False)`` leaves unescaped inside strings (an LLM's response).

    Args:
        text: the file's content.

    Returns:
        One dict per complete object line.
    """
    rows = []
    for line in text.split("\n"):
        try:
            row = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows


def atomic_write_text(path: str | os.PathLike, text: str, fsync: bool = True) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically: a temporary file in the same folder, then ``os.replace``.

    A reader sees either the old file or the new one, never a partial write, even if the process
    is killed mid-write. ``fsync`` (default) also makes the new content survive an OS crash.
    Missing parent folders are created.

    Raises:
        OSError: the folder cannot be written (full disk, permissions); the old file is kept and
            the temporary file removed.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(tmp, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            if fsync:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def atomic_write_json(path: str | os.PathLike, data: Any, fsync: bool = True) -> None:
    """Write ``data`` as JSON to ``path`` atomically (:func:`atomic_write_text`).

    Non-finite floats are written as ``NaN`` / ``Infinity`` (``allow_nan``).

    Raises:
        OSError: as :func:`atomic_write_text` (the old file is kept).
        TypeError / ValueError: ``data`` is not JSON-serialisable (nothing is written).
    """
    atomic_write_text(path, json.dumps(data, allow_nan=True), fsync=fsync)


def file_in_the_way(run_dir: str | os.PathLike) -> Path | None:
    """The path that stops ``run_dir`` from being (or becoming) a directory, or ``None``.

    That is ``run_dir`` itself when it exists and is not a directory, or its nearest existing
    ancestor when that is not a directory. Every command refuses such a ``--run-dir`` up front.
    """
    run_dir = Path(run_dir)
    if run_dir.exists() and not run_dir.is_dir():
        return run_dir
    for parent in run_dir.parents:
        if parent.exists():
            return None if parent.is_dir() else parent
    return None


def available_cpus() -> int:
    """CPUs this process may run on (affinity-aware on Linux, ``os.cpu_count()`` elsewhere), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def limit_native_threads(n: int = 1) -> bool:
    """Limit the BLAS / OpenMP thread pools of this process to ``n`` threads (threadpoolctl).

    Small dense solves (SLSQP on 26 circles) run 3-4x slower when every process on a loaded
    2-core machine starts a BLAS thread per core; search workers and trainers therefore run their
    numerics single-threaded and get parallelism from processes instead.

    threadpoolctl only reaches libraries already loaded, and scipy loads its own OpenBLAS on the
    first ``import scipy.optimize`` / ``scipy.linalg`` (after numpy's): left alone, that library
    starts a busy-waiting thread per core, and two single-threaded SLSQP workers on 2 cores then
    run no faster than one. So the limit is also written into ``OPENBLAS_NUM_THREADS``,
    ``OMP_NUM_THREADS``, ``MKL_NUM_THREADS`` (read by a library when it loads, here and in child
    processes) before threadpoolctl limits the loaded ones.

    Returns:
        Whether a limit was set on the loaded libraries (``False`` when threadpoolctl is not
        installed; the environment variables are set either way).
    """
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(int(n))
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return False
    threadpool_limits(int(n))
    return True


#: the kinds of run directory: ``discoverygym train``, ``search`` and ``post-train`` write their kind
#: into ``config.json`` under the key ``"kind"``.
RUN_KINDS = ("train", "search", "post-train")


def run_kind(run_dir: str | os.PathLike) -> str | None:
    """What ``run_dir`` holds: ``"train"``, ``"search"``, ``"post-train"``, ``"other"`` or ``None``.

    The one reader of run-directory kinds. ``config.json``'s ``"kind"`` decides; directories
    written before runs recorded their kind are recognised by their files (search: ``C``/``L``/``K``
    in the config or ``archive.jsonl``; post-train: ``problems`` in the config, ``rounds/``,
    ``buffer.jsonl`` or ``state.json``; train: ``groups``, ``group_size`` or ``env_id`` with
    ``steps`` in the config, or ``checkpoints/latest.json``). ``"other"``: a ``config.json`` that is none of these (unreadable,
    not an object, unknown kind). ``None``: no run (absent path, a file, or a folder without any
    of these files).
    """
    d = Path(run_dir)
    if not d.is_dir():
        return None
    path = d / CONFIG_FILE
    if path.is_file():
        try:
            check_input_file(path)  # a FIFO named config.json must not block
            cfg = json.loads(path.read_text())
        except (OSError, ValueError, RecursionError):
            return "other"
        if not isinstance(cfg, dict):
            return "other"
        if "kind" in cfg:
            return cfg["kind"] if cfg["kind"] in RUN_KINDS else "other"
        if {"C", "L", "K"} <= cfg.keys():
            return "search"
        if "problems" in cfg:
            return "post-train"
        if "groups" in cfg or "group_size" in cfg or {"env_id", "steps"} <= cfg.keys() \
                or (d / "checkpoints" / "latest.json").exists():
            return "train"
        return "other"
    if (d / "rounds").is_dir() or (d / "buffer.jsonl").exists() or (d / "state.json").exists():
        return "post-train"
    if (d / "archive.jsonl").exists():
        return "search"
    if (d / "checkpoints" / "latest.json").exists():
        return "train"
    return None
