"""LASSO path solvers on LassoPath-v0's problems: the bundled glmnet port against scikit-learn, celer, skglm.

For each problem one instance is drawn (seed ``--seed`` + problem index) and every solver computes
the 50-λ path of :mod:`discoverygym.rewards.lasso` on it, ``--repeats`` times (minimum kept), all in
one run of this script. Each solution is checked with the env's rule, obj ≤ obj(sklearn
``lasso_path`` with its defaults) + 1e-6 at every λ; a solver that breaks it is marked ``FAIL``
(its time still counts in its geometric mean; the last row counts its failures).

What is timed:
* ``glmnet port (C++)``: the sandboxed process's wall time (fork to exit: start, reading the input,
  the solve, writing the output), as the env times candidates; compiled once beforehand;
* ``sklearn``: ``lasso_path(X, y, alphas=λ)`` with its defaults (tol 1e-4; this is the reference);
* ``celer``: ``celer_path(X, y, "lasso", alphas=λ)`` with its defaults (tol 1e-6);
* ``skglm``: ``skglm.Lasso(alpha, fit_intercept=False, warm_start=True)`` refitted down the grid
  (its default tol 1e-4), a path with warm starts;
all three in process (no process start, no input transfer), so they carry less overhead than the C++ run;
each is called once on a tiny problem first (imports, skglm's numba compilation).

    python benchmarks/lasso.py                          # 17 problems, 1 repeat (a few minutes on 2 cores)
    python benchmarks/lasso.py --problems 0 10 11 --repeats 3
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Callable

import numpy as np
from rich.console import Console
from rich.table import Table

from discoverygym.envs.lasso import LassoPathTask, eigen_include
from discoverygym.rewards import lasso as L
from discoverygym.sandbox.native_program import CompiledProgram


def _sklearn(X, y, lam):
    return L.reference_path(X, y, lam)


def _celer(X, y, lam):
    from celer import celer_path

    return celer_path(X, y, "lasso", alphas=lam)[1]


def _skglm(X, y, lam):
    from skglm import Lasso

    model = Lasso(alpha=lam[0], fit_intercept=False, warm_start=True)
    coefs = np.empty((X.shape[1], len(lam)))
    for k, alpha in enumerate(lam):
        model.alpha = alpha
        coefs[:, k] = model.fit(X, y).coef_
    return coefs


def _available(name: str) -> bool:
    try:
        __import__(name)
    except ImportError:
        return False
    return True


def main() -> None:
    """Parse arguments, time every solver on every problem, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--problems", type=int, nargs="*", default=list(range(len(L.PROBLEMS))),
                        help="problem indices (0-16; default all)")
    parser.add_argument("--repeats", type=int, default=1, help="timings per solver and problem (minimum kept)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    include = eigen_include()
    if include is None:
        raise SystemExit("Eigen 3 headers not found: install libeigen3-dev")
    task = LassoPathTask(problems=args.problems)
    solvers: dict[str, Callable] = {"sklearn": _sklearn}
    for name, fn in (("celer", _celer), ("skglm", _skglm)):
        if _available(name):
            solvers[name] = fn
    columns = ["glmnet port (C++)", *solvers]
    times: dict[str, list[float]] = {c: [] for c in columns}
    failed: dict[str, int] = dict.fromkeys(columns, 0)
    table = Table(title=f"LASSO path, 50 λ: time (ms, min of {args.repeats}); FAIL = obj > sklearn + 1e-6 at some λ")
    table.add_column("problem")
    for c in columns:
        table.add_column(c, justify="right")
    table.add_column("glmnet worst gap", justify="right")
    warnings.simplefilter("ignore")
    Xw, yw = L.generate(L.LassoProblem(50, 20, "g"), 0)  # warm-up: skglm's numba compilation, imports
    for fn in solvers.values():
        fn(Xw, yw, L.lambda_grid(Xw, yw))
    with CompiledProgram(task.initial_program(), flags=task.flags(include)) as prog:
        if not prog.compiled.ok:
            raise SystemExit(f"the initial program does not compile: {prog.compiled.log[-500:]}")
        for index in args.problems:
            problem = L.PROBLEMS[index]
            X, y = L.generate(problem, args.seed + index)
            lam = L.lambda_grid(X, y)
            ref = L.objective(X, y, L.reference_path(X, y, lam), lam)
            row, worst = [problem.name], ""
            limits = task.limits(problem.p)
            for c in columns:
                best, coef = np.inf, None
                for _ in range(args.repeats):
                    if c == columns[0]:
                        run = prog.run(L.encode_input(X, y, lam), limits)
                        if not run.ok:
                            raise SystemExit(f"{problem.name}: the glmnet port failed: {run.message}")
                        best, coef = min(best, 1000 * run.wall_s), L.decode_output(run.stdout, problem.p, L.N_LAMBDA)
                    else:
                        start = time.perf_counter()
                        coef = solvers[c](X, y, lam)
                        best = min(best, 1000 * (time.perf_counter() - start))
                gap = float((L.objective(X, y, coef, lam) - ref).max())
                ok = gap <= L.GAP_TOL
                failed[c] += not ok
                times[c].append(best)
                row.append(f"{best:.1f}" + ("" if ok else " FAIL"))
                if c == columns[0]:
                    worst = f"{gap:+.1e}"
            table.add_row(*row, worst)
            print(f"  {problem.name}: done", flush=True)
    table.add_row("geometric mean", *[f"{np.exp(np.mean(np.log(times[c]))):.1f}" for c in columns], "")
    table.add_row("problems failed", *[str(failed[c]) for c in columns], "")
    Console().print(table)


if __name__ == "__main__":
    main()
