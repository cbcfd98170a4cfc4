"""The candidate process of a kernel stage: runs the candidate, writes its outputs, answers the judge.

Started by :func:`discoverygym.sandbox.kernels.launcher.run_stage` (inside the bubblewrap sandbox
of :mod:`.box`) as ``python -m discoverygym.sandbox.kernels.candidate WORKDIR FD``: stdin carries
the judge's messages, ``FD`` is the pipe to the judge (:class:`~.common.Channel`). It draws the
seeded inputs, compiles the checked bytes of ``WORKDIR/candidate.py`` (UTF-8 only: a PEP 263
coding cookie naming anything else is refused, so what was checked is what runs) under an audit
hook (:func:`_make_candidate_hook`), calls ``custom_kernel`` and writes each output's raw bytes
plus a JSON description into ``WORKDIR/out/`` for the judge (:mod:`.verifier`), one output at a
time. In the timing stage it runs the judge's rounds: draw the inputs of the seed the judge just
sent, time one call, report the time and the output's sketches. It never computes a verdict, and
nothing it reports is trusted. See :mod:`discoverygym.sandbox.kernels`.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
import time
import types
from pathlib import Path
from typing import Any

from discoverygym.sandbox import audit
from discoverygym.sandbox.kernels.box import WRITABLE
from discoverygym.sandbox.kernels.common import (
    PARTS,
    Channel,
    bind_lifetime,
    failure_result,
    plan,
    problem_functions,
    require_device,
    single_cpu_thread,
    sketch,
)

__all__ = ["main"]


class _Fail(Exception):
    """A candidate failure with a message for the agent."""


class _Stopped(Exception):
    """The verifier rejected an output: stop quietly (the verdict carries the message)."""


#: set once the candidate module starts executing: later unexpected errors are the candidate's.
_LOADED = {"value": False}
#: taken at import, before any candidate code exists in this process.
_replace = os.replace
#: PEP 263 coding declaration (first two lines only, as the tokenizer reads it).
_COOKIE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")


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


def _parts(value: Any, problem: str, label: str) -> list:
    """``[(name, tensor), ...]`` of one output (``(output, kv_cache)`` for MLA, one tensor otherwise)."""
    names = PARTS[problem]
    if len(names) > 1:
        if not isinstance(value, (tuple, list)) or len(value) != len(names):
            raise _Fail(
                f"{label}: custom_kernel must return ({', '.join(names)}), got {type(value).__name__}"
                + (f" of length {len(value)}" if isinstance(value, (tuple, list)) else "")
            )
        return list(zip(names, value))
    return [("output", value)]


def _emit(chan: Channel, out_dir: Path, k: int, value: Any, problem: str, label: str) -> None:
    """Write output ``k``'s tensors as raw bytes + a JSON description; wait for the judge's answer."""
    import torch

    meta = []
    for name, t in _parts(value, problem, label):
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
    chan.send({"out": k})
    answer = chan.recv()
    if not answer or answer.get("next") is not True:
        raise _Stopped


#: directories of the candidate's workdir it may write into (its outputs, temporary and cache files).
_WRITABLE = WRITABLE
#: libraries whose own code may start compilers / use ctypes (Triton compiles its launcher with a C
#: compiler and runs ptxas; Inductor runs compile workers), as installed files only.
_TRUSTED_PARTS = ("/site-packages/triton/", "/site-packages/torch/_inductor/",
                  "/dist-packages/triton/", "/dist-packages/torch/_inductor/")


def _stdlib_dirs() -> tuple[str, ...]:
    """Directories of the standard library (frames there neither grant nor refuse trust)."""
    import sysconfig

    paths = {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib")}
    return tuple(os.path.realpath(p) + "/" for p in paths) + tuple(p + "/" for p in paths)


def _load(path: Path) -> types.ModuleType:
    """Compile and run the candidate's checked bytes as UTF-8 (what was checked is what runs).

    Raises:
        _Fail: the file declares an encoding other than UTF-8, or is not valid UTF-8.
    """
    raw = path.read_bytes()
    for line in raw.splitlines()[:2]:
        m = _COOKIE.match(line)
        if m and m.group(1).decode("ascii", "replace").lower().replace("_", "-") not in ("utf-8", "utf8"):
            raise _Fail(f"the program declares the source encoding {m.group(1).decode('ascii', 'replace')!r}; "
                        "only UTF-8 is accepted")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _Fail(f"the program is not valid UTF-8: {exc}") from None
    code = compile(text, str(path), "exec", dont_inherit=True)
    module = types.ModuleType("candidate")
    module.__file__ = str(path)
    sys.modules["candidate"] = module
    exec(code, module.__dict__)  # noqa: S102 - the candidate, inside its sandbox
    return module


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
    stdlib = _stdlib_dirs()
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

    def trusted(_getframe=sys._getframe, _parts=_TRUSTED_PARTS, _stdlib=stdlib, _work=work):
        # The first frame above the event that is not the standard library decides: Triton's or
        # Inductor's own installed code is trusted; anything else (the candidate, code loaded
        # from a cache or work directory, code compiled from a string) is not, even when a
        # trusted library called it.
        f = _getframe(2)
        while f is not None:
            name = f.f_code.co_filename
            if name.startswith((_work, "<")):
                return False
            if any(p in name for p in _parts):
                return True
            if not name.startswith(_stdlib):
                return False
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


def _run(job: dict, work: Path, chan: Channel) -> dict:
    import torch

    from discoverygym.rewards.kernels.timing import L2Flusher, gpu_info, require_gpu, time_call

    device, stage, problem = job["device"], job["stage"], job["problem"]
    require_device(device)
    single_cpu_thread(device)
    generate, _, _ = problem_functions(problem)
    info = gpu_info(device)
    timing = job.get("timing", {})
    clock = timing.get("clock", "cuda")
    if stage == "time" and clock == "cuda":
        require_gpu(device)
    flusher = L2Flusher(device) if stage == "time" and clock == "cuda" and timing.get("flush_l2", True) else None
    torch.manual_seed(int(job.get("seed", 0)))
    calls = plan(job)
    out_dir = work / "out"
    guards = _guarded()
    sys.addaudithook(_make_candidate_hook(str(work), str(work / "candidate.py")))
    _LOADED["value"] = True
    try:
        module = _load(work / "candidate.py")
    except _Fail:
        raise
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
        _emit(chan, out_dir, k, value, problem, label)
        del value
        return data

    if stage == "check":
        for k in range(len(calls)):
            call(k)
        return {"ok": True, "error": None, "device": device, **info}
    for i in range(len(calls) // 2):
        case, _, label = calls[2 * i]
        data = call(2 * i)
        try:
            for _ in range(int(timing.get("warmup", 3))):
                fn(data)
            _sync(device)
        except BaseException as exc:  # noqa: BLE001 - SystemExit included
            raise _Fail(f"{label}: custom_kernel raised during warm-up: {type(exc).__name__}: {str(exc)[:500]}") from None
        del data
        while True:  # the judge's timing rounds: fresh inputs from the seed it sends now
            msg = chan.recv()
            if not msg or msg.get("end") is True:
                break
            if device.startswith("cuda") and torch.cuda.current_stream() != torch.cuda.default_stream():
                raise _Fail(f"{label}: the program changed the current CUDA stream")
            data = generate(case, device, seed=int(msg["seed"]))
            try:
                us, value = time_call(fn, data, device=device, clock=clock, flusher=flusher)
            except BaseException as exc:  # noqa: BLE001 - SystemExit included
                raise _Fail(
                    f"{label}: custom_kernel raised during timing: {type(exc).__name__}: {str(exc)[:500]}"
                ) from None
            _check_guards(guards)
            sketches = []
            for name, t in _parts(value, problem, label):
                if type(t) is not torch.Tensor or not t.is_floating_point():
                    raise _Fail(f"{label}: during timing, {name} is not a floating torch.Tensor")
                sketches.append([x if math.isfinite(x) else None
                                 for x in sketch(t, int(msg["sketch_seed"]))])
            _sync(device)
            chan.send({"done": msg.get("go"), "us": float(us), "sketch": sketches})
            del data, value
        call(2 * i + 1)
        if device.startswith("cuda"):
            torch.cuda.empty_cache()
    return {"ok": True, "error": None, "device": device, **info}


def main(argv: list[str] | None = None) -> int:
    """Entry point: ``python -m discoverygym.sandbox.kernels.candidate WORKDIR FD``.

    Reads ``WORKDIR/job.json`` and ``WORKDIR/candidate.py``, the judge's messages on stdin, writes
    outputs into ``WORKDIR/out/``, messages to the judge on descriptor ``FD`` and its record
    (errors, device; never a verdict or a timing the parent trusts) to ``WORKDIR/run/result.json``.
    Returns the exit status (0 whenever a record was written).
    """
    args = argv if argv is not None else sys.argv[1:]
    work = Path(args[0])
    chan = Channel(sys.stdin.fileno(), int(args[1]) if len(args) > 1 else -1)
    job = json.loads((work / "job.json").read_text())
    bind_lifetime(0, float(job.get("cpu_limit_s", 3600.0)))
    # opened before the audit hook exists: the candidate cannot open it for writing by name
    result_file = open(work / "run" / "result.json", "w")  # noqa: SIM115
    try:
        result = _run(job, work, chan)
    except _Stopped:
        result = {"ok": False, "error": "stopped: the judge rejected an output", "stopped": True}
    except _Fail as exc:
        result = {"ok": False, "error": str(exc)}
    except BaseException as exc:  # noqa: BLE001 - reported verbatim (SystemExit, KeyboardInterrupt too)
        # Before the candidate ran, an exception is the harness's or the backend's (no GPU, out of
        # memory); afterwards the candidate may have broken the process state. The parent trusts
        # neither flag from this process (only the judge's).
        result = failure_result(exc, harness=not _LOADED["value"])
    result_file.write(json.dumps(result, default=float))
    result_file.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
