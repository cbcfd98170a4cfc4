"""Timing harness for GPU kernels: CUDA events around one call, GPU MODE stopping rule.

Protocol (GPU MODE ``eval.py`` benchmark mode, as described in the project's problem notes):
warm-up calls (compilation and autotuning already happened in the separate correctness stage),
then up to ``max_repeats`` timed calls, each one bracketed by CUDA events recorded on the current
stream after a device synchronisation, optionally after overwriting an L2-sized buffer so that
no call finds its inputs in cache. Stop as soon as the standard error of the mean is below
``rel_se`` (0.1 %) of the mean (at least ``min_repeats`` calls) or the wall-clock ``budget_s``
is spent. Results are in microseconds.

The timer runs in the candidate's own process (CUDA events must bracket the call), so the
functions it uses are taken when this module is imported, before any candidate code exists: the
C-level event methods (``torch._C._CudaEventBase.record`` / ``elapsed_time``, which a program cannot
replace on the built-in type), ``torch.cuda.synchronize``, ``torch.cuda.current_stream`` and
``time.perf_counter``. A program that patches the Python-level ``torch.cuda.Event`` therefore
does not change the numbers read here (the runner also refuses such patches); one that reaches the
CUDA driver itself (inline C++) could, which is a documented residual risk.

Everything here needs a CUDA or ROCm build of torch with a visible GPU; :func:`require_gpu`
raises :class:`~discoverygym.errors.BackendUnavailable` otherwise, naming what is missing.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch

from discoverygym.errors import BackendUnavailable

#: taken at import (see the module docstring); the ``getattr`` fallbacks cover CPU-only builds.
_EVENT = torch.cuda.Event
_EVENT_BASE = getattr(torch._C, "_CudaEventBase", None)
_RECORD = getattr(_EVENT_BASE, "record", None)
_ELAPSED = getattr(_EVENT_BASE, "elapsed_time", None)
_SYNC = torch.cuda.synchronize
_CURRENT_STREAM = torch.cuda.current_stream
_PERF = time.perf_counter

__all__ = ["L2Flusher", "gpu_info", "require_gpu", "should_stop", "summarise", "time_call", "time_kernel"]


def require_gpu(device: str = "cuda") -> None:
    """Raise unless ``device`` is a usable GPU for timing.

    Raises:
        BackendUnavailable: ``device`` is not a CUDA/ROCm device, or torch has no GPU support, or
            no GPU is visible; the message says which and what torch build is installed.
    """
    if not str(device).startswith("cuda"):
        raise BackendUnavailable(
            f"kernel timing needs a GPU, but device={device!r}; correctness can be checked on CPU, "
            "timing needs device='cuda' (NVIDIA CUDA or AMD ROCm build of torch)"
        )
    if not torch.cuda.is_available():
        build = "CPU-only build" if torch.version.cuda is None and torch.version.hip is None else "GPU build"
        raise BackendUnavailable(
            f"kernel timing needs a visible GPU: torch.cuda.is_available() is False (torch "
            f"{torch.__version__}, {build}); install a CUDA/ROCm torch and run on a GPU machine"
        )


def gpu_info(device: str = "cuda") -> dict:
    """``{"gpu_name", "platform", "torch"}`` of ``device`` (``gpu_name`` None on CPU).

    ``platform`` is ``"cuda <version>"``, ``"rocm <version>"`` or ``"cpu"``.
    """
    if str(device).startswith("cuda") and torch.cuda.is_available():
        name = torch.cuda.get_device_name(torch.device(device))
        platform = f"rocm {torch.version.hip}" if torch.version.hip else f"cuda {torch.version.cuda}"
        return {"gpu_name": name, "platform": platform, "torch": torch.__version__}
    return {"gpu_name": None, "platform": "cpu", "torch": torch.__version__}


def summarise(times_us: Sequence[float]) -> dict:
    """Mean, sample standard deviation and standard error (μs) of repeated timings.

    Returns:
        ``{"mean_us", "std_us", "stderr_us", "n"}``; std and stderr are 0 for one sample.

    Raises:
        ValueError: no samples.
    """
    n = len(times_us)
    if n == 0:
        raise ValueError("no timings")
    mean = math.fsum(times_us) / n
    std = math.sqrt(math.fsum((t - mean) ** 2 for t in times_us) / (n - 1)) if n > 1 else 0.0
    return {"mean_us": mean, "std_us": std, "stderr_us": std / math.sqrt(n), "n": n}


def should_stop(
    times_us: Sequence[float],
    elapsed_s: float,
    *,
    max_repeats: int = 100,
    min_repeats: int = 3,
    rel_se: float = 1e-3,
    budget_s: float = 10.0,
) -> bool:
    """The stopping rule: enough repeats, a precise enough mean, or the budget spent.

    Args:
        times_us: timings so far.
        elapsed_s: wall-clock seconds since the timed loop started.
        max_repeats: hard cap on timed calls (GPU MODE: 100).
        min_repeats: no precision stop before this many calls.
        rel_se: stop when stderr/mean < rel_se (GPU MODE: 0.1 %).
        budget_s: stop when this much wall time is spent (at least one call is always made).
    """
    n = len(times_us)
    if n >= max_repeats or (n >= 1 and elapsed_s >= budget_s):
        return True
    if n < max(min_repeats, 2):
        return False
    s = summarise(times_us)
    return s["mean_us"] > 0 and s["stderr_us"] / s["mean_us"] < rel_se


class L2Flusher:
    """Overwrites a buffer twice the GPU's L2 size (at least 64 MiB) to evict cached data.

    Args:
        device: CUDA device.
    """

    def __init__(self, device: str = "cuda") -> None:
        props = torch.cuda.get_device_properties(torch.device(device))
        l2 = int(getattr(props, "L2_cache_size", 0) or 0)
        self.nbytes = max(2 * l2, 64 << 20)
        self.buffer = torch.empty(self.nbytes // 4, dtype=torch.int32, device=device)

    def __call__(self) -> None:
        """Write the whole buffer (queued on the current stream)."""
        self.buffer.zero_()


def time_kernel(
    fn: Callable[[Any], Any],
    data: Any,
    *,
    device: str = "cuda",
    warmup: int = 3,
    max_repeats: int = 100,
    min_repeats: int = 3,
    rel_se: float = 1e-3,
    budget_s: float = 10.0,
    flush_l2: bool = True,
    clock: str = "cuda",
) -> dict:
    """Time ``fn(data)`` with CUDA events (see module docstring for the protocol).

    Args:
        fn: the candidate kernel.
        data: its input (reused for every call; freshness is checked separately, after timing).
        device: CUDA device.
        warmup: untimed calls first.
        max_repeats, min_repeats, rel_se, budget_s: see :func:`should_stop`.
        flush_l2: overwrite an L2-sized buffer before every timed call (GPU only).
        clock: ``"cuda"`` (CUDA events; the only clock used for scores) or ``"wall"``
            (``time.perf_counter`` around the call; lets tests run the timing stage's control flow
            on a CPU; its numbers are not comparable with anything).

    Returns:
        :func:`summarise` of the per-call times in μs plus ``"times_us"`` (the list).

    Raises:
        BackendUnavailable: ``clock="cuda"`` without a GPU (see :func:`require_gpu`).
        ValueError: unknown clock.
        Exception: whatever ``fn`` raises.
    """
    if clock not in ("cuda", "wall"):
        raise ValueError(f"clock must be 'cuda' or 'wall', got {clock!r}")
    if clock == "wall":
        return _time_wall(fn, data, device, warmup, max_repeats, min_repeats, rel_se, budget_s)
    require_gpu(device)
    flusher = L2Flusher(device) if flush_l2 else None
    record = _RECORD if _RECORD is not None else _EVENT.record
    elapsed = _ELAPSED if _ELAPSED is not None else _EVENT.elapsed_time
    for _ in range(warmup):
        fn(data)
    _SYNC()
    times: list[float] = []
    start_wall = _PERF()
    while not should_stop(
        times,
        _PERF() - start_wall,
        max_repeats=max_repeats,
        min_repeats=min_repeats,
        rel_se=rel_se,
        budget_s=budget_s,
    ):
        if flusher is not None:
            flusher()
        start, end = _EVENT(enable_timing=True), _EVENT(enable_timing=True)
        stream = _CURRENT_STREAM()
        _SYNC()
        record(start, stream)
        out = fn(data)
        record(end, stream)
        _SYNC()
        times.append(elapsed(start, end) * 1000.0)
        del out
    return {**summarise(times), "times_us": times}


def _time_wall(
    fn: Callable[[Any], Any],
    data: Any,
    device: str,
    warmup: int,
    max_repeats: int,
    min_repeats: int,
    rel_se: float,
    budget_s: float,
) -> dict:
    """The same loop with ``time.perf_counter`` (for tests on CPU; see :func:`time_kernel`)."""
    sync = torch.cuda.synchronize if str(device).startswith("cuda") else (lambda: None)
    for _ in range(warmup):
        fn(data)
    sync()
    times: list[float] = []
    start_wall = _PERF()
    while not should_stop(
        times,
        _PERF() - start_wall,
        max_repeats=max_repeats,
        min_repeats=min_repeats,
        rel_se=rel_se,
        budget_s=budget_s,
    ):
        t0 = _PERF()
        out = fn(data)
        sync()
        times.append((_PERF() - t0) * 1e6)
        del out
    return {**summarise(times), "times_us": times}


def time_call(fn: Callable[[Any], Any], data: Any, *, device: str = "cuda", clock: str = "cuda",
              flusher: L2Flusher | None = None) -> tuple[float, Any]:
    """Time one call ``fn(data)``: the unit of the judge-driven timing rounds.

    ``clock="cuda"``: device synchronisation, optional L2 flush, CUDA events recorded on the
    current stream around the call, synchronisation; ``"wall"``: ``time.perf_counter`` around the
    call and a synchronisation (CPU tests). This runs in the candidate's process, so its number is
    *untrusted*: the judge accepts it only when it agrees with its own clock (see
    :mod:`discoverygym.sandbox.kernels`).

    Args:
        fn: the candidate kernel.
        data: its input.
        device: the device of ``data``.
        clock: ``"cuda"`` or ``"wall"``.
        flusher: an :class:`L2Flusher` to run before the call (GPU only) or None.

    Returns:
        ``(microseconds, output)``.

    Raises:
        BackendUnavailable: ``clock="cuda"`` without a GPU.
        ValueError: unknown clock.
        Exception: whatever ``fn`` raises.
    """
    if clock == "wall":
        sync = _SYNC if str(device).startswith("cuda") else (lambda: None)
        sync()
        t0 = _PERF()
        out = fn(data)
        sync()
        return (_PERF() - t0) * 1e6, out
    if clock != "cuda":
        raise ValueError(f"clock must be 'cuda' or 'wall', got {clock!r}")
    require_gpu(device)
    record = _RECORD if _RECORD is not None else _EVENT.record
    elapsed = _ELAPSED if _ELAPSED is not None else _EVENT.elapsed_time
    _SYNC()
    if flusher is not None:
        flusher()
    start, end = _EVENT(enable_timing=True), _EVENT(enable_timing=True)
    stream = _CURRENT_STREAM()
    record(start, stream)
    out = fn(data)
    record(end, stream)
    _SYNC()
    return elapsed(start, end) * 1000.0, out
