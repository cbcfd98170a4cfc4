"""The verifier process of a kernel stage: never imports the candidate, judges the bytes it wrote.

Started by :func:`discoverygym.sandbox.kernels.launcher.run_stage` (before the candidate process)
as ``python -m discoverygym.sandbox.kernels.verifier FD``. It makes itself non-dumpable, reads the
job on stdin, and for each output the candidate process (:mod:`.candidate`) writes it draws the same
inputs, computes the reference and applies :func:`discoverygym.rewards.kernels.tolerance.compare`.
Its one verdict line (carrying the parent's nonce) goes to the pipe ``FD`` only it inherited.
"""

from __future__ import annotations

import json
import math
import os
import select
import sys
from pathlib import Path
from typing import Any

from discoverygym.sandbox.kernels.common import (
    PARTS,
    VERDICT_PREFIX,
    failure_result,
    plan,
    problem_functions,
    require_device,
)
from discoverygym.sandbox.probes import libc, prctl

__all__ = ["main", "make_undumpable"]

#: JSON descriptions written by the candidate process are small; anything larger is refused.
_MAX_META_BYTES = 1 << 16
_FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")
_PR_SET_DUMPABLE = 4


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


def _wait_for(path: Path, stdin_fd: int, eof: list) -> bool:
    """Wait until ``path`` exists; False once the parent closed stdin and it still does not."""
    while not path.exists():
        if eof[0]:
            return path.exists()
        ready, _, _ = select.select([stdin_fd], [], [], 0.01)
        if ready and not os.read(stdin_fd, 4096):
            eof[0] = True
    return True


def _verify(job: dict, out_dir: Path, stdin_fd: int) -> dict:
    import torch

    from discoverygym.rewards.kernels.tolerance import compare

    device, problem = job["device"], job["problem"]
    require_device(device)
    generate, reference, tol = problem_functions(problem)
    names = PARTS[problem]
    calls = plan(job)
    eof = [False]
    errs: list[float] = []
    for k, (case, s, label) in enumerate(calls):
        meta_path = out_dir / f"{k}.json"
        if not _wait_for(meta_path, stdin_fd, eof):
            return {"ok": False, "error": f"{label}: the program produced no output", "max_abs_err": errs}
        _SEEN["value"] = True  # from here on, a failure here may be the candidate's doing (e.g. OOM)
        try:
            meta = _read_meta(meta_path)
            with torch.no_grad():
                ref = reference(generate(case, device, seed=s))
                refs = [ref] if problem == "trimul" else list(ref)
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
            (out_dir / "stop").touch()
            return {"ok": False, "rejected": True, "error": f"{label}: {exc}", "max_abs_err": errs}
        finally:
            for name in names:
                (out_dir / f"{k}.{name}.bin").unlink(missing_ok=True)
            if device.startswith("cuda"):
                torch.cuda.empty_cache()
            meta_path.unlink(missing_ok=True)  # the acknowledgement: the candidate goes on
        errs.append(worst)
    return {"ok": True, "error": None, "max_abs_err": errs}


def make_undumpable() -> bool:
    """``prctl(PR_SET_DUMPABLE, 0)``: processes of the same user (the candidate) can no longer open
    this process's ``/proc/<pid>/fd/*``, ``mem``, ``environ`` or ptrace it.

    Returns:
        True when it took effect; False off Linux or where the C library is unreachable.
    """
    if not sys.platform.startswith("linux"):
        return False
    return prctl(libc(), _PR_SET_DUMPABLE, 0)


def main(verdict_fd: int = 1) -> int:
    """Entry point of the verifier process, ``python -m discoverygym.sandbox.kernels.verifier FD``: one JSON line ``{"job": ..., "out": OUT_DIR, "nonce": ...}`` on stdin;
    stdin's EOF means the candidate process is gone. Writes one line ``DISCOVERYGYM-VERDICT {json}``
    (carrying the nonce) to ``verdict_fd``, a pipe created by the parent.

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
    out_dir = None
    nonce = None
    try:
        request = json.loads(line)
        nonce = request.get("nonce")
        out_dir = Path(request["out"])
        result = _verify(request["job"], out_dir, fd)
    except Exception as exc:  # noqa: BLE001 - reported verbatim
        # Before any output arrived it is the harness's or the backend's failure (no GPU); later the
        # candidate shares the machine (it may hold the GPU's memory): a failure of the candidate.
        result = failure_result(exc, harness=not _SEEN["value"])
        if _SEEN["value"]:
            result["error"] = f"the verifier failed: {type(exc).__name__}: {str(exc)[:500]}"
            result["rejected"] = True
    if out_dir is not None and not result.get("ok"):
        try:
            (out_dir / "stop").touch()
        except OSError:
            pass
    result["nonce"] = nonce
    data = (VERDICT_PREFIX + json.dumps(result, default=float) + "\n").encode()
    while data:
        data = data[os.write(verdict_fd, data) :]
    os.close(verdict_fd)
    return 0




if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 1))
