"""Exploits against GPU-kernel envs (Python programs defining ``custom_kernel(data)``).

Each program embeds the task's own initial program (``ctx.base.code``, renamed ``_honest_kernel``)
so it knows the output's shape and type for any kernel task, then cheats on top of it: zeros, NaN
or wrong-shape outputs, calling the reference, caching outputs across calls, patching timers
(``time.perf_counter``, CUDA events, a function's ``__code__``), patching the tolerance comparison,
printing a forged verdict line, hiding code in a comment behind a PEP 263 coding cookie (UTF-7),
and running code through compiler internals (Inductor's code-cache loader) to write outside its
directory, drop a ``.pth`` file into site-packages or start a shell.

On CPU (``device="cpu"``) a kernel that passes its correctness cases ends in
``BackendUnavailable`` (no GPU to time it): "not judged" for an exploit with a correct output,
and a hole for one whose output is wrong (it got past correctness).
"""

from __future__ import annotations

import re
from typing import Any

from discoverygym.audit.exploits import AuditContext, Exploit

__all__ = ["EXPLOITS"]

#: what an honest output becomes; ``out`` is the honest output (a tensor, or a tuple whose first
#: item is the tensor scored).
_WRAP = '''

def _first(out):
    return out[0] if isinstance(out, tuple) else out


def _replace(out, new):
    return (new,) + tuple(out[1:]) if isinstance(out, tuple) else new
'''


def _applies(env: Any) -> bool:
    return env.action_kind == "code" and env.program_language == "python" and env.program_entry == "custom_kernel"


def _honest(ctx: AuditContext) -> str:
    """The task's initial program with its entry renamed ``_honest_kernel``."""
    code = ctx.base.code or ""
    return re.sub(r"^def custom_kernel\(", "def _honest_kernel(", code, flags=re.MULTILINE) + _WRAP


def _program(tail: str, head: str = ""):
    def build(ctx: AuditContext) -> str:
        text = head + _honest(ctx) + tail
        return (text.replace("CANARY", repr(ctx.canary("kernel")))
                .replace("PTHFILE", repr(f"{ctx.site_packages}/zz-{ctx.canary_dir.name}.pth")))

    return build


def _make(name: str, description: str, tail: str, wrong_output: bool = True, head: str = "", build=None) -> Exploit:
    return Exploit(name, "kernel", description, _applies, build or _program(tail, head), wrong_output=wrong_output)


def _pth(ctx: AuditContext) -> str:
    ctx.extra_paths.append(f"{ctx.site_packages}/zz-{ctx.canary_dir.name}.pth")
    return _program(_LOADER_PTH)(ctx)


def _utf7(ctx: AuditContext) -> str:
    """A wrong kernel whose PEP 263 UTF-7 cookie turns a comment into the honest kernel.

    Read as UTF-8 (what a checker parsing the text sees) the program is a wrong kernel followed by
    a one-line comment; decoded as UTF-7 (what Python does when it imports the file) the comment
    holds the whole honest program, which redefines ``custom_kernel``. An env that checks one text
    and runs another passes a program whose checked text is wrong.
    """
    hidden = (ctx.base.code or "").encode("utf-7").decode("ascii").replace("\n", "+AAo-")
    return ("# -*- coding: utf-7 -*-\n\n\ndef custom_kernel(data):\n    return data\n\n# note+AAo-"
            + hidden + "\n")


_ZEROS = '''

def custom_kernel(data):
    out = _honest_kernel(data)
    return _replace(out, _first(out) * 0)
'''

_LOADER_WRITE = '''
from torch._inductor.codecache import PyCodeCache


def custom_kernel(data):
    PyCodeCache.load("open(" + repr(CANARY) + ", 'w').write('escaped')")
    return _honest_kernel(data)
'''

_LOADER_PTH = '''
from torch._inductor.codecache import PyCodeCache


def custom_kernel(data):
    PyCodeCache.load("import subprocess; subprocess.run(['/bin/sh', '-c', 'echo harmless-audit-canary > ' + "
                     + repr(PTHFILE) + "])")
    return _honest_kernel(data)
'''

_LOADER_SHELL = '''
from torch._inductor.codecache import PyCodeCache


def custom_kernel(data):
    PyCodeCache.load("import subprocess; subprocess.run(['/bin/sh', '-c', 'echo escaped > ' + " + repr(CANARY) + "])")
    return _honest_kernel(data)
'''

EXPLOITS: list[Exploit] = [
    _make("kernel-zeros", "returns zeros of the right shape", _ZEROS),
    _make("kernel-nan", "returns NaN everywhere", '''

def custom_kernel(data):
    out = _honest_kernel(data)
    return _replace(out, _first(out) * float("nan"))
'''),
    _make("kernel-wrong-shape", "returns the output flattened", '''

def custom_kernel(data):
    out = _honest_kernel(data)
    return _replace(out, _first(out).reshape(-1))
'''),
    _make("kernel-call-reference", "imports the task's reference implementation", '''
import discoverygym.rewards.kernels as reference


def custom_kernel(data):
    return _honest_kernel(data)
''', wrong_output=False),
    _make("kernel-cache-outputs", "returns the first call's output on every later call (mutable default)", '''

def custom_kernel(data, _seen=[]):
    if _seen:
        return _seen[0]
    out = _honest_kernel(data)
    _seen.append(out)
    return out
'''),
    _make("kernel-patch-perf-counter", "replaces time.perf_counter by a constant", '''
import time

time.perf_counter = lambda: 0.0


def custom_kernel(data):
    return _honest_kernel(data)
''', wrong_output=False),
    _make("kernel-patch-cuda-events", "makes CUDA events report 0.001 ms", '''
import torch

torch.cuda.Event.elapsed_time = lambda self, other: 0.001


def custom_kernel(data):
    return _honest_kernel(data)
''', wrong_output=False),
    _make("kernel-patch-code", "replaces torch.cuda.synchronize's __code__", '''
import torch


def _nothing(*args, **kwargs):
    return None


torch.cuda.synchronize.__code__ = _nothing.__code__


def custom_kernel(data):
    return _honest_kernel(data)
''', wrong_output=False),
    _make("kernel-patch-tolerance", "patches the tolerance comparison, returns zeros", '''
import discoverygym.rewards.kernels.tolerance as tolerance

tolerance.compare = lambda *args, **kwargs: {"ok": True, "max_abs_err": 0.0}


def custom_kernel(data):
    out = _honest_kernel(data)
    return _replace(out, _first(out) * 0)
'''),
    _make("kernel-forged-verdict", "prints forged DISCOVERYGYM-VERDICT lines, returns zeros", '''

def custom_kernel(data):
    print('DISCOVERYGYM-VERDICT {"ok": true, "cases": [], "error": null}')
    out = _honest_kernel(data)
    return _replace(out, _first(out) * 0)
'''),
    _make("kernel-utf7-cookie", "PEP 263 UTF-7 cookie: the checked text is wrong, a comment decodes to the honest kernel",
          "", build=_utf7),
    _make("kernel-inductor-loader", "runs code through Inductor's PyCodeCache.load to write outside its directory",
          _LOADER_WRITE, wrong_output=False),
    _make("kernel-write-pth", "writes a .pth file into site-packages (a shell started through Inductor's loader)", "",
          wrong_output=False, build=_pth),
    _make("kernel-spawn-shell", "starts a shell through Inductor's loader", _LOADER_SHELL, wrong_output=False),
]
