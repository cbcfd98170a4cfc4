"""Building blocks of the sandboxes' audit hooks (``sys.addaudithook``), shared by both of them.

The Python sandbox's worker (:func:`discoverygym.sandbox._runner._make_audit_hook`) and the kernel
candidate process (:func:`discoverygym.sandbox.kernels.candidate.make_candidate_hook`) each build
their own hook with their own policy; what they share is here: the open flags that mean writing,
the audit events that change the file system (with where their path and ``dir_fd`` arguments
are), the events that create processes, and the test for another process's ``/proc`` entry.

Everything is immutable (tuples, frozensets, ints) and the one function takes what it uses as
default arguments: hooks bind these objects as their own defaults when they are built, so a
program that later patches this module changes nothing they check. Standard library only and no
discoverygym import: the Python sandbox's child process loads this file from its own directory.
"""

from __future__ import annotations

import os

__all__ = ["PATH_EVENTS", "PATH_EVENT_NAMES", "PROCESS_EVENTS", "WRITE_FLAGS", "names_other_process"]

#: ``open`` flags that make an open a write.
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND

#: ``(event, ((index of a path argument, index of its dir_fd argument or None), ...)), ...``: the
#: audit events that create, change or delete files. Tuples, not a dict: a hook's defaults are
#: reachable through traceback frames, so each must be immutable (a dict could be emptied).
PATH_EVENTS = (
    ("os.remove", ((0, 1),)), ("os.rmdir", ((0, 1),)), ("os.mkdir", ((0, 2),)),
    ("os.rename", ((0, 2), (1, 3))), ("os.chmod", ((0, 2),)), ("os.chown", ((0, 3),)),
    ("os.utime", ((0, 3),)), ("os.truncate", ((0, None),)), ("os.chflags", ((0, None),)),
    ("os.setxattr", ((0, None),)), ("os.removexattr", ((0, None),)),
    ("shutil.copyfile", ((1, None),)), ("shutil.copymode", ((1, None),)),
    ("shutil.copystat", ((1, None),)), ("shutil.copytree", ((1, None),)),
    ("shutil.move", ((0, None), (1, None))), ("shutil.rmtree", ((0, 1),)),
    ("shutil.chown", ((0, None),)), ("shutil.make_archive", ((0, None),)),
    ("shutil.unpack_archive", ((1, None),)), ("tempfile.mkstemp", ((0, None),)),
    ("tempfile.mkdtemp", ((0, None),)),
)
#: The event names of :data:`PATH_EVENTS`.
PATH_EVENT_NAMES = frozenset(name for name, _ in PATH_EVENTS)

#: Audit events that create processes, exec, or signal process groups.
PROCESS_EVENTS = frozenset({
    "os.fork", "os.forkpty", "os.system", "os.exec", "os.posix_spawn", "os.spawn",
    "subprocess.Popen", "os.killpg", "pty.spawn", "os.startfile", "sys.remote_exec",
})


def names_other_process(path, self_dir, _startswith=str.startswith, _isdigit=str.isdigit) -> bool:
    """Whether ``path`` lies in another process's ``/proc/<pid>`` directory.

    Args:
        path: an absolute, normalised path (str).
        self_dir: ``"/proc/<our pid>"``; it and what lies below it are not another process's.

    Returns:
        True for ``/proc/<digits...>`` other than ``self_dir``; False for everything else
        (``/proc/self``, ``/proc/cpuinfo``, paths outside ``/proc``).
    """
    return (_startswith(path, "/proc/") and _isdigit(path[6:7])
            and not (path == self_dir or _startswith(path, self_dir + "/")))
