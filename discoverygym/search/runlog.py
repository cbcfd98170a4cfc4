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
run continues, and the best logged program of a program task is run again through the env
(:func:`verify_states`, :meth:`Replay.verify`); a mismatch is an error naming the file and line.
Train checkpoints are checked the same way (:mod:`discoverygym.agents.checkpoint`).
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NamedTuple

from discoverygym.io import MAX_RUN_FILE_BYTES, atomic_write_json, read_input_bytes, read_input_text
from discoverygym.rundir import CONFIG_FILE, check_run_dir
from discoverygym.types import State

__all__ = ["CONSTRUCTION_RTOL", "PROGRAM_RTOL", "LogRejected", "Replay", "RunLog", "ScalarWriter", "Verified",
           "record_problem", "verify_states"]


class LogRejected(ValueError):
    """A run's log or checkpoint fails verification on resume: a corrupt record, or a logged state that
    its problem judges otherwise (altered or forged). The message starts with ``"<file>:<line>"``
    (or ``"<file>: <key>"``) and says what was logged and what was recomputed; the run cannot be
    resumed from that directory as it is.
    """


class RunLog:
    """Reads and writes one run directory (thread-safe appends).

    Args:
        run_dir: the directory (created if missing, unless ``create`` is False: read-only use).
        fsync_interval_s: the longest time between two ``fsync`` of the log (seconds).

    Raises:
        OSError: the directory cannot be created (the message names it).
    """

    CONFIG = CONFIG_FILE
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
                another configuration (the message lists the differences); see
                :func:`~discoverygym.rundir.check_run_dir`.
            OSError: the directory cannot be created or written.
        """
        stored = check_run_dir(run_dir, "search", resume)  # the one "free or resumable" check
        log = cls(run_dir)
        log.check_writable()
        if resume:
            stored = {k: v for k, v in (stored or {}).items() if k != "kind"}
            if stored != config:
                diff = {k: (stored.get(k), v) for k, v in config.items() if stored.get(k) != v}
                raise ValueError(f"cannot resume {run_dir}: configuration differs (stored, given): {diff}")
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
        """``config.json`` as a dict without its ``"kind"`` entry, or ``None`` when absent.

        Raises:
            ValueError: ``config.json`` is not a regular file within the input size limit
                (:func:`~discoverygym.io.read_input_text`, one descriptor checked and read), or not JSON.
        """
        path = self.dir / self.CONFIG
        if not os.path.lexists(path):
            return None
        data = json.loads(read_input_text(path))  # opened once, checked on the descriptor
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
            LogRejected: (a ``ValueError``) a complete line that is not UTF-8, not valid JSON, not an object, or
                refused by ``check``; the message names the file and line (the file was corrupted).
        """
        return [record for _, record in self.numbered_records(repair, check)]

    def numbered_records(self, repair: bool = False,
                         check: Callable[[dict], str | None] | None = None) -> list[tuple[int, dict]]:
        """:meth:`read_records` with each record's line number (1-based), for messages naming ``file:line``.

        Raises:
            LogRejected: as :meth:`read_records`.
        """
        if not os.path.lexists(self.log_path):
            return []
        try:  # opened once, checked on the descriptor: not a FIFO or a device, nothing blocks or floods
            data = read_input_bytes(self.log_path, MAX_RUN_FILE_BYTES)
        except ValueError as exc:
            raise LogRejected(f"{exc}; the run cannot be resumed") from None
        end = data.rfind(b"\n") + 1  # bytes after the last newline: a torn write
        records = []
        for lineno, line in enumerate(data[:end].splitlines(), 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line.decode("utf-8"))
            except (ValueError, RecursionError) as exc:  # UnicodeDecodeError, JSONDecodeError
                why = f"{type(exc).__name__}: {exc}" if not isinstance(exc, RecursionError) else "nested too deeply"
                raise LogRejected(f"{self.log_path}:{lineno} is corrupt ({why}); the run cannot be resumed") from None
            why = "not a JSON object" if not isinstance(record, dict) else (check(record) if check else None)
            if why:
                raise LogRejected(f"{self.log_path}:{lineno} is corrupt ({why}); the run cannot be resumed")
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


#: relative tolerance of a logged program's score against the same program run again on resume
#: (deterministic program tasks; a task may declare its own as ``replay_rtol``): room for the last
#: bits of floating-point sums in another thread order, far below any gain a forged record claims.
PROGRAM_RTOL = 1e-6

#: relative tolerance of a logged construction's score against its verifier's (the same arithmetic).
CONSTRUCTION_RTOL = 1e-9


class Verified(NamedTuple):
    """What :func:`verify_states` judged again.

    Attributes:
        judged: valid logged constructions scored again by the verifier.
        rerun: logged programs run again through the env (the best ones).
        skipped: why the best logged program was not run again (``None`` when it was, or when
            there is no program state): a task with timed scores, no env to run it, no scorer here.
    """

    judged: int = 0
    rerun: int = 0
    skipped: str | None = None


def _close(a: float | None, b: float | None, rtol: float) -> bool:
    """``a`` and ``b`` equal within ``rtol`` (``None`` only equals ``None``)."""
    if a is None or b is None:
        return a is b
    return a == b or math.isclose(a, b, rel_tol=rtol, abs_tol=1e-12)


def verify_states(problem: Any, located: Iterable[tuple[str, State]],
                  rerun: Callable[[State], State | None] | None = None) -> Verified:
    """Judge logged states again before a run resumes from them (issue 40: resume trusts no log).

    Every valid, scored state must have a finite score and the reward of that score
    (``problem.reward(score)``). A state carrying a construction (``solution``: construction
    problems, in construction and in code mode) is scored again by ``problem.verifier``; its
    validity and score (relative tolerance :data:`CONSTRUCTION_RTOL`) must match. A program
    task's state (a program, no construction) can only be judged by running it: the valid
    program states of the highest reward (those the resumed run's best is taken from) are run
    again once with ``rerun(state)`` (the env's sandbox) and must reproduce their logged score
    within ``problem.replay_rtol`` (default :data:`PROGRAM_RTOL`); a program the re-run cannot score
    here (no GPU) is skipped and :attr:`Verified.skipped` says why. Tasks whose scores are
    measurements (``problem.nondeterministic``: kernel and LASSO timings; ``problem.timed``: AtCoder
    heuristics that run against a clock) are measured again instead (:func:`_remeasure`): the best
    program must still be valid and correct, and the new measurement replaces the logged score.
    Invalid and unscored states are left as logged (the failure reward: they never become best).

    Args:
        problem: the problem (``reward``; ``verifier`` for constructions; ``nondeterministic``
            and ``replay_rtol`` optional for program tasks).
        located: ``(where, state)`` pairs; ``where`` names the file and line or key in messages.
        rerun: judges a logged program state again through the env, returning the new
            :class:`State` (``None``: cannot be run here); ``None`` skips program re-runs.

    Returns:
        :class:`Verified`.

    Raises:
        LogRejected: (a ``ValueError``) a mismatch, ``"<where>: logged state '<id>' (valid, score s, reward r) ..."``
            with the recomputed value; the message ends "the log was altered and cannot be resumed".
    """
    from discoverygym.errors import InvalidSolution

    judged, programs = 0, []
    verifier = getattr(problem, "verifier", None)
    for where, state in located:
        if not state.valid or state.metadata.get("unscored"):
            continue
        what = f"logged state {state.id!r} (valid, score {state.score!r}, reward {state.reward!r})"
        if state.score is None or not math.isfinite(state.score):
            raise LogRejected(f"{where}: {what} has no finite score; the log was altered and cannot be resumed")
        try:
            expected_reward = problem.reward(state.score)
        except (ArithmeticError, ValueError):
            expected_reward = None
        if not _close(state.reward, expected_reward, CONSTRUCTION_RTOL):
            raise LogRejected(f"{where}: {what}: the reward of that score is {expected_reward!r}; the log was "
                             "altered and cannot be resumed")
        if state.solution is None or verifier is None:
            if state.solution is None and isinstance(state.code, str):
                programs.append((where, what, state))
            continue
        try:
            score = float(verifier(state.solution).value)
        except InvalidSolution as exc:
            raise LogRejected(f"{where}: {what}, but the verifier rejects its construction ({exc}); the log "
                             "was altered and cannot be resumed") from None
        if not _close(state.score, score, CONSTRUCTION_RTOL):
            raise LogRejected(f"{where}: {what}, but the verifier scores its construction {score!r}; the log "
                             "was altered and cannot be resumed")
        judged += 1
    if not programs:
        return Verified(judged)
    if rerun is None:
        return Verified(judged, 0, "no env was given to run the best logged program again")
    if getattr(problem, "nondeterministic", False) or getattr(problem, "timed", False):
        return Verified(judged, _remeasure(programs, rerun, getattr(problem, "failure_reward", None)), None)
    top = max(state.reward for _, _, state in programs)
    rtol = float(getattr(problem, "replay_rtol", PROGRAM_RTOL))
    done, runs = 0, {}  # one run per program: a best state is often logged in several places
    for where, what, state in programs:
        if state.reward != top:
            continue
        key = (state.id, state.code)
        fresh = runs[key] if key in runs else runs.setdefault(key, rerun(state))
        if fresh is None or fresh.metadata.get("unscored"):
            why = fresh.metadata.get("unscored_reason") if fresh is not None else None
            return Verified(judged, done, f"the best logged program cannot be scored here ({why or 'no env'})")
        if not fresh.valid:
            raise LogRejected(f"{where}: {what}, but its program fails when run again ({fresh.error}); the log "
                             "was altered and cannot be resumed")
        if not _close(state.score, fresh.score, rtol):
            raise LogRejected(f"{where}: {what}, but its program scores {fresh.score!r} when run again (relative "
                             f"tolerance {rtol:g}); the log was altered and cannot be resumed")
        done += 1
    return Verified(judged, len(runs))


#: most distinct programs a resume of a timed task measures again before it stops (each one a full
#: evaluation: a kernel's or LassoPath's timing run)
MAX_REMEASURED = 8


def _remeasure(programs: list[tuple[str, str, State]], rerun: Callable[[State], State | None],
               failure_reward: float | None = None) -> int:
    """Measure the best logged programs of a timed task again and put the new measurement in the log's
    place (issue 52, #14: a forged initial record, 0.001 for ``int main(){return 1;}``, became the
    resumed run's best with only a warning).

    Timings vary between runs, so a logged score cannot be reproduced; it is not trusted either.
    The program of the highest logged reward is run again: it must be valid and correct now (a
    failing program refuses the resume), and its state takes the re-measured score, reward and
    metadata (``metadata["remeasured_from"]`` keeps the logged score). This repeats while another
    logged program's *logged* reward exceeds the best *re-measured* one, for at most
    :data:`MAX_REMEASURED` programs; a program still above after that is marked unscored
    (``metadata["unscored"]``, the failure reward ``failure_reward``), so no logged timing can
    outrank a measured one. Every state of one program (logged in several places) gets the same
    measurement.

    Returns:
        How many distinct programs were run again.

    Raises:
        LogRejected: a re-run program is invalid, incorrect or cannot be scored here.
    """
    groups: dict[tuple, list[tuple[str, str, State]]] = {}
    for item in programs:
        groups.setdefault((item[2].id, item[2].code), []).append(item)
    order = sorted(groups, key=lambda k: max(s.reward for _, _, s in groups[k]), reverse=True)
    best_fresh: float | None = None
    done = 0
    for key in order:
        logged = max(s.reward for _, _, s in groups[key])
        if best_fresh is not None and (logged <= best_fresh or done >= MAX_REMEASURED):
            if logged > best_fresh:  # beyond the cap: not measured, so not allowed to outrank a measured one
                for _, _, state in groups[key]:
                    state.metadata.update(unscored=True, remeasured_from=state.score,
                                          unscored_reason="not measured again on resume (too many programs above the best)")
                    state.score, state.valid = None, False
                    state.reward = best_fresh if failure_reward is None else min(best_fresh, failure_reward)
            continue
        where, what, first = groups[key][0]
        fresh = rerun(first)
        if fresh is None or fresh.metadata.get("unscored"):
            why = fresh.metadata.get("unscored_reason") if fresh is not None else "no env"
            raise LogRejected(f"{where}: {what}: its scores are timings, so its program must be measured again "
                             f"before the run resumes, and it cannot be here ({why}); resume on a machine that "
                             "can run it")
        if not fresh.valid:
            raise LogRejected(f"{where}: {what}, but its program fails when run again ({fresh.error}); the log "
                             "was altered and cannot be resumed")
        for _, _, state in groups[key]:
            state.metadata = {**fresh.metadata, "remeasured_from": state.score}
            state.score, state.reward = fresh.score, fresh.reward
        best_fresh = fresh.reward if best_fresh is None else max(best_fresh, fresh.reward)
        done += 1
    return done


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
        # (line, state, program seed) of every init / eval, in log order (the seed from the eval's batch record)
        self._states: list[tuple[int | None, State, int | None]] = []
        #: what :meth:`verify` judged again and what it skipped (``None`` until it ran)
        self.checked: Verified | None = None
        numbers = iter(lines) if lines is not None else None
        for r in records:
            line = next(numbers) if numbers is not None else None
            kind = r.get("kind")
            if kind == "init":
                self.initial = State.from_dict(r["state"])
                self._states.append((line, self.initial, None))
            elif kind == "batch":
                self._batches[(r["traj"], r["step"])] = r
            elif kind == "eval":
                state = self._evals[(r["traj"], r["step"], r["k"])] = State.from_dict(r["state"])
                seeds = self._batches.get((r["traj"], r["step"]), {}).get("seeds")
                seed = seeds[r["k"]] if isinstance(seeds, list) and 0 <= r["k"] < len(seeds) else None
                self._states.append((line, state, seed if isinstance(seed, int) else None))
            elif kind in _DECISIONS:
                self._decisions[kind][_key(r)] = r

    @classmethod
    def read(cls, log: RunLog, problem: Any = "config",
             rerun: Callable[[State, int | None], State | None] | None = None) -> Replay:
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
            rerun: ``rerun(state, seed)`` judges a logged program again through the env (see
                :meth:`verify`); the search runner passes one, so the program that would become
                the resumed run's best must reproduce its logged score.

        Raises:
            LogRejected: (a ``ValueError``) a corrupt record, or a logged state its problem judges otherwise (each
                message names the file and line).
        """
        numbered = log.numbered_records(repair=True, check=record_problem)
        replay = cls([r for _, r in numbered], [n for n, _ in numbered])
        if isinstance(problem, str):  # "config"
            problem = _problem_of_config(log)
        if problem is not None:
            replay.verify(problem, log.log_path, rerun=rerun)
        return replay

    def verify(self, problem: Any, source: str | os.PathLike = "archive.jsonl",
               rerun: Callable[[State, int | None], State | None] | None = None) -> int:
        """Judge every valid logged state again with ``problem``; returns how many were judged.

        :func:`verify_states` over the logged initial state and every logged candidate, each
        located as ``"<source>:<line>"``. ``rerun(state, seed)`` runs a logged program again
        through the env (``seed``: the program seed its ``batch`` record logged; ``None`` for
        the initial state, which the env's seeded reset judges); without it program states are
        only checked for a consistent reward. What was skipped and why is kept in
        :attr:`checked` (a :class:`Verified`) and said in a warning.

        Raises:
            LogRejected: a mismatch: ``"<file>:<line>: ..."`` with the logged and the recomputed values.
        """
        located = [(f"{source}:{line}" if line is not None else str(source), state)
                   for line, state, _ in self._states]
        seeds = {id(state): seed for _, state, seed in self._states}
        run_again = None if rerun is None else (lambda state: rerun(state, seeds.get(id(state))))
        self.checked = verify_states(problem, located, rerun=run_again)
        if self.checked.skipped:
            warnings.warn(f"{source}: {self.checked.skipped}", stacklevel=2)
        return self.checked.judged + self.checked.rerun

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
