"""The parent side of a kernel stage: work directories, starting the judge and the sandboxed candidate.

:func:`run_stage` starts the judge (:mod:`.verifier`, outside the candidate's reach) and then the
candidate process (:mod:`.candidate`) inside its bubblewrap sandbox (:mod:`.box`), connects them
with two pipes, and combines the judge's verdict (trusted: one nonce-checked line on a pipe only
it holds; it also carries the accepted timings) with the candidate process's record (untrusted:
only messages). See :mod:`discoverygym.sandbox.kernels`.
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

from discoverygym.errors import BackendUnavailable
from discoverygym.sandbox._process import kill_group, remove_tree
from discoverygym.sandbox.kernels import box
from discoverygym.sandbox.kernels.common import VERDICT_PREFIX, fresh_seed, plan

__all__ = ["ALLOW_UNCONFINED_ENV", "UNCONFINED_REFUSAL", "fresh_seed", "new_workdir", "plan", "remove_workdir", "run_stage",
           "sweep_stale_workdirs"]

_PACKAGE_PARENT = str(Path(__file__).resolve().parents[3])
_PREFIX = "discoverygym-kernel-"
#: environment variable with the effect of ``allow_unconfined=True`` (for CI machines without
#: bubblewrap; set it only where no hostile program is judged).
ALLOW_UNCONFINED_ENV = "DISCOVERYGYM_KERNELS_ALLOW_UNCONFINED"
_OWNER = ".owner"
#: why kernels are not judged without bubblewrap (the message of the BackendUnavailable raised).
UNCONFINED_REFUSAL = (
    "kernel programs are judged only inside a bubblewrap sandbox (a kernel program is arbitrary "
    "code: outside a sandbox it could rewrite the verifier it is judged by), and bubblewrap (bwrap) "
    "is not installed, cannot create user namespaces here, or DISCOVERYGYM_SANDBOX_NO_BWRAP is set. "
    "Install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap), or pass allow_unconfined=True "
    "(`evaluate --allow-unconfined`, `--task-options '{\"allow_unconfined\": true}'` for search/train, or "
    "DISCOVERYGYM_KERNELS_ALLOW_UNCONFINED=1) to judge "
    "behind the static checks and audit hook only"
)


def _start_time(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def sweep_stale_workdirs(root: str | None = None) -> list[str]:
    """Remove kernel work directories whose owning process is gone (an evaluator killed with -9).

    A directory is stale when its ``.owner`` file names a pid that no longer runs (or now runs
    another process: the start time differs). Directories without an owner file are left alone.

    Args:
        root: where work directories live (default: :func:`tempfile.gettempdir`).

    Returns:
        The directories removed.
    """
    root = root or tempfile.gettempdir()
    removed = []
    try:
        names = [n for n in os.listdir(root) if n.startswith(_PREFIX)]
    except OSError:
        return removed
    for name in names:
        path = os.path.join(root, name)
        try:
            with open(os.path.join(path, _OWNER)) as fh:
                pid_s, start = fh.read().split()
            pid = int(pid_s)
        except (OSError, ValueError):
            continue
        if _start_time(pid) != start:
            remove_tree(path)
            removed.append(path)
    return removed


def new_workdir() -> str:
    """A private temporary directory for one candidate (both stages), stale ones swept first.

    The directory records its owner (pid and start time), so that a later evaluator removes it
    when this process dies without cleaning up (:func:`sweep_stale_workdirs`).
    """
    sweep_stale_workdirs()
    path = os.path.realpath(tempfile.mkdtemp(prefix=_PREFIX))
    with open(os.path.join(path, _OWNER), "w") as fh:
        fh.write(f"{os.getpid()} {_start_time(os.getpid())}")
    return path


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


def _prepare(work: Path, source: str, job: dict, uid: int | None) -> None:
    """Write the stage's inputs (read-only for the candidate) and fresh writable directories."""
    (work / "candidate.py").write_bytes(source.encode("utf-8"))
    (work / "job.json").write_text(json.dumps(job))
    shutil.rmtree(work / "out", ignore_errors=True)
    shutil.rmtree(work / "run", ignore_errors=True)
    for name in box.WRITABLE:
        (work / name).mkdir(exist_ok=True)
        if uid is not None:
            os.chown(work / name, uid, uid)
            for sub in (work / name).rglob("*"):
                os.chown(sub, uid, uid, follow_symlinks=False)
    os.chmod(work, 0o755)


def run_stage(source: str, job: dict, workdir: str, timeout_s: float, *, allow_unconfined: bool = False) -> dict:
    """Run one stage of a candidate (judge process + sandboxed candidate process) and return the result.

    Args:
        source: the candidate program (already statically checked); written as UTF-8 bytes and
            executed exactly as written.
        job: ``{"stage": "check" | "time", "problem": a key of :data:`~.common.PARTS`, "cases":
            [case dicts], "device": "cuda" | "cpu", "seed": int, "timing": {...}}`` (JSON-serialisable).
        workdir: from :func:`new_workdir`.
        timeout_s: wall-clock limit of the whole stage, process start and imports included; also
            the base of each process's own CPU-time limit.
        allow_unconfined: run the candidate as a plain process when bubblewrap is unavailable
            (also when :data:`ALLOW_UNCONFINED_ENV` is set to anything but ``""``/``"0"``).

    Returns:
        ``{"ok", "error", "cases", "gpu_name", "platform", "torch", "device", "sandbox"}``; on failure
        ``{"ok": False, "error": ...}`` naming the first failing case (or the crash / timeout,
        with the last lines of stderr, ``timed_out`` and ``returncode``); ``harness_error`` and
        ``backend_unavailable`` when the harness failed before the program ran.

    Raises:
        BackendUnavailable: bubblewrap cannot run here and ``allow_unconfined`` is False.
        ValueError: ``timeout_s`` is not a positive finite number.
    """
    if not (isinstance(timeout_s, (int, float)) and math.isfinite(timeout_s) and timeout_s > 0):
        raise ValueError(f"timeout_s must be a positive finite number of seconds, got {timeout_s!r}")
    confined = box.available()
    if not confined and not (allow_unconfined or os.environ.get(ALLOW_UNCONFINED_ENV, "") not in ("", "0")):
        raise BackendUnavailable(UNCONFINED_REFUSAL)
    uid = box.sandbox_uid() if confined else None
    work = Path(workdir)
    job = {**job, "cpu_limit_s": float(timeout_s) * (os.cpu_count() or 1) + 30.0}
    _prepare(work, source, job, uid)
    stage = job["stage"]
    pythonpath = os.pathsep.join(p for p in (_PACKAGE_PARENT, os.environ.get("PYTHONPATH")) if p)
    deadline = time.monotonic() + timeout_s

    nonce = secrets.token_hex(16)
    vread, vwrite = os.pipe()  # the judge's verdict, to us
    c2j_r, c2j_w = os.pipe()  # candidate -> judge
    j2c_r, j2c_w = os.pipe()  # judge -> candidate
    verdict_bytes: list = []
    reader = threading.Thread(target=_drain, args=(vread, verdict_bytes), daemon=True)
    venv = _device_env(
        {**os.environ, "PYTHONPATH": pythonpath, "PYTHONDONTWRITEBYTECODE": "1"}, job["device"]
    )
    with tempfile.TemporaryFile() as verr:
        try:
            verifier = subprocess.Popen(
                [sys.executable, "-m", "discoverygym.sandbox.kernels.verifier", str(vwrite), str(c2j_r), str(j2c_w)],
                cwd=_PACKAGE_PARENT,
                env=venv,
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=verr,
                start_new_session=True,
                pass_fds=(vwrite, c2j_r, j2c_w),
            )
        except BaseException:
            for fd in (vread, c2j_r, c2j_w, j2c_r, j2c_w):
                os.close(fd)
            raise
        finally:
            os.close(vwrite)
        os.close(c2j_r)
        os.close(j2c_w)
        reader.start()
        proc = None
        timed_out = False
        try:
            try:
                request = {"job": job, "out": str(work / "out"), "nonce": nonce, "timeout_s": timeout_s,
                           "parent": os.getpid()}
                verifier.stdin.write(json.dumps(request).encode() + b"\n")
                verifier.stdin.close()
            except OSError:
                pass
            cache = work / "cache"
            env = {
                "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                "HOME": str(cache),
                "USER": "sandbox",
                "LANG": "C.UTF-8",
                "TMPDIR": str(work / "tmp"),
                "XDG_CACHE_HOME": str(cache),
                "TRITON_CACHE_DIR": str(cache / "triton"),
                "TORCHINDUCTOR_CACHE_DIR": str(cache / "inductor"),
                "PYTHONPATH": pythonpath,
                "PYTHONDONTWRITEBYTECODE": "1",
            }
            for name in ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "CUDA_HOME",
                         "ROCM_PATH", "LD_LIBRARY_PATH", "TRITON_INTERPRET", "OMP_NUM_THREADS"):
                if name in os.environ:
                    env[name] = os.environ[name]
            _device_env(env, job["device"])
            argv = [sys.executable, "-m", "discoverygym.sandbox.kernels.candidate", str(work), str(c2j_w)]
            if confined:
                argv = box.command(str(work)) + argv
            with open(work / f"{stage}.out", "wb") as out, open(work / f"{stage}.err", "wb") as err:
                try:
                    proc = subprocess.Popen(
                        argv,
                        cwd=work,
                        env=env,
                        stdout=out,
                        stderr=err,
                        stdin=j2c_r,
                        pass_fds=(c2j_w,),
                        start_new_session=True,
                        **(box.as_sandbox_user() if confined else {}),
                    )
                finally:
                    os.close(c2j_w)
                    os.close(j2c_r)
                try:
                    proc.wait(timeout=max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    timed_out = True
                finally:
                    kill_group(proc)
            # The candidate is gone (its end of the channel closed): let the judge finish.
            try:
                verifier.wait(timeout=0.1 if timed_out else max(30.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        finally:
            kill_group(verifier)  # also on errors and interrupts in the parent
            if proc is None:
                for fd in (c2j_w, j2c_r):
                    try:
                        os.close(fd)
                    except OSError:
                        pass
        reader.join(timeout=5.0)
        verdict = _read_verdict(b"".join(verdict_bytes), nonce)
        verifier_err = _tail(verr)
    stderr_tail = (work / f"{stage}.err").read_bytes()[-2000:].decode("utf-8", "replace")
    try:
        with open(work / "run" / "result.json", "rb") as fh:
            raw = fh.read(1 << 20)
        child = json.loads(raw)
    except (OSError, ValueError):
        child = None
    if not isinstance(child, dict):
        child = None
    merged = _merge(
        job, plan(job), verdict, verifier_err, child, stderr_tail, timed_out, proc.returncode, timeout_s
    )
    merged["sandbox"] = "bwrap" if confined else "unconfined"
    return merged


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
    """Combine the judge's verdict (trusted: it came through the parent's pipe; it carries the
    accepted timings) with the candidate process's record (untrusted: only messages and device
    names are taken from it, every field validated). Only a verdict can produce
    ``harness_error`` / ``backend_unavailable``."""
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
        timings = verdict.get("timings")
        keys = ("mean_us", "std_us", "stderr_us", "n", "judge_us")
        if (
            not isinstance(timings, list)
            or len(timings) != len(calls) // 2
            or not all(isinstance(t, dict) and all(_number(t.get(k)) for k in keys) for t in timings)
        ):
            return fail("the judge's verdict holds malformed timings or the wrong number of cases")
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
