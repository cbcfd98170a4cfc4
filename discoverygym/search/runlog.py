"""The run directory: the single source of truth of a search run.

Files (``runs/<name>/``):

* ``config.json`` — the search configuration (written atomically at the start);
* ``archive.jsonl`` — append-only log, one JSON record per line: ``init`` (the initial state),
  ``batch`` (a generated batch: trajectory, step, inspiration ids, actions), ``eval`` (one
  evaluated candidate: trajectory, step, index, state), ``commit`` (a finished step), and the
  controllers' ``restart`` and ``budget`` decisions. Every record is one ``write`` + ``flush`` (a
  killed process loses nothing it logged); ``fsync`` runs at most every ``fsync_interval_s``
  seconds and at the end (an OS crash loses at most that);
* ``best.json`` — the best valid state so far (atomic rewrite on each improvement), and in code
  mode ``best.py`` (its program);
* ``archive.json`` — final snapshot: each trajectory's archive, rule statistics and history;
* ``events.out.tfevents.*`` — TensorBoard scalars (tensorboardX), when installed.

The reader is tolerant: a torn last line (killed mid-write) is dropped and truncated away before
appending resumes; a corrupt line anywhere else is an error.

Resume: :meth:`RunLog.claim` decides whether a directory may start (or continue) a run, and
:class:`Replay` reads ``archive.jsonl`` back: the runner recomputes every step and checks each
recomputed decision against the logged one (:meth:`Replay.batch`, :meth:`Replay.logged`), so
logged batches are not generated again and logged candidates are not evaluated again. The log is
not trusted: every valid logged construction is scored again by the problem's verifier before the
run continues (:meth:`Replay.verify`); a mismatch is an error naming the file and line.
"""

from __future__ import annotations

import json
import os
import threading
import time
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from discoverygym.io import atomic_write_json
from discoverygym.types import State

__all__ = ["Replay", "RunLog", "ScalarWriter", "record_problem"]


class RunLog:
    """Reads and writes one run directory (thread-safe appends).

    Args:
        run_dir: the directory (created if missing, unless ``create`` is False: read-only use).
        fsync_interval_s: the longest time between two ``fsync`` of the log (seconds).

    Raises:
        OSError: the directory cannot be created (the message names it).
    """

    CONFIG = "config.json"
    LOG = "archive.jsonl"
    BEST = "best.json"
    SNAPSHOT = "archive.json"

    def __init__(
        self, run_dir: str | os.PathLike, fsync_interval_s: float = 1.0, create: bool = True
    ) -> None:
        self.dir = Path(run_dir)
        if create:
            try:
                self.dir.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                why = "it exists and is not a directory" if isinstance(exc, FileExistsError) else exc.strerror
                raise OSError(exc.errno, f"cannot create the run directory {self.dir}: {why}") from None
        self.fsync_interval_s = fsync_interval_s
        self._lock = threading.Lock()
        self._fh: Any = None
        self._last_sync = time.monotonic()

    @classmethod
    def claim(cls, run_dir: str | os.PathLike, config: dict, resume: bool) -> RunLog:
        """The log of a run directory that may start a new run (``resume=False``) or continue its
        run with ``config`` (``resume=True``); checked before anything is written.

        Raises:
            ValueError: a directory that already holds a run without ``resume``; with ``resume``, a
                directory that does not exist, holds no run (no ``config.json``), or holds a run with
                another configuration (the message lists the differences).
            OSError: the directory cannot be created or written.
        """
        if resume and not Path(run_dir).is_dir():
            raise ValueError(f"cannot resume {run_dir}: no such run directory (start a new run without resume)")
        log = cls(run_dir)
        log.check_writable()
        stored = log.read_config()
        if resume:
            if stored is None:
                what = "has a log but no config.json" if log.has_log() else "holds no run (no config.json)"
                raise ValueError(f"cannot resume {run_dir}: it {what}; start a new run without resume")
            if stored != config:
                diff = {k: (stored.get(k), v) for k, v in config.items() if stored.get(k) != v}
                raise ValueError(f"cannot resume {run_dir}: configuration differs (stored, given): {diff}")
        elif stored is not None or log.has_log():
            raise ValueError(f"{run_dir} already holds a run; pass resume=True (--resume) or use a new run dir")
        return log

    # ------------------------------------------------------------------ exclusive use
    def check_writable(self) -> None:
        """Make sure files can be created in the run directory (before a run starts).

        Raises:
            OSError: the directory is missing or cannot be written (the message names it).
        """
        probe = self.dir / f".write-test-{os.getpid()}"
        try:
            with open(probe, "w"):
                pass
            probe.unlink()
        except OSError as exc:
            raise OSError(
                exc.errno, f"cannot write to the run directory {self.dir}: {exc.strerror}"
            ) from None

    def lock(self) -> None:
        """Take an exclusive lock on the run directory (released on :meth:`unlock` or process exit).

        Raises:
            RuntimeError: another process is running a search in this directory.
        """
        import fcntl

        self._lock_fh = open(self.dir / ".lock", "w")  # noqa: SIM115 - held until unlock()
        try:
            fcntl.flock(self._lock_fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._lock_fh.close()
            self._lock_fh = None
            raise RuntimeError(f"{self.dir} is in use by another search process") from None

    def unlock(self) -> None:
        """Release :meth:`lock`."""
        fh = getattr(self, "_lock_fh", None)
        if fh is not None:
            fh.close()
            self._lock_fh = None

    # ------------------------------------------------------------------ config / best / snapshot
    def read_config(self) -> dict | None:
        """``config.json`` as a dict without its ``"kind"`` entry, or ``None`` when absent."""
        path = self.dir / self.CONFIG
        if not path.exists():
            return None
        with open(path) as fh:
            data = json.load(fh)
        if isinstance(data, dict):
            data.pop("kind", None)
        return data

    def write_config(self, config: dict) -> None:
        """Write ``config.json`` atomically, with ``"kind": "search"`` (read by :func:`discoverygym.io.run_kind`)."""
        atomic_write_json(self.dir / self.CONFIG, {"kind": "search", **config})

    def write_best(self, data: dict, code: str | None = None) -> None:
        """Rewrite ``best.json`` (and ``best.py`` when ``code``) atomically."""
        if code:
            tmp = self.dir / ".best.py.tmp"
            tmp.write_text(code)
            os.replace(tmp, self.dir / "best.py")
        atomic_write_json(self.dir / self.BEST, data, fsync=False)  # rewritten often; the log is durable

    def write_snapshot(self, data: dict) -> None:
        """Rewrite ``archive.json`` atomically."""
        atomic_write_json(self.dir / self.SNAPSHOT, data)

    # ------------------------------------------------------------------ log
    @property
    def log_path(self) -> Path:
        """Path of ``archive.jsonl``."""
        return self.dir / self.LOG

    def has_log(self) -> bool:
        """Whether the run directory already holds logged records."""
        return self.log_path.exists() and self.log_path.stat().st_size > 0

    def read_records(self, repair: bool = False, check: Callable[[dict], str | None] | None = None) -> list[dict]:
        """All complete records of ``archive.jsonl``, in order.

        A torn last line (bytes after the last newline) is not a record: it is ignored, and with
        ``repair`` truncated away. Every complete line must be a JSON object (UTF-8) that
        ``check`` accepts.

        Args:
            repair: truncate a torn last line away (call before appending again).
            check: ``check(record)`` returns why a record has the wrong shape, or ``None``.

        Raises:
            ValueError: a complete line that is not UTF-8, not valid JSON, not an object, or
                refused by ``check``; the message names the file and line (the file was corrupted).
        """
        return [record for _, record in self.numbered_records(repair, check)]

    def numbered_records(self, repair: bool = False,
                         check: Callable[[dict], str | None] | None = None) -> list[tuple[int, dict]]:
        """:meth:`read_records` with each record's line number (1-based), for messages naming ``file:line``.

        Raises:
            ValueError: as :meth:`read_records`.
        """
        if not self.log_path.exists():
            return []
        data = self.log_path.read_bytes()
        end = data.rfind(b"\n") + 1  # bytes after the last newline: a torn write
        records = []
        for lineno, line in enumerate(data[:end].splitlines(), 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line.decode("utf-8"))
            except (ValueError, RecursionError) as exc:  # UnicodeDecodeError, JSONDecodeError
                why = f"{type(exc).__name__}: {exc}" if not isinstance(exc, RecursionError) else "nested too deeply"
                raise ValueError(f"{self.log_path}:{lineno} is corrupt ({why}); the run cannot be resumed") from None
            why = "not a JSON object" if not isinstance(record, dict) else (check(record) if check else None)
            if why:
                raise ValueError(f"{self.log_path}:{lineno} is corrupt ({why}); the run cannot be resumed")
            records.append((lineno, record))
        if repair and end < len(data):
            with open(self.log_path, "r+b") as fh:
                fh.truncate(end)
        return records

    def append(self, record: dict) -> None:
        """Append one record (one line; flushed; fsynced at most every ``fsync_interval_s``)."""
        line = json.dumps(record, allow_nan=True, separators=(",", ":")) + "\n"
        with self._lock:
            if self._fh is None:
                self._fh = open(self.log_path, "a")  # noqa: SIM115 - kept open for appends
            self._fh.write(line)
            self._fh.flush()
            now = time.monotonic()
            if now - self._last_sync >= self.fsync_interval_s:
                os.fsync(self._fh.fileno())
                self._last_sync = now

    def sync(self) -> None:
        """``fsync`` the log now."""
        with self._lock:
            if self._fh is not None:
                self._fh.flush()
                os.fsync(self._fh.fileno())
                self._last_sync = time.monotonic()

    def close(self) -> None:
        """Flush, fsync and close the log."""
        self.sync()
        with self._lock:
            if self._fh is not None:
                self._fh.close()
                self._fh = None


#: Fields each kind of ``archive.jsonl`` record needs on resume, with their types.
_RECORD_FIELDS = {
    "init": (("state", dict),),
    "batch": (("traj", int), ("step", int)),
    "eval": (("traj", int), ("step", int), ("k", int), ("state", dict)),
    "commit": (("traj", int), ("step", int)),
    "restart": (("traj", int), ("step", int), ("choice", str)),
    "budget": (("round", int), ("limits", list)),
}

#: the decision a recomputed record is checked on, per kind (see :meth:`Replay.logged`).
_DECISIONS = {"commit": "committed", "restart": "choice", "budget": "limits"}


def record_problem(record: dict) -> str | None:
    """Why a logged record cannot be replayed (a field missing or of the wrong type), or ``None``.

    Records of other kinds are ignored on replay, so only the replayed kinds are checked.
    """
    for name, kind in _RECORD_FIELDS.get(record.get("kind"), ()):
        value = record.get(name)
        if not isinstance(value, kind) or isinstance(value, bool):
            return f"a {record.get('kind')!r} record needs {name!r} of type {kind.__name__}, got {value!r:.80}"
    if "state" in record:
        try:
            State.from_dict(record["state"])
        except (KeyError, TypeError, ValueError) as exc:
            return f"its state is not a State ({type(exc).__name__}: {exc})"
    return None


class Replay:
    """What a run logged, read back from ``archive.jsonl`` to resume it (empty for a new run).

    A resumed run recomputes every step from the start; the logged records are keyed here by
    (trajectory, step) (budget rounds by round) so that a logged batch is not generated again, a
    logged candidate is not evaluated again, and a recomputed decision that was logged is checked
    against the log instead of being logged twice.

    Args:
        records: the log's records in order (:meth:`RunLog.read_records`); other kinds are ignored.

    Attributes:
        initial: the logged initial state, or ``None`` (nothing logged yet: a new run).
        active: ``True`` while the runner replays the logged steps (it then writes no TensorBoard
            scalars and no ``best.json`` per step).

    Example:
        >>> r = Replay([{"kind": "commit", "traj": 0, "step": 0, "committed": "a"}])
        >>> r.logged({"kind": "commit", "traj": 0, "step": 0, "committed": "a"})
        True
        >>> r.logged({"kind": "commit", "traj": 0, "step": 1, "committed": "b"})
        False
    """

    def __init__(self, records: Iterable[dict] = (), lines: Iterable[int] | None = None) -> None:
        self.initial: State | None = None
        self.active = False
        self._batches: dict = {}  # (traj, step) -> logged batch record
        self._evals: dict = {}  # (traj, step, k) -> logged evaluated State
        self._decisions: dict = {kind: {} for kind in _DECISIONS}  # kind -> key -> logged record
        self._states: list[tuple[int | None, State]] = []  # (line, state) of every init / eval, in log order
        numbers = iter(lines) if lines is not None else None
        for r in records:
            line = next(numbers) if numbers is not None else None
            kind = r.get("kind")
            if kind == "init":
                self.initial = State.from_dict(r["state"])
                self._states.append((line, self.initial))
            elif kind == "batch":
                self._batches[(r["traj"], r["step"])] = r
            elif kind == "eval":
                state = self._evals[(r["traj"], r["step"], r["k"])] = State.from_dict(r["state"])
                self._states.append((line, state))
            elif kind in _DECISIONS:
                self._decisions[kind][_key(r)] = r

    @classmethod
    def read(cls, log: RunLog, problem: Any = "config") -> Replay:
        """The replay of ``log``'s records (a torn last line is truncated away first), re-verified.

        Every valid logged state (the initial one and each evaluated candidate: everything that can
        enter an archive or become the best) is judged again by the problem's verifier before the
        run continues, so a forged or altered ``eval`` record cannot become the resumed run's best
        (issue 40: one forged record, score 2.9 with 26 identical circles of radius 0.5, did).
        See :meth:`verify` for what is judged again and how.

        Args:
            log: the run directory's log.
            problem: the problem to verify with; ``"config"`` (default) builds it from the run's
                ``config.json`` (``env_id``, ``action_mode``, ``env_kwargs``); ``None`` skips the
                check (records that only a caller's own, unregistered problem can judge).

        Raises:
            ValueError: a corrupt record, or a logged state its verifier judges otherwise (each
                message names the file and line).
        """
        numbered = log.numbered_records(repair=True, check=record_problem)
        replay = cls([r for _, r in numbered], [n for n, _ in numbered])
        if isinstance(problem, str):  # "config"
            problem = _problem_of_config(log)
        if problem is not None:
            replay.verify(problem, log.log_path)
        return replay

    def verify(self, problem: Any, source: str | os.PathLike = "archive.jsonl") -> int:
        """Judge every valid logged state again with ``problem``; returns how many were judged.

        A state carrying a construction (``solution``: construction problems, in construction
        and in code mode) is scored again by ``problem.verifier``; its validity, score (relative
        tolerance 1e-9) and reward (``problem.reward(score)``) must match the log. Invalid states
        are left as logged (the failure reward: they never become best), as are unscored ones.
        A program task's state (a program without a construction) is not run again here (that
        would repeat the run's evaluations); its logged reward must still be ``problem.reward``
        of its logged score.

        Raises:
            ValueError: a mismatch: ``"<file>:<line>: ..."`` with the logged and the recomputed values.
        """
        import math

        from discoverygym.errors import InvalidSolution

        def close(a: float | None, b: float | None) -> bool:
            if a is None or b is None:
                return a is b
            return a == b or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)

        judged = 0
        for line, state in self._states:
            if not state.valid or state.metadata.get("unscored"):
                continue
            where = f"{source}:{line}" if line is not None else str(source)
            what = f"logged state {state.id!r} (valid, score {state.score!r}, reward {state.reward!r})"
            if state.score is None or not math.isfinite(state.score):
                raise ValueError(f"{where}: {what} has no finite score; the log was altered and cannot be resumed")
            try:
                expected_reward = problem.reward(state.score)
            except (ArithmeticError, ValueError):
                expected_reward = None
            if not close(state.reward, expected_reward):
                raise ValueError(f"{where}: {what}: the reward of that score is {expected_reward!r}; the log was "
                                 "altered and cannot be resumed")
            verifier = getattr(problem, "verifier", None)
            if state.solution is None or verifier is None:
                continue
            try:
                score = float(verifier(state.solution).value)
            except InvalidSolution as exc:
                raise ValueError(f"{where}: {what}, but the verifier rejects its construction ({exc}); the log "
                                 "was altered and cannot be resumed") from None
            if not close(state.score, score):
                raise ValueError(f"{where}: {what}, but the verifier scores its construction {score!r}; the log "
                                 "was altered and cannot be resumed")
            judged += 1
        return judged

    @property
    def evaluations(self) -> int:
        """Candidates the log holds evaluated."""
        return len(self._evals)

    def batch(self, traj: int, step: int, parent_ids: list[str], k: int) -> tuple[dict, list[State | None]] | None:
        """The logged batch of step ``step`` of trajectory ``traj`` and its ``k`` logged results (``None``
        where not evaluated yet), or ``None`` when the step was never generated.

        Raises:
            RuntimeError: the batch was logged with other parents (code or configuration changed).
        """
        logged = self._batches.get((traj, step))
        if logged is None:
            return None
        if logged["parents"] != parent_ids:
            raise RuntimeError(
                f"replay mismatch at trajectory {traj} step {step}: logged parents "
                f"{logged['parents']}, recomputed {parent_ids} (code or config changed?)"
            )
        return logged, [self._evals.get((traj, step, i)) for i in range(k)]

    def logged(self, record: dict) -> bool:
        """Whether a recomputed ``commit``, ``restart`` or ``budget`` record is already in the log
        (then it is not logged again).

        Raises:
            RuntimeError: the log holds that record with another decision (``committed``, ``choice``
                or ``limits``): the code or the configuration changed.
        """
        kind = record["kind"]
        old = self._decisions[kind].get(_key(record))
        if old is None:
            return False
        name = _DECISIONS[kind]
        if old[name] != record[name]:
            where = f"budget round {record['round']}" if kind == "budget" else (
                f"trajectory {record['traj']} step {record['step']}")
            what = {"commit": "commit", "restart": "restart", "budget": "limits"}[kind]
            raise RuntimeError(
                f"replay mismatch at {where}: logged {what} {old[name]!r}, recomputed {record[name]!r}"
            )
        return True


def _problem_of_config(log: RunLog) -> Any:
    """The problem a run's ``config.json`` names (``problem_of(env_id, action_mode, **env_kwargs)``),
    or ``None`` with a warning when it names none this process knows (a caller's own problem)."""
    config = log.read_config()
    if config is None:  # not a run directory the runner wrote (a bare log): nothing names a problem
        return None
    from discoverygym.envs.registry import problem_of

    try:
        return problem_of(config["env_id"], config.get("action_mode") or "construction",
                          **(config.get("env_kwargs") or {}))
    except (KeyError, TypeError, ValueError) as exc:
        warnings.warn(f"{log.dir}: the logged states are not re-verified on resume: config.json names no "
                      f"problem this process can build ({type(exc).__name__}: {exc})", stacklevel=3)
        return None


def _key(record: dict) -> Any:
    """A decision record's key: the budget round, or (trajectory, step)."""
    return record["round"] if record["kind"] == "budget" else (record["traj"], record["step"])


class ScalarWriter:
    """TensorBoard scalars in the run directory, in the shared schema of :mod:`discoverygym.tensorboard`
    (``score/record`` and ``score/gap`` next to ``score/best``); a no-op when tensorboardX is not installed.

    Args:
        log_dir: where the event files go.
        enabled: ``False`` disables writing.
        record: the problem's published record (the ``score/record`` line), or ``None``.
        direction: ``"max"`` or ``"min"`` (the sign of ``score/gap``).
    """

    def __init__(self, log_dir: str | os.PathLike, enabled: bool = True, record: float | None = None,
                 direction: str = "max") -> None:
        self._writer: Any = None
        self.available = False
        if not enabled:
            return
        try:
            from discoverygym.tensorboard import RunWriter

            self._writer = RunWriter(log_dir, record=record, direction=direction, flush_secs=10)
        except ImportError:
            warnings.warn(
                "tensorboardX is not installed: no TensorBoard scalars (pip install tensorboardX)",
                stacklevel=2,
            )
            return
        self.available = True

    def add(self, step: int, scalars: dict[str, float | None]) -> None:
        """Write ``{tag: value}`` at ``step`` (``None`` and non-finite values are skipped)."""
        if self._writer is None:
            return
        self._writer.scalars(scalars, step)

    def close(self) -> None:
        """Flush and close the event file."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None
