"""GPU check of the kernel environments (run by ``benchmarks/gpu_kernels_check.sh`` on a GPU machine).

Measures, on the GPU present (target H200 for TriMul and MLA-Decode), with the envs' own protocol:

1. the PyTorch baseline (reference-style candidate, the envs' initial program): 18 correctness
   cases, then the 7 timed TriMul cases: per-case mean ± stderr and the geometric mean (μs);
2. the spread of the geometric mean over 3 measurements of that baseline (the first one plus two
   timing-only repeats, each in fresh processes): coefficient of variation;
3. the simple fused Triton kernel (``discoverygym/examples/trimul_triton.py``): correctness on the
   18 cases and its geometric mean;
4. the out-of-process verdict on the GPU: a wrong kernel (zeros) that patches ``torch.Tensor.__le__``
   in its own process, run through the runner with the static checks bypassed (one TriMul case),
   must be rejected by the verifier process;
5. the judge's clock on the GPU: a correct kernel whose harness timing function is rewritten to
   report 0.001 μs (static checks bypassed) must be rejected; the per-case "judge" column shows
   the bound the judge's clock gives for the baseline (the gap to the mean calibrates ρ and δ of
   :mod:`discoverygym.sandbox.kernels.verifier`);
6. if time is left, the MLA-Decode PyTorch baseline (4 test cases, timed prefill 6144).

With ``--kernelbench`` it runs instead the KernelBench level 1 part (``KernelBench-L1-{Cumsum,
Matmul}-<GPU>-v0``, not yet timed on a GPU by the session that added them): for cumsum (#89) and the
tall skinny matmul (#9), the PyTorch baseline (the envs' initial program: 5 correctness cases, 4
timed shapes including KernelBench's (32768, 32768) cumsum and M = 32768, N = 32 matmul), per-shape
mean ± stderr and the geometric mean (μs, reward = 1 / geometric-mean ms), and a wrong kernel (an
exclusive scan; the transposed product) rejected on the GPU. About 3 minutes on an H100/H200.

Every stage runs two processes on the GPU: the candidate's, inside its bubblewrap sandbox with the
GPU device nodes bound in (``/dev/nvidia*``, ``/dev/nvidia-caps/*``, ``/dev/kfd``, ``/dev/dri``:
the "sandbox" line names the backend, the uid and the nodes; this is the path that can only be
tested on a GPU machine) and the judge's (never imports the candidate; references, tolerance,
timing rounds); stage timeouts cover both.

Prints a table; with ``$OUT`` set also writes ``$OUT/gpu_kernels_check.json``. Exit code 0 when
everything ran (a failing candidate is reported, not an error), 1 when the patched wrong kernel
of part 4 passed or the forged timing of part 5 was accepted, 2 when no GPU is visible.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import warnings

from discoverygym.envs.kernels import _EXAMPLES, make_kernelbench, make_mla_decode, make_trimul
from discoverygym.sandbox.kernels.box import gpu_device_nodes, sandbox_uid
from discoverygym.sandbox.kernels.launcher import new_workdir, remove_workdir, run_stage

#: part 4: a wrong kernel that patches the comparison operator in its own process.
PATCHED_WRONG = (
    "import torch\nT = torch.Tensor\nT.__le__ = lambda a, b: torch.ones_like(a, dtype=torch.bool)\n\n"
    "def custom_kernel(data):\n    return torch.zeros_like(data[0])\n"
)


#: a correct kernel whose harness timing function is rewritten to report 0.001 μs per call.
FORGED_TIMING = (
    "import sys\n_t = sys.modules['discoverygym.rewards.kernels.timing']\n"
    "def _fake(fn, data, *, device='cuda', clock='cuda', flusher=None):\n    return 0.001, fn(data)\n"
    "_t.time_call.__code__ = _fake.__code__\n"
)


#: ``--kernelbench``: per problem, a wrong kernel that the correctness stage must reject on the GPU.
KERNELBENCH_WRONG = {
    "cumsum": "import torch\n\ndef custom_kernel(data):\n    return torch.cumsum(data, dim=1) - data\n",
    "matmul": "import torch\n\ndef custom_kernel(data):\n    a, b = data\n    return (a @ b).t().contiguous()\n",
}


def kernelbench_check(gpu: str, opts: dict, start: float) -> tuple[list[tuple[str, str]], dict, bool]:
    """The ``--kernelbench`` part: table rows, the JSON report, and whether a wrong kernel passed."""
    report: dict = {}
    lines: list[tuple[str, str]] = []
    bad = False
    for problem in ("cumsum", "matmul"):
        task = make_kernelbench(problem, gpu, **opts)
        print(f"[{time.perf_counter() - start:6.1f} s] {task.title}: baseline correctness + timing", flush=True)
        try:
            md = task.evaluate(task.initial_program(), seed=0).metrics
        except Exception as exc:  # noqa: BLE001 - reported, the other parts still run
            report[f"{problem}_error"] = f"{type(exc).__name__}: {exc}"
            lines.append((f"{problem} PyTorch baseline", f"FAILED: {report[f'{problem}_error'][:300]}"))
            md = None
        if md:
            report[problem] = md
            summary = (f"{md['geomean_us']:.1f} μs geomean (reward {1000.0 / md['geomean_us']:.4f}), "
                       f"correct on {md['n_correctness_cases']} checks, GPU {md['gpu_name']}")
            lines.append((f"{problem} PyTorch baseline", summary))
            for k, name in enumerate(md["case_names"]):
                row = (f"{md['case_means_us'][k]:10.1f} ± {md['case_stderr_us'][k]:6.1f} "
                       f"({md['case_repeats'][k]:3d}) judge {md['case_judge_us'][k]:10.1f}")
                lines.append((f"  {name}", row))
        print(f"[{time.perf_counter() - start:6.1f} s] {task.title}: wrong kernel", flush=True)
        try:
            task.check(KERNELBENCH_WRONG[problem])
            verdict, wrong_passed = "PASSED THE CHECK (bug)", True
        except Exception as exc:  # noqa: BLE001 - InvalidSolution expected
            verdict, wrong_passed = f"rejected: {str(exc)[:100]}", False
        bad = bad or wrong_passed
        report[f"{problem}_wrong"] = verdict
        lines.append((f"{problem} wrong kernel", verdict))
    return lines, report, bad


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case-budget-s", type=float, default=3.0, help="timing budget per timed case")
    parser.add_argument("--deadline-s", type=float, default=330.0, help="skip optional parts after this")
    parser.add_argument("--gpu", default="H200", help="target GPU of the envs")
    parser.add_argument("--kernelbench", action="store_true",
                        help="run the KernelBench level 1 part (cumsum, matmul) instead of TriMul/MLA-Decode")
    args = parser.parse_args()
    start = time.perf_counter()
    import torch
    import triton

    if not torch.cuda.is_available():
        print(f"no GPU visible to torch {torch.__version__}; nothing to measure", file=sys.stderr)
        return 2
    warnings.simplefilter("always")
    opts = {
        "device": "cuda",
        "case_budget_s": args.case_budget_s,
        "check_timeout_s": 240,
        "time_timeout_s": 240,
    }
    if args.kernelbench:
        lines, report, bad = kernelbench_check(args.gpu, opts, start)
        report.update(torch_version=torch.__version__, triton_version=triton.__version__,
                      gpu_name=torch.cuda.get_device_name(0), target=args.gpu)
        lines.append(("wall time", f"{time.perf_counter() - start:.0f} s"))
        width = max(len(k) for k, _ in lines)
        print("\n" + "\n".join(f"{k:<{width}}  {v}" for k, v in lines))
        if os.environ.get("OUT"):
            with open(os.path.join(os.environ["OUT"], "gpu_kernels_check_kernelbench.json"), "w") as fh:
                json.dump(report, fh, indent=1, default=str)
        return 1 if bad else 0
    task = make_trimul(args.gpu, **opts)
    baseline = task.initial_program()
    fused = (_EXAMPLES / "trimul_triton.py").read_text()
    report: dict = {
        "torch_version": torch.__version__,
        "triton_version": triton.__version__,
        "gpu_name": torch.cuda.get_device_name(0),
        "target": args.gpu,
        "record": task.sota,
    }
    lines: list[tuple[str, str]] = []

    def stamp(label: str) -> None:
        print(f"[{time.perf_counter() - start:6.1f} s] {label}", flush=True)

    def attempt(label: str, key: str, run) -> dict | None:
        """Run one part; a failure is reported in the table, never aborts the check."""
        stamp(label)
        try:
            metrics = run()
        except Exception as exc:  # noqa: BLE001 - reported, the other parts still run
            report[key + "_error"] = f"{type(exc).__name__}: {exc}"
            print(f"    failed: {report[key + '_error']}", flush=True)
            return None
        report[key] = metrics
        return metrics

    md = attempt(
        "TriMul PyTorch baseline: correctness (18 cases) + timing (7 cases)",
        "baseline",
        lambda: task.evaluate(baseline, seed=0).metrics,
    )
    geos = [md["geomean_us"]] if md else []
    for i in (1, 2):
        rep = attempt(
            f"TriMul PyTorch baseline: timing repeat {i}",
            f"baseline_repeat{i}",
            lambda i=i: task.measure(baseline, seed=i),
        )
        geos += [rep["geomean_us"]] if rep else []
    cv = statistics.stdev(geos) / statistics.fmean(geos) if len(geos) >= 2 else float("nan")
    report["baseline_repeats_us"], report["baseline_cv"] = geos, cv
    tri = attempt(
        "TriMul fused Triton kernel: correctness (18 cases) + timing",
        "triton",
        lambda: task.evaluate(fused, seed=0).metrics,
    )

    def patched_check() -> dict:
        job = {
            "stage": "check",
            "problem": "trimul",
            "device": "cuda",
            "seed": 0,
            "cases": [task.test_cases()[0].to_dict()],
        }
        workdir = new_workdir()
        try:
            result = run_stage(PATCHED_WRONG, job, workdir, 120.0)
        finally:
            remove_workdir(workdir)
        return {"passed": bool(result["ok"]), "error": result.get("error")}

    patched = attempt(
        "verifier: wrong kernel patching torch.Tensor.__le__ (static checks bypassed)",
        "patched_wrong",
        patched_check,
    )

    def forged_timing() -> dict:
        job = {
            "stage": "time",
            "problem": "trimul",
            "device": "cuda",
            "seed": 0,
            "timing": {**task.timing, "max_repeats": 10},
            "cases": [task.timed_cases()[-1].to_dict()],
        }
        workdir = new_workdir()
        try:
            result = run_stage(FORGED_TIMING + baseline, job, workdir, 180.0)
        finally:
            remove_workdir(workdir)
        return {"passed": bool(result["ok"]), "error": result.get("error")}

    forged = attempt(
        "judge: correct kernel whose timing function reports 0.001 μs (static checks bypassed)",
        "forged_timing",
        forged_timing,
    )
    mla_task = make_mla_decode(args.gpu, **opts)
    mla = None
    if time.perf_counter() - start < args.deadline_s - 90:
        mla = attempt(
            "MLA-Decode PyTorch baseline: correctness (4 cases) + timing (prefill 6144)",
            "mla_baseline",
            lambda: mla_task.evaluate(mla_task.initial_program(), seed=0).metrics,
        )
    else:
        report["mla_baseline_error"] = "skipped: not enough time left"

    def result_line(m: dict | None, key: str) -> str:
        if m is None:
            return f"FAILED: {report.get(key + '_error', '?')}"
        return f"{m['geomean_us']:.1f} μs (reward {3000.0 / m['geomean_us']:.3f})"

    head = md or tri or {}
    lines += [
        (
            "GPU",
            (
                f"{report['gpu_name']} ({head.get('platform', '?')}, torch {report['torch_version']}, "
                f"triton {report['triton_version']})"
            ),
        ),
        ("target / record", f"{args.gpu}: {task.sota['value']} μs ({task.sota['source']})"),
        ("target mismatch", str(head.get("target_mismatch"))),
        ("sandbox", f"{head.get('sandbox')} (uid {sandbox_uid()}, GPU nodes {' '.join(gpu_device_nodes())})"),
        ("TriMul timed case", "PyTorch baseline mean ± stderr (n), judge's bound | fused Triton mean (μs)"),
    ]
    names = (md or tri or {}).get("case_names", [])
    for k, name in enumerate(names):
        base = (
            f"{md['case_means_us'][k]:10.1f} ± {md['case_stderr_us'][k]:6.1f} ({md['case_repeats'][k]:3d})"
            f" judge {md['case_judge_us'][k]:10.1f}"
            if md
            else "-"
        )
        fused_mean = f"{tri['case_means_us'][k]:10.1f}" if tri else "-"
        lines.append((f"  {name}", f"{base} | {fused_mean}"))
    tri_ok = f"correct on {tri['n_correctness_cases']} checks; " if tri else ""
    lines += [
        ("TriMul PyTorch baseline", result_line(md, "baseline")),
        ("3 measurements (geomean)", ", ".join(f"{g:.1f}" for g in geos) + f" μs; CV {100 * cv:.2f} %"),
        ("TriMul fused Triton", tri_ok + result_line(tri, "triton")),
        (
            "verifier vs patched wrong kernel",
            (
                f"FAILED: {report.get('patched_wrong_error', '?')}"
                if patched is None
                else (
                    "PASSED THE CHECK (bug)"
                    if patched["passed"]
                    else f"rejected: {str(patched['error'])[:90]}"
                )
            ),
        ),
        (
            "judge vs forged timing",
            (
                f"FAILED: {report.get('forged_timing_error', '?')}"
                if forged is None
                else ("ACCEPTED (bug)" if forged["passed"] else f"rejected: {str(forged['error'])[:90]}")
            ),
        ),
        (
            "MLA-Decode PyTorch baseline",
            result_line(mla, "mla_baseline")
            + f"; record {mla_task.sota['value']} μs ({mla_task.sota['source']})",
        ),
        ("wall time", f"{time.perf_counter() - start:.0f} s"),
    ]
    width = max(len(k) for k, _ in lines)
    print("\n" + "\n".join(f"{k:<{width}}  {v}" for k, v in lines))
    out = os.environ.get("OUT")
    if out:
        with open(os.path.join(out, "gpu_kernels_check.json"), "w") as fh:
            json.dump(report, fh, indent=1, default=str)
    bad = (patched is not None and patched["passed"]) or (forged is not None and forged["passed"])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
