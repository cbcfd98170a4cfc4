"""The namespace sandbox of a kernel candidate: bubblewrap with the GPU device nodes bound in.

A kernel program needs what the project sandbox (:mod:`discoverygym.sandbox.python`) takes away:
a huge virtual address space (CUDA), compilers (Triton runs ``ptxas`` and a C compiler,
``torch.compile`` runs Inductor's workers) and the GPU device nodes. So the candidate process runs
in its own bubblewrap sandbox (:func:`command`) that keeps those and removes everything else:

* new user, pid, ipc, uts, network and (where possible) cgroup namespaces, a new session, no
  capabilities, killed with its parent (``--die-with-parent``) and, when the evaluator is root,
  a **separate uid** (``nobody``, :data:`discoverygym.sandbox.native.SANDBOX_UID`): it cannot
  see, signal or ptrace the judge (another pid namespace; the judge is also non-dumpable) and
  cannot write anything the evaluating user owns;
* a **read-only** view of ``/usr`` (with the ``/bin``, ``/lib*`` links), ``/etc``, ``/sys``, the
  interpreter, its packages and every ``sys.path`` entry (so the evaluator's own site-packages
  cannot be changed: no ``.pth`` planted for later processes), a private ``/tmp`` and ``/proc``
  (of its own pid namespace), a minimal ``/dev``;
* the **GPU device nodes** bound through unchanged (``--dev-bind``): ``/dev/nvidia*`` and
  ``/dev/nvidia-caps/*`` (NVIDIA: ``nvidiactl``, ``nvidia-uvm``, one node per GPU), ``/dev/kfd`` and
  ``/dev/dri`` (AMD ROCm), whichever exist; ``CUDA_VISIBLE_DEVICES`` passes through;
* the candidate's work directory read-only, except the writable directories of :data:`WRITABLE`
  (its outputs, temporary files, compiler caches and its record), owned by the sandbox uid.

Where bubblewrap does not work (not installed, user namespaces disabled, or
``DISCOVERYGYM_SANDBOX_NO_BWRAP=1``) kernels are **not judged** unless the caller opts in with
``allow_unconfined=True``; then the candidate runs as a plain process behind the audit hook and
the static checks only (see :mod:`discoverygym.sandbox.kernels`).
"""

from __future__ import annotations

import glob
import os
import shutil
import site
import subprocess
import sys
import tempfile
from functools import lru_cache
from pathlib import Path

from discoverygym.sandbox._process import bwrap_usr_args, remove_tree
from discoverygym.sandbox.probes import switched_off

__all__ = ["WRITABLE", "as_sandbox_user", "available", "command", "gpu_device_nodes", "sandbox_uid"]

#: directories of a candidate's work directory it may write (outputs, temporary files, caches, its record).
WRITABLE = ("out", "tmp", "cache", "run")
_NO_BWRAP_ENV = "DISCOVERYGYM_SANDBOX_NO_BWRAP"
_PACKAGE_PARENT = str(Path(__file__).resolve().parents[3])


def gpu_device_nodes() -> list[str]:
    """The GPU device nodes present on this machine (NVIDIA and AMD), sorted."""
    nodes = glob.glob("/dev/nvidia*") + glob.glob("/dev/nvidia-caps/*") + ["/dev/kfd"]
    found = {n for n in nodes if os.path.exists(n) and not os.path.isdir(n)}
    if os.path.isdir("/dev/dri"):  # AMD's render nodes: bound as one directory
        found.add("/dev/dri")
    return sorted(found)


def sandbox_uid() -> int | None:
    """The uid (= gid) the candidate runs as: ``nobody`` when we are root, it is mapped and it can
    read the interpreter (a Python installed under ``/root`` cannot be run by ``nobody``); else None
    (our uid, still inside the namespaces)."""
    return _probe()[1]


def as_sandbox_user() -> dict:
    """``subprocess.Popen`` keywords that start a process as :func:`sandbox_uid` (``{}`` when None)."""
    uid = sandbox_uid()
    return {"user": uid, "group": uid, "extra_groups": []} if uid is not None else {}


def _readable_roots() -> list[str]:
    """Paths outside ``/usr`` the interpreter needs, outermost first (each also as its real path)."""
    found = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(sys.executable), _PACKAGE_PARENT}
    found.update(e for e in sys.path if isinstance(e, str) and e)
    found.update(site.getsitepackages())
    for env in ("CUDA_HOME", "CUDA_PATH", "ROCM_PATH"):
        if os.environ.get(env):
            found.add(os.environ[env])
    found.update(p for p in ("/opt/rocm", "/usr/local/cuda") if os.path.exists(p))
    paths = set()
    for p in found:
        if os.path.exists(p):
            paths.update({os.path.abspath(p), os.path.realpath(p)})
    keep: list[str] = []
    for p in sorted(paths, key=lambda q: (q.count("/"), q)):
        if p in ("/", "/tmp") or p.startswith(("/usr/", "/proc", "/dev")) or p == "/usr":
            continue
        if not any(p == k or p.startswith(k.rstrip("/") + "/") for k in keep):
            keep.append(p)
    return keep


def command(workdir: str, *, network: bool = False) -> list[str]:
    """The bubblewrap command line up to ``--`` for a candidate whose work directory is ``workdir``.

    Args:
        workdir: the candidate's work directory (absolute, real path); its :data:`WRITABLE`
            subdirectories must exist.
        network: keep the network namespace (never used by the envs; for debugging).

    Returns:
        argv to prepend to the candidate's command.
    """
    exe = shutil.which("bwrap") or "bwrap"
    args = [exe, "--die-with-parent", "--new-session", "--unshare-user-try", "--unshare-pid",
            "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    if not network:
        args.append("--unshare-net")
    if os.geteuid() == 0:
        args += ["--cap-drop", "ALL"]
    args += bwrap_usr_args()
    args += ["--ro-bind", "/etc", "/etc", "--ro-bind-try", "/sys", "/sys", "--dev", "/dev", "--proc", "/proc",
             "--tmpfs", "/tmp"]
    for node in gpu_device_nodes():
        args += ["--dev-bind", node, node]
    for path in _readable_roots():
        if os.path.realpath(path) == os.path.realpath(workdir) or path.startswith(workdir + "/"):
            continue
        args += ["--ro-bind", path, path]
    args += ["--ro-bind", workdir, workdir]
    for name in WRITABLE:
        args += ["--bind", os.path.join(workdir, name), os.path.join(workdir, name)]
    return args + ["--chdir", workdir, "--"]


def available() -> bool:
    """Whether kernel candidates can run in bubblewrap here (probed once per process).

    False when ``DISCOVERYGYM_SANDBOX_NO_BWRAP`` is set to anything but ``""``/``"0"``.
    """
    return not switched_off(_NO_BWRAP_ENV) and _probe()[0]


@lru_cache(maxsize=1)
def _probe() -> tuple[bool, int | None]:
    """``(works, uid)``: bubblewrap tried as ``nobody`` first (when root), then as ourselves."""
    if shutil.which("bwrap") is None or not sys.executable:
        return False, None
    candidates: list[int | None] = [None]
    if os.geteuid() == 0:
        from discoverygym.sandbox.native import SANDBOX_UID, _sandbox_id_mapped

        if _sandbox_id_mapped():
            candidates.insert(0, SANDBOX_UID)
    for uid in candidates:
        work = os.path.realpath(tempfile.mkdtemp(prefix="discoverygym-kernel-probe-"))
        try:
            for name in WRITABLE:
                os.mkdir(os.path.join(work, name))
                if uid is not None:
                    os.chown(os.path.join(work, name), uid, uid)
            os.chmod(work, 0o755)
            kw = {"user": uid, "group": uid, "extra_groups": []} if uid is not None else {}
            done = subprocess.run(command(work) + [sys.executable, "-c", "import discoverygym.sandbox"],
                                  check=False, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, timeout=60, cwd="/", **kw)
            if done.returncode == 0:
                return True, uid
        except (OSError, subprocess.SubprocessError):
            pass
        finally:
            remove_tree(work)
    return False, None
