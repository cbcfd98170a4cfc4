"""What the three kernel stages share: the checked calls of a stage and the problems' functions.

Imported by the launcher (parent), the candidate process and the verifier process alike; nothing
here runs or imports a candidate.
"""

from __future__ import annotations

import json
import math
import os
import select
import time
import traceback
from typing import Any

__all__ = [
    "MAX_MESSAGE_BYTES",
    "PARTS",
    "SKETCHES",
    "VERDICT_PREFIX",
    "Channel",
    "bind_lifetime",
    "failure_result",
    "fresh_seed",
    "plan",
    "problem_functions",
    "require_device",
    "single_cpu_thread",
    "sketch",
    "sketch_bound",
]

#: longest line either side of the candidate <-> judge channel may send (a longer one is malformed).
MAX_MESSAGE_BYTES = 1 << 16
#: number of random ±1 projections the candidate reports per output tensor of a timed call.
SKETCHES = 2

#: Prefix of the verifier's one verdict line (followed by its JSON record).
VERDICT_PREFIX = "DISCOVERYGYM-VERDICT "
#: The tensors a problem's ``custom_kernel`` returns, in order.
PARTS = {"trimul": ("output",), "mla": ("output", "kv_cache"), "cumsum": ("output",), "matmul": ("output",)}


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
    """``(generate_input, reference, (rtol, atol))`` of a problem in :data:`PARTS` (imports torch).

    Raises:
        ValueError: unknown problem name.
    """
    from discoverygym.rewards.kernels import kernelbench, mla, specs, trimul

    table = {
        "trimul": (trimul.generate_input, trimul.reference, specs.TRIMUL_TOLERANCE),
        "mla": (mla.generate_input, mla.reference, specs.MLA_TOLERANCE),
        "cumsum": (kernelbench.cumsum_input, kernelbench.cumsum_reference, specs.KERNELBENCH_TOLERANCE),
        "matmul": (kernelbench.matmul_input, kernelbench.matmul_reference, specs.KERNELBENCH_TOLERANCE),
    }
    if name not in table:
        raise ValueError(f"unknown kernel problem {name!r}; known: {', '.join(table)}")
    return table[name]


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


def single_cpu_thread(device: str) -> None:
    """On the CPU, give torch one intra-op thread (``torch.set_num_threads(1)``); a GPU is left alone.

    Candidate and judge share the machine's cores: with torch's default thread pool each, on a
    loaded machine a 128K-element ``torch.cumsum`` took 8–25 ms instead of 0.14 ms (threads waiting
    for each other), noise that the CPU proxy's timing check rightly refuses. Called by both stage
    processes before anything is computed, so correctness and the CPU-timing proxy run single-threaded.
    """
    if device == "cpu":
        import torch

        torch.set_num_threads(1)


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


class Channel:
    """One JSON object per line over a pair of pipe descriptors (the candidate <-> judge protocol).

    The judge's side treats everything it reads as untrusted: :meth:`recv` returns ``None`` for a
    closed pipe, a deadline passed, a line longer than :data:`MAX_MESSAGE_BYTES`, or anything that
    is not one JSON object.

    Args:
        read_fd: descriptor to read lines from (``-1``: none).
        write_fd: descriptor to write lines to (``-1``: none).
    """

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self.read_fd, self.write_fd = read_fd, write_fd
        self._buffer = b""
        self.closed = False

    def send(self, message: dict) -> bool:
        """Write ``message`` as one line; False when the other side is gone."""
        data = (json.dumps(message, allow_nan=False) + "\n").encode()
        try:
            while data:
                data = data[os.write(self.write_fd, data) :]
        except OSError:
            return False
        return True

    def recv(self, timeout_s: float | None = None) -> dict | None:
        """The next message, or None (closed, timed out after ``timeout_s`` seconds, malformed)."""
        deadline = None if timeout_s is None else time.monotonic() + max(0.0, timeout_s)
        while b"\n" not in self._buffer:
            if self.closed or len(self._buffer) > MAX_MESSAGE_BYTES:
                return None
            wait = None if deadline is None else deadline - time.monotonic()
            if wait is not None and wait <= 0:
                return None
            ready, _, _ = select.select([self.read_fd], [], [], wait)
            if not ready:
                return None
            try:
                chunk = os.read(self.read_fd, 65536)
            except OSError:
                chunk = b""
            if not chunk:
                self.closed = True
                continue
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        if len(line) > MAX_MESSAGE_BYTES:
            return None
        try:
            message = json.loads(line)
        except ValueError:
            return None
        return message if isinstance(message, dict) else None


def _signs(numel: int, seed: int, k: int, device: Any) -> Any:
    import torch

    gen = torch.Generator(device=device).manual_seed(int(seed) * 1009 + k)
    return torch.randint(0, 2, (numel,), generator=gen, dtype=torch.int8, device=device) * 2 - 1


def sketch(tensor: Any, seed: int) -> list[float]:
    """:data:`SKETCHES` random ±1 projections ``Σ_i v_i t_i`` of a tensor (float64, same device).

    The candidate reports them for every timed call; the judge recomputes them on the reference
    for randomly chosen calls (:func:`sketch_bound`). The signs are drawn from ``seed`` by a
    generator on the tensor's device (candidate and judge run on the same device).

    Args:
        tensor: a floating tensor (any shape).
        seed: the judge's sketch seed of this call.

    Returns:
        ``SKETCHES`` floats (NaN/inf when the tensor holds them).
    """
    import torch

    flat = tensor.detach().reshape(-1).to(dtype=torch.float64)
    return [float((flat * _signs(flat.numel(), seed, k, flat.device)).sum()) for k in range(SKETCHES)]


def sketch_bound(reference: Any, rtol: float, atol: float, sigmas: float = 6.0) -> float:
    """How far an honest output's sketch may lie from the reference's: ``sigmas·sqrt(Σ τ_i²)``.

    An output within tolerance has errors ``|e_i| ≤ τ_i = atol + rtol·|ref_i|`` that do not depend on
    the random signs (drawn after the inputs were fixed), so by Hoeffding's inequality
    ``P(|Σ v_i e_i| > s·sqrt(Σ τ_i²)) ≤ 2·exp(-s²/2)`` (≈ 3e-8 for ``s = 6``): a correct kernel is
    wrongly refused with at most that probability per sketch, while an output that differs from
    the reference by much more than the tolerance (zeros, another input's output) is caught.

    Args:
        reference: the reference tensor.
        rtol, atol: the problem's tolerance.
        sigmas: ``s`` above.

    Returns:
        The bound (float, same units as the tensor); ``inf`` when the reference is not finite.
    """
    import torch

    ref = reference.detach().reshape(-1).to(torch.float64)
    if not bool(torch.isfinite(ref).all()):
        return math.inf
    tau = atol + rtol * ref.abs()
    return sigmas * math.sqrt(float((tau * tau).sum())) + 1e-9 * float(ref.abs().sum())


def bind_lifetime(parent_pid: int, cpu_s: float) -> None:
    """Give this stage process its own lifetime: die with its parent, and a hard CPU-time limit.

    ``prctl(PR_SET_PDEATHSIG, SIGKILL)`` (then exit at once if the parent is already gone: it
    died before the call) and ``RLIMIT_CPU`` soft = hard = ``ceil(cpu_s)`` seconds (SIGKILL at the
    hard limit; a process without privileges cannot raise it). Called first thing by the
    candidate and judge processes, so neither outlives a killed evaluator nor runs forever.

    Args:
        parent_pid: the pid of the process that must stay alive (``os.getppid()`` at start);
            0 skips the parent check (inside a pid namespace the parent is not visible).
        cpu_s: CPU-time limit in seconds (all threads together).
    """
    import resource
    import signal
    import sys

    from discoverygym.sandbox.probes import libc, prctl

    if sys.platform.startswith("linux"):
        prctl(libc(), 1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if parent_pid and os.getppid() != parent_pid:
        os._exit(70)
    limit = max(1, math.ceil(cpu_s))
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (limit, limit))
