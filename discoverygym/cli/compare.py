"""``discoverygym compare``: configs x seeds of the trainer (and the benchmark's references) as one study, with a verdict.

Each (config, seed) is one run of the discovery benchmark's runner
(:func:`discoverygym.agents.bench.run_one`, also ``benchmarks/discovery.py``) in
``<study>/<config>-seed<seed>``: for a trainer config an ordinary resumable train run, for a
reference (``reference``: basin hopping / Adam restarts, ``cma-es``; these need ``--budget-s``) a
run of that wall budget; each finished run leaves its ``result.json``. The study
directory also holds ``study.json`` (what was asked for), ``results.csv`` (one row per run),
``compare.png`` (best score against evaluations, mean over seeds with the min–max spread shaded)
and, once every run is finished, ``summary.json``.

The printed table gives, per config: the budget (evaluations and training wall time per run), the
start score, the best score's mean ± sd over seeds, the best over seeds, and a one-sided
Mann–Whitney U test (``scipy.stats.mannwhitneyu``) of "the first config is better than this one";
one plain verdict line per config follows. The rank test is the discovery benchmark's
(:func:`discoverygym.agents.bench.rank_test`) and the trainer configs are built by the benchmark's
:func:`~discoverygym.agents.bench.trainer_config` (``discoverygym train``'s defaults) with the
command line's settings.

Without ``--run-dir`` every invocation gets a new study directory
(``runs/compare-<env>-<YYYYmmdd-HHMMSS>``, suffixed ``-2``, ``-3``... if taken), so repeating a
command never fails. ``--resume --run-dir DIR`` finishes a killed study: finished runs are read back,
a run with a checkpoint continues from it (the trainer's resume), a run killed before its first
checkpoint starts again.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import statistics
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from discoverygym.agents.bench import best_within, rank_test, run_one  # the benchmark's code
from discoverygym.errors import UsageError
from discoverygym.types import Direction

__all__ = ["ALPHA", "default_study_dir", "rank_test", "study"]

#: significance level of the verdict lines.
ALPHA = 0.05


def default_study_dir(env_id: str, parent: Path = Path("runs"), now: float | None = None) -> Path:
    """A study directory that does not exist yet: ``parent/compare-<env_id>-<YYYYmmdd-HHMMSS>``, with
    ``-2``, ``-3``... appended when that one is taken (two commands within one second)."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    base = parent / f"compare-{env_id}-{stamp}"
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{base.name}-{n}")
    return path


def _min_p(n: int, m: int) -> float:
    """The smallest one-sided p-value an exact Mann–Whitney U test of ``n`` vs ``m`` samples can give."""
    return 1.0 / math.comb(n + m, n)


def _fmt(v: float | None, digits: int = 10) -> str:
    return "—" if v is None else f"{v:.{digits}g}"


def _study_spec(args: argparse.Namespace, names: list[str], overrides: dict) -> dict:
    return {"kind": "compare", "env_id": args.env_id, "configs": names, "seeds": args.seeds,
            "init": args.init, "overrides": overrides}


def _prepare_root(args: argparse.Namespace, spec: dict) -> tuple[Path, dict]:
    """The study directory and the study to run: new (``--run-dir`` or a fresh default), or the
    stored one ``--resume`` finishes (its overrides, with the ``RESUMABLE_FIELDS`` from
    the command line when given; other given values must match)."""
    from discoverygym.agents.trainer import RESUMABLE_FIELDS
    from discoverygym.io import file_in_the_way

    if args.run_dir is None:
        if args.resume:
            raise UsageError("--resume needs --run-dir (the study directory to finish)")
        root = default_study_dir(args.env_id)
    else:
        root = Path(args.run_dir)
        blocker = file_in_the_way(root)
        if blocker is not None:
            raise UsageError(f"{blocker} exists and is not a directory (it cannot hold --run-dir {root})")
    stored_path = root / "study.json"
    if args.resume:
        if not stored_path.is_file():
            raise UsageError(f"--resume: {root} holds no compare study (no study.json)")
        try:
            stored = json.loads(stored_path.read_text())
        except (OSError, ValueError) as exc:
            raise UsageError(f"cannot read {stored_path}: {exc}") from None
        given, kept = spec["overrides"], dict(stored.get("overrides", {}))
        diff = sorted(k for k in spec if k != "overrides" and stored.get(k) != spec[k])
        diff += sorted(k for k, v in given.items() if k not in RESUMABLE_FIELDS and kept.get(k) != v)
        if diff:
            raise UsageError(f"--resume continues the stored study; these arguments differ from it: {', '.join(diff)}"
                             f" (stored: {json.dumps({k: stored.get(k, kept.get(k)) for k in diff})})")
        kept.update({k: v for k, v in given.items() if k in RESUMABLE_FIELDS})
        return root, {**stored, "overrides": kept}
    if stored_path.exists():
        raise UsageError(f"{root} already holds a compare study: finish it with --resume, or drop --run-dir "
                         "for a new study directory")
    if root.is_dir() and any(root.iterdir()):
        raise UsageError(f"{root} is not empty: choose another --run-dir (or none, for a new study directory)")
    root.mkdir(parents=True, exist_ok=True)
    (root / "study.json").write_text(json.dumps(spec, indent=2) + "\n")
    return root, spec


def _run_summary(name: str, seed: int, result: dict, run_dir: Path) -> dict:
    """What the study reports of one finished run (:func:`discoverygym.agents.bench.run_one`'s result):
    its best score is the one reached within the wall budget (:func:`~discoverygym.agents.bench.best_within`)."""
    return {"config": name, "seed": seed, "start_score": result["initial"], "best_score": best_within(result),
            "steps": result["steps"], "evaluations": result["evaluations"], "wall_s": result["wall_s"],
            "run_dir": str(run_dir), "curve": [tuple(p) for p in result["curve"]]}


def study(args: argparse.Namespace, console: Console, names: list[str], overrides: dict, initial: Any,
          make_config: Any) -> int:
    """Run (or finish, with ``--resume``) the study of ``names`` x ``args.seeds`` on ``args.env_id``; print
    the table and verdicts (or JSON), write ``results.csv``, ``compare.png`` and ``summary.json``.

    Args:
        args: the parsed ``compare`` arguments.
        console: where the table goes.
        names: the ablation configs, the first being the reference of the rank tests.
        overrides: TrainConfig fields from the command line (no seed).
        initial: the start construction or ``None``.
        make_config: ``(name, seed, overrides) -> TrainConfig`` for a trainer config (validates,
            checks that the policy fits), ``None`` for a reference (:data:`~discoverygym.agents.bench.REFERENCES`).
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from discoverygym.agents.trainer import has_checkpoint
    from discoverygym.envs.registry import ENVS

    problem = ENVS[args.env_id]
    for n in names:  # refuse bad values before a study directory is made
        make_config(n, 0, overrides)
    root, spec = _prepare_root(args, _study_spec(args, names, overrides))
    args.study_dir = str(root)  # for the interrupt hint
    configs = {(n, s): make_config(n, s, spec["overrides"]) for n in names for s in range(args.seeds)}
    budget = spec["overrides"].get("budget_s")
    progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TextColumn("best {task.fields[best]}"), TimeElapsedColumn(), console=console,
                        disable=args.json)
    task = progress.add_task("compare", total=len(configs), best="—")
    t0 = time.perf_counter()
    runs = []
    with progress:
        for (name, seed), config in configs.items():
            run_dir = root / f"{name}-seed{seed}"
            progress.update(task, description=f"{name} seed {seed}")

            def on_step(m: dict) -> None:
                progress.update(task, best=_fmt(m["score/best"], 8))

            status = "done" if (run_dir / "result.json").is_file() else "new"
            if status == "new" and config is not None and has_checkpoint(run_dir):
                status = "resumed"
            result = run_one(args.env_id, name, seed, budget, train_config=config, run_dir=run_dir,
                             initial=initial, callback=on_step)
            progress.advance(task)
            r = _run_summary(name, seed, result, run_dir)
            runs.append(r)
            if not args.json:
                progress.console.print(f"{name} seed {seed}: best {_fmt(r['best_score'])} "
                                       f"({r['evaluations']} evaluations, {r['wall_s']:.1f} s"
                                       f"{', already finished' if status == 'done' else ', resumed' if status == 'resumed' else ''})",
                                       highlight=False)
    wall = time.perf_counter() - t0
    rows = _rows(names, runs, problem.direction)
    _write_csv(root / "results.csv", runs)
    plot = root / "compare.png"
    _plot(names, runs, problem, args.seeds, plot)
    verdicts = _verdicts(rows, problem.direction)
    summary = {"env_id": args.env_id, "record": problem.sota.get("value"), "direction": problem.direction,
               "rows": rows, "verdicts": verdicts, "plot": str(plot), "results": str(root / "results.csv"),
               "run_dir": str(root), "wall_s": wall}
    (root / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    if args.json:
        print(json.dumps(summary))
        return 0
    better = Direction(problem.direction).comparative
    from rich import box

    table = Table(title=f"{problem.title}: best {problem.quantity} over {args.seeds} seed(s) ({better} is better; "
                  f"record {problem.sota.get('value')})", box=box.SIMPLE_HEAD)
    for col, justify in (("config", "left"), ("evals/run", "right"), ("wall s/run", "right"), ("start", "right"),
                         ("best: mean ± sd", "right"), ("best of seeds", "right"), (f"p vs {names[0]}", "right")):
        table.add_column(col, justify=justify, overflow="fold")
    for r in rows:
        mean = "—" if r["mean"] is None else f"{r['mean']:.8g} ± {r['sd']:.2g}"
        p = "ref" if r["config"] == names[0] else _fmt(r["p_vs_first"], 3)
        table.add_row(r["config"], str(r["evaluations"]), f"{r['wall_s']:.1f}", _fmt(r["start"], 8), mean,
                      _fmt(r["best"], 8), p)
    console.print(table)
    for line in verdicts:
        console.print(line, highlight=False, soft_wrap=True)
    console.print(f"p: one-sided Mann–Whitney U, H1 = {names[0]} {Direction(problem.direction).comparative}"
                  f" than the config; verdicts at α = {ALPHA}", highlight=False, soft_wrap=True)
    console.print(f"plot: {plot}; per-run results: {root / 'results.csv'}; TensorBoard: tensorboard --logdir {root}",
                  highlight=False, soft_wrap=True)
    console.print(f"study: {root} ({wall:.1f} s this call; finish a killed one with "
                  f"`discoverygym compare {args.env_id} --configs {','.join(names)} --seeds {args.seeds} "
                  f"--run-dir {root} --resume`)", highlight=False, soft_wrap=True)
    return 0


def _rows(names: list[str], runs: list[dict], direction: str) -> list[dict]:
    """One summary row per config (with the rank test against the first config)."""
    by = {n: [r for r in runs if r["config"] == n] for n in names}
    ref = [r["best_score"] for r in by[names[0]] if r["best_score"] is not None]
    rows = []
    for n in names:
        bests = [r["best_score"] for r in by[n]]
        valid = [b for b in bests if b is not None]
        starts = [r["start_score"] for r in by[n] if r["start_score"] is not None]
        best = None
        for b in valid:
            if best is None or Direction(direction).better(b, best):
                best = b
        rows.append({
            "config": n, "bests": bests, "n": len(valid),
            "mean": statistics.fmean(valid) if valid else None,
            "sd": statistics.stdev(valid) if len(valid) > 1 else 0.0,
            "best": best, "start": statistics.fmean(starts) if starts else None,
            "evaluations": max((r["evaluations"] for r in by[n]), default=0),
            "wall_s": statistics.fmean(r["wall_s"] for r in by[n]) if by[n] else 0.0,
            "p_vs_first": None if n == names[0] else rank_test(ref, valid, direction),
        })
    return rows


def _verdicts(rows: list[dict], direction: str) -> list[str]:
    """Plain sentences: does the first config beat each other one, and is that significant?"""
    ref, lines = rows[0], []
    if len(rows) == 1:
        return [f"verdict: only {ref['config']} was run; nothing to compare"]
    for r in rows[1:]:
        p = r["p_vs_first"]
        if p is None or ref["mean"] is None or r["mean"] is None:
            lines.append(f"verdict: {ref['config']} vs {r['config']}: no valid runs to compare")
            continue
        ahead = Direction(direction).better(ref["mean"], r["mean"])
        if p < ALPHA:
            lines.append(f"verdict: {ref['config']} beats {r['config']} (p = {p:.3g} < {ALPHA}, "
                         f"{ref['n']} vs {r['n']} seeds)")
            continue
        word = "ahead of" if ahead else ("level with" if ref["mean"] == r["mean"] else "behind")
        floor = _min_p(ref["n"], r["n"])
        if math.isclose(p, floor, rel_tol=1e-9):
            lines.append(f"verdict: {ref['config']} beats {r['config']} in every pairing of seeds (p = {p:.3g}, the "
                         f"smallest {ref['n']} vs {r['n']} seeds can give), which is not significant at α = {ALPHA}"
                         + (": use more --seeds" if floor >= ALPHA else ""))
            continue
        line = (f"verdict: {ref['config']} is {word} {r['config']} on the mean, but not significantly "
                f"(p = {p:.3g} ≥ {ALPHA})")
        if floor >= ALPHA:
            line += (f"; {ref['n']} vs {r['n']} seeds cannot reach p < {ALPHA} (smallest possible p = {floor:.3g}): "
                     "use more --seeds")
        lines.append(line)
    return lines


def _write_csv(path: Path, runs: list[dict]) -> None:
    """``results.csv``: one row per (config, seed) run."""
    cols = ("config", "seed", "start_score", "best_score", "steps", "evaluations", "wall_s", "run_dir")
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        for r in runs:
            w.writerow({**r, "wall_s": f"{r['wall_s']:.3f}",
                        "start_score": "" if r["start_score"] is None else repr(r["start_score"]),
                        "best_score": "" if r["best_score"] is None else repr(r["best_score"])})


def _plot(names: list[str], runs: list[dict], problem: Any, seeds: int, path: Path) -> None:
    """Best score against evaluations: per config the mean over seeds (line) and the min–max over
    seeds (shaded), from the start score at 0 evaluations; the record as a dashed line when it is
    within sight of the curves (matplotlib, Agg)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.8), dpi=110)
    lo_all, hi_all = math.inf, -math.inf
    for i, name in enumerate(names):
        curves = []
        for r in runs:
            if r["config"] != name:
                continue
            pts = [(0, r["start_score"])] + r["curve"] if r["start_score"] is not None else r["curve"]
            curves.append([(x, y) for x, y in pts if y is not None])
        length = min((len(c) for c in curves), default=0)
        if not length:
            continue
        xs = [curves[0][j][0] for j in range(length)]
        ys = [[c[j][1] for c in curves] for j in range(length)]
        mean = [statistics.fmean(v) for v in ys]
        lo, hi = [min(v) for v in ys], [max(v) for v in ys]
        lo_all, hi_all = min(lo_all, *lo), max(hi_all, *hi)
        colour = f"C{i % 10}"
        ax.plot(xs, mean, color=colour, lw=2, marker="o", ms=3, label=f"{name} (mean of {len(curves)})")
        if len(curves) > 1:
            ax.fill_between(xs, lo, hi, color=colour, alpha=0.2, lw=0)
    record = problem.sota.get("value")
    if record is not None and math.isfinite(lo_all):
        span = max(hi_all - lo_all, abs(hi_all) * 1e-9, 1e-12)
        if lo_all - 2 * span <= record <= hi_all + 2 * span:
            ax.axhline(record, color="k", ls="--", lw=1, label=f"record {record:.8g}")
    ax.set_xlabel("evaluations (candidates judged per run)")
    better = Direction(problem.direction).comparative
    ax.set_ylabel(f"best {problem.quantity} ({better} is better)")
    ax.set_title(f"{problem.title}: best so far vs evaluations, {seeds} seed(s); shaded: min–max over seeds"
                 + ("" if record is None else f"\nrecord {record:.10g}"), fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.ticklabel_format(axis="y", useOffset=False)
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
