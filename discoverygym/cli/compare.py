"""``discoverygym compare``: configs x seeds of the trainer (and the benchmark's references) as one study, with a verdict.

Each (config, seed) is one run of the discovery benchmark's runner
(:func:`discoverygym.agents.bench.run_one`, also ``benchmarks/discovery.py``) in
``<study>/<config>-seed<seed>``: for a trainer config an ordinary resumable train run, for a
reference (``reference``: basin hopping / Adam restarts, ``cma-es``; these need ``--budget-s``) a
run of that wall budget; each finished run leaves its ``result.json``. The study
directory also holds ``study.json`` (what was asked for), ``results.csv`` (one row per run),
``compare.png`` (the scored best per config, mean over seeds with the min–max spread shaded: over
wall time cut at the budget under ``--budget-s``, else over evaluations) and, once every run is
finished, ``summary.json``.

The printed table gives, per config: what it changes relative to ``full``, the budget (evaluations
per run, the longest run's wall time), ``late`` (runs whose best improved after the wall budget: not
counted), the start score, the best score's mean ± sd over seeds, the best over seeds, and a
two-sided Mann–Whitney U test (``scipy.stats.mannwhitneyu``) against the first config. One verdict
line per config follows, worded after the two-sided test, with both one-sided p and the seeds
significance needs; warnings flag runs that overran the budget by more than 25% or improved after it.
Off a terminal (a pipe, a file) the table is plain Markdown, one line per row. The rank test is the discovery benchmark's
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
import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from discoverygym.agents.bench import best_within, rank_test, run_one  # the benchmark's code
from discoverygym.agents.config import ABLATION_HELP
from discoverygym.cli.common import check_env, load_init, resume_command, standalone_main
from discoverygym.cli.train import (
    AGENTS,
    add_llm_options,
    add_run_options,
    build_config,
    check_policy,
    flag_overrides,
    run_guarded,
)
from discoverygym.errors import UsageError
from discoverygym.io import file_in_the_way
from discoverygym.types import Direction

__all__ = ["ALPHA", "add_parser", "default_study_dir", "main", "print_table", "rank_test", "run",
           "seeds_for_significance", "study"]

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


def _fmt(v: float | None, digits: int = 10) -> str:
    return "—" if v is None else f"{v:.{digits}g}"


def _study_spec(args: argparse.Namespace, names: list[str], overrides: dict) -> dict:
    return {"kind": "compare", "env_id": args.env_id, "configs": names, "seeds": args.seeds,
            "init": args.init, "overrides": overrides}


def _prepare_root(args: argparse.Namespace, spec: dict) -> tuple[Path, dict]:
    """The study directory and the study to run: new (``--run-dir`` or a fresh default), or the
    stored one ``--resume`` finishes (its overrides, with the ``RESUMABLE_FIELDS`` from
    the command line when given, less ``budget_s``; other given values must match).

    ``--budget-s`` is not resumable here as it is for ``train``: the finished runs were scored at the
    stored wall budget, so a different one would print one budget over scores taken at another."""
    from discoverygym.agents.config import RESUMABLE_FIELDS
    from discoverygym.io import file_in_the_way

    resumable = tuple(k for k in RESUMABLE_FIELDS if k != "budget_s")

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
        diff += sorted(k for k, v in given.items() if k not in resumable and kept.get(k) != v)
        if diff:
            raise UsageError(f"--resume continues the stored study; these arguments differ from it: {', '.join(diff)}"
                             f" (stored: {json.dumps({k: stored.get(k, kept.get(k)) for k in diff})})")
        kept.update({k: v for k, v in given.items() if k in resumable})
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
    best = best_within(result)
    return {"config": name, "seed": seed, "start_score": result["initial"], "best_score": best,
            "result_best": float(result["best"]), "late": best != float(result["best"]),
            "steps": result["steps"], "evaluations": result["evaluations"], "wall_s": result["wall_s"],
            "elapsed_s": float(result.get("elapsed_s", result["wall_s"])), "budget_s": result.get("budget_s"),
            "run_dir": str(run_dir), "curve": [tuple(p) for p in result["curve"]],
            "trace": [tuple(p) for p in result["trace"]]}


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
    from discoverygym.envs.registry import ENVS, problem_of

    # a construction env's problem, or a program env's task (LLM policies; same direction/record facts)
    problem = ENVS[args.env_id] if args.env_id in ENVS else problem_of(args.env_id, "code", **(args.task_options or {}))
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
            args.current_run = f"config {name!r} seed {seed} ({run_dir})"  # named if a --plugin's code raises

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
                late = f", {r['elapsed_s'] - budget:.2f} s past the budget" if budget and r["elapsed_s"] > budget else ""
                progress.console.print(f"{name} seed {seed}: best {_fmt(r['best_score'])} "
                                       f"({r['evaluations']} evaluations, {r['elapsed_s']:.1f} s wall{late}"
                                       f"{', already finished' if status == 'done' else ', resumed' if status == 'resumed' else ''})",
                                       highlight=False, soft_wrap=True)
    wall = time.perf_counter() - t0
    rows = _rows(names, runs, problem.direction)
    _write_csv(root / "results.csv", runs)
    plot = root / "compare.png"
    _plot(names, runs, problem, args.seeds, plot, budget)
    verdicts = _verdicts(rows, problem.direction, budget)
    warnings = _warnings(runs, budget)
    record_line = _record_verdict(args.env_id, problem, runs)
    summary = {"env_id": args.env_id, "record": problem.sota.get("value"), "direction": problem.direction,
               "budget_s": budget, "rows": rows, "verdicts": verdicts, "record_verdict": record_line,
               "warnings": warnings, "plot": str(plot),
               "results": str(root / "results.csv"), "run_dir": str(root), "wall_s": wall}
    (root / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    if args.json:
        print(json.dumps(summary))
        return 0
    better = Direction(problem.direction).comparative
    title = (f"{problem.title}: best {problem.quantity} over {args.seeds} seed(s) ({better} is better; "
             f"record {problem.sota.get('value')})"
             + ("" if budget is None else f"; scored at the {budget:g} s wall budget"))
    headers = ["config", "changes vs full", "evals/run", "wall s (max)", "late", "start (mean of seeds)", "best: mean ± sd",
               "best of seeds", f"p two-sided vs {names[0]}"]
    cells = []
    for r in rows:
        mean = "—" if r["mean"] is None else f"{r['mean']:.8g} ± {r['sd']:.2g}"
        p = "ref" if r["config"] == names[0] else _fmt(r["p_two_sided"], 3)
        cells.append([r["config"], r["changes"], evals_cell(r), f"{r['wall_max']:.1f}",
                      f"{r['late']}/{r['runs']}", _fmt(r["start"], 8), mean, _fmt(r["best"], 8), p])
    print_table(console, title, headers, cells)
    for line in verdicts:
        console.print(line, highlight=False, soft_wrap=True)
    console.print(record_line, highlight=False, soft_wrap=True)
    for line in warnings:
        console.print(line, highlight=False, soft_wrap=True, style="yellow")
    console.print(f"p: Mann–Whitney U on the per-seed best scores, two-sided (H1: the config and {names[0]} differ); "
                  f"the verdicts also give both one-sided p; α = {ALPHA}. late: runs whose best improved after the "
                  "budget (not counted); wall: the longest run's wall time.", highlight=False, soft_wrap=True)
    console.print(f"plot: {plot}; per-run results: {root / 'results.csv'}; TensorBoard: tensorboard --logdir {root}",
                  highlight=False, soft_wrap=True)
    console.print(f"study: {root} ({wall:.1f} s this call; finish a killed one with "
                  f"`discoverygym compare {args.env_id} --configs {','.join(names)} --seeds {args.seeds} "
                  + "".join(f"--plugin {p} " for p in getattr(args, "plugin", None) or [])
                  + f"--run-dir {root} --resume`)", highlight=False, soft_wrap=True)
    return 0


def print_table(console: Console, title: str, headers: list[str], rows: list[list[str]]) -> None:
    """A table on ``console``: rich's box table on a terminal, else a plain Markdown table (one line per
    row, never wrapped: a pipe into ``cat`` or a file keeps every number whole)."""
    if console.is_terminal:
        from rich import box

        table = Table(title=title, box=box.SIMPLE_HEAD)
        for i, col in enumerate(headers):
            table.add_column(col, justify="left" if i < 2 else "right", overflow="fold")
        for row in rows:
            table.add_row(*row)
        console.print(table)
        return
    lines = [title, "", "| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    console.print("\n".join(lines), highlight=False, markup=False, soft_wrap=True)


def evals_cell(row: dict) -> str:
    """The "evals/run" cell of a :func:`_rows` row: the count, or ``"min–max"`` over the seeds when
    they ran different counts (a wall budget stops each run at its own step)."""
    low, high = row.get("evaluations_min", row["evaluations"]), row["evaluations"]
    return str(high) if low == high else f"{low}–{high}"


def _rows(names: list[str], runs: list[dict], direction: str) -> list[dict]:
    """One summary row per config: scores, late runs, the longest wall, and the rank tests against
    the first config (two-sided, and each one-sided alternative)."""
    from discoverygym.agents.config import ABLATION_DOCS, changed_settings, config_overrides

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
        try:
            changes = changed_settings(config_overrides(n))
        except ValueError:  # a reference (basin hopping, CMA-ES): another method, not a trainer config
            changes = ["another method"]
        first = n == names[0]
        rows.append({
            "config": n, "bests": bests, "n": len(valid), "runs": len(by[n]),
            "changes": ", ".join(changes) or "nothing (= full)", "doc": ABLATION_DOCS.get(n, ""),
            "mean": statistics.fmean(valid) if valid else None,
            "sd": statistics.stdev(valid) if len(valid) > 1 else 0.0,
            "best": best, "start": statistics.fmean(starts) if starts else None,
            "evaluations": max((r["evaluations"] for r in by[n]), default=0),
            "evaluations_min": min((r["evaluations"] for r in by[n]), default=0),
            "wall_s": statistics.fmean(r["wall_s"] for r in by[n]) if by[n] else 0.0,
            "wall_max": max((r.get("elapsed_s", r["wall_s"]) for r in by[n]), default=0.0),
            "late": sum(bool(r.get("late")) for r in by[n]),
            "p_two_sided": None if first else rank_test(ref, valid, direction, "two-sided"),
            "p_first_better": None if first else rank_test(ref, valid, direction, "better"),
            "p_first_worse": None if first else rank_test(ref, valid, direction, "worse"),
            "p_vs_first": None if first else rank_test(ref, valid, direction, "two-sided"),
        })
    return rows


def seeds_for_significance(alpha: float = ALPHA) -> int:
    """The fewest seeds per config (equal groups) at which a two-sided exact Mann–Whitney U test can
    reach ``p < alpha`` at all: its smallest p is ``2 / C(2n, n)`` (4 seeds at α = 0.05: 0.029)."""
    n = 1
    while 2.0 / math.comb(2 * n, n) >= alpha:
        n += 1
    return n


def _verdicts(rows: list[dict], direction: str, budget: float | None = None) -> list[str]:
    """Plain sentences that say what the two-sided test found (and both one-sided p), what each
    config changes, and how many seeds significance would need; under a wall budget (``budget``, s)
    also how many evaluations each config's runs got (they differ: each run stops at its own step)."""
    ref, lines = rows[0], []
    if len(rows) == 1:
        return [f"verdict: only {ref['config']} was run; nothing to compare"]
    need = seeds_for_significance()
    for r in rows[1:]:
        p2 = r["p_two_sided"]
        what = f" ({r['config']}: {r['doc']})" if r.get("doc") else ""
        if p2 is None or ref["mean"] is None or r["mean"] is None:
            lines.append(f"verdict: {ref['config']} vs {r['config']}: no valid runs to compare")
            continue
        sides = (f"two-sided p = {p2:.3g}; one-sided: {ref['config']} better p = {r['p_first_better']:.3g}, "
                 f"worse p = {r['p_first_worse']:.3g}; {ref['n']} vs {r['n']} seeds")
        if budget is not None:
            sides += (f"; within the {budget:g} s budget {ref['config']} ran {evals_cell(ref)} and {r['config']} "
                      f"{evals_cell(r)} evaluations per run")
        if p2 < ALPHA:
            ahead = Direction(direction).better(ref["mean"], r["mean"])
            word = "beats" if ahead else "is beaten by"
            lines.append(f"verdict: {ref['config']} {word} {r['config']}, significantly ({sides}){what}")
            continue
        word = ("ahead of" if Direction(direction).better(ref["mean"], r["mean"])
                else "level with" if ref["mean"] == r["mean"] else "behind")
        line = (f"verdict: no significant difference between {ref['config']} and {r['config']} at α = {ALPHA} "
                f"({sides}); {ref['config']} is {word} {r['config']} on the mean{what}")
        floor = 2.0 / math.comb(ref["n"] + r["n"], ref["n"]) if ref["n"] and r["n"] else 1.0
        if floor >= ALPHA:
            line += (f"; {ref['n']} vs {r['n']} seeds cannot reach p < {ALPHA} (smallest possible two-sided p = "
                     f"{floor:.3g}): significance needs at least {need} seeds per config (--seeds {need})")
        lines.append(line)
    return lines


def _record_verdict(env_id: str, problem: Any, runs: list[dict]) -> str:
    """``record: <verdict>`` for the best run of the study (its ``best.json``), by the one judgment
    (:func:`discoverygym.rewards.certify.state.judge_state`: the verdict ``certify`` gives for that file)."""
    from discoverygym.rewards.certify.state import judge_state

    sense = Direction(problem.direction)
    scored = [r for r in runs if r["best_score"] is not None]
    if not scored:
        return "record: no valid run to compare with it"
    top = scored[0]
    for r in scored[1:]:
        if sense.better(r["result_best"], top["result_best"]):
            top = r
    try:
        best = json.loads((Path(top["run_dir"]) / "best.json").read_text())
    except (OSError, ValueError):
        return f"record: not judged ({top['run_dir']} has no readable best.json)"
    state = best.get("state") if isinstance(best, dict) else None
    verdict = judge_state(env_id, problem, state)
    answer = "yes" if verdict.is_record else "no"
    return (f"record: {answer} — best run {top['config']} seed {top['seed']} ({top['run_dir']}/best.json): "
            f"{verdict.text()}")


def _warnings(runs: list[dict], budget: float | None) -> list[str]:
    """Lines that flag what the table does not count: runs past 1.25 x the budget, late improvements."""
    if budget is None:
        return []
    out = []
    over = [r for r in runs if r["elapsed_s"] > 1.25 * budget]
    if over:
        out.append(f"warning: {len(over)} of {len(runs)} runs overran the {budget:g} s budget by more than 25% ("
                   + ", ".join(f"{r['config']} seed {r['seed']}: {r['elapsed_s']:.1f} s" for r in over) + ")")
    late = [r for r in runs if r.get("late")]
    if late:
        out.append(f"warning: {len(late)} of {len(runs)} runs improved after the budget; the table scores them at "
                   "the budget (" + ", ".join(f"{r['config']} seed {r['seed']}: {_fmt(r['best_score'])} at the "
                                            f"budget, {_fmt(r['result_best'])} in the end" for r in late) + ")")
    return out


def _write_csv(path: Path, runs: list[dict]) -> None:
    """``results.csv``: one row per (config, seed) run."""
    cols = ("config", "seed", "start_score", "best_score", "result_best", "late", "steps", "evaluations", "wall_s",
            "elapsed_s", "run_dir")
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        for r in runs:
            w.writerow({**r, "wall_s": f"{r['wall_s']:.3f}", "elapsed_s": f"{r['elapsed_s']:.3f}",
                        "start_score": "" if r["start_score"] is None else repr(r["start_score"]),
                        "best_score": "" if r["best_score"] is None else repr(r["best_score"])})


#: line styles and markers per config in ``compare.png``, so that coinciding lines stay visible
_STYLES = (("-", "o", 3.2), ("--", "s", 2.4), (":", "^", 2.0), ("-.", "D", 1.6), ((0, (5, 1)), "v", 1.4))


def _series(run: dict, budget: float | None) -> list[tuple[float, float]]:
    """One run's best-so-far points as the table scores it: over wall seconds cut at the budget (the
    last point sits at the budget with :func:`best_within`'s score), else over evaluations."""
    if budget is None:
        return [(0.0, run["start_score"]), *run["curve"]] if run["start_score"] is not None else list(run["curve"])
    pts = [(float(t), float(y)) for t, y in run["trace"] if t <= budget]
    if not pts and run["trace"]:
        pts = [(0.0, float(run["trace"][0][1]))]
    return [(0.0, pts[0][1]), *pts, (float(budget), run["best_score"])] if pts else []


def _zoom_end(ax: Any, drawn: list[tuple], record: float | None, better: str) -> None:
    """The zoomed end panel of ``compare.png``: each config's mean (and min–max band) over the last
    quarter of the x range, the y axis fitted to the final values (means and min–max; plus the record
    when it lies within 10 spans of them), so that differences of 1e-9 at the end are visible."""
    if not drawn:
        ax.set_axis_off()
        return
    x_end = max(float(d[0][-1]) for d in drawn)
    x_start = min(float(d[0][0]) for d in drawn)
    x0 = x_end - 0.25 * (x_end - x_start)
    lo_y, hi_y = math.inf, -math.inf
    for xs, mean, lo, hi, colour, style, marker, width in drawn:
        lo_y, hi_y = min(lo_y, float(lo[-1]), float(mean[-1])), max(hi_y, float(hi[-1]), float(mean[-1]))
        ax.step(xs, mean, where="post", color=colour, ls=style, lw=width, marker=marker, ms=4,
                markevery=max(1, len(xs) // 12), alpha=0.9)
        ax.fill_between(xs, lo, hi, step="post", color=colour, alpha=0.15, lw=0)
    span = max(hi_y - lo_y, abs(hi_y) * 1e-12, 1e-15)
    if record is not None and lo_y - 10 * span <= record <= hi_y + 10 * span:
        ax.axhline(record, color="k", ls="--", lw=1)
        lo_y, hi_y = min(lo_y, record), max(hi_y, record)
        span = max(hi_y - lo_y, span)
    ax.set_xlim(x0, x_end + 0.02 * (x_end - x_start))
    ax.set_ylim(lo_y - 0.1 * span, hi_y + 0.1 * span)
    ax.set_title(f"the end, zoomed: last quarter, y fitted to the final values ({better} is better)", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.ticklabel_format(axis="y", useOffset=False)


def _plot(names: list[str], runs: list[dict], problem: Any, seeds: int, path: Path, budget: float | None = None) -> None:
    """Best score per config, mean over seeds (line) with the min–max over seeds (shaded), from the
    same scored data as the table (:func:`_series`: over wall time cut at the budget under
    ``--budget-s``, else over evaluations), so each line ends at the table's mean. Each config has
    its own line style, marker and width (the widest drawn first) so that coinciding lines stay
    visible; the record as a dashed line when it is within sight; labels kept inside the image
    (``bbox_inches="tight"``). A second panel zooms on the last quarter of the x range with the y axis
    fitted to the values there (:func:`_zoom_end`), where the left panel, scaled from the start value,
    shows the final differences as one line. matplotlib, Agg."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, (ax, zoom) = plt.subplots(1, 2, figsize=(12.6, 5.0), dpi=110, gridspec_kw={"width_ratios": [3, 2]})
    lo_all, hi_all = math.inf, -math.inf
    drawn = []  # (xs, mean, lo, hi, colour, style, marker, width) per config, for the zoomed end panel
    for i, name in enumerate(names):
        series = [s for s in (_series(r, budget) for r in runs if r["config"] == name) if s]
        if not series:
            continue
        end = max(s[-1][0] for s in series)
        xs = np.unique(np.concatenate([[x for x, _ in s] for s in series] + [[end]]))
        ys = []
        for s in series:  # each run's best-so-far as a step function on the common grid
            t = np.array([x for x, _ in s])
            v = np.array([y for _, y in s], dtype=float)
            ys.append(v[np.maximum(np.searchsorted(t, xs, side="right") - 1, 0)])
        ys = np.array(ys)
        mean, lo, hi = ys.mean(axis=0), ys.min(axis=0), ys.max(axis=0)
        lo_all, hi_all = min(lo_all, float(lo.min())), max(hi_all, float(hi.max()))
        colour = f"C{i % 10}"
        style, marker, width = _STYLES[i % len(_STYLES)]
        ax.step(xs, mean, where="post", color=colour, ls=style, lw=width, marker=marker, ms=4 + 1.5 * (len(names) - i),
                markevery=max(1, len(xs) // 12), label=f"{name} (mean of {len(series)}; ends {mean[-1]:.8g})",
                zorder=2 + i, alpha=0.9)
        if len(series) > 1:
            ax.fill_between(xs, lo, hi, step="post", color=colour, alpha=0.15, lw=0)
        drawn.append((xs, mean, lo, hi, colour, style, marker, width))
    record = problem.sota.get("value")
    if record is not None and math.isfinite(lo_all):
        span = max(hi_all - lo_all, abs(hi_all) * 1e-9, 1e-12)
        if lo_all - 2 * span <= record <= hi_all + 2 * span:
            ax.axhline(record, color="k", ls="--", lw=1, label=f"record {record:.8g}")
    if budget is None:
        ax.set_xlabel("evaluations (candidates judged per run)")
    else:
        ax.set_xlabel(f"wall time (s), cut at the {budget:g} s budget (what the table scores)")
        ax.set_xlim(0, budget * 1.02)
    better = Direction(problem.direction).comparative
    ax.set_ylabel(f"best {problem.quantity}\n({better} is better)")
    ax.set_title(f"{problem.title}: best so far, {seeds} seed(s); shaded: min–max over seeds"
                 + ("" if record is None else f"\nrecord {record:.10g}"), fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.ticklabel_format(axis="y", useOffset=False)
    ax.legend(fontsize=8, loc="best")
    _zoom_end(zoom, drawn, record, better)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, bbox_inches="tight")
    plt.close(fig)


# --- the command line: parser, checks, entry ---------------------------------------------------------

def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``compare`` sub-command to the ``discoverygym`` parser (the run options are ``train``'s:
    :func:`~discoverygym.cli.train.add_run_options`, :func:`~discoverygym.cli.train.add_llm_options`)."""
    c = subparsers.add_parser(
        "compare", help="a study: configs x seeds of train runs; budget, start, mean ± sd, rank test, verdict, plot",
        description="Runs every config for every seed (ordinary train runs under one study directory) and "
        "prints per config the budget (evaluations, wall time per run), the start score, the best score's "
        "mean ± sd and best over seeds, and a two-sided Mann–Whitney U test against the first config (the "
        "start is the mean over seeds; under --budget-s the verdicts say how many evaluations each run got), "
        "then one verdict line per config (with both one-sided p) and whether the study's best run beats "
        "the record (the verdict certify gives for its best.json). Writes study.json, results.csv (one row per run), compare.png (best "
        "score vs evaluations, seed spread shaded, and the end zoomed), summary.json and TensorBoard runs.",
        epilog="Example: discoverygym compare CirclePacking-26-v0 --configs full,naive-rl,expected-reward "
        "--seeds 3 --steps 5 (a new runs/compare-<env>-<time> directory each time; finish a killed study "
        "with --run-dir DIR --resume). Against the scipy reference at equal wall time: discoverygym compare "
        "CirclePacking-26-v0 --configs full,no-training,reference --seeds 5 --budget-s 60 (the runner of "
        "benchmarks/discovery.py)",
    )
    c.add_argument("env_id")
    c.add_argument("--configs", default="full,naive-rl,no-reuse,constant-beta",
                   help="comma-separated configs (default full,naive-rl,no-reuse,constant-beta; the first is the "
                   "reference of the tests). Named configs (what each changes relative to full): "
                   + "; ".join(f"{k}: {v}" for k, v in ABLATION_HELP.items())
                   + ". Overrides of full, one setting each, joined by '+': objective=NAME (entropic-adaptive, "
                   "entropic-constant, expected-reward = mean-baseline, or a plugin's), reuse=puct|epsilon|none, "
                   "train=true|false, loss=NAME, credit=reward|progress-rate, failure_tiers=true|false; e.g. "
                   "objective=expected-reward, naive-rl+reuse=puct. References (need --budget-s): reference "
                   "(basin hopping + SLSQP / smoothed-max Adam restarts), cma-es")
    c.add_argument("--seeds", type=int, default=3, help="seeds per config (default 3)")
    add_run_options(c)
    c.add_argument("--run-dir", default=None,
                   help="study directory (new or empty; default: a new runs/compare-<env>-<YYYYmmdd-HHMMSS>)")
    c.add_argument("--resume", action="store_true",
                   help="finish the study in --run-dir: skip finished runs, resume partial ones from their checkpoint")
    c.add_argument("--init", default=None, help="start every run from this construction file")
    c.add_argument("--json", action="store_true", help="print the table as JSON")
    add_llm_options(c)


def _with_default_policy(overrides: dict[str, Any], env_id: str) -> dict[str, Any]:
    """``overrides`` with the default numeric policy of ``env_id`` when ``--policy`` is not given
    (``compare``, whose study records it): :func:`~discoverygym.agents.config.default_policy`
    (``operators`` for problems that declare operators, ``gaussian`` when a Gaussian-policy flag,
    ``--sigma``, ``--polish``, ``--polish-kwargs``, is given)."""
    if "policy" in overrides:
        return overrides
    from discoverygym.agents.config import default_policy

    return {**overrides, "policy": default_policy(env_id, overrides.get("policy_kwargs"))}


def _compare(args: argparse.Namespace, console: Console) -> int:
    """``compare``: check the arguments, then run the study (:func:`study`)."""
    from discoverygym.agents.bench import REFERENCES, trainer_config
    from discoverygym.agents.config import _VALUE_ALIASES, config_overrides
    from discoverygym.envs.registry import PROGRAM_TASKS
    from discoverygym.policy import is_llm_spec

    if args.env_id in PROGRAM_TASKS and not is_llm_spec(args.policy or ""):
        raise UsageError(f"{args.env_id} takes programs: compare it with an LLM policy "
                          "(`discoverygym compare ... --policy hf:PATH_OR_ID`, e.g. hf:smollm2)")
    check_env(args.env_id)
    if args.run_dir is not None:
        blocker = file_in_the_way(Path(args.run_dir))
        if blocker is not None:
            raise UsageError(f"{blocker} exists and is not a directory (it cannot hold --run-dir {args.run_dir})")

    names = [AGENTS.get(n.strip(), n.strip()) for n in args.configs.split(",") if n.strip()]
    for n in names:
        keys = [p.partition("=")[0].strip() for p in n.split("+") if "=" in p]
        twice = sorted({k for k in keys if keys.count(k) > 1})
        if twice:  # the overrides would contradict each other, the last one silently winning
            raise UsageError(f"config {n!r} sets {', '.join(twice)} more than once; give each setting once")
        if n not in REFERENCES:
            try:
                config_overrides(n)
            except ValueError as exc:
                aliases = "; ".join(f"{key} aliases: " + ", ".join(f"{a} = {b}" for a, b in table.items())
                                    for key, table in _VALUE_ALIASES.items() if f"unknown {key} " in str(exc))
                raise UsageError(f"{exc}{f' ({aliases})' if aliases else ''} (references: {', '.join(REFERENCES)}; "
                                 "a plugin's configs need --plugin FILE)") from None
    if any(n in REFERENCES for n in names) and args.budget_s is None:
        raise UsageError(f"the references ({', '.join(n for n in names if n in REFERENCES)}) run for a wall budget: "
                          "give --budget-s (and the trainer configs get the same budget)")
    if not names:
        raise UsageError("--configs names no config")
    if len(set(names)) != len(names):
        raise UsageError(f"--configs names a config twice: {args.configs}")
    if args.seeds < 1:
        raise UsageError(f"--seeds must be >= 1, got {args.seeds}")
    initial = None if args.init is None else load_init(args.init, args.env_id)
    overrides = _with_default_policy(flag_overrides(args), args.env_id)
    overrides.pop("seed", None)

    def make(name: str, seed: int, fields: dict) -> Any:
        if name in REFERENCES:
            return None
        config = build_config(trainer_config, args.env_id, name, seed, init=args.init, **fields)
        check_policy(config)
        return config

    return study(args, console, names, overrides, initial, make)


def _resume_hint(args: argparse.Namespace) -> str:
    """The exact command that continues this ``compare`` study (original argv + ``--resume``)."""
    fallback = ["compare", args.env_id, "--configs", args.configs, "--seeds", str(args.seeds),
                "--run-dir", str(getattr(args, "study_dir", None) or args.run_dir or "DIR")]
    argv = getattr(args, "argv", None)
    study_dir = getattr(args, "study_dir", None)
    if argv is not None and args.run_dir is None and study_dir:  # the study chose its directory
        args = argparse.Namespace(**{**vars(args), "argv": [*argv, "--run-dir", str(study_dir)]})
    return resume_command(args, fallback)


def run(args: argparse.Namespace) -> int:
    """Run ``compare`` for parsed ``args`` (exit codes as ``train``'s: :mod:`discoverygym.cli.train`)."""
    return run_guarded(args, _compare, _resume_hint)


def main(argv: list[str] | None = None) -> int:
    """Standalone entry: ``python -m discoverygym.cli.compare compare ENV_ID --configs A,B``."""
    return standalone_main(add_parser, run, argv)


if __name__ == "__main__":
    sys.exit(main())
