"""``LassoPath-v0``: a fast C++ LASSO regularisation path (TES / AlgoTune ``lasso_path`` task).

An action is a C++17 program (Eigen 3 headers available) that reads one LASSO problem on stdin and
writes its coefficient path on stdout (wire format: :mod:`discoverygym.rewards.lasso`). It is
compiled once (``g++ -std=gnu++17 -O3 -march=native -DNDEBUG -I<eigen3>``, plus ``-fopenmp`` with
``openmp=True``) and run in the native sandbox (:mod:`discoverygym.sandbox.native`: no network,
no process besides its threads, files confined, wall/CPU and memory limits), one run at a time.

Judging one evaluation (seed ``s``): for each problem size of :data:`~discoverygym.rewards.lasso.PROBLEMS`
(or the chosen subset) ``time_runs`` fresh instances are drawn, their seeds derived from
``(s, problem index, run)``; the λ grid is scikit-learn's ``lasso_path`` grid (50 values, eps 1e-2).
Every run must succeed and be correct: ``obj_λ(candidate) <= obj_λ(sklearn lasso_path) + 1e-6`` at
every λ (sklearn with its defaults, as TES; references cached per instance on the task). TES checks
correctness on one extra instance per size and times three others; we check every timed instance
(stricter, and no extra run). Any failure (compile error, crash, timeout, memory, wrong output
size, a non-finite value, an objective excess above 1e-6) gives the failure reward 0 and a
message naming the problem and λ index.

What is timed: the launcher's wall time of the program's process, fork to exit (process start,
reading the input from a file on stdin, the solve, writing the output), as TES times the
``subprocess.run`` of the binary; compilation and our checks are not timed. A problem's time is the
minimum over its ``time_runs`` runs; the score is the geometric mean of the problems' times (ms,
minimised) and the reward is ``1 / score`` (TES's score, 1 / geometric-mean ms).

Speed-ups (``metrics["speedup"]``): the candidate's per-problem times against the initial
program's, measured once per task (the first time they are needed: an evaluation of the initial
program fills them, e.g. ``reset``) on the instances of that first evaluation; sizes match but
instances differ between seeds, so a ratio also carries instance-to-instance variation.

``real=True`` adds the four real design matrices (breast_cancer, diabetes, dna, leukemia; package
data, see ``discoverygym/data/lasso/PROVENANCE.txt``) as extra correctness and timing cases,
reported in ``metrics["real"]`` and not counted in the score (so scores stay comparable with TES's).

Example:
    >>> import gymnasium as gym, discoverygym
    >>> env = gym.make("LassoPath-v0", problems=[0, 10])   # doctest: +SKIP
    >>> obs, info = env.reset(seed=0)                      # judges the bundled glmnet port
    >>> obs, reward, *_ , info = env.step(open("lasso.cpp").read())  # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import itertools
import math
import os
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from importlib import resources
from typing import Any

import numpy as np

from discoverygym.envs.candidate import positive_int
from discoverygym.envs.program import ProgramTask
from discoverygym.errors import BackendUnavailable, InvalidSolution
from discoverygym.io import available_cpus
from discoverygym.rewards import lasso as L
from discoverygym.rewards.common import Score
from discoverygym.sandbox.native import MAX_TIME_LIMIT_S, NativeLimits
from discoverygym.sandbox.native_program import CompiledProgram
from discoverygym.types import State

__all__ = ["EIGEN_DIRS", "REAL_DATASETS", "WALL_FACTOR", "LassoPathTask", "eigen_include", "make_lasso_path"]

#: where the Eigen 3 headers are looked for (under /usr so that the bubblewrap sandbox sees them).
EIGEN_DIRS = ("/usr/include/eigen3", "/usr/local/include/eigen3")
#: the real design matrices shipped as package data (``discoverygym/data/lasso/real_<name>.npz``).
REAL_DATASETS = ("breast_cancer", "diabetes", "dna", "leukemia")
#: speed-up histogram bins (candidate time / initial time inverted; edges, log2-spaced).
SPEEDUP_EDGES = (0.0, 0.5, 0.9, 1.1, 2.0, 4.0, 8.0, math.inf)
#: wall-clock bound of one run as a multiple of its CPU-time limit (``time_limit_s``): the verdict
#: follows CPU time; the wall clock only stops a program that waits instead of computing.
WALL_FACTOR = 5.0
_REFERENCE_CACHE = 4096
_BINARY_CACHE = 4

_CONTRACT = (
    "Write one complete C++17 program (`int main()`), compiled with `g++ -std=gnu++17 -O3 -march=native "
    "-DNDEBUG -I/usr/include/eigen3`{omp}; Eigen 3 (header-only) is available, no other library. "
    "It reads one problem from standard input, binary little-endian: int32 n, int32 p, int32 n_lambda, "
    "then float64 X (n x p, row-major), float64 y (n), float64 lambda (n_lambda, decreasing). It writes "
    "to standard output exactly p * n_lambda float64 values: the coefficient path, column-major (the p "
    "coefficients of lambda[0] first), where column k minimises (1/2n)||y - X w||^2 + lambda[k] ||w||_1 "
    "(no intercept, no standardisation). Correct when at every lambda the objective is at most that of "
    "scikit-learn's lasso_path (default tolerance) + 1e-6. It runs on {cases}, {runs} fresh instance(s) "
    "each, one run at a time, {limit:g} s of CPU time ({wall:g} s wall clock) and {mem} MiB of address space "
    "per run, no network, "
    "no files besides a private /tmp, threads allowed but no fork. The time of a problem is the wall "
    "time of the process (start to exit, minimum over its runs); the score is the geometric mean over "
    "the problems in ms (lower is better), the reward 1/score. A compile error, crash, timeout, wrong "
    "output size, NaN, or an objective above the reference + 1e-6 at any lambda gives reward 0."
)


def eigen_include() -> str | None:
    """The first directory of :data:`EIGEN_DIRS` holding ``Eigen/Dense``, or ``None``."""
    return next((d for d in EIGEN_DIRS if os.path.isfile(os.path.join(d, "Eigen", "Dense"))), None)


def _select(problems: Sequence[int | str] | None, n_problems: int | None) -> tuple[int, ...]:
    """Indices into :data:`~discoverygym.rewards.lasso.PROBLEMS` of the chosen problems.

    Raises:
        ValueError: an unknown index or name, duplicates, an empty list, n_problems out of range.
        TypeError: an entry that is neither an int nor a name.
    """
    names = [p.name for p in L.PROBLEMS]
    if problems is None:
        chosen = list(range(len(L.PROBLEMS)))
    else:
        if isinstance(problems, (str, bytes)) or not isinstance(problems, Sequence):
            raise TypeError(f"problems must be a list of indices (0-{len(names) - 1}) or names, got {problems!r}")
        chosen = []
        for item in problems:
            if isinstance(item, str):
                if item not in names:
                    raise ValueError(f"unknown LASSO problem {item!r}; known: {', '.join(names)}")
                chosen.append(names.index(item))
            elif isinstance(item, (int, np.integer)) and not isinstance(item, bool):
                if not 0 <= int(item) < len(names):
                    raise ValueError(f"problem index {item} is outside 0-{len(names) - 1}")
                chosen.append(int(item))
            else:
                raise TypeError(f"a problem is an index or a name, got {item!r}")
        if not chosen or len(set(chosen)) != len(chosen):
            raise ValueError(f"problems must be a non-empty list without repeats, got {problems!r}")
    if n_problems is not None:
        n_problems = positive_int("n_problems", n_problems)
        if n_problems > len(chosen):
            raise ValueError(f"n_problems={n_problems} is more than the {len(chosen)} problems chosen")
        chosen = chosen[:n_problems]
    return tuple(chosen)


def _real_data(name: str) -> tuple[np.ndarray, np.ndarray]:
    """``(X, y)`` of a shipped real dataset (float64, X C-contiguous)."""
    with (resources.files("discoverygym") / "data" / "lasso" / f"real_{name}.npz").open("rb") as fh:
        data = np.load(fh)
        return np.ascontiguousarray(data["X"], dtype=np.float64), np.asarray(data["y"], dtype=np.float64)


def speedup_histogram(speedups: Sequence[float]) -> dict[str, int]:
    """Counts of speed-ups (initial time / candidate time) in the bins of :data:`SPEEDUP_EDGES`.

    Returns:
        ``{"<0.5x": k, "0.5-0.9x": k, ...}`` in bin order (a value on an edge goes to the upper bin).
    """
    edges = SPEEDUP_EDGES
    labels = [f"<{edges[1]:g}x"] + [f"{a:g}-{b:g}x" for a, b in itertools.pairwise(edges[1:-1])] + [f">={edges[-2]:g}x"]
    counts = dict.fromkeys(labels, 0)
    for value in speedups:
        index = int(np.searchsorted(edges, value, side="right")) - 1
        counts[labels[min(max(index, 0), len(labels) - 1)]] += 1
    return counts


class LassoPathTask(ProgramTask):
    """The LASSO path problem (see the module docstring).

    Args:
        problems: indices (0-16) or names (``"500x200 corr0.5"``) of the problems to judge on
            (default: all 17, TES's set).
        n_problems: judge only the first ``n_problems`` of them (for quick runs and tests).
        real: also judge the four real design matrices (not counted in the score).
        time_runs: fresh instances per problem (TES: 3); the problem's time is their minimum.
        openmp: compile with ``-fopenmp`` (runs may then use every CPU; the CPU-time limit is
            raised to ``time_limit_s`` x CPUs).
        time_limit_s: CPU-time limit of one run in seconds (default 60: the baseline needs up to
            ~9 s for 200x2000 on a loaded 2-core machine; TES allows about 8 s a call). The wall
            clock is bounded at :data:`WALL_FACTOR` x ``time_limit_s`` only, so a loaded machine
            does not fail a program that is within its CPU time (issue 40: the bundled program
            failed its own env at wall 60.5 s, CPU 26.2 s).
        memory_mb: address-space limit of one run in MiB (default 4096).
        compare_initial: measure the initial program once (lazily) for ``metrics["speedup"]``.
        allow_unconfined: run where neither bubblewrap nor Landlock confines file writes.

    Raises:
        ValueError / TypeError: an option out of range or of the wrong type.
    """

    name = "lasso_path"
    title = "LASSO regularisation path (TES / AlgoTune)"
    quantity = "geometric-mean solve time over the problems (ms)"
    direction = "min"
    language = "cpp"
    example = "lasso_glmnet.cpp"
    entry = "main"
    failure_reward = 0.0
    reward_scale = 1.0
    nondeterministic = True
    description = (
        "Compute the LASSO regularisation path: for each of 50 values lambda (scikit-learn's lasso_path "
        "grid: lambda_max = max_j |x_j'y| / n down to 0.01 lambda_max, log-spaced, decreasing) minimise "
        "(1/2n)||y - X w||^2 + lambda ||w||_1, as fast as possible, on 17 synthetic problems: iid Gaussian "
        "designs (n x p from 200x100 to 2000x3000, including p >> n such as 50x3000 and 100x5000), sparse "
        "designs (20 non-zeros per row, unit-variance columns), a dense true solution, and Toeplitz-"
        "correlated designs (rho = 0.5 and 0.9). Each instance is drawn fresh; y = X w_true + 0.1 noise. "
        "The starting program is a C++ port of glmnet's coordinate descent (covariance updates for "
        "p < 500, naive updates otherwise; warm starts, sequential strong rules, active-set cycling, "
        "KKT checks) with a duality-gap stop."
    )

    def __init__(self, problems: Sequence[int | str] | None = None, n_problems: int | None = None,
                 real: bool = False, time_runs: int = 3, openmp: bool = False, time_limit_s: float = 60.0,
                 memory_mb: int = 4096, compare_initial: bool = True, allow_unconfined: bool = False) -> None:
        self.indices = _select(problems, n_problems)
        for flag, value in (("real", real), ("openmp", openmp), ("compare_initial", compare_initial),
                            ("allow_unconfined", allow_unconfined)):
            if not isinstance(value, bool):
                raise TypeError(f"{flag} must be True or False, got {value!r}")
        self.real, self.openmp, self.compare_initial = real, openmp, compare_initial
        self.time_runs = positive_int("time_runs", time_runs)
        if isinstance(time_limit_s, bool) or not isinstance(time_limit_s, (int, float, np.integer, np.floating)):
            raise TypeError(f"time_limit_s must be a number of seconds, got {time_limit_s!r}")
        if not (math.isfinite(time_limit_s) and 0 < time_limit_s <= MAX_TIME_LIMIT_S):
            raise ValueError(f"time_limit_s must be > 0 and <= {MAX_TIME_LIMIT_S:g} s, got {time_limit_s!r}")
        self.time_limit_s = float(time_limit_s)
        self.memory_mb = positive_int("memory_mb", memory_mb)
        if not 64 <= self.memory_mb <= 1 << 24:
            raise ValueError(f"memory_mb must be in [64, {1 << 24}], got {self.memory_mb}")
        self.allow_unconfined = allow_unconfined
        self._references: dict[tuple, np.ndarray] = {}
        self._binaries: OrderedDict[tuple, CompiledProgram] = OrderedDict()
        weakref.finalize(self, _close_all, self._binaries)

    # ------------------------------------------------------------------ facts
    @property
    def sota(self) -> dict:
        """No published value on these instances (TES reports its own on its machine)."""
        return {"value": float("nan"), "source": "none comparable: TES reports 1/geomean ms on its own machine"}

    @property
    def contract(self) -> str:  # type: ignore[override]
        """The program contract, naming the problems judged and the limits."""
        cases = (f"{len(self.indices)} synthetic problem(s) ({', '.join(L.PROBLEMS[i].name for i in self.indices)})"
                 + (" plus 4 real design matrices" if self.real else ""))
        return _CONTRACT.format(omp=" -fopenmp (OpenMP available)" if self.openmp else "", cases=cases,
                                runs=self.time_runs, limit=self.time_limit_s, mem=self.memory_mb,
                                wall=WALL_FACTOR * self.time_limit_s)

    def initial_program(self) -> str:
        """The bundled glmnet port (``discoverygym/examples/lasso_glmnet.cpp``)."""
        return (resources.files("discoverygym") / "examples" / self.example).read_text()

    def flags(self, include: str) -> tuple[str, ...]:
        """g++ flags: ``-std=gnu++17 -O3 -march=native -DNDEBUG -I<include>`` (+ ``-fopenmp``)."""
        return ("-std=gnu++17", "-O3", "-march=native", "-DNDEBUG", f"-I{include}",
                *(("-fopenmp",) if self.openmp else ()))

    def limits(self, p_max: int) -> NativeLimits:
        """Per-run limits (output capped just above the p_max x 50 doubles expected)."""
        cpu = min(self.time_limit_s * (available_cpus() if self.openmp else 1), MAX_TIME_LIMIT_S)
        wall = min(max(WALL_FACTOR * self.time_limit_s, cpu), MAX_TIME_LIMIT_S)
        return NativeLimits(time_limit_s=cpu, wall_limit_s=wall, memory_mb=self.memory_mb,
                            output_bytes=8 * p_max * L.N_LAMBDA + 64, allow_unconfined=self.allow_unconfined)

    def _compiled(self, source: str, flags: tuple[str, ...]) -> CompiledProgram:
        """The program compiled with ``flags``, cached per (source hash, flags) on the task.

        The last :data:`_BINARY_CACHE` programs are kept (compile failures too), so repeated
        evaluations of one program (resets, ``check_env``, re-judging) compile it once; the
        directories are removed when evicted or when the task is garbage-collected.
        """
        key = (hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest(), flags)
        prog = self._binaries.pop(key, None)
        if prog is None:
            prog = CompiledProgram(source, flags=flags, allow_unconfined=self.allow_unconfined)
            while len(self._binaries) >= _BINARY_CACHE:
                self._binaries.popitem(last=False)[1].close()
        self._binaries[key] = prog
        return prog

    # ------------------------------------------------------------------ instances
    def instance_seed(self, seed: int, index: int, run: int) -> int:
        """Seed of run ``run`` of problem ``index`` in the evaluation seeded ``seed`` (SeedSequence)."""
        return int(np.random.SeedSequence([int(seed) & (2**63 - 1), index, run]).generate_state(1)[0])

    def _reference(self, key: tuple, X: np.ndarray, y: np.ndarray, lam: np.ndarray) -> np.ndarray:
        """sklearn's objectives on an instance, cached on the task per ``key``."""
        ref = self._references.get(key)
        if ref is None:
            ref = L.objective(X, y, L.reference_path(X, y, lam), lam)
            if len(self._references) >= _REFERENCE_CACHE:
                self._references.pop(next(iter(self._references)))
            self._references[key] = ref
        return ref

    def _cases(self, seed: int):
        """Yield ``(label, key, X, y)`` for every run of an evaluation (synthetic first, then real)."""
        for index in self.indices:
            problem = L.PROBLEMS[index]
            for run in range(self.time_runs):
                inst = self.instance_seed(seed, index, run)
                X, y = L.generate(problem, inst)
                yield problem.name, (index, inst), X, y
        if self.real:
            for name in REAL_DATASETS:
                X, y = _real_data(name)
                for _ in range(self.time_runs):
                    yield f"real {name}", ("real", name), X, y

    # ------------------------------------------------------------------ judging
    def evaluate(self, source: str, *, seed: int) -> Score:
        """Compile once and judge ``source`` on every run (see :meth:`ProgramTask.evaluate`).

        Metrics: ``problems`` (one row per problem: name, n, p, time_ms (min over runs), times_ms,
        max_gap (max over runs and λ of obj − obj_ref; negative = better than sklearn)),
        ``case_scores`` (the per-problem times, ms), ``geomean_ms``, ``speedup`` (per problem,
        initial time / candidate time) and ``speedup_histogram`` when ``compare_initial``,
        ``real`` (rows of the real datasets when ``real=True``), ``backend``, ``compile_s``.

        Raises:
            InvalidSolution: compile error or any failed run (the problem, run and λ are named).
            BackendUnavailable: no Eigen 3 headers, no g++, no confinement, or no scikit-learn.
        """
        include = eigen_include()
        if include is None:
            raise BackendUnavailable("the Eigen 3 headers are not installed (looked in "
                                     f"{', '.join(EIGEN_DIRS)}): install libeigen3-dev")
        p_max = max([L.PROBLEMS[i].p for i in self.indices] + ([7129] if self.real else []))
        limits = self.limits(p_max)
        rows: dict[str, dict] = {}
        metrics: dict[str, Any] = {"problems": [], "time_runs": self.time_runs}
        prog = self._compiled(source, self.flags(include))
        metrics.update(backend=prog.compiled.backend, compile_s=prog.compiled.elapsed_s)
        if not prog.compiled.ok:
            log = prog.compiled.log[-2000:]
            metrics["compile_error"] = log
            first = next((ln for ln in log.splitlines() if "error" in ln), log.strip()[:300])
            raise InvalidSolution(f"compile error: {first}", metrics=metrics)
        for run_no, (label, key, X, y) in enumerate(self._cases(seed)):
            lam = L.lambda_grid(X, y)
            ref = self._reference(key, X, y, lam)
            where = f"{label} (run {run_no % self.time_runs})"
            result = prog.run(L.encode_input(X, y, lam), limits)
            if not result.ok:
                detail = result.message or result.status
                if result.status == "output_limit":
                    detail = f"wrong output size: more than the {X.shape[1] * L.N_LAMBDA} float64 values expected"
                raise InvalidSolution(f"{where}: {result.status}: {detail}", metrics=metrics)
            coef = _decoded(result.stdout, X.shape[1], where, metrics)
            try:
                gaps = L.check_path(X, y, lam, coef, ref, name=where)
            except InvalidSolution as exc:
                raise InvalidSolution(str(exc), metrics=metrics) from None
            row = rows.setdefault(label, {"problem": label, "n": X.shape[0], "p": X.shape[1],
                                          "times_ms": [], "max_gap": -math.inf})
            row["times_ms"].append(1000.0 * result.wall_s)
            row["max_gap"] = max(row["max_gap"], float(gaps.max()))
        for row in rows.values():
            row["time_ms"] = min(row["times_ms"])
        synthetic = [rows[L.PROBLEMS[i].name] for i in self.indices]
        times = [max(r["time_ms"], 1e-3) for r in synthetic]  # a 1 µs floor keeps the log finite
        geomean = float(np.exp(np.mean(np.log(times))))
        metrics.update(problems=synthetic, case_scores=times, geomean_ms=geomean)
        if self.real:
            metrics["real"] = [rows[f"real {name}"] for name in REAL_DATASETS]
        if self.compare_initial:
            if source == self.initial_program():  # the first timing of the initial program is the baseline
                self.__dict__.setdefault("_case_baselines", {}).setdefault(self.case_key(seed), list(times))
            baseline = self.case_baseline(seed)
            if baseline is not None and len(baseline) == len(times):
                speedups = [b / t for b, t in zip(baseline, times)]
                metrics["speedup"] = {r["problem"]: s for r, s in zip(synthetic, speedups)}
                metrics["speedup_histogram"] = speedup_histogram(speedups)
                metrics["speedup_geomean"] = float(np.exp(np.mean(np.log(speedups))))
        return Score(geomean, metrics)

    def case_baseline(self, seed: int) -> list[float] | None:
        """The initial program's per-problem times (ms), measured once per task on first use.

        ``case_key`` is ``None`` for every seed: the baseline is timed on the instances of the first
        evaluation that needs it and reused (sizes match across seeds, instances do not). ``None``
        when ``compare_initial=False``.
        """
        return super().case_baseline(seed) if self.compare_initial else None

    # ------------------------------------------------------------------ display
    def report(self, state: State) -> list[tuple[str, str]]:
        """CLI rows: per-problem time and objective gap, geometric mean, speed-up histogram."""
        meta = state.metadata
        rows = [(r["problem"], f"{r['time_ms']:.2f} ms (gap {r['max_gap']:+.2e})") for r in meta.get("problems", [])]
        if "geomean_ms" in meta:
            rows.append(("geometric mean", f"{meta['geomean_ms']:.3f} ms"))
        if meta.get("speedup_histogram"):
            rows.append(("speed-up vs initial", ", ".join(f"{k}: {v}" for k, v in meta["speedup_histogram"].items())))
        for r in meta.get("real", []):
            rows.append((r["problem"], f"{r['time_ms']:.2f} ms (gap {r['max_gap']:+.2e}; not scored)"))
        if meta.get("compile_error"):
            rows.append(("compile error", meta["compile_error"][:500]))
        return rows


def _close_all(binaries: OrderedDict) -> None:
    """Remove every cached program's directory (the task's finalizer)."""
    for prog in binaries.values():
        prog.close()
    binaries.clear()


def _decoded(raw: bytes, p: int, where: str, metrics: dict) -> np.ndarray:
    """:func:`~discoverygym.rewards.lasso.decode_output` with the run named in the error."""
    try:
        return L.decode_output(raw, p, L.N_LAMBDA)
    except InvalidSolution as exc:
        raise InvalidSolution(f"{where}: {exc}", metrics=metrics) from None


def make_lasso_path(problems: Sequence[int | str] | None = None, n_problems: int | None = None, real: bool = False,
                    time_runs: int = 3, openmp: bool = False, time_limit_s: float = 60.0, memory_mb: int = 4096,
                    compare_initial: bool = True, allow_unconfined: bool = False,
                    n_cases: int | None = None) -> LassoPathTask:
    """Factory of ``LassoPath-v0`` (cheap: nothing is compiled or generated here); see :class:`LassoPathTask`.

    ``n_cases`` is ``n_problems`` under the name the CLI's ``--n-cases`` passes (give one of them).

    Raises:
        ValueError: both ``n_cases`` and ``n_problems``; any :class:`LassoPathTask` refusal.
    """
    if n_cases is not None:
        if n_problems is not None:
            raise ValueError("give n_problems or n_cases (--n-cases), not both")
        n_problems = n_cases
    return LassoPathTask(problems=problems, n_problems=n_problems, real=real, time_runs=time_runs, openmp=openmp,
                         time_limit_s=time_limit_s, memory_mb=memory_mb, compare_initial=compare_initial,
                         allow_unconfined=allow_unconfined)
