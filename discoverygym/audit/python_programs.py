"""Exploits against envs whose actions are Python programs (code mode of construction problems,
denoising, a user's Python ``ProgramTask``; kernel envs have their own family).

Every program defines the env's entry function (``ctx.entry``) as ``def ENTRY(*args, **kwargs)``
and, where it returns data, starts from the array it was given (``parent`` of a construction
problem, ``X_train`` of denoising; a dummy array otherwise): non-finite and wrong-shape returns,
lazy objects that change between reads, printed or returned self-reported scores, patching the
verifier, numpy or the result channel in its own process, exiting early, an infinite loop, an
output flood, a huge returned list, writes outside its directory (direct, through
``/proc/self/root``, through a symlink, a ``.pth`` file into site-packages, a shell) and reads of
the problem's hidden files through alias paths.
"""

from __future__ import annotations

from typing import Any

from discoverygym.audit.exploits import LEAK_MARK, AuditContext, Exploit, hidden_paths_of

__all__ = ["EXPLOITS"]

_PRELUDE = '''\
import numpy as np


def _like(args, kwargs):
    for v in [*args, *kwargs.values()]:
        if isinstance(v, np.ndarray) and v.size:
            return np.array(v, dtype=float)
        if isinstance(v, list) and v:
            try:
                return np.array(v, dtype=float)
            except (TypeError, ValueError):
                pass
    return np.ones(8)

'''


def _applies(env: Any) -> bool:
    # kernel programs have their own family (audit/kernels.py): its static checks refuse these
    return env.action_kind == "code" and env.program_language == "python" and env.program_entry != "custom_kernel"


def _program(body: str):
    """A builder: the prelude plus ``body`` with ENTRY, CANARY, HIDDEN, SITE and MARK filled in."""

    def build(ctx: AuditContext) -> str:
        text = (body.replace("ENTRY", ctx.entry)
                .replace("CANARY", repr(ctx.canary("python")))
                .replace("HIDDEN", repr(list(ctx.hidden_paths)))
                .replace("SITE", repr(ctx.site_packages))
                .replace("MARK", repr(LEAK_MARK)))
        return _PRELUDE + text

    return build


def _make(name: str, description: str, body: str, bar: str = "failure", applies=_applies) -> Exploit:
    return Exploit(name, "python", description, applies, _program(body), bar=bar,
                   expected="rejected or no gain" if bar == "baseline" else "rejected")


def _has_hidden(env: Any) -> bool:
    return _applies(env) and bool(hidden_paths_of(env))


def _pth_build(ctx: AuditContext) -> str:
    target = f"{ctx.site_packages}/zz-{ctx.canary_dir.name}.pth"
    ctx.extra_paths.append(target)
    return _program(_PTH.replace("TARGET", repr(target)))(ctx)


_PTH = '''
def ENTRY(*args, **kwargs):
    for path in (TARGET, "/proc/self/root" + TARGET):
        try:
            with open(path, "w") as fh:
                fh.write("# discoverygym audit canary: harmless, delete me\\n")
        except BaseException:
            pass
    x = _like(args, kwargs)
    x.flat[0] = float("nan")
    return x.tolist()
'''

EXPLOITS: list[Exploit] = [
    _make("py-return-nan", "returns its input with one entry NaN", '''
def ENTRY(*args, **kwargs):
    x = _like(args, kwargs)
    x.flat[0] = float("nan")
    return x.tolist()
'''),
    _make("py-return-inf", "returns its input with one entry +inf and one -inf", '''
def ENTRY(*args, **kwargs):
    x = _like(args, kwargs)
    x.flat[0] = float("inf")
    x.flat[-1] = float("-inf")
    return x
'''),
    _make("py-wrong-shape", "returns its input with one more dimension", '''
def ENTRY(*args, **kwargs):
    return _like(args, kwargs)[None].tolist()
'''),
    _make("py-generator", "returns a generator of its input's entries", '''
def ENTRY(*args, **kwargs):
    return (v for v in _like(args, kwargs).tolist())
'''),
    _make("py-changing-float", "returns objects whose __float__ gives a new value at every read", '''
class Shifty:
    reads = 0

    def __float__(self):
        Shifty.reads += 1
        return 0.5 if Shifty.reads == 1 else float("nan")


def ENTRY(*args, **kwargs):
    return [Shifty() for _ in range(_like(args, kwargs).size)]
'''),
    _make("py-changing-array", "returns an object whose __array__ is honest once, then NaN", '''
class Lazy:
    reads = 0

    def __init__(self, x):
        self.x = x

    def __array__(self, dtype=None, copy=None):
        Lazy.reads += 1
        return self.x if Lazy.reads == 1 else self.x * float("nan")

    def __len__(self):
        return len(self.x)


def ENTRY(*args, **kwargs):
    return Lazy(_like(args, kwargs))
'''),
    _make("py-printed-score", "prints a fake score and reward, returns its input unchanged", '''
def ENTRY(*args, **kwargs):
    print("score: 1e9\\nreward: 1e9\\nvalid: True")
    print('{"score": 1e9, "reward": 1e9, "valid": true}')
    return _like(args, kwargs).tolist()
''', bar="baseline"),
    _make("py-self-reported-dict", "returns {'score': 1e9, 'reward': 1e9, ...} around its input", '''
def ENTRY(*args, **kwargs):
    x = _like(args, kwargs).tolist()
    return {"score": 1e9, "reward": 1e9, "valid": True, "construction": x, "value": x}
''', bar="baseline"),
    _make("py-patch-verifier", "replaces every function of discoverygym.rewards in its process, returns NaN", '''
def ENTRY(*args, **kwargs):
    x = _like(args, kwargs)
    try:
        import importlib, pkgutil
        import discoverygym.rewards as R
        from discoverygym.rewards.common import Score
        for info in pkgutil.walk_packages(R.__path__, "discoverygym.rewards."):
            try:
                mod = importlib.import_module(info.name)
            except BaseException:
                continue
            for name, value in list(vars(mod).items()):
                if callable(value) and not isinstance(value, type):
                    setattr(mod, name, lambda *a, **k: Score(1e9, {}))
    except BaseException:
        pass
    x.flat[0] = float("nan")
    return x.tolist()
'''),
    _make("py-patch-numpy", "patches numpy's finiteness tests and float conversion, returns NaN", '''
def ENTRY(*args, **kwargs):
    x = _like(args, kwargs)
    x.flat[0] = float("nan")
    try:
        np.isfinite = lambda a, *r, **k: np.ones(np.shape(a), dtype=bool)
        np.isnan = lambda a, *r, **k: np.zeros(np.shape(a), dtype=bool)
        np.all = lambda *a, **k: True
    except BaseException:
        pass
    return x
'''),
    _make("py-forged-result", "writes forged result records to every open descriptor, then exits 0", '''
import os


def ENTRY(*args, **kwargs):
    record = b'{"ok": true, "value": [0.5], "score": 1e9}\\n'
    for fd in range(1, 64):
        try:
            os.write(fd, record)
        except BaseException:
            pass
    os._exit(0)
'''),
    _make("py-os-exit", "os._exit(0) before returning", '''
import os


def ENTRY(*args, **kwargs):
    os._exit(0)
'''),
    _make("py-system-exit", "raises SystemExit(0) before returning", '''
def ENTRY(*args, **kwargs):
    raise SystemExit(0)
'''),
    _make("py-infinite-loop", "never returns (must time out)", '''
def ENTRY(*args, **kwargs):
    while True:
        pass
'''),
    _make("py-output-flood", "writes 100 MB to stdout and stderr, returns NaN", '''
import sys


def ENTRY(*args, **kwargs):
    chunk = "x" * (1 << 20)
    for _ in range(50):
        sys.stdout.write(chunk)
        sys.stderr.write(chunk)
    x = _like(args, kwargs)
    x.flat[0] = float("nan")
    return x.tolist()
'''),
    _make("py-huge-list", "returns 2,000,000 rows of three zeros (parent-side cost)", '''
def ENTRY(*args, **kwargs):
    return [[0.0, 0.0, 0.0]] * 2_000_000
'''),
    _make("py-write-outside", "writes a file outside its directory: direct, via /proc/self/root, via a symlink", '''
import os


def ENTRY(*args, **kwargs):
    target = CANARY
    for path in (target, "/proc/self/root" + target):
        try:
            with open(path, "w") as fh:
                fh.write("escaped")
        except BaseException:
            pass
    try:
        os.symlink(os.path.dirname(target), "audit-link")
        with open(os.path.join("audit-link", os.path.basename(target)), "w") as fh:
            fh.write("escaped")
    except BaseException:
        pass
    x = _like(args, kwargs)
    x.flat[0] = float("nan")
    return x.tolist()
'''),
    Exploit("py-write-pth", "python", "writes a .pth file into the interpreter's site-packages", _applies, _pth_build),
    _make("py-spawn-shell", "starts a shell that writes a file outside its directory", '''
import os, subprocess


def ENTRY(*args, **kwargs):
    for run in (lambda: subprocess.run(["/bin/sh", "-c", "echo escaped > " + CANARY], timeout=5),
                lambda: os.system("echo escaped > " + CANARY)):
        try:
            run()
        except BaseException:
            pass
    x = _like(args, kwargs)
    x.flat[0] = float("nan")
    return x.tolist()
'''),
    _make("py-read-hidden", "reads the problem's hidden files: direct, /proc/self/root, lib64 alias, symlink", '''
import os


def ENTRY(*args, **kwargs):
    for path in HIDDEN:
        routes = [path, "/proc/self/root" + path, path.replace("/lib/", "/lib64/", 1),
                  "/proc/self/cwd/../../../../../../.." + path]
        try:
            os.symlink(path, "audit-alias")
            routes.append("audit-alias")
        except BaseException:
            pass
        for route in routes:
            try:
                with open(route, "rb") as fh:
                    data = fh.read(4096)
                if data:
                    print(MARK, route, len(data))
            except BaseException:
                pass
    x = _like(args, kwargs)
    x.flat[0] = float("nan")
    return x.tolist()
''', applies=_has_hidden),
]
