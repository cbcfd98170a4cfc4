"""The parent side of a kernel stage: work directories, starting both processes, merging their records.

:func:`run_stage` starts the verifier process (:mod:`.verifier`) and then the candidate process
(:mod:`.candidate`), each in its own session under the stage's wall-clock limit, and combines the
verifier's verdict (trusted: one nonce-checked line on a pipe only it holds) with the candidate
process's record (untrusted: only validated timings and messages). See :mod:`discoverygym.sandbox.kernels`.
"""

from __future__ import annotations

import json
import math
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from discoverygym.sandbox._process import kill_group, remove_tree
from discoverygym.sandbox.kernels.common import VERDICT_PREFIX, fresh_seed, plan

__all__ = ["fresh_seed", "new_workdir", "plan", "remove_workdir", "run_stage"]

_PACKAGE_PARENT = str(Path(__file__).resolve().parents[3])


def new_workdir() -> str:
    """A private temporary directory for one candidate (both stages)."""
    return os.path.realpath(tempfile.mkdtemp(prefix="discoverygym-kernel-"))


def remove_workdir(workdir: str) -> None:
    """Remove a candidate's directory, whatever the candidate left in it (never raises)."""
    remove_tree(workdir)


def _device_env(env: dict, device: str) -> dict:
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"  # Triton kernels run in its NumPy interpreter on CPU tensors
        env.setdefault("CUDA_VISIBLE_DEVICES", "")
    else:
        env.pop("TRITON_INTERPRET", None)
    return env


def _tail(fh: Any, n: int = 2000) -> str:
    fh.seek(0, os.SEEK_END)
    size = fh.tell()
    fh.seek(max(0, size - n))
    return fh.read().decode("utf-8", "replace")


def _drain(fd: int, sink: list) -> None:
    """Read a pipe until EOF into ``sink`` (a thread: the verifier never blocks on a full pipe)."""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        sink.append(chunk)
    os.close(fd)


def _read_verdict(data: bytes, nonce: str) -> dict | None:
    """The verifier's verdict: exactly one line ``PREFIX {json}`` carrying the parent's nonce.

    Anything else on the channel (two messages, stray bytes, a wrong nonce) means something other
    than the verifier wrote to it: no verdict.
    """
    text = data.decode("utf-8", "replace")
    if not text.startswith(VERDICT_PREFIX) or text.count("\n") != 1 or not text.endswith("\n"):
        return None
    try:
        verdict = json.loads(text[len(VERDICT_PREFIX) :])
    except ValueError:
        return None
    if not isinstance(verdict, dict) or verdict.pop("nonce", None) != nonce:
        return None
    return verdict


def run_stage(source: str, job: dict, workdir: str, timeout_s: float) -> dict:
    """Run one stage of a candidate (candidate process + verifier process) and return the result.

    Args:
        source: the candidate program (already statically checked).
        job: ``{"stage": "check" | "time", "problem": "trimul" | "mla", "cases": [case dicts],
            "device": "cuda" | "cpu", "seed": int, "timing": {...}}`` (JSON-serialisable).
        workdir: from :func:`new_workdir`.
        timeout_s: wall-clock limit of the whole stage, process start and imports included.

    Returns:
        ``{"ok", "error", "cases", "gpu_name", "platform", "torch", "device"}``; on failure
        ``{"ok": False, "error": ...}`` naming the first failing case (or the crash / timeout,
        with the last lines of stderr, ``timed_out`` and ``returncode``); ``harness_error`` and
        ``backend_unavailable`` when the harness failed before the program ran.
    """
    work = Path(workdir)
    (work / "candidate.py").write_text(source)
    (work / "job.json").write_text(json.dumps(job))
    result_path = work / "result.json"
    result_path.unlink(missing_ok=True)
    shutil.rmtree(work / "out", ignore_errors=True)
    (work / "out").mkdir()
    (work / "tmp").mkdir(exist_ok=True)
    pythonpath = os.pathsep.join(p for p in (_PACKAGE_PARENT, os.environ.get("PYTHONPATH")) if p)
    stage = job["stage"]
    deadline = time.monotonic() + timeout_s

    # The verifier: job on stdin, verdict through a pipe only the parent reads (its write end is
    # inherited by the verifier alone), stderr in an anonymous file, cwd outside the workdir.
    venv = _device_env(
        {**os.environ, "PYTHONPATH": pythonpath, "PYTHONDONTWRITEBYTECODE": "1"}, job["device"]
    )
    nonce = secrets.token_hex(16)
    vread, vwrite = os.pipe()
    verdict_bytes: list = []
    reader = threading.Thread(target=_drain, args=(vread, verdict_bytes), daemon=True)
    with tempfile.TemporaryFile() as verr:
        try:
            verifier = subprocess.Popen(
                [sys.executable, "-m", "discoverygym.sandbox.kernels.verifier", str(vwrite)],
                cwd=_PACKAGE_PARENT,
                env=venv,
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=verr,
                start_new_session=True,
                pass_fds=(vwrite,),
            )
        finally:
            os.close(vwrite)
        reader.start()
        try:
            try:
                request = {"job": job, "out": str(work / "out"), "nonce": nonce}
                verifier.stdin.write(json.dumps(request).encode() + b"\n")
                verifier.stdin.flush()
            except OSError:
                pass
            env = dict(os.environ)
            env.update(
                HOME=str(work),
                TMPDIR=str(work / "tmp"),
                TRITON_CACHE_DIR=str(work / "triton_cache"),
                PYTHONPATH=pythonpath,
                PYTHONDONTWRITEBYTECODE="1",
            )
            _device_env(env, job["device"])
            with open(work / f"{stage}.out", "wb") as out, open(work / f"{stage}.err", "wb") as err:
                proc = subprocess.Popen(
                    [sys.executable, "-m", "discoverygym.sandbox.kernels.candidate", str(work)],
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
                    kill_group(proc)
            # The candidate is gone: tell the verifier (EOF), let it finish the output in hand.
            try:
                verifier.stdin.close()
            except OSError:
                pass
            try:
                verifier.wait(timeout=0.1 if timed_out else max(30.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        finally:
            kill_group(verifier)  # also on errors and interrupts in the parent
        reader.join(timeout=5.0)
        verdict = _read_verdict(b"".join(verdict_bytes), nonce)
        verifier_err = _tail(verr)
    stderr_tail = (work / f"{stage}.err").read_bytes()[-2000:].decode("utf-8", "replace")
    try:
        child = json.loads(result_path.read_text())
    except (OSError, ValueError):
        child = None
    if not isinstance(child, dict):
        child = None
    return _merge(
        job, plan(job), verdict, verifier_err, child, stderr_tail, timed_out, proc.returncode, timeout_s
    )


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _merge(
    job: dict,
    calls: list,
    verdict: dict | None,
    verifier_err: str,
    child: dict | None,
    stderr_tail: str,
    timed_out: bool,
    returncode: int | None,
    timeout_s: float,
) -> dict:
    """Combine the verifier's verdict (trusted: it came through the parent's pipe) with the
    candidate process's record (untrusted: only timings and messages are taken from it, and every
    field is validated). Only a verdict can produce ``harness_error`` / ``backend_unavailable``."""
    stage = job["stage"]
    fail = lambda error, **kw: {"ok": False, "error": error, "stderr": stderr_tail, **kw}
    if verdict is not None and (verdict.get("harness_error") or verdict.get("backend_unavailable")):
        return {**verdict, "ok": False, "stderr": stderr_tail}
    if verdict is not None and verdict.get("rejected"):
        return fail(str(verdict.get("error")))
    if timed_out:
        return fail(
            f"the {stage} stage timed out after {timeout_s:g} s", timed_out=True, returncode=returncode
        )
    if child is None:
        last = stderr_tail.strip().splitlines()[-1] if stderr_tail.strip() else "no output"
        return fail(
            f"the {stage} stage crashed (exit code {returncode}) before reporting: {last}",
            timed_out=False,
            returncode=returncode,
        )
    msg = child.get("error")
    msg = msg[:2000] if isinstance(msg, str) else "no message"
    if child.get("harness_error") or child.get("backend_unavailable"):
        # only the verifier may report these; from the candidate's process they are not trusted
        return fail(
            f"the candidate's process reported an internal error (not trusted, counted as a failure): {msg}"
        )
    if child.get("ok") is not True:
        return fail(msg)
    if verdict is None:
        last = verifier_err.strip().splitlines()[-1] if verifier_err.strip() else "no output"
        return fail(f"the verifier process ended without a valid verdict (counted as a failure): {last}")
    if verdict.get("ok") is not True:
        return fail(str(verdict.get("error") or "the verifier rejected the outputs"))
    errs = verdict.get("max_abs_err")
    if not isinstance(errs, list) or len(errs) != len(calls) or not all(_number(e) for e in errs):
        return fail("the verifier's verdict does not cover every checked call (counted as a failure)")
    info = {
        k: (child.get(k) if isinstance(child.get(k), str) else None)
        for k in ("gpu_name", "platform", "torch")
    }
    info["device"] = job["device"]
    if stage == "check":
        cases = [{"case": c.name, "seed": s, "max_abs_err": e} for (c, s, _), e in zip(calls, errs)]
    else:
        timings = child.get("timings")
        keys = ("mean_us", "std_us", "stderr_us", "n")
        if (
            not isinstance(timings, list)
            or len(timings) != len(calls) // 2
            or not all(isinstance(t, dict) and all(_number(t.get(k)) for k in keys) for t in timings)
        ):
            return fail("the timing stage reported malformed timings or the wrong number of cases")
        cases = []
        for i, t in enumerate(timings):
            (case, s, _), (_, s2, _) = calls[2 * i], calls[2 * i + 1]
            cases.append(
                {
                    "case": case.name,
                    "seed": s,
                    "fresh_seed": s2,
                    "max_abs_err": max(errs[2 * i], errs[2 * i + 1]),
                    **{k: t[k] for k in keys},
                }
            )
    return {"ok": True, "error": None, "cases": cases, **info, "stderr": stderr_tail}
