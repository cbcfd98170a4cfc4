"""The judge of a kernel stage: never imports the candidate, judges what it wrote and times it.

Started by :func:`discoverygym.sandbox.kernels.launcher.run_stage` (before the candidate process,
outside the candidate's sandbox) as ``python -m discoverygym.sandbox.kernels.verifier VFD RFD WFD``.
It makes itself non-dumpable, binds its lifetime to the parent's (:func:`~.common.bind_lifetime`),
reads the job on stdin (from the parent, never from the candidate's directory) and talks to the
candidate over the pipes ``RFD``/``WFD`` (:class:`~.common.Channel`).

* **Correctness**: for each output the candidate announces, it draws the same inputs, computes
  the reference and applies :func:`discoverygym.rewards.kernels.tolerance.compare` to the bytes
  read back, then answers ``next`` or ``stop``.
* **Timing** (:func:`_time_case`): the judge drives the timed calls. Each round it sends a fresh
  input seed and a sketch seed, both drawn from ``secrets`` at that moment, and reads back the
  candidate's per-call time and the output's random projections (:func:`~.common.sketch`); its own
  clock (``time.perf_counter`` in this process) brackets the round. Afterwards it recomputes the
  reference of randomly chosen rounds and checks their sketches (:func:`~.common.sketch_bound`),
  measures in its own process what a round costs besides the call (drawing the inputs, the L2
  flush, the sketches), and accepts the candidate's per-call times only when the time it saw and
  the report does not explain stays small in at least one round:
  ``min_r(round_r − reported_r) − min(overhead) ≤ ρ·median(reported) + δ`` (defaults ρ = 0.1,
  δ = 300 μs; job options ``rho``, ``delta_us``). A program that forges its timing therefore fails
  unless it under-reports by less than about ρ + δ (the real call's time shows up in every round
  it does not report), one that returns
  stored or lazy outputs fails the sketches (inputs are new every round and unknown in advance),
  and the times that enter the score are those the judge accepted.

Its one verdict line (carrying the parent's nonce) goes to the pipe ``VFD`` only it inherited.
"""

from __future__ import annotations

import json
import math
import os
import secrets
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from discoverygym.sandbox.kernels.common import (
    PARTS,
    SKETCHES,
    VERDICT_PREFIX,
    Channel,
    bind_lifetime,
    failure_result,
    plan,
    problem_functions,
    require_device,
    single_cpu_thread,
    sketch,
    sketch_bound,
)
from discoverygym.sandbox.probes import libc, prctl

__all__ = ["main", "make_undumpable"]

#: JSON descriptions written by the candidate process are small; anything larger is refused.
_MAX_META_BYTES = 1 << 16
_FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")
_PR_SET_DUMPABLE = 4
#: timing consistency rule: min over rounds of (round − reported) − overhead ≤ ρ·median(reported) + δ
#: (δ in μs; ten times larger with the ``"wall"`` test clock on a CPU).
DEFAULT_RHO, DEFAULT_DELTA_US = 0.1, 300.0
#: rounds per timed case whose sketches the judge recomputes on the reference.
DEFAULT_AUDITED_ROUNDS = 3
_RNG = secrets.SystemRandom()


class _Reject(Exception):
    """An output failed the check (message for the agent)."""


#: set once the first output of the candidate arrived.
_SEEN = {"value": False}


def _load_part(out_dir: Path, k: int, entry: Any, name: str, ref: Any) -> Any:
    """The candidate's tensor ``name`` of output ``k`` read back from its bytes, on ``ref``'s device."""
    import numpy as np
    import torch

    if not isinstance(entry, dict) or entry.get("name") != name:
        raise _Reject(f"{name}: missing from the output")
    if not entry.get("plain"):
        kind = entry.get("kind") if isinstance(entry.get("kind"), str) else "something else"
        raise _Reject(f"{name} must be a plain torch.Tensor, got {kind[:80]}")
    shape, dtype_name, device = entry.get("shape"), entry.get("dtype"), entry.get("device")
    if not (isinstance(shape, list) and all(isinstance(d, int) and d >= 0 for d in shape)):
        raise _Reject(f"{name}: malformed shape description")
    if tuple(shape) != tuple(ref.shape):
        raise _Reject(f"{name} has shape {tuple(shape)}, expected {tuple(ref.shape)}")
    if dtype_name not in _FLOAT_DTYPES:
        raise _Reject(f"{name} has dtype torch.{str(dtype_name)[:40]}, a floating dtype is expected")
    try:
        same_device = torch.device(str(device)) == ref.device
    except (RuntimeError, ValueError):
        same_device = False
    if not same_device:
        raise _Reject(f"{name} is on {str(device)[:40]}, expected {ref.device}")
    dtype = getattr(torch, dtype_name)
    nbytes = math.prod(shape) * torch.empty((), dtype=dtype).element_size()
    path = out_dir / f"{k}.{name}.bin"
    if path.is_symlink() or not path.is_file() or path.stat().st_size != nbytes:
        raise _Reject(f"{name}: the output bytes are missing or have the wrong size")
    raw = np.fromfile(path, dtype=np.uint8, count=nbytes)
    if raw.size != nbytes:
        raise _Reject(f"{name}: the output bytes are missing or have the wrong size")
    return torch.from_numpy(raw).view(dtype).reshape(shape).to(ref.device)


def _read_meta(path: Path) -> list:
    """The candidate's JSON description of one output (small, a regular file, a list)."""
    try:
        meta = None
        if not path.is_symlink() and path.stat().st_size <= _MAX_META_BYTES:
            meta = json.loads(path.read_text())
    except (OSError, ValueError):
        meta = None
    if not isinstance(meta, list):
        raise _Reject("the output description is malformed")
    return meta


class _Ended(Exception):
    """The candidate process stopped talking (exited, crashed, timed out): no verdict of ours."""


def _check_output(chan: Channel, job: dict, out_dir: Path, k: int, call: tuple, fns: tuple,
                  deadline: float) -> float:
    """Judge output ``k`` once the candidate announces it; its worst absolute error.

    Raises:
        _Ended: the candidate stopped before announcing it.
        _Reject: the output is wrong, or the candidate broke the protocol.
    """
    import torch

    from discoverygym.rewards.kernels.tolerance import compare

    case, s, label = call
    generate, reference, tol = fns
    names = PARTS[job["problem"]]
    msg = chan.recv(max(0.0, deadline - time.monotonic()))
    if msg is None:
        raise _Ended(f"{label}: the program produced no output")
    if msg.get("out") != k:
        raise _Reject(f"{label}: the program broke the output protocol")
    _SEEN["value"] = True  # from here on, a failure here may be the candidate's doing (e.g. OOM)
    meta_path = out_dir / f"{k}.json"
    try:
        meta = _read_meta(meta_path)
        with torch.no_grad():
            ref = reference(generate(case, job["device"], seed=s))
            refs = [ref] if len(names) == 1 else list(ref)
            worst = 0.0
            for i, (name, want) in enumerate(zip(names, refs)):
                got = _load_part(out_dir, k, meta[i] if i < len(meta) else None, name, want)
                verdict = compare(got, want, tol[0], tol[1], name)
                if not verdict["ok"]:
                    raise _Reject(verdict["message"])
                worst = max(worst, verdict["max_abs_err"] or 0.0)
                del got
            del ref, refs, want
    except _Reject as exc:
        raise _Reject(f"{label}: {exc}") from None
    finally:
        for name in names:
            (out_dir / f"{k}.{name}.bin").unlink(missing_ok=True)
        meta_path.unlink(missing_ok=True)
        if str(job["device"]).startswith("cuda"):
            torch.cuda.empty_cache()
    chan.send({"next": True})
    return worst


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _time_case(chan: Channel, job: dict, case: Any, label: str, fns: tuple, deadline: float) -> dict:
    """Drive one timed case's rounds and judge them (see the module docstring).

    Returns:
        ``{"mean_us", "std_us", "stderr_us", "n", "judge_us", "overhead_us"}`` (μs); the times are
        the candidate's per-call times, accepted only after the judge's checks.

    Raises:
        _Ended: the candidate stopped during timing.
        _Reject: a malformed answer, a sketch that is not the reference's, or a reported time
            that the judge's clock contradicts.
    """
    import torch

    from discoverygym.rewards.kernels.timing import L2Flusher, should_stop, summarise

    generate, reference, (rtol, atol) = fns
    timing = job.get("timing", {})
    device, names = job["device"], PARTS[job["problem"]]
    rounds: list[dict] = []
    reported: list[float] = []
    start = time.perf_counter()
    while not should_stop(
        reported,
        time.perf_counter() - start,
        max_repeats=int(timing.get("max_repeats", 100)),
        min_repeats=int(timing.get("min_repeats", 3)),
        rel_se=float(timing.get("rel_se", 1e-3)),
        budget_s=float(timing.get("budget_s", 10.0)),
    ):
        r = len(rounds)
        seed, sketch_seed = _RNG.randrange(1, 2**31 - 1), _RNG.randrange(1, 2**31 - 1)
        t0 = time.perf_counter()
        if not chan.send({"go": r, "seed": seed, "sketch_seed": sketch_seed}):
            raise _Ended(f"{label}: the program stopped during timing")
        msg = chan.recv(max(0.0, deadline - time.monotonic()))
        wall_us = (time.perf_counter() - t0) * 1e6
        if msg is None:
            raise _Ended(f"{label}: the program stopped during timing")
        sk = msg.get("sketch")
        if (
            msg.get("done") != r
            or not _number(msg.get("us"))
            or not isinstance(sk, list)
            or len(sk) != len(names)
            or not all(isinstance(row, list) and len(row) == SKETCHES for row in sk)
        ):
            raise _Reject(f"{label}: the program broke the timing protocol (round {r})")
        us = float(msg["us"])
        if not 0 < us <= wall_us:
            raise _Reject(
                f"{label}: timed call {r} reported {us:.6g} μs, outside (0, {wall_us:.6g}] μs measured by the judge"
            )
        reported.append(us)
        rounds.append({"seed": seed, "sketch_seed": sketch_seed, "sketch": sk, "wall_us": wall_us})
    # the candidate now waits for the next message: the judge has the device to itself
    overhead: list[float] = []
    flusher = (
        L2Flusher(device)
        if str(device).startswith("cuda") and timing.get("clock", "cuda") == "cuda" and timing.get("flush_l2", True)
        else None
    )
    sync = torch.cuda.synchronize if str(device).startswith("cuda") else (lambda: None)
    audited = _RNG.sample(range(len(rounds)), min(len(rounds), int(timing.get("audited_rounds", DEFAULT_AUDITED_ROUNDS))))
    with torch.no_grad():
        for j in audited:
            rd = rounds[j]
            ref = reference(generate(case, device, seed=rd["seed"]))
            refs = [ref] if len(names) == 1 else list(ref)
            for name, want, got in zip(names, refs, rd["sketch"]):
                bound = sketch_bound(want, rtol, atol)
                if math.isinf(bound):
                    continue
                for g, w in zip(got, sketch(want, rd["sketch_seed"])):
                    if not _number(g) or abs(g - w) > bound:
                        raise _Reject(
                            f"{label}: the output of timed call {j} is not the reference's ({name} "
                            f"projection {g!r} vs {w:.6g}, allowed ±{bound:.3g}): outputs must be computed "
                            "from each call's own inputs"
                        )
            sync()
            t0 = time.perf_counter()
            data = generate(case, device, seed=rd["seed"] + 1)
            if flusher is not None:
                flusher()
            for want in refs:
                sketch(want, rd["sketch_seed"])
            sync()
            overhead.append((time.perf_counter() - t0) * 1e6)
            del data, ref, refs
    chan.send({"end": True})
    # Per round, the time the judge saw that the candidate's report does not explain:
    # wall − reported − overhead. Honest rounds leave only the channel's latency (plus noise from
    # other processes, which only ever adds time: hence the minimum over rounds and overheads);
    # a forged report leaves the real call's time in every round.
    overhead_us = min(overhead) if overhead else 0.0
    unexplained = min(r["wall_us"] - us for r, us in zip(rounds, reported)) - overhead_us
    wall = timing.get("clock", "cuda") == "wall"
    rho = float(timing.get("rho", DEFAULT_RHO))
    delta = float(timing.get("delta_us", DEFAULT_DELTA_US * (10 if wall else 1)))
    median_reported = statistics.median(reported)
    if unexplained > rho * median_reported + delta:
        raise _Reject(
            f"{label}: the candidate's process reported {median_reported:.6g} μs per call, but in every "
            f"timed call the judge's clock saw at least {unexplained:.6g} μs more than that beyond drawing "
            "the inputs: the timing was tampered with"
        )
    judge_us = median_reported + max(0.0, unexplained)
    return {**summarise(reported), "judge_us": judge_us, "overhead_us": overhead_us}


def _verify(job: dict, out_dir: Path, chan: Channel, deadline: float) -> dict:
    device = job["device"]
    require_device(device)
    single_cpu_thread(device)
    fns = problem_functions(job["problem"])
    if job.get("tolerance") is not None:  # the task's chosen rule (e.g. KernelBench's current 1e-4)
        rtol, atol = (float(v) for v in job["tolerance"])
        fns = (fns[0], fns[1], (rtol, atol))
    calls = plan(job)
    errs: list[float] = []
    timings: list[dict] = []
    try:
        if job["stage"] == "check":
            for k, call in enumerate(calls):
                errs.append(_check_output(chan, job, out_dir, k, call, fns, deadline))
        else:
            for i in range(len(calls) // 2):
                errs.append(_check_output(chan, job, out_dir, 2 * i, calls[2 * i], fns, deadline))
                timings.append(_time_case(chan, job, calls[2 * i][0], calls[2 * i][2], fns, deadline))
                errs.append(_check_output(chan, job, out_dir, 2 * i + 1, calls[2 * i + 1], fns, deadline))
    except _Ended as exc:
        return {"ok": False, "error": str(exc), "max_abs_err": errs}
    except _Reject as exc:
        chan.send({"stop": True})
        return {"ok": False, "rejected": True, "error": str(exc), "max_abs_err": errs}
    return {"ok": True, "error": None, "max_abs_err": errs, "timings": timings}


def make_undumpable() -> bool:
    """``prctl(PR_SET_DUMPABLE, 0)``: processes of the same user (the candidate) can no longer open
    this process's ``/proc/<pid>/fd/*``, ``mem``, ``environ`` or ptrace it.

    Returns:
        True when it took effect; False off Linux or where the C library is unreachable.
    """
    if not sys.platform.startswith("linux"):
        return False
    return prctl(libc(), _PR_SET_DUMPABLE, 0)


def main(verdict_fd: int = 1, read_fd: int = -1, write_fd: int = -1) -> int:
    """Entry point, ``python -m discoverygym.sandbox.kernels.verifier VFD RFD WFD``: one JSON line
    ``{"job": ..., "out": OUT_DIR, "nonce": ..., "timeout_s": ..., "parent": PID}`` on stdin; the
    candidate's channel on ``RFD`` (its messages) and ``WFD`` (ours). Writes one line
    ``DISCOVERYGYM-VERDICT {json}`` (carrying the nonce) to ``verdict_fd``, a pipe created by the parent.

    Never imports the candidate; draws the inputs and computes the references itself.
    """
    make_undumpable()
    fd = sys.stdin.fileno()
    line = b""
    while not line.endswith(b"\n"):
        chunk = os.read(fd, 1)
        if not chunk:
            break
        line += chunk
    nonce = None
    try:
        request = json.loads(line)
        nonce = request.get("nonce")
        timeout_s = float(request.get("timeout_s", 3600.0))
        bind_lifetime(int(request.get("parent", 0)), timeout_s * max(1, os.cpu_count() or 1) + 60.0)
        chan = Channel(read_fd, write_fd)
        result = _verify(request["job"], Path(request["out"]), chan, time.monotonic() + timeout_s + 30.0)
    except Exception as exc:  # noqa: BLE001 - reported verbatim
        # Before any output arrived it is the harness's or the backend's failure (no GPU); later the
        # candidate shares the machine (it may hold the GPU's memory): a failure of the candidate.
        result = failure_result(exc, harness=not _SEEN["value"])
        if _SEEN["value"]:
            result["error"] = f"the verifier failed: {type(exc).__name__}: {str(exc)[:500]}"
            result["rejected"] = True
    result["nonce"] = nonce
    data = (VERDICT_PREFIX + json.dumps(result, default=float) + "\n").encode()
    while data:
        data = data[os.write(verdict_fd, data) :]
    os.close(verdict_fd)
    return 0


if __name__ == "__main__":
    sys.exit(main(*(int(a) for a in sys.argv[1:4])))
