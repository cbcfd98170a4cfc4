"""What a real model's responses become: outcome categories per env, on the frozen embedded SmolLM2.

Samples ``--n`` responses of the frozen ``hf:smollm2`` (SmolLM2-135M-Instruct, offline;
:mod:`discoverygym.agents.policies.embedded`) to each env's start state with the policy's own batch
sampler (``HFPolicy.sample``, batches of ``--batch``), judges every response exactly as search and
training do (``env.unwrapped.evaluate``, sandboxed), and counts the
:class:`~discoverygym.policy.Outcome` of each (:func:`discoverygym.outcomes.classify`). One torch
thread (the machine's cores are shared); judging runs in one worker thread beside generation.

Prints one table row per env and writes ``benchmarks/results/llm-outcomes.md`` (every label measured
so far, from ``llm-outcomes.json`` beside it); each response's text goes to
``<samples-dir>/<label>/<env>/samples.jsonl`` (:class:`~discoverygym.outcomes.OutcomeLog`).

    python benchmarks/llm_outcomes.py --label before --max-new-tokens 256
    python benchmarks/llm_outcomes.py --label after
    python benchmarks/llm_outcomes.py --envs ErdosMinOverlap-v0 --n 16 --label smoke --no-write

ScalingLaw envs score only under bubblewrap; without it they run with ``allow_unconfined=True``
(said in the table's notes). Sandbox timeout: ``--timeout-s`` (default 20 s; programs get 80 % as
``budget_s``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
DEFAULT_ENVS = ("ErdosMinOverlap-v0", "CirclePacking-26-v0", "ScalingLaw-Vocab-v0")


def _make_env(env_id: str, timeout_s: float, task_options: dict | None = None):
    import gymnasium as gym

    import discoverygym  # noqa: F401 - registers the ids
    from discoverygym.envs.registry import PROGRAM_TASKS, option_names
    from discoverygym.sandbox.python import SandboxLimits, bwrap_available

    if env_id in PROGRAM_TASKS:  # program envs take their own limits, not a SandboxLimits
        names = option_names(env_id)  # None: the factory takes any keyword (its task may not)
        timeout_key = "time_limit_s" if names and "time_limit_s" in names else "timeout_s"  # LassoPath's name
        options = {k: v for k, v in (("allow_unconfined", not bwrap_available()), (timeout_key, timeout_s))
                   if names is None or k in names}
        options.update((task_options or {}).get(env_id, {}))
        try:
            env = gym.make(env_id, **options)
        except TypeError:  # a task without these options (AHC, kernels): its own limits
            own = (task_options or {}).get(env_id, {})
            print(f"  {env_id}: takes no {sorted(set(options) - set(own))}; its own limits apply", file=sys.stderr)
            env = gym.make(env_id, **own)
    else:
        env = gym.make(env_id, action_mode="code", sandbox=SandboxLimits(timeout_s=timeout_s, memory_mb=2048))
    _, info = env.reset(seed=0)
    return env, info["state"]


def measure(env_id: str, policy, *, n: int, timeout_s: float, seed: int, out_dir: Path,
            task_options: dict | None = None) -> dict:
    """Sample ``n`` responses for ``env_id``'s start state, judge them, return the row."""
    import numpy as np

    from discoverygym.outcomes import OutcomeLog
    from discoverygym.policy import Outcome, SamplingContext

    env, start = _make_env(env_id, timeout_s, task_options)
    problem = env.unwrapped.problem
    ctx = SamplingContext(start, (start,), problem, "code")
    log = OutcomeLog(out_dir, min_interval_s=0)
    rng = np.random.default_rng(seed)
    judge = ThreadPoolExecutor(1)
    futures = []
    gen_s, tokens, prompt_tokens, ended = 0.0, 0, 0, 0
    t0 = time.perf_counter()
    while len(futures) < n:
        k = min(policy.batch_size, n - len(futures))
        t = time.perf_counter()
        batch = policy.sample([ctx], k, rng)[0]
        gen_s += time.perf_counter() - t
        for s in batch:
            tokens += len(s.completion_ids)
            prompt_tokens = len(s.prompt_ids)
            ended += s.finish_reason == "stop"
            futures.append((s, judge.submit(env.unwrapped.evaluate, s.action, parent=start, seed=0)))
        print(f"  {env_id}: {len(futures)}/{n} sampled ({tokens / max(gen_s, 1e-9):.1f} tokens/s)", file=sys.stderr,
              flush=True)
    best, scores = None, set()
    for s, fut in futures:
        state = fut.result()
        outcome = log.record(s, state, env_id=env_id)
        if outcome is Outcome.VALID and state.score is not None:
            scores.add(state.score)
            better = best is None or (state.score < best if problem.direction == "min" else state.score > best)
            best = state.score if better else best
    judge.shutdown()
    log.flush()
    env.close()
    return {"env": env_id, "n": n, "counts": log.summary()["counts"], "valid_fraction": log.summary()["valid_fraction"],
            "best": best, "distinct_scores": len(scores), "start_score": start.score, "prompt_tokens": prompt_tokens,
            "max_new_tokens": policy.budget(ctx) if hasattr(policy, "budget") else policy.max_new_tokens,
            "mean_tokens": tokens / n, "stopped": ended, "tokens_per_s": tokens / gen_s if gen_s else None,
            "generate_s": gen_s, "wall_s": time.perf_counter() - t0}


COLUMNS = ("valid", "invalid", "runtime_error", "timeout", "syntax_error", "no_code", "truncated", "wrong_entry_point")


def render(results: dict) -> str:
    """Markdown of every label in ``results`` (``{label: {"meta": ..., "rows": [...]}}``)."""
    lines = ["# Outcomes of a real model's responses (frozen SmolLM2-135M-Instruct, `hf:smollm2`)", "",
             "Written by `benchmarks/llm_outcomes.py` (one table per label; counts of each "
             "`discoverygym.policy.Outcome` over the samples of each env's start state, judged as search and "
             "training judge them). `tok/s`: generated tokens per second of `HFPolicy.sample` (batch of 8, "
             "one torch thread); `new`: the token budget; `mean`: mean completion tokens; `eos`: responses that "
             "ended with end-of-sequence (the rest hit the budget); `unscored`: responses no verifier judged (a kernel program where there is no bubblewrap or GPU), counted in no other column; `distinct`: distinct scores among the valid "
             "responses (recorded from the warm-start tables on; `-` before).", ""]
    for label, block in results.items():
        meta = block["meta"]
        lines += [f"## {label}", "", f"{meta.get('note', '')}".strip(), "",
                  f"Settings: {json.dumps(meta.get('settings', {}))}; commit `{meta.get('commit', '?')}`; "
                  f"{meta.get('machine', '')}; {meta.get('date', '')}.", ""]
        head = ["env", "n", *COLUMNS, "unscored", "valid %", "distinct", "best (start)", "prompt tok", "new", "mean", "eos", "tok/s", "wall s"]
        lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for r in block["rows"]:
            c = r["counts"]
            vf = r["valid_fraction"]
            best = "-" if r["best"] is None else f"{r['best']:.6g}"
            start = "-" if r["start_score"] is None else f"{r['start_score']:.6g}"
            # judged by no verifier (e.g. a kernel program without bubblewrap or a GPU): no outcome column
            unscored = r["n"] - sum(int(c.get(k, 0)) for k in COLUMNS)
            cells = [r["env"], r["n"], *(c.get(k, 0) for k in COLUMNS), unscored, "-" if vf is None else f"{100 * vf:.0f}",
                     r.get("distinct_scores", "-"),
                     f"{best} ({start})", r["prompt_tokens"], r["max_new_tokens"], f"{r['mean_tokens']:.0f}",
                     r["stopped"], f"{r['tokens_per_s']:.1f}" if r["tokens_per_s"] else "-", f"{r['wall_s']:.0f}"]
            lines.append("| " + " | ".join(str(x) for x in cells) + " |")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", nargs="*", default=list(DEFAULT_ENVS))
    parser.add_argument("--n", type=int, default=64, help="samples per env (default 64)")
    parser.add_argument("--batch", type=int, default=8, help="sequences generated together (default 8)")
    parser.add_argument("--max-new-tokens", type=int, default=None,
                        help="token budget (default: the policy's own, per env)")
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--timeout-s", type=float, default=20.0, help="sandbox timeout per program (default 20)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--label", default="run", help="table heading (e.g. before / after)")
    parser.add_argument("--note", default="", help="a sentence under the heading")
    parser.add_argument("--model", default="smollm2", help="hf: model (default smollm2, the embedded model)")
    parser.add_argument("--samples-dir", default=os.path.join(tempfile.gettempdir(), "llm-outcomes"))
    parser.add_argument("--policy-kwargs", default="{}", help="more HFPolicy arguments (JSON)")
    parser.add_argument("--task-options", default="{}",
                        help='options per program env as JSON, e.g. \'{"KernelBench-L1-Cumsum-H100-v0": {"device": "cpu"}}\'')
    parser.add_argument("--results-dir", default=str(RESULTS), help="where llm-outcomes.md/.json go")
    parser.add_argument("--no-write", action="store_true", help="print only (no results files)")
    args = parser.parse_args(argv)

    import torch

    torch.set_num_threads(1)
    from discoverygym.agents.policies.hf import HFPolicy

    kwargs = {"batch_size": args.batch, "temperature": args.temperature, "device": "cpu", "seed": args.seed}
    if args.max_new_tokens is not None:
        kwargs["max_new_tokens"] = args.max_new_tokens
    kwargs.update(json.loads(args.policy_kwargs))
    t = time.perf_counter()
    policy = HFPolicy(args.model, **kwargs)
    load_s = time.perf_counter() - t
    print(f"model loaded in {load_s:.1f} s", file=sys.stderr)
    rows = []
    for env_id in args.envs:
        row = measure(env_id, policy, n=args.n, timeout_s=args.timeout_s, seed=args.seed,
                      out_dir=Path(args.samples_dir) / args.label / env_id,
                      task_options=json.loads(args.task_options))
        rows.append(row)
        c = row["counts"]
        print(f"{env_id:24s} n={row['n']} " + " ".join(f"{k}={c.get(k, 0)}" for k in COLUMNS)
              + f" | {row['tokens_per_s']:.1f} tok/s, {row['wall_s']:.0f} s", flush=True)
    if args.no_write:
        return 0
    results_dir = Path(args.results_dir)
    store = results_dir / "llm-outcomes.json"
    results = json.loads(store.read_text()) if store.exists() else {}
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=Path(__file__).parent).stdout.strip()
    results[args.label] = {"meta": {"note": args.note, "commit": commit, "date": time.strftime("%Y-%m-%d"),
                                    "machine": f"{platform.machine()}, {os.cpu_count()} cores, 1 torch thread",
                                    "settings": {"model": args.model, "n": args.n, "batch": args.batch,
                                                 "max_new_tokens": args.max_new_tokens or "policy default",
                                                 "temperature": args.temperature, "timeout_s": args.timeout_s,
                                                 "seed": args.seed, "load_s": round(load_s, 1),
                                                 **({"task_options": json.loads(args.task_options)}
                                                    if args.task_options != "{}" else {}),
                                                 **json.loads(args.policy_kwargs)}},
                           "rows": rows}
    results_dir.mkdir(parents=True, exist_ok=True)
    store.write_text(json.dumps(results, indent=1))
    (results_dir / "llm-outcomes.md").write_text(render(results))
    print(f"wrote {results_dir / 'llm-outcomes.md'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
