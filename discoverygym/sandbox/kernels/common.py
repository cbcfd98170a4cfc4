"""What the three kernel stages share: the checked calls of a stage and the problems' functions.

Imported by the launcher (parent), the candidate process and the verifier process alike; nothing
here runs or imports a candidate.
"""

from __future__ import annotations

import traceback
from typing import Any

__all__ = ["PARTS", "VERDICT_PREFIX", "failure_result", "fresh_seed", "plan", "problem_functions",
           "require_device"]

#: Prefix of the verifier's one verdict line (followed by its JSON record).
VERDICT_PREFIX = "DISCOVERYGYM-VERDICT "
#: The tensors a problem's ``custom_kernel`` returns, in order.
PARTS = {"trimul": ("output",), "mla": ("output", "kv_cache")}


def fresh_seed(case_seed: int, eval_seed: int) -> int:
    """Seed of the fresh inputs used to re-check a case (deterministic, differs from the case seed)."""
    s = (int(case_seed) * 7919 + int(eval_seed) + 1) % (2**31 - 1)
    return s + 1 if s == int(case_seed) else s


def plan(job: dict) -> list[tuple[Any, int, str]]:
    """The checked calls of a stage, in order: ``(case, input seed, label)``.

    ``check``: every case, then the first one again on fresh inputs. ``time``: for each case, the
    call before timing and the call on fresh inputs after timing.
    """
    from discoverygym.rewards.kernels.specs import case_from_dict

    seed = int(job.get("seed", 0))
    cases = [case_from_dict(c) for c in job["cases"]]
    out = []
    for case in cases:
        out.append((case, case.seed, f"case {case.name}"))
        if job["stage"] == "time":
            out.append((case, fresh_seed(case.seed, seed), f"case {case.name}, fresh inputs after timing"))
    if job["stage"] == "check" and cases:
        c0 = cases[0]
        out.append((c0, fresh_seed(c0.seed, seed), f"case {c0.name} again, fresh inputs"))
    return out


def problem_functions(name: str) -> tuple[Any, Any, tuple[float, float]]:
    """``(generate_input, reference, (rtol, atol))`` of ``"trimul"`` or ``"mla"`` (imports torch)."""
    from discoverygym.rewards.kernels import mla, specs, trimul

    if name == "trimul":
        return trimul.generate_input, trimul.reference, specs.TRIMUL_TOLERANCE
    return mla.generate_input, mla.reference, specs.MLA_TOLERANCE


def require_device(device: str) -> None:
    """BackendUnavailable when ``device`` is a GPU that torch cannot use (before anything else)."""
    import torch

    from discoverygym.errors import BackendUnavailable

    if str(device).startswith("cuda") and not torch.cuda.is_available():
        build = "CPU-only build" if torch.version.cuda is None and torch.version.hip is None else "GPU build"
        raise BackendUnavailable(
            f"device={device!r} was requested but torch.cuda.is_available() is False (torch "
            f"{torch.__version__}, {build}); use device='cpu' (--device cpu) for the CPU-scale "
            "correctness checks, or run on a machine with an NVIDIA CUDA or AMD ROCm GPU"
        )


def failure_result(exc: BaseException, harness: bool) -> dict:
    """The failure record of an unexpected exception (``harness``: raised before the candidate ran).

    Call it from an ``except`` block (the record carries the current traceback's tail).
    """
    return {
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
