"""Does test-time training help a real model? TTT-Discover vs its ablations on the embedded SmolLM2.

Runs ``discoverygym train ENV --policy hf:smollm2 --agent CONFIG`` for every config and seed with the
same number of samples (``--steps`` x ``--groups`` x ``--group-size``), all through the one trainer
code path (:mod:`discoverygym.agents.trainer`); the configs are the trainer's ablations
(:data:`discoverygym.agents.config.ABLATIONS`):

* ``full``: TTT-Discover (entropic objective with adaptive β, PUCT state reuse, LoRA updates);
* ``no-training``: the frozen model under the same PUCT search;
* ``naive-rl``: mean-baseline objective, no reuse (changes two things at once);
* ``best-of-n``: the frozen model sampled from the start state only (best-of-N sampling).

Each run's ``samples.jsonl`` (one line per response with its outcome and score,
:class:`discoverygym.outcomes.OutcomeLog`) gives the curves: cumulative valid rate and best score so
far against samples drawn. The table gives per config the valid rate and the final best score (mean ±
sd over seeds, a run without a valid sample counts as the worst), and a two-sided Mann–Whitney U test
of the final best against ``full`` (``scipy.stats.mannwhitneyu``; runs without a valid sample rank
below every valid one). ``--irft SOURCE`` adds IRFT transfer: ``discoverygym post-train`` with one
round on SOURCE and the bench env held out, so that the held-out search runs before (base) and
after the round at equal samples.

Runs go into ``--out`` (one train run directory each, ``summary.json`` beside it when done: an
interrupted study resumes, finished runs are skipped; a run's first ``steps × groups × group size``
samples count, so a study can be shortened after the fact). Writes ``benchmarks/results/llm-discovery-<env>.md``
and ``.png`` (two panels: valid rate and best score against samples; mean over seeds, each seed thin).
Every process gets one torch thread; ``--jobs`` runs go side by side (2 on a 2-core machine; each
run's peak memory is in the table).

    python benchmarks/llm_discovery.py --env SumDifference-v0 --seeds 3 --steps 4 --group-size 8
    python benchmarks/llm_discovery.py --env ErdosMinOverlap-v0 --configs full,best-of-n --seeds 1 \\
        --steps 1 --group-size 4 --out /tmp/llm-discovery-smoke --no-write      # a quick look
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
CONFIGS = ("full", "no-training", "naive-rl", "best-of-n")


def _child_env() -> dict[str, str]:
    """The environment of every run: one BLAS/torch thread (the runs share the machine's cores)."""
    env = dict(os.environ)
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false")
    return env


def _run(cmd: list[str], log: Path) -> dict[str, Any]:
    """Run one ``discoverygym`` command to completion; its last JSON stdout line plus wall and peak RSS.

    Peak RSS is the child's own ``ru_maxrss`` from ``os.wait4`` (KiB on Linux; the sandboxed
    evaluation processes it forks are counted only when they are larger).

    Raises:
        RuntimeError: the command failed (its log file is named).
    """
    t0 = time.perf_counter()
    stdout = log.with_suffix(".out")
    with open(log, "ab") as err, open(stdout, "wb") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=err, env=_child_env())
        _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}; see {log}")
    text = stdout.read_text(encoding="utf-8", errors="replace").strip()
    try:  # train --json prints one line, post-train --json an indented document
        summary = json.loads(text) if text else {}
    except ValueError:
        summary = json.loads(text.splitlines()[-1])
    if not isinstance(summary, dict):
        summary = {"rounds": summary}
    summary["wall_s"] = wall
    summary["peak_rss_gb"] = usage.ru_maxrss / 2**20
    return summary


def train_run(env_id: str, config: str, seed: int, args: argparse.Namespace, out: Path) -> dict[str, Any]:
    """One train run (resumed when its directory exists without ``summary.json``); its summary dict."""
    run_dir = out / env_id / config / f"seed{seed}"
    done = run_dir / "summary.json"
    if done.exists():
        return json.loads(done.read_text())
    cmd = [sys.executable, "-m", "discoverygym.cli", "train", env_id, "--policy", args.model, "--agent", config,
           "--seed", str(seed), "--steps", str(args.steps), "--groups", str(args.groups),
           "--group-size", str(args.group_size), "--max-new-tokens", str(args.max_new_tokens),
           "--temperature", str(args.temperature), "--micro-batch", str(args.micro_batch),
           "--run-dir", str(run_dir), "--json"]
    if args.warm_start:
        cmd += ["--warm-start", args.warm_start]
    if args.shared_prompt:
        cmd.append("--shared-prompt")
    if args.lr is not None:
        cmd += ["--lr", str(args.lr)]
    if run_dir.exists():
        cmd.append("--resume")
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    summary = _run(cmd, run_dir.parent / f"seed{seed}.log")
    summary.update(env_id=env_id, config=config, seed=seed)
    done.write_text(json.dumps(summary, indent=1))
    return summary


def read_samples(run_dir: Path) -> list[dict[str, Any]]:
    """The run's ``samples.jsonl`` lines in the order they were drawn (``[]`` when absent)."""
    path = run_dir / "samples.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def step_wall(run_dir: Path, steps: int) -> float | None:
    """Seconds of the run's first ``steps`` steps (``perf/step_time_s`` of ``metrics.jsonl``; None if absent)."""
    path = run_dir / "metrics.jsonl"
    if not path.exists():
        return None
    times = {}
    for line in path.read_text().splitlines():
        if line.strip():
            m = json.loads(line)
            if m.get("step") is not None and m.get("perf/step_time_s") is not None:
                times[int(m["step"])] = float(m["perf/step_time_s"])
    return sum(t for k, t in times.items() if k <= steps) if times else None


def curves(samples: list[dict[str, Any]], higher: bool) -> tuple[list[float], list[float]]:
    """Cumulative valid rate and best valid score so far (NaN before the first valid) per sample drawn."""
    valid_rate, best, n_valid, top = [], [], 0, math.nan
    for i, s in enumerate(samples, 1):
        score = s.get("score")
        if s.get("outcome") == "valid" and isinstance(score, (int, float)) and math.isfinite(score):
            n_valid += 1
            top = score if math.isnan(top) else (max(top, score) if higher else min(top, score))
        valid_rate.append(n_valid / i)
        best.append(top)
    return valid_rate, best


def two_sided_p_rate(reference: list[float], other: list[float]) -> float | None:
    """Two-sided Mann–Whitney U p value of per-run valid rates (equal samples per run); None below 2 runs."""
    from scipy.stats import mannwhitneyu

    if len(reference) < 2 or len(other) < 2:
        return None
    if len(set(reference + other)) == 1:
        return 1.0
    return float(mannwhitneyu(reference, other, alternative="two-sided").pvalue)


def group_spread(run_dir: Path) -> tuple[float | None, float | None]:
    """Mean within-step reward range (``reward/max − reward/min``: 0 when every reward of a step is
    equal, i.e. no signal) and mean |KL| over the run's steps, from ``metrics.jsonl``; None when absent."""
    path = run_dir / "metrics.jsonl"
    if not path.exists():
        return None, None
    sds, kls = [], []
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        m = json.loads(line)
        if isinstance(m.get("reward/max"), (int, float)) and isinstance(m.get("reward/min"), (int, float)):
            sds.append(float(m["reward/max"]) - float(m["reward/min"]))
        if isinstance(m.get("kl"), (int, float)):
            kls.append(abs(float(m["kl"])))
    mean = (lambda v: sum(v) / len(v) if v else None)
    return mean(sds), mean(kls)


def two_sided_p(reference: list[float], other: list[float], higher: bool) -> float | None:
    """Two-sided Mann–Whitney U p value of final best scores (NaN = no valid sample: ranks below all)."""
    from scipy.stats import mannwhitneyu

    if len(reference) < 2 or len(other) < 2:
        return None
    finite = [v for v in reference + other if not math.isnan(v)]
    worst = (min(finite) - 1.0 if higher else max(finite) + 1.0) if finite else 0.0
    fix = [worst if math.isnan(v) else v for v in reference + other]
    if len(set(fix)) == 1:
        return 1.0
    return float(mannwhitneyu(fix[:len(reference)], fix[len(reference):], alternative="two-sided").pvalue)


def _mean_sd(values: list[float]) -> str:
    vals = [v for v in values if not math.isnan(v)]
    if not vals:
        return "-"
    mean = sum(vals) / len(vals)
    sd = math.sqrt(sum((v - mean) ** 2 for v in vals) / (len(vals) - 1)) if len(vals) > 1 else 0.0
    return f"{mean:.6g} ± {sd:.2g}"


def summarize(env_id: str, configs: list[str], seeds: list[int], out: Path, higher: bool, cap: int | None = None
              ) -> tuple[list[dict[str, Any]], dict[str, list[tuple[list[float], list[float]]]]]:
    """Per-config rows (valid rate, best, p vs full, wall, memory) and each run's curves.

    ``cap``: only each run's first ``cap`` samples count (the equal sample budget; a run that drew
    more, e.g. one made with more ``--steps``, is read up to the cap: its first samples are those
    of a shorter run with the same seed, since a step's samples never depend on later steps).
    """
    rows, all_curves = [], {}
    finals: dict[str, list[float]] = {}
    for config in configs:
        runs = []
        for seed in seeds:
            run_dir = out / env_id / config / f"seed{seed}"
            done = run_dir / "summary.json"
            if not done.exists():
                continue
            summary = json.loads(done.read_text())
            samples = read_samples(run_dir)[:cap]
            if cap is not None:
                per_step = max(1, len(read_samples(run_dir)) // max(1, int(summary.get("steps") or 1)))
                summary = {**summary, "wall_s": step_wall(run_dir, cap // per_step) or summary["wall_s"]}
            summary = {**summary, "spread": group_spread(run_dir)}
            runs.append((summary, samples, curves(samples, higher)))
        all_curves[config] = [c for _, _, c in runs]
        finals[config] = [c[1][-1] if c[1] else math.nan for _, _, c in runs]
        n = [len(s) for _, s, _ in runs]
        valid = [c[0][-1] * 100 if c[0] else math.nan for _, _, c in runs]
        # where training acts: the valid rate of each run's second half (its first steps are drawn
        # before, or right after, the first update, the same for every config of a seed)
        late = [100 * sum(bool(x.get("valid")) for x in s[len(s) // 2:]) / max(1, len(s) - len(s) // 2)
                for _, s, _ in runs]
        counts: dict[str, int] = {}
        for _, samples, _ in runs:
            for s in samples:
                counts[s.get("outcome") or "unscored"] = counts.get(s.get("outcome") or "unscored", 0) + 1
        rows.append({"config": config, "runs": len(runs), "samples": n,
                     "valid_pct": valid, "late_valid_pct": late, "final_best": finals[config],
                     "with_valid": sum(1 for v in finals[config] if not math.isnan(v)),
                     "wall_s": [r["wall_s"] for r, _, _ in runs],
                     "peak_rss_gb": [r.get("peak_rss_gb") for r, _, _ in runs],
                     "reward_sd": [r["spread"][0] for r, _, _ in runs], "kl": [r["spread"][1] for r, _, _ in runs],
                     "outcomes": counts})
    for row in rows:
        row["p_vs_full"] = (None if row["config"] == "full" or "full" not in finals
                            else two_sided_p(finals["full"], row["final_best"], higher))
    full = next((r for r in rows if r["config"] == "full"), None)
    for row in rows:
        row["p_valid_vs_full"] = (None if full is None or row is full
                                  else two_sided_p_rate(full["valid_pct"], row["valid_pct"]))
        row["p_late_vs_full"] = (None if full is None or row is full
                                 else two_sided_p_rate(full["late_valid_pct"], row["late_valid_pct"]))
    return rows, all_curves


def table(rows: list[dict[str, Any]], higher: bool) -> str:
    """The markdown table of :func:`summarize`'s rows."""
    lines = ["| config | runs | samples/run | valid % (mean ± sd) | runs with a valid sample | final best (mean ± sd) "
             f"| best over seeds ({'max' if higher else 'min'}) | p vs full, best (two-sided) | p vs full, valid % | valid %, second half (mean ± sd) | p vs full, second half | within-step reward range (mean) | mean KL | step time s/run (sum of counted steps) | peak RSS GiB | outcomes (all runs) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        finite = [v for v in r["final_best"] if not math.isnan(v)]
        best = (max(finite) if higher else min(finite)) if finite else math.nan
        p = "-" if r["p_vs_full"] is None else f"{r['p_vs_full']:.3f}"
        pv = "-" if r.get("p_valid_vs_full") is None else f"{r['p_valid_vs_full']:.3f}"
        pl = "-" if r.get("p_late_vs_full") is None else f"{r['p_late_vs_full']:.3f}"
        late = _mean_sd(r.get("late_valid_pct") or [])
        sd = [v for v in r.get("reward_sd", []) if v is not None]
        kl = [v for v in r.get("kl", []) if v is not None]
        sd = f"{sum(sd) / len(sd):.3g}" if sd else "-"
        kl = f"{sum(kl) / len(kl):.2g}" if kl else "-"
        wall = f"{sum(r['wall_s']) / len(r['wall_s']):.0f}" if r["wall_s"] else "-"
        rss = [v for v in r["peak_rss_gb"] if v is not None]
        outcomes = ", ".join(f"{k} {v}" for k, v in sorted(r["outcomes"].items(), key=lambda kv: -kv[1]))
        lines.append(f"| {r['config']} | {r['runs']} | {'/'.join(map(str, sorted(set(r['samples'])))) or '-'} "
                     f"| {_mean_sd(r['valid_pct'])} | {r['with_valid']}/{r['runs']} | {_mean_sd(r['final_best'])} "
                     f"| {'-' if math.isnan(best) else f'{best:.6g}'} | {p} | {pv} | {late} | {pl} | {sd} | {kl} | {wall} "
                     f"| {max(rss):.1f} | {outcomes} |" if rss else
                     f"| {r['config']} | {r['runs']} | - | - | - | - | - | {p} | {pv} | {late} | {pl} | {sd} | {kl} | {wall} "
                     f"| - | {outcomes} |")
    return "\n".join(lines)


def plot(env_id: str, all_curves: dict[str, list[tuple[list[float], list[float]]]], path: Path) -> None:
    """Two panels (valid rate, best score) against samples drawn; mean over seeds bold, each seed thin."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for k, (config, runs) in enumerate(all_curves.items()):
        colour = f"C{k}"
        for panel, ax in enumerate(axes):
            series = [np.asarray(c[panel], dtype=float) for c in runs if c[panel]]
            if not series:
                continue
            n = min(len(s) for s in series)
            stack = np.stack([s[:n] for s in series])
            x = np.arange(1, n + 1)
            for s in stack:
                ax.plot(x, s, color=colour, alpha=0.25, lw=0.8)
            with np.errstate(all="ignore"):
                mean = np.nanmean(stack, axis=0) if np.isfinite(stack).any() else stack[0]
            ax.plot(x, mean, color=colour, lw=2, label=config, ls=("-", "--", "-.", ":")[k % 4])
    axes[0].set(xlabel="samples drawn", ylabel="valid rate (cumulative)", title=f"{env_id}: valid rate")
    axes[1].set(xlabel="samples drawn", ylabel="best valid score so far", title=f"{env_id}: best score")
    axes[0].legend()
    if not any(np.isfinite(line.get_ydata()).any() for line in axes[1].lines):  # no valid sample in any run
        axes[1].text(0.5, 0.5, "no valid sample in any run", ha="center", va="center", transform=axes[1].transAxes)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def irft_transfer(source: str, target: str, args: argparse.Namespace, out: Path) -> dict[str, Any]:
    """One IRFT round on ``source`` with ``target`` held out: the held-out search before and after."""
    run_dir = out / f"irft-{source}-to-{target}"
    done = run_dir / "summary.json"
    if done.exists():
        return json.loads(done.read_text())
    cmd = [sys.executable, "-m", "discoverygym.cli", "post-train", "--problems", source, "--heldout", target,
           "--policy", args.model, "--policy-kwargs", json.dumps({"max_new_tokens": args.max_new_tokens,
                                                                   **({"warm_start": args.warm_start} if args.warm_start else {})}),
           "--rounds", "1", "--seed", "0", "--trajectories", str(args.irft_trajectories), "--steps", "2", "--candidates", "4",
           "--sft-steps", str(args.irft_sft_steps), "--batch-size", "8", "--micro-batch-size", "1",
           "--max-length", "2048", "--eval-trajectories", str(args.irft_eval_trajectories), "--eval-steps", "2",
           "--eval-candidates", "4", "--executor", "inline", "--no-tensorboard", "--run-dir", str(run_dir), "--json"]
    if run_dir.exists():
        cmd.append("--resume")
    out.mkdir(parents=True, exist_ok=True)
    summary = _run(cmd, out / f"irft-{source}-to-{target}.log")
    done.write_text(json.dumps(summary, indent=1))
    return summary


def main(argv: list[str] | None = None) -> int:
    """Parse the flags, run what is missing (resumable), write the table and the curves."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env", default="SumDifference-v0", help="env id (default SumDifference-v0)")
    p.add_argument("--configs", default=",".join(CONFIGS), help="comma-separated ablation names")
    p.add_argument("--seeds", type=int, default=3, help="seeds 0..N-1 per config (default 3)")
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--groups", type=int, default=1)
    p.add_argument("--group-size", type=int, default=8)
    p.add_argument("--max-new-tokens", type=int, default=256)
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--micro-batch", type=int, default=1, help="sequences per forward/backward (default 1: memory)")
    p.add_argument("--model", default="hf:smollm2", help="policy (default hf:smollm2, the embedded model)")
    p.add_argument("--lr", type=float, default=None, help="train --lr (default: the trainer's, 4e-5 for LLMs)")
    p.add_argument("--shared-prompt", action="store_true",
                   help="train --shared-prompt: a group's prompt runs once in the update (same gradient, less time)")
    p.add_argument("--warm-start", default=None, metavar="DIR",
                   help="adapter of `post-train --warmup` merged into the model of every run (train --warm-start)")
    p.add_argument("--jobs", type=int, default=2, help="runs side by side, one torch thread each (default 2)")
    p.add_argument("--irft", default=None, help="source env of an IRFT transfer run to --env (e.g. ErdosMinOverlap-v0)")
    p.add_argument("--irft-trajectories", type=int, default=4)
    p.add_argument("--irft-sft-steps", type=int, default=8)
    p.add_argument("--irft-eval-trajectories", type=int, default=4)
    p.add_argument("--out", default="runs/llm-discovery", help="run folder (default runs/llm-discovery)")
    p.add_argument("--note", default="", help="a sentence under the heading")
    p.add_argument("--no-write", action="store_true", help="print only (no results files)")
    args = p.parse_args(argv)
    import gymnasium as gym

    import discoverygym  # noqa: F401  (registers the envs)
    from discoverygym.types import Direction

    problem = gym.make(args.env).unwrapped.problem
    higher = Direction(problem.direction) is Direction.MAX
    configs = args.configs.split(",")
    seeds = list(range(args.seeds))
    out = Path(args.out)
    jobs = [(c, s) for s in seeds for c in configs]
    t0 = time.perf_counter()
    from rich.progress import Progress

    with Progress() as progress, ThreadPoolExecutor(max(1, args.jobs)) as pool:
        task = progress.add_task(f"{args.env}: {len(jobs)} runs", total=len(jobs) + (1 if args.irft else 0))
        futures = [pool.submit(train_run, args.env, c, s, args, out) for c, s in jobs]
        if args.irft:
            futures.append(pool.submit(irft_transfer, args.irft, args.env, args, out))
        for f in futures:
            try:
                f.result()
            except Exception as exc:  # one failed run is reported, the others go on
                progress.console.print(f"[red]run failed: {exc}")
            progress.advance(task)
    rows, all_curves = summarize(args.env, configs, seeds, out, higher, cap=args.steps * args.groups * args.group_size)
    md = table(rows, higher)
    irft = None
    if args.irft and (out / f"irft-{args.irft}-to-{args.env}" / "summary.json").exists():
        irft = json.loads((out / f"irft-{args.irft}-to-{args.env}" / "summary.json").read_text())
    print(md)
    if irft is not None:
        print(json.dumps(irft)[:2000])
    if args.no_write:
        return 0
    RESULTS.mkdir(exist_ok=True)
    png = RESULTS / f"llm-discovery-{args.env}.png"
    plot(args.env, all_curves, png)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=Path(__file__).resolve().parent).stdout.strip()
    settings = {k: getattr(args, k) for k in ("env", "configs", "seeds", "steps", "groups", "group_size",
                                              "max_new_tokens", "temperature", "micro_batch", "model", "jobs",
                                              "warm_start", "shared_prompt", "lr")}
    start = f"warm start {args.warm_start}" if args.warm_start else "frozen start"
    text = [f"# Does test-time training help a real model? ({args.env}, {start}: SmolLM2-135M-Instruct)", "",
            f"Written by `benchmarks/llm_discovery.py`. {args.note}".rstrip(), "",
            f"Settings: {json.dumps(settings)}; samples per run = steps × groups × group size = "
            f"{args.steps * args.groups * args.group_size}; commit `{commit}`; {platform.machine()}, "
            f"{os.cpu_count()} cores, one torch thread per run; study wall {time.perf_counter() - t0:.0f} s "
            f"(this invocation); {time.strftime('%Y-%m-%d')}.", "", md, "",
            f"![curves]({png.name})", ""]
    if irft is not None:
        text += ["## IRFT transfer", "", f"`post-train --problems {args.irft} --heldout {args.env} --rounds 1` "
                 "(held-out search before the round = base, after = r000, same samples):", "",
                 "```json", json.dumps(irft, indent=1)[:6000], "```", ""]
    (RESULTS / f"llm-discovery-{args.env}.md").write_text("\n".join(text))
    (RESULTS / f"llm-discovery-{args.env}.json").write_text(json.dumps({"settings": settings, "rows": rows, "irft": irft},
                                                                       indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
