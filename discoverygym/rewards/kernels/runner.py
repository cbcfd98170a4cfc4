"""Per-candidate kernel process: correctness stage and timing stage, and the parent's launcher.

**Isolation.** Each stage of each candidate runs in a fresh Python process
(``python -m discoverygym.rewards.kernels.runner WORKDIR``) in a new session, with a wall-clock
timeout after which the whole process group is killed; GPU memory is released when the process
exits. The working directory, ``HOME``, ``TMPDIR`` and ``TRITON_CACHE_DIR`` point into a private
temporary directory shared by the two stages of one candidate (so kernels compiled in the
correctness stage are cached for the timing stage) and removed afterwards.

This is *not* the project sandbox (:func:`discoverygym.rewards.sandbox.run_program`): CUDA needs
a huge virtual address space (``RLIMIT_AS`` makes ``cuInit`` fail), Triton and
``torch.utils.cpp_extension`` execute compilers (``ptxas``, ``nvcc``, ``hipcc``) which the
sandbox's seccomp filter and audit hook refuse, and the GPU device nodes must stay reachable.
Protection against reward hacks therefore comes from :mod:`.static_checks` (before the process)
and from the dynamic checks here: reference outputs are computed *before* the candidate module is
imported; outputs must be plain tensors within tolerance; key torch and timer functions are
compared by identity before and after the candidate runs; after timing each case is re-checked on
fresh inputs drawn with a new seed (so a kernel that caches outputs across calls fails). Do not
run hostile programs on a machine holding secrets.

**Stages.** ``check``: every correctness case once (this is where Triton compiles), then one case
again on fresh inputs. ``time``: every timed case is checked once, timed with
:func:`.timing.time_kernel`, then re-checked on fresh inputs. Keeping the stages in separate
processes follows SimpleTES (first-call compilation never lands in a timing process).

The child writes ``result.json`` in the work directory: ``{"ok": bool, "error": str | None,
"cases": [...], "gpu_name", "platform", "torch", "device"}``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

__all__ = ["fresh_seed", "main", "new_workdir", "remove_workdir", "run_stage"]

_PACKAGE_PARENT = str(Path(__file__).resolve().parents[3])


def fresh_seed(case_seed: int, eval_seed: int) -> int:
    """Seed of the fresh inputs used to re-check a case (deterministic, differs from the case seed)."""
    s = (int(case_seed) * 7919 + int(eval_seed) + 1) % (2**31 - 1)
    return s + 1 if s == int(case_seed) else s


# ----------------------------------------------------------------------------- parent side
def new_workdir() -> str:
    """A private temporary directory for one candidate (both stages)."""
    return os.path.realpath(tempfile.mkdtemp(prefix="discoverygym-kernel-"))


def remove_workdir(workdir: str) -> None:
    """Remove a candidate's directory (ignoring errors)."""
    shutil.rmtree(workdir, ignore_errors=True)


def run_stage(source: str, job: dict, workdir: str, timeout_s: float) -> dict:
    """Run one stage of a candidate in its own process and return the child's result.

    Args:
        source: the candidate program (already statically checked).
        job: ``{"stage": "check" | "time", "problem": "trimul" | "mla", "cases": [case dicts],
            "device": "cuda" | "cpu", "seed": int, "timing": {...}}`` (JSON-serialisable).
        workdir: from :func:`new_workdir`.
        timeout_s: wall-clock limit of the whole stage, process start and imports included.

    Returns:
        The child's result dict; on timeout or crash ``{"ok": False, "error": ...}`` with the
        last lines of stderr, ``timed_out`` and ``returncode``.
    """
    work = Path(workdir)
    (work / "candidate.py").write_text(source)
    (work / "job.json").write_text(json.dumps(job))
    result_path = work / "result.json"
    result_path.unlink(missing_ok=True)
    (work / "tmp").mkdir(exist_ok=True)
    env = dict(os.environ)
    env.update(
        HOME=str(work),
        TMPDIR=str(work / "tmp"),
        TRITON_CACHE_DIR=str(work / "triton_cache"),
        PYTHONPATH=os.pathsep.join(p for p in (_PACKAGE_PARENT, env.get("PYTHONPATH")) if p),
        PYTHONDONTWRITEBYTECODE="1",
    )
    if job["device"] == "cpu":
        env["TRITON_INTERPRET"] = "1"  # Triton kernels run in its NumPy interpreter on CPU tensors
        env.setdefault("CUDA_VISIBLE_DEVICES", "")
    else:
        env.pop("TRITON_INTERPRET", None)
    stage = job["stage"]
    with open(work / f"{stage}.out", "wb") as out, open(work / f"{stage}.err", "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "discoverygym.rewards.kernels.runner", str(work)],
            cwd=work,
            env=env,
            stdout=out,
            stderr=err,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        timed_out = False
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # the group: compiler children, stray threads
            except (ProcessLookupError, PermissionError):
                pass
            proc.wait()
    stderr_tail = (work / f"{stage}.err").read_bytes()[-2000:].decode("utf-8", "replace")
    if timed_out:
        return {
            "ok": False,
            "error": f"the {stage} stage timed out after {timeout_s:g} s",
            "timed_out": True,
            "returncode": proc.returncode,
            "stderr": stderr_tail,
        }
    try:
        result = json.loads(result_path.read_text())
    except (OSError, ValueError):
        return {
            "ok": False,
            "timed_out": False,
            "returncode": proc.returncode,
            "stderr": stderr_tail,
            "error": f"the {stage} stage crashed (exit code {proc.returncode}) before reporting: "
            f"{stderr_tail.strip().splitlines()[-1] if stderr_tail.strip() else 'no output'}",
        }
    result.setdefault("stderr", stderr_tail)
    return result


# ----------------------------------------------------------------------------- child side
def _problem(name: str) -> tuple[Any, Any, tuple[float, float], Any]:
    from discoverygym.rewards.kernels import mla, specs, trimul

    if name == "trimul":
        return trimul.generate_input, trimul.reference, specs.TRIMUL_TOLERANCE, lambda v: [("output", v)]

    def split(v: Any) -> list:
        if not isinstance(v, (tuple, list)) or len(v) != 2:
            raise _Fail(
                f"custom_kernel must return (output, kv_cache), got {type(v).__name__}"
                + (f" of length {len(v)}" if isinstance(v, (tuple, list)) else "")
            )
        return [("output", v[0]), ("kv_cache", v[1])]

    return mla.generate_input, mla.reference, specs.MLA_TOLERANCE, split


class _Fail(Exception):
    """A candidate failure with a message for the agent."""


#: set once the candidate module starts executing: later unexpected errors are the candidate's.
_LOADED = {"value": False}


def _guarded() -> dict[str, Any]:
    """Functions the harness relies on, by identity (a candidate must not replace them)."""
    import torch
    import torch.nn.functional as F

    out = {
        "time.perf_counter": time.perf_counter,
        "torch.matmul": torch.matmul,
        "torch.einsum": torch.einsum,
        "torch.sigmoid": torch.sigmoid,
        "torch.softmax": torch.softmax,
        "torch.isfinite": torch.isfinite,
        "torch.where": torch.where,
        "torch.Tensor.__matmul__": torch.Tensor.__matmul__,
        "torch.Tensor.to": torch.Tensor.to,
        "F.layer_norm": F.layer_norm,
        "torch.Tensor.abs": torch.Tensor.abs,
        "torch.cuda.synchronize": torch.cuda.synchronize,
        "torch.cuda.Event": torch.cuda.Event,
    }
    out["torch.cuda.Event.record"] = torch.cuda.Event.record
    out["torch.cuda.Event.elapsed_time"] = torch.cuda.Event.elapsed_time
    return out


def _check_guards(before: dict[str, Any]) -> None:
    changed = [k for k, v in _guarded().items() if before.get(k) is not v]
    if changed:
        raise _Fail(f"the program replaced harness functions: {', '.join(changed)}")


def _sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def _compare(split: Any, value: Any, refs: list, tol: tuple[float, float], label: str) -> float:
    from discoverygym.rewards.kernels.tolerance import compare

    parts = split(value)
    worst = 0.0
    for (name, got), (_, want) in zip(parts, refs):
        verdict = compare(got, want, tol[0], tol[1], name)
        if not verdict["ok"]:
            raise _Fail(f"{label}: {verdict['message']}")
        worst = max(worst, verdict["max_abs_err"] or 0.0)
    return worst


def _run(job: dict, work: Path) -> dict:
    import torch

    from discoverygym.rewards.kernels.specs import case_from_dict
    from discoverygym.rewards.kernels.timing import gpu_info, require_gpu, time_kernel

    device, stage, seed = job["device"], job["stage"], int(job.get("seed", 0))
    cases = [case_from_dict(c) for c in job["cases"]]
    generate, reference, tol, split = _problem(job["problem"])
    info = gpu_info(device)
    if stage == "time" and job.get("timing", {}).get("clock", "cuda") == "cuda":
        require_gpu(device)
    torch.manual_seed(seed)
    ref_split = (
        (lambda v: [("output", v)])
        if job["problem"] == "trimul"
        else (lambda v: list(zip(("output", "kv_cache"), v)))
    )
    # 1. Reference outputs first, before any candidate code exists in this process.
    plan = []  # (case, seed for inputs, label)
    for case in cases:
        plan.append((case, case.seed, f"case {case.name}"))
        if stage == "time":
            plan.append((case, fresh_seed(case.seed, seed), f"case {case.name}, fresh inputs after timing"))
    if stage == "check" and cases:
        c0 = cases[0]
        plan.append((c0, fresh_seed(c0.seed, seed), f"case {c0.name} again, fresh inputs"))
    refs = []
    for case, s, _ in plan:
        with torch.no_grad():
            refs.append(ref_split(reference(generate(case, device, seed=s))))
    _sync(device)
    guards = _guarded()
    # 2. The candidate.
    spec = importlib.util.spec_from_file_location("candidate", work / "candidate.py")
    module = importlib.util.module_from_spec(spec)
    _LOADED["value"] = True
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - reported to the agent
        raise _Fail(f"the program failed to import: {type(exc).__name__}: {exc}") from None
    _check_guards(guards)
    fn = getattr(module, "custom_kernel", None)
    if not callable(fn):
        raise _Fail("the program does not define a callable `custom_kernel(data)`")

    def call(case: Any, s: int, label: str, ref: list) -> tuple[Any, float]:
        data = generate(case, device, seed=s)
        try:
            value = fn(data)
            _sync(device)
        except Exception as exc:  # noqa: BLE001 - reported to the agent
            raise _Fail(f"{label}: custom_kernel raised {type(exc).__name__}: {str(exc)[:500]}") from None
        _check_guards(guards)  # before comparing: the comparison itself uses guarded functions
        return data, _compare(split, value, ref, tol, label)

    results = []
    if stage == "check":
        for (case, s, label), ref in zip(plan, refs):
            _, err = call(case, s, label, ref)
            results.append({"case": case.name, "seed": s, "max_abs_err": err})
            _check_guards(guards)
    else:
        timing = job.get("timing", {})
        for i, case in enumerate(cases):
            (_, s, label), ref = plan[2 * i], refs[2 * i]
            data, err = call(case, s, label, ref)
            try:
                t = time_kernel(fn, data, device=device, **timing)
            except Exception as exc:  # noqa: BLE001
                raise _Fail(
                    f"{label}: custom_kernel raised during timing: {type(exc).__name__}: {str(exc)[:500]}"
                ) from None
            del data
            _check_guards(guards)
            (_, s2, label2), ref2 = plan[2 * i + 1], refs[2 * i + 1]
            _, err2 = call(case, s2, label2, ref2)
            results.append(
                {
                    "case": case.name,
                    "seed": s,
                    "fresh_seed": s2,
                    "max_abs_err": max(err, err2),
                    **{k: t[k] for k in ("mean_us", "std_us", "stderr_us", "n")},
                }
            )
            if device.startswith("cuda"):
                torch.cuda.empty_cache()
    return {"ok": True, "error": None, "cases": results, "device": device, **info}


def main(argv: list[str] | None = None) -> int:
    """Child entry point: ``python -m discoverygym.rewards.kernels.runner WORKDIR``.

    Reads ``WORKDIR/job.json`` and ``WORKDIR/candidate.py``, writes ``WORKDIR/result.json``.
    Returns the exit status (0 whenever a result was written).
    """
    work = Path((argv or sys.argv[1:])[0])
    job = json.loads((work / "job.json").read_text())
    try:
        result = _run(job, work)
    except _Fail as exc:
        result = {"ok": False, "error": str(exc)}
    except Exception as exc:  # noqa: BLE001 - reported verbatim
        # Before the candidate ran, an exception is the harness's or the backend's (no GPU, out of
        # memory in the reference); afterwards the candidate may have broken the process state.
        harness = not _LOADED["value"]
        result = {
            "ok": False,
            "harness_error": harness,
            "backend_unavailable": type(exc).__name__ == "BackendUnavailable",
            "traceback": traceback.format_exc()[-3000:],
            "error": (
                f"harness error: {type(exc).__name__}: {exc}"
                if harness
                else f"error after the program was loaded: {type(exc).__name__}: {str(exc)[:500]}"
            ),
        }
    tmp = work / "result.json.tmp"
    tmp.write_text(json.dumps(result, default=float))
    os.replace(tmp, work / "result.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
