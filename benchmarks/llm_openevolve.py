"""The peer on the same model: OpenEvolve vs ``discoverygym search`` and ``train``, SmolLM2 for all three.

One env, one model (the embedded SmolLM2-135M-Instruct, ``hf:smollm2``), an equal number of samples
(LLM responses) for each system, one torch thread per process:

* **OpenEvolve 0.4.1** (``openevolve-run``) on the files of ``discoverygym export ENV --to
  openevolve`` (its programs judged by discoverygym's sandbox and verifier), talking to the model
  through ``transformers serve`` (transformers' own OpenAI-compatible server, on 127.0.0.1; needs
  ``fastapi`` and ``uvicorn``, in the ``bench`` extra). ``--samples`` iterations, one LLM call each,
  full rewrites (``--full-rewrite``; the same edit format as discoverygym's ``full``), the same
  ``max_tokens`` and temperature as the others; its evolution trace (failures included) counts the
  outcomes;
* **discoverygym search** (RPUCG, TES's selector) with ``-C 1 -L samples/K -K K``;
* **discoverygym train** (TTT-Discover) with ``--steps samples/G --groups 1 --group-size G``.

The table: samples, valid programs (share), best verified score, wall time. A response
without a program is a sample with no valid program for every system (OpenEvolve records it as a
failed iteration). Writes ``benchmarks/results/llm-openevolve.md`` (+ ``.json``).

    python benchmarks/llm_openevolve.py --env SumDifference-v0 --samples 24
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"


def _env() -> dict[str, str]:
    """One BLAS/torch thread per process, a dummy API key for the local server."""
    env = dict(os.environ)
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               TOKENIZERS_PARALLELISM="false", OPENAI_API_KEY=env.get("OPENAI_API_KEY", "local"))
    return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _timed(cmd: list[str], log: Path, cwd: Path | None = None) -> tuple[float, str]:
    """Run ``cmd``; (wall seconds, stdout). Raises RuntimeError (naming the log) when it fails."""
    t0 = time.perf_counter()
    with open(log, "w") as err:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=err, env=_env(), cwd=cwd)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} exited {proc.returncode}; see {log}")
    return time.perf_counter() - t0, proc.stdout.decode("utf-8", "replace")


class Server:
    """``transformers serve MODEL_DIR`` on 127.0.0.1 (a context manager; stopped with SIGTERM on exit)."""

    def __init__(self, model_dir: Path, log: Path) -> None:
        self.model_dir, self.log, self.port = model_dir, log, _free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> Server:
        exe = shutil.which("transformers") or str(Path(sys.executable).with_name("transformers"))
        self.proc = subprocess.Popen([exe, "serve", str(self.model_dir), "--host", "127.0.0.1",
                                      "--port", str(self.port)], stdout=open(self.log, "w"),
                                     stderr=subprocess.STDOUT, env=_env(), start_new_session=True)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"transformers serve exited {self.proc.returncode}; see {self.log}")
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2)
                return self
            except OSError:
                time.sleep(1)
        raise RuntimeError(f"transformers serve did not answer in 300 s; see {self.log}")

    def __exit__(self, *exc: Any) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)


def run_openevolve(args: argparse.Namespace, model_dir: Path, out: Path, seeded: bool = False) -> dict[str, Any]:
    """Export the env, serve the model, run OpenEvolve for ``--samples`` iterations; its row.

    ``seeded``: OpenEvolve's ``random_seed`` set (``--seed``): it then sends the same ``seed`` with
    every request, and a server that honours it (``transformers serve`` does) answers the same prompt
    with the same response. Unseeded (the default here): no seed anywhere, every response drawn anew.
    """
    import yaml

    work = out / ("openevolve-seeded" if seeded else "openevolve")
    if (work / "row.json").exists():  # outcomes re-read from the trace (the classification may have changed)
        return {**json.loads((work / "row.json").read_text()), "per_sample": openevolve_samples(work)}
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    with Server(model_dir, work / "server.log") as server:
        subprocess.run([sys.executable, "-m", "discoverygym.cli", "export", args.env, str(work), "--to", "openevolve",
                        "--api-base", server.api_base, "--model", str(model_dir), "--iterations", str(args.samples),
                        "--full-rewrite", "--timeout", "120"], check=True, env=_env())
        config = yaml.safe_load((work / "config.yaml").read_text())
        config["llm"].update(max_tokens=args.max_new_tokens, temperature=args.temperature, timeout=1800)
        config["random_seed"] = args.seed if seeded else None
        config["evolution_trace"] = {"enabled": True, "format": "jsonl", "include_failures": True,
                                     "include_code": True, "output_path": str(work / "trace.jsonl")}
        (work / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
        exe = shutil.which("openevolve-run") or str(Path(sys.executable).with_name("openevolve-run"))
        suffix = ".cpp" if (work / "initial_program.cpp").exists() else ".py"
        wall, _ = _timed([exe, str(work / f"initial_program{suffix}"), str(work / "evaluator.py"), "--config",
                          str(work / "config.yaml"), "--output", str(work / "output"),
                          "--iterations", str(args.samples)], work / "openevolve.log")
    row = {"system": f"OpenEvolve 0.4.1 (transformers serve{', random_seed ' + str(args.seed) if seeded else ''})",
           "wall_s": wall, "per_sample": openevolve_samples(work)}
    (work / "row.json").write_text(json.dumps(row, indent=1))
    return row


def openevolve_samples(work: Path) -> list[dict[str, Any]]:
    """One record per OpenEvolve iteration, in order, from its evolution trace (failures included):
    ``{"i", "valid", "score", "outcome"}``. ``outcome``: the category discoverygym gives the judge's
    message (:func:`discoverygym.outcomes.classify_error`: ``valid``, ``syntax_error``, ...), or for an
    iteration OpenEvolve ended before judging, ``no_code`` (no code block found) or its own reason
    (e.g. an identical rewrite)."""
    from discoverygym.outcomes import classify_error

    per = []
    for t in (json.loads(x) for x in _lines(work / "trace.jsonl")):
        metrics, artifacts = t.get("child_metrics") or {}, t.get("artifacts") or {}
        valid = metrics.get("valid") == 1.0
        per.append({"i": t.get("iteration"), "valid": valid, "score": metrics.get("score") if valid else None,
                    "outcome": "valid" if valid else _category(str(artifacts.get("error_message") or "invalid"), classify_error)})
    for f in (json.loads(x) for x in _lines(work / "trace_failures.jsonl")):
        reason = str(f.get("error") or "failed")
        outcome = "no_code" if "no valid code" in reason.lower() else reason[:40]
        per.append({"i": f.get("iteration"), "valid": False, "score": None, "outcome": outcome})
    return sorted(per, key=lambda r: r["i"] or 0)


def _category(message: str, classify_error: Any) -> str:
    """discoverygym's outcome category of an OpenEvolve failure message (its "no code" message included)."""
    return "no_code" if "no valid code" in message.lower() else classify_error(message).value


def _lines(path: Path) -> list[str]:
    return [x for x in path.read_text().splitlines() if x.strip()] if path.exists() else []


def _count(items: Any) -> dict[str, int]:
    counts: dict[str, int] = {}
    for item in items:
        key = str(item)[:60]
        counts[key] = counts.get(key, 0) + 1
    return counts


def run_discoverygym(kind: str, args: argparse.Namespace, out: Path) -> dict[str, Any]:
    """``discoverygym search`` (RPUCG) or ``train`` (TTT-Discover) at ``--samples`` samples; its row."""
    run_dir = out / kind
    if (out / f"{kind}.row.json").exists():
        return json.loads((out / f"{kind}.row.json").read_text())
    shutil.rmtree(run_dir, ignore_errors=True)
    k = args.group_size
    common = ["--policy", "hf:smollm2", "--seed", str(args.seed), "--run-dir", str(run_dir)]
    if kind == "search":
        cmd = [sys.executable, "-m", "discoverygym.cli", "search", args.env, "--action-mode", "code", "-C", "1", "-L", str(args.samples // k),
               "-K", str(k), "--policy-kwargs", json.dumps({"max_new_tokens": args.max_new_tokens,
                                                             "temperature": args.temperature}), *common]
        name = "discoverygym search (RPUCG)"
    else:
        cmd = [sys.executable, "-m", "discoverygym.cli", "train", args.env, "--steps", str(args.samples // k),
               "--groups", "1", "--group-size", str(k), "--max-new-tokens", str(args.max_new_tokens),
               "--temperature", str(args.temperature), *common]
        name = "discoverygym train (TTT-Discover)"
    wall, _ = _timed(cmd, out / f"{kind}.log")
    per = [{"i": k, "valid": smp.get("outcome") == "valid", "score": smp.get("score") if smp.get("outcome") == "valid" else None,
            "outcome": smp.get("outcome") or "unscored", "step": smp.get("step")}
           for k, smp in enumerate((json.loads(x) for x in _lines(run_dir / "samples.jsonl")), 1)]
    steps = _step_times(run_dir)
    row = {"system": name, "wall_s": wall, "per_sample": per, "step_times_s": steps}
    (out / f"{kind}.row.json").write_text(json.dumps(row, indent=1))
    return row


def _step_times(run_dir: Path) -> list[float]:
    """Per-step seconds of a train run (``metrics.jsonl``'s ``perf/step_time_s``; [] for a search)."""
    times = []
    for line in _lines(run_dir / "metrics.jsonl"):
        m = json.loads(line)
        if m.get("perf/step_time_s") is not None:
            times.append(float(m["perf/step_time_s"]))
    return times


def table(rows: list[dict[str, Any]], higher: bool, cap: int) -> str:
    """The markdown table of the rows, each read up to its first ``cap`` samples (the equal budget)."""
    lines = [f"| system | samples | valid | valid % | best score | wall s (whole run) | outcomes of the first {cap} |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        per = r["per_sample"][:cap]
        scores = [x["score"] for x in per if x["valid"] and isinstance(x["score"], (int, float)) and math.isfinite(x["score"])]
        best = (max(scores) if higher else min(scores)) if scores else None
        pct = 100 * len(scores) / len(per) if per else 0.0
        drawn = len(r["per_sample"])
        fails = ", ".join(f"{k}: {v}" for k, v in sorted(_count(x["outcome"] for x in per).items(), key=lambda kv: -kv[1]))
        lines.append(f"| {r['system']} | {len(per)}{f' (of {drawn} drawn)' if drawn > len(per) else ''} | {len(scores)} "
                     f"| {pct:.0f} | {'-' if best is None else f'{best:.6g}'} | {r['wall_s']:.0f} | {fails or '-'} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the three systems (each skipped when its row exists: resumable) and write the table."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env", default="SumDifference-v0")
    p.add_argument("--samples", type=int, default=8, help="LLM responses per system (default 8); a system that "
                   "drew more in an earlier call (resumed rows) is read up to this many")
    p.add_argument("--group-size", type=int, default=4, help="K of search / G of train (default 4)")
    p.add_argument("--max-new-tokens", type=int, default=256)
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--systems", default="openevolve,search,train",
                   help="comma-separated: openevolve, openevolve-seeded (OpenEvolve's random_seed set), search, train")
    p.add_argument("--out", default="runs/llm-openevolve")
    p.add_argument("--note", default="", help="paragraph written under the table")
    p.add_argument("--no-write", action="store_true")
    args = p.parse_args(argv)
    import gymnasium as gym

    import discoverygym  # noqa: F401
    from discoverygym.agents.policies.embedded import EMBEDDED, convert
    from discoverygym.types import Direction

    higher = Direction(gym.make(args.env).unwrapped.problem.direction) is Direction.MAX
    out = Path(args.out) / args.env
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for system in args.systems.split(","):
        t0 = time.perf_counter()
        print(f"{system}: {args.samples} samples on {args.env} ...", flush=True)
        if system in ("openevolve", "openevolve-seeded"):
            rows.append(run_openevolve(args, convert(EMBEDDED["smollm2"]), out, seeded=system.endswith("seeded")))
        else:
            rows.append(run_discoverygym(system, args, out))
        print(f"  done in {time.perf_counter() - t0:.0f} s", flush=True)
    md = table(rows, higher, args.samples)
    print(md)
    if args.no_write:
        return 0
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    settings = {k: getattr(args, k) for k in ("env", "samples", "group_size", "max_new_tokens", "temperature", "seed")}
    (RESULTS / "llm-openevolve.md").write_text("\n".join([
        "# OpenEvolve vs discoverygym on the same real model (SmolLM2-135M-Instruct)", "",
        "Written by `benchmarks/llm_openevolve.py`: equal LLM samples per system, one torch thread per process, "
        "the same token budget and temperature; OpenEvolve reaches the model through `transformers serve` on "
        "127.0.0.1, discoverygym loads it in-process (`hf:smollm2`). Every program is judged by discoverygym's "
        "sandbox and verifier.", "",
        f"Settings: {json.dumps(settings)}; commit `{commit}`; {platform.machine()}, {os.cpu_count()} cores "
        f"(shared with other jobs: wall times are upper bounds); {time.strftime('%Y-%m-%d')}.", "", md, "", args.note, ""]))
    (RESULTS / "llm-openevolve.json").write_text(json.dumps({"settings": settings, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
