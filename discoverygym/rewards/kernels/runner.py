"""Per-candidate kernel processes: the candidate's process, the verifier process, the parent's launcher.

**Where the verdict is computed.** Correctness is *never* judged inside the process that runs the
candidate: a program can patch anything in its own interpreter (``torch.Tensor.__le__``, the
tolerance function, the harness's own comparison), so a verdict computed there proves nothing.
Each stage therefore runs two processes side by side:

* the **candidate process** (``python -m discoverygym.rewards.kernels.runner WORKDIR``) draws the
  seeded inputs, imports the candidate, calls ``custom_kernel`` and writes each output tensor's raw
  bytes plus a small JSON description (shape, dtype, device, whether it is a plain tensor) into
  ``WORKDIR/out/``; then it waits until the verifier has consumed them (one case at a time, so the
  disk holds one case's outputs and the verifier is idle while the candidate is being timed);
* the **verifier process** (``python -m discoverygym.rewards.kernels.runner --verify``), started by
  the parent before the candidate process and never importing the candidate, receives the job from
  the parent on stdin (not from the candidate's directory), waits for each output, then draws the
  same inputs, computes the reference, reads the bytes back and applies
  :func:`.tolerance.compare` (elementwise tolerance, NaN/inf positions). It first makes itself
  non-dumpable (``prctl(PR_SET_DUMPABLE, 0)``: processes of the same user cannot open its
  ``/proc/<pid>/fd/*`` or ``mem``) and sends its verdict as exactly one line, carrying a random
  nonce the parent gave it on stdin, through a pipe whose write end only it inherited
  (``pass_fds``); a channel holding anything else (two messages, stray bytes, a wrong nonce) counts
  as no verdict. When it rejects an output it tells the candidate process to stop (``out/stop``).

The parent requires one valid verdict covering every checked call; the candidate process's
``result.json`` is untrusted: it only contributes validated timings and messages, and its
``harness_error`` / ``backend_unavailable`` flags become an ordinary failure of the candidate
("the candidate's process reported an internal error"). Only the verifier can report a harness
error or a missing backend.

**The candidate process's audit hook** (``sys.addaudithook``, installed after torch and the
harness are imported and before the candidate is): it refuses opening other processes' ``/proc``
entries, writing or changing files outside the workdir's ``out``, ``tmp``, ``triton_cache``,
``.triton`` and ``.cache`` directories (so ``result.json``, which the harness opened before the
hook, ``job.json`` and ``candidate.py`` cannot be rewritten), links, sockets, and ctypes / process
creation / signals unless called from Triton's or Inductor's own code (their compilers). Its main
function catches ``BaseException`` (``SystemExit`` from the candidate is a failure record).

A wrong output can thus only pass if the *bytes* the candidate writes are the right answer. The
post-timing re-check on fresh inputs (drawn with a new seed, so a kernel that caches outputs
across calls fails) goes through the verifier the same way.

**Isolation.** Each process runs in a new session with a wall-clock limit after which its whole
process group is killed; GPU memory is released when it exits. The candidate's working directory,
``HOME``, ``TMPDIR`` and ``TRITON_CACHE_DIR`` point into a private temporary directory shared by
the two stages of one candidate (kernels compiled in the correctness stage are cached for the
timing stage) and removed afterwards. This is *not* the project sandbox
(:func:`discoverygym.rewards.sandbox.run_program`): CUDA needs a huge virtual address space
(``RLIMIT_AS`` makes ``cuInit`` fail), Triton and ``torch.utils.cpp_extension`` execute compilers
(``ptxas``, ``nvcc``, ``hipcc``) which the sandbox's seccomp filter and audit hook refuse, and the
GPU device nodes must stay reachable.

**Timing** has to happen in the candidate's process (CUDA events around the call). There the
runner compares key torch and timer functions by identity before and after the candidate runs,
requires the default stream to be current, and :mod:`.timing` calls the CUDA event methods
through references taken when it was imported, before the candidate existed.

**Residual risks** (documented, not closed): the candidate process runs with the evaluator's user
id and no kernel sandbox. An audit hook is not a security boundary: a program that gets past
:mod:`.static_checks` *and* reaches native code (a C compiler through Triton's build helpers, a
Triton/CUDA kernel writing host memory, ctypes reached from a trusted library frame) can do
anything that user can: rewrite the package files the verifier imports later, signal or (as root,
which ``PR_SET_DUMPABLE`` does not stop) ptrace the verifier, leave a daemon behind outside its
process group. Correctness forgeries through the verdict pipe are detected (one message, nonce)
unless the program also reads the verifier's memory. **Timing numbers necessarily come from the
candidate's process** (the kernel is timed there), exactly as in the GPU MODE harness: a program
that gets past the static checks and the audit hook and patches the timing code or the record the
harness writes (or the CUDA driver) can report any runtime. Outputs of the timed
calls themselves are not checked, only the calls before and after timing; a kernel that recognises
the very same input object and returns a stored result during timing is not caught. Do not run
hostile programs on a machine holding secrets.

**Stages.** ``check``: every correctness case once (this is where Triton compiles), then one case
again on fresh inputs. ``time``: every timed case is checked once, timed with
:func:`.timing.time_kernel`, then re-checked on fresh inputs. Keeping the stages in separate
processes follows SimpleTES (first-call compilation never lands in a timing process).

:func:`run_stage` returns ``{"ok": bool, "error": str | None, "cases": [...], "gpu_name",
"platform", "torch", "device"}`` (plus ``harness_error`` / ``backend_unavailable`` /
``timed_out`` when relevant).
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import secrets
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path
from typing import Any

__all__ = ["fresh_seed", "main", "new_workdir", "plan", "remove_workdir", "run_stage", "verify_main"]

_PACKAGE_PARENT = str(Path(__file__).resolve().parents[3])
_VERDICT_PREFIX = "DISCOVERYGYM-VERDICT "
#: JSON descriptions written by the candidate process are small; anything larger is refused.
_MAX_META_BYTES = 1 << 16
_FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")
_OTHER_DTYPES = ("int8", "uint8", "int16", "int32", "int64", "bool", "complex64", "complex128")
_PARTS = {"trimul": ("output",), "mla": ("output", "kv_cache")}


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


# ----------------------------------------------------------------------------- parent side
def new_workdir() -> str:
    """A private temporary directory for one candidate (both stages)."""
    return os.path.realpath(tempfile.mkdtemp(prefix="discoverygym-kernel-"))


def remove_workdir(workdir: str) -> None:
    """Remove a candidate's directory (ignoring errors)."""
    shutil.rmtree(workdir, ignore_errors=True)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the group: compiler children, stray threads
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


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
    if not text.startswith(_VERDICT_PREFIX) or text.count("\n") != 1 or not text.endswith("\n"):
        return None
    try:
        verdict = json.loads(text[len(_VERDICT_PREFIX) :])
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
                [sys.executable, "-m", "discoverygym.rewards.kernels.runner", "--verify", str(vwrite)],
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
                    _kill_group(proc)
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
            _kill_group(verifier)  # also on errors and interrupts in the parent
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


# ----------------------------------------------------------------------------- shared by children
def _problem(name: str) -> tuple[Any, Any, tuple[float, float]]:
    from discoverygym.rewards.kernels import mla, specs, trimul

    if name == "trimul":
        return trimul.generate_input, trimul.reference, specs.TRIMUL_TOLERANCE
    return mla.generate_input, mla.reference, specs.MLA_TOLERANCE


def _require_device(device: str) -> None:
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


def _failure_result(exc: BaseException, harness: bool) -> dict:
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


# ----------------------------------------------------------------------------- candidate process
class _Fail(Exception):
    """A candidate failure with a message for the agent."""


class _Stopped(Exception):
    """The verifier rejected an output: stop quietly (the verdict carries the message)."""


#: set once the candidate module starts executing: later unexpected errors are the candidate's.
_LOADED = {"value": False}
#: taken at import, before any candidate code exists in this process.
_sleep, _exists, _replace = time.sleep, os.path.exists, os.replace


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
        "torch.Tensor.contiguous": torch.Tensor.contiguous,
        "torch.Tensor.cpu": torch.Tensor.cpu,
        "F.layer_norm": F.layer_norm,
        "torch.Tensor.abs": torch.Tensor.abs,
        "torch.cuda.synchronize": torch.cuda.synchronize,
        "torch.cuda.current_stream": torch.cuda.current_stream,
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


def _emit(out_dir: Path, k: int, value: Any, problem: str, label: str) -> None:
    """Write output ``k``'s tensors as raw bytes + a JSON description; wait for the verifier."""
    import torch

    names = _PARTS[problem]
    if problem == "mla":
        if not isinstance(value, (tuple, list)) or len(value) != 2:
            raise _Fail(
                f"{label}: custom_kernel must return (output, kv_cache), got {type(value).__name__}"
                + (f" of length {len(value)}" if isinstance(value, (tuple, list)) else "")
            )
        parts = list(zip(names, value))
    else:
        parts = [("output", value)]
    meta = []
    for name, t in parts:
        entry: dict[str, Any] = {"name": name, "plain": type(t) is torch.Tensor}
        entry["kind"] = (
            "a torch.Tensor subclass"
            if isinstance(t, torch.Tensor) and not entry["plain"]
            else type(t).__name__
        )
        if entry["plain"]:
            t = t.detach()
            entry.update(shape=list(t.shape), dtype=str(t.dtype).removeprefix("torch."), device=str(t.device))
            flat = t.contiguous().cpu().reshape(-1)
            flat.view(torch.uint8).numpy().tofile(out_dir / f"{k}.{name}.bin")
        meta.append(entry)
    tmp = out_dir / f"{k}.json.tmp"
    tmp.write_text(json.dumps(meta))
    _replace(tmp, out_dir / f"{k}.json")
    while _exists(out_dir / f"{k}.json"):  # the verifier removes it once checked
        if _exists(out_dir / "stop"):
            raise _Stopped
        _sleep(0.005)
    if _exists(out_dir / "stop"):
        raise _Stopped


#: directories of the candidate's workdir it may write into (its outputs, temporary and cache files).
_WRITABLE = ("out", "tmp", "triton_cache", ".triton", ".cache")
#: libraries whose own code may start compilers / use ctypes (Triton compiles its launcher with a C
#: compiler and runs ptxas; Inductor runs compile workers).
_TRUSTED_PARTS = ("/triton/", "/torch/_inductor/")


def _make_candidate_hook(work: str, candidate: str):
    """The audit hook of the candidate process (installed before the candidate is imported).

    Refuses: ``open`` of ``/proc`` entries other than the process's own; opening for writing and
    file-system changes (remove, rename, mkdir, chmod, links...) outside the workdir's
    :data:`_WRITABLE` directories (``/dev/null`` excepted); ctypes, process creation (subprocess,
    ``os.system``, exec, fork, spawn), signals to other processes and sockets, except when called
    from Triton's or Inductor's own code (compilers) rather than directly from the candidate.
    Everything it uses is bound through default arguments (no globals).
    """
    pid = str(os.getpid())
    allowed = tuple(os.path.join(work, d) for d in _WRITABLE)
    write_flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND

    def inside(path, _allowed=allowed, _getcwd=os.getcwd, _join=os.path.join, _norm=os.path.normpath):
        if isinstance(path, bytes):
            path = path.decode("utf-8", "surrogateescape")
        if not isinstance(path, str):
            return isinstance(path, int)  # an already open descriptor
        path = _norm(_join(_getcwd(), path))
        return path == "/dev/null" or any(path == a or path.startswith(a + "/") for a in _allowed)

    def proc_ok(path, _pid=pid, _norm=os.path.normpath, _getcwd=os.getcwd, _join=os.path.join):
        if isinstance(path, bytes):
            path = path.decode("utf-8", "surrogateescape")
        if not isinstance(path, str):
            return True
        path = _norm(_join(_getcwd(), path))
        if not path.startswith("/proc/"):
            return True
        head = path.split("/")[2]
        return head == _pid or not head.isdigit()  # self, thread-self, driver, cpuinfo...

    def trusted(_getframe=sys._getframe, _parts=_TRUSTED_PARTS, _cand=candidate):
        f = _getframe(2)
        while f is not None:
            name = f.f_code.co_filename
            if name == _cand:
                return False
            if any(p in name for p in _parts):
                return True
            f = f.f_back
        return False

    def deny(what):
        raise PermissionError(f"kernel runner: {what} is not allowed in the candidate's process")

    processes = frozenset(
        ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty")
        + ("pty.spawn", "os.kill", "os.killpg", "os.startfile", "sys.remote_exec")
    )

    def hook(
        event,
        args,
        _processes=processes,
        _inside=inside,
        _proc_ok=proc_ok,
        _trusted=trusted,
        _deny=deny,
        _wf=write_flags,
    ):
        if event == "open":
            path, mode, flags = (tuple(args) + (None, None, None))[:3]
            if not _proc_ok(path):
                _deny(f"opening {path!r} (another process's /proc entry)")
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and flags & _wf
            )
            if writing and mode is None and isinstance(path, (str, bytes)) and path[:1] not in ("/", b"/"):
                _deny(f"os.open of the relative path {path!r} for writing (it may be relative to dir_fd)")
            if writing and not _inside(path):
                _deny(f"writing {path!r} (outside the program's output directories)")
        elif event in (
            "os.remove",
            "os.rmdir",
            "os.mkdir",
            "os.chmod",
            "os.chown",
            "os.truncate",
            "os.utime",
            "os.chflags",
            "os.setxattr",
            "os.removexattr",
            "shutil.rmtree",
            "shutil.copyfile",
            "shutil.copymode",
            "shutil.copystat",
            "shutil.move",
        ):
            copy = event in ("shutil.copyfile", "shutil.copymode", "shutil.copystat")
            targets = args[1:2] if copy else args[:2] if event == "shutil.move" else args[:1]
            with_dir_fd = ("os.remove", "os.rmdir", "os.mkdir", "os.chmod", "os.chown", "os.utime")
            dir_fd = args[-1] if event in with_dir_fd and len(args) > 1 else None
            if isinstance(dir_fd, int) and dir_fd >= 0:
                _deny(f"{event} relative to a directory descriptor")
            if not all(_inside(t) for t in targets):
                _deny(f"{event} on {targets[0]!r} (outside the program's output directories)")
        elif event == "os.rename":
            if not (_inside(args[0]) and _inside(args[1])):
                _deny(f"renaming {args[0]!r} (outside the program's output directories)")
        elif event in ("os.symlink", "os.link", "os.mkfifo", "os.mknod"):
            _deny(event)
        elif event.startswith("socket."):
            _deny("network access")
        elif (event.startswith("ctypes.") or event in _processes) and not _trusted():
            _deny(event)

    return hook


def _run(job: dict, work: Path) -> dict:
    import torch

    from discoverygym.rewards.kernels.timing import gpu_info, require_gpu, time_kernel

    device, stage, problem = job["device"], job["stage"], job["problem"]
    _require_device(device)
    generate, _, _ = _problem(problem)
    info = gpu_info(device)
    if stage == "time" and job.get("timing", {}).get("clock", "cuda") == "cuda":
        require_gpu(device)
    torch.manual_seed(int(job.get("seed", 0)))
    calls = plan(job)
    out_dir = work / "out"
    guards = _guarded()
    spec = importlib.util.spec_from_file_location("candidate", work / "candidate.py")
    module = importlib.util.module_from_spec(spec)
    for d in _WRITABLE:
        (work / d).mkdir(exist_ok=True)
    sys.addaudithook(_make_candidate_hook(str(work), str(work / "candidate.py")))
    _LOADED["value"] = True
    try:
        spec.loader.exec_module(module)
    except BaseException as exc:  # noqa: BLE001 - reported to the agent (SystemExit included)
        raise _Fail(f"the program failed to import: {type(exc).__name__}: {str(exc)[:500]}") from None
    _check_guards(guards)
    fn = getattr(module, "custom_kernel", None)
    if not callable(fn):
        raise _Fail("the program does not define a callable `custom_kernel(data)`")

    def call(k: int) -> Any:
        case, s, label = calls[k]
        data = generate(case, device, seed=s)
        try:
            value = fn(data)
            _sync(device)
        except BaseException as exc:  # noqa: BLE001 - reported to the agent (SystemExit included)
            raise _Fail(f"{label}: custom_kernel raised {type(exc).__name__}: {str(exc)[:500]}") from None
        _check_guards(guards)
        _emit(out_dir, k, value, problem, label)
        del value
        return data

    timings = []
    if stage == "check":
        for k in range(len(calls)):
            call(k)
    else:
        timing = job.get("timing", {})
        for i in range(len(calls) // 2):
            data = call(2 * i)
            label = calls[2 * i][2]
            if device.startswith("cuda") and torch.cuda.current_stream() != torch.cuda.default_stream():
                raise _Fail(f"{label}: the program changed the current CUDA stream")
            try:
                t = time_kernel(fn, data, device=device, **timing)
            except BaseException as exc:  # noqa: BLE001 - SystemExit included
                raise _Fail(
                    f"{label}: custom_kernel raised during timing: {type(exc).__name__}: {str(exc)[:500]}"
                ) from None
            del data
            _check_guards(guards)
            call(2 * i + 1)
            timings.append({k: t[k] for k in ("mean_us", "std_us", "stderr_us", "n")})
            if device.startswith("cuda"):
                torch.cuda.empty_cache()
    return {"ok": True, "error": None, "timings": timings, "device": device, **info}


def main(argv: list[str] | None = None) -> int:
    """Entry point: ``python -m discoverygym.rewards.kernels.runner WORKDIR`` (candidate process)
    or ``... --verify`` (verifier process, job on stdin; see :func:`verify_main`).

    The candidate process reads ``WORKDIR/job.json`` and ``WORKDIR/candidate.py``, writes outputs
    into ``WORKDIR/out/`` and ``WORKDIR/result.json`` (timings, errors; never a verdict).
    Returns the exit status (0 whenever a result was written).
    """
    args = argv if argv is not None else sys.argv[1:]
    if args and args[0] == "--verify":
        return verify_main(int(args[1]) if len(args) > 1 else 1)
    work = Path(args[0])
    job = json.loads((work / "job.json").read_text())
    # opened before the audit hook exists: the candidate cannot open it for writing by name
    result_file = open(work / "result.json", "w")  # noqa: SIM115
    try:
        result = _run(job, work)
    except _Stopped:
        result = {"ok": False, "error": "stopped: the verifier rejected an output", "stopped": True}
    except _Fail as exc:
        result = {"ok": False, "error": str(exc)}
    except BaseException as exc:  # noqa: BLE001 - reported verbatim (SystemExit, KeyboardInterrupt too)
        # Before the candidate ran, an exception is the harness's or the backend's (no GPU, out of
        # memory); afterwards the candidate may have broken the process state. The parent trusts
        # neither flag from this process (only the verifier's).
        result = _failure_result(exc, harness=not _LOADED["value"])
    result_file.write(json.dumps(result, default=float))
    result_file.close()
    return 0


# ----------------------------------------------------------------------------- verifier process
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
    _require_device(device)
    generate, reference, tol = _problem(problem)
    names = _PARTS[problem]
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


def _undumpable() -> None:
    """``prctl(PR_SET_DUMPABLE, 0)``: processes of the same user (the candidate) can no longer open
    this process's ``/proc/<pid>/fd/*``, ``mem``, ``environ`` or ptrace it (Linux; else a no-op)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
    except (OSError, AttributeError):
        pass


def verify_main(verdict_fd: int = 1) -> int:
    """Verifier entry point: one JSON line ``{"job": ..., "out": OUT_DIR, "nonce": ...}`` on stdin;
    stdin's EOF means the candidate process is gone. Writes one line ``DISCOVERYGYM-VERDICT {json}``
    (carrying the nonce) to ``verdict_fd``, a pipe created by the parent.

    Never imports the candidate; draws the inputs and computes the references itself.
    """
    _undumpable()
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
        result = _failure_result(exc, harness=not _SEEN["value"])
        if _SEEN["value"]:
            result["error"] = f"the verifier failed: {type(exc).__name__}: {str(exc)[:500]}"
            result["rejected"] = True
    if out_dir is not None and not result.get("ok"):
        try:
            (out_dir / "stop").touch()
        except OSError:
            pass
    result["nonce"] = nonce
    data = (_VERDICT_PREFIX + json.dumps(result, default=float) + "\n").encode()
    while data:
        data = data[os.write(verdict_fd, data) :]
    os.close(verdict_fd)
    return 0


if __name__ == "__main__":
    sys.exit(main())
