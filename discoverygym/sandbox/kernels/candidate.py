"""The candidate process of a kernel stage: imports the candidate, calls and times it, writes its outputs.

Started by :func:`discoverygym.sandbox.kernels.launcher.run_stage` as
``python -m discoverygym.sandbox.kernels.candidate WORKDIR``. It draws the seeded inputs, imports
``WORKDIR/candidate.py`` under an audit hook (:func:`_make_candidate_hook`), calls ``custom_kernel``
and writes each output's raw bytes plus a JSON description into ``WORKDIR/out/`` for the verifier
(:mod:`.verifier`), one case at a time; it never computes a verdict. Its ``result.json`` (timings,
messages) is untrusted by the parent. See :mod:`discoverygym.sandbox.kernels` for the residual risks.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from discoverygym.sandbox import audit
from discoverygym.sandbox.kernels.common import PARTS, failure_result, plan, problem_functions, require_device

__all__ = ["main"]


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

    names = PARTS[problem]
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
    self_dir = f"/proc/{os.getpid()}"
    allowed = tuple(os.path.join(work, d) for d in _WRITABLE)

    def absolute(path, _getcwd=os.getcwd, _join=os.path.join, _norm=os.path.normpath):
        if isinstance(path, bytes):
            path = path.decode("utf-8", "surrogateescape")
        return _norm(_join(_getcwd(), path)) if isinstance(path, str) else None

    def inside(path, _allowed=allowed, _absolute=absolute):
        full = _absolute(path)
        if full is None:
            return isinstance(path, int)  # an already open descriptor
        return full == "/dev/null" or any(full == a or full.startswith(a + "/") for a in _allowed)

    def proc_ok(path, _self=self_dir, _absolute=absolute, _other=audit.names_other_process):
        full = _absolute(path)
        return full is None or not _other(full, _self)  # self, thread-self, driver, cpuinfo...

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

    def hook(
        event,
        args,
        _processes=audit.PROCESS_EVENTS | {"os.kill"},
        _path_events=audit.PATH_EVENTS,
        _path_event_names=audit.PATH_EVENT_NAMES,
        _inside=inside,
        _proc_ok=proc_ok,
        _trusted=trusted,
        _deny=deny,
        _wf=audit.WRITE_FLAGS,
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
        elif event == "os.rename":
            if not (_inside(args[0]) and _inside(args[1])):
                _deny(f"renaming {args[0]!r} (outside the program's output directories)")
        elif event in _path_event_names:
            for name, paths in _path_events:
                if name != event:
                    continue
                for path_i, fd_i in paths:
                    dir_fd = args[fd_i] if fd_i is not None and fd_i < len(args) else None
                    if isinstance(dir_fd, int) and dir_fd >= 0:
                        _deny(f"{event} relative to a directory descriptor")
                    if path_i < len(args) and not _inside(args[path_i]):
                        _deny(f"{event} on {args[path_i]!r} (outside the program's output directories)")
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
    require_device(device)
    generate, _, _ = problem_functions(problem)
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
    """Entry point of the candidate process: ``python -m discoverygym.sandbox.kernels.candidate WORKDIR``.

    The candidate process reads ``WORKDIR/job.json`` and ``WORKDIR/candidate.py``, writes outputs
    into ``WORKDIR/out/`` and ``WORKDIR/result.json`` (timings, errors; never a verdict).
    Returns the exit status (0 whenever a result was written).
    """
    args = argv if argv is not None else sys.argv[1:]
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
        result = failure_result(exc, harness=not _LOADED["value"])
    result_file.write(json.dumps(result, default=float))
    result_file.close()
    return 0




if __name__ == "__main__":
    sys.exit(main())
