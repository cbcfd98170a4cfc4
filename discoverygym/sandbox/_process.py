"""Parent-side process and file helpers shared by every sandbox in this package.

* :func:`kill_group`: SIGKILL a child's whole process group, then reap the child;
* :func:`read_available`: what a pipe holds now, without blocking;
* :func:`remove_tree`: remove a work directory whatever a program left in it (never recurses,
  never raises);
* :func:`measure_tree`: how many entries and bytes a program left below a directory, with a
  bounded walk (stops past a given count);
* :func:`choose_backend`: ``"bwrap"`` or ``"fallback"`` from a ``use_bwrap`` setting.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import stat
import subprocess
import time

from discoverygym.errors import BackendUnavailable

__all__ = ["choose_backend", "kill_group", "measure_tree", "read_available", "remove_tree"]


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the process group led by ``proc`` (started with ``start_new_session=True``) and reap it.

    The group holds what the child started (compiler helpers, stray threads' processes); a
    process that left the group (``setsid``) is not reached. Never raises for a child already gone.
    """
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    with contextlib.suppress(OSError):
        proc.kill()
    proc.wait()


def read_available(fd: int, size: int = 65536) -> bytes:
    """Up to ``size`` bytes that can be read from ``fd`` right now (``b""`` when none), never blocking.

    Leaves ``fd`` in non-blocking mode.
    """
    os.set_blocking(fd, False)
    try:
        return os.read(fd, size)
    except OSError:  # BlockingIOError included
        return b""


def bwrap_usr_args() -> list[str]:
    """bubblewrap arguments showing ``/usr`` read-only plus the ``/bin``, ``/sbin``, ``/lib*`` tops
    (as the same symbolic links where they are links, read-only binds where they are directories)."""
    args = ["--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    return args


def choose_backend(use_bwrap: bool | None, bwrap_works: bool, why_not: str) -> str:
    """The backend of a run: ``"bwrap"`` or ``"fallback"``.

    Args:
        use_bwrap: ``True`` requires bubblewrap, ``False`` never uses it, ``None`` uses it when it works.
        bwrap_works: whether this sandbox's bubblewrap probe succeeded (and no switch turns it off).
        why_not: the message of the error raised when bubblewrap is required but does not work.

    Raises:
        BackendUnavailable: ``use_bwrap`` is True and ``bwrap_works`` is False.
    """
    if use_bwrap is False:
        return "fallback"
    if bwrap_works:
        return "bwrap"
    if use_bwrap:
        raise BackendUnavailable(why_not)
    return "fallback"


_DIR_OPEN = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def remove_tree(path: str, *, timeout_s: float = 120.0) -> bool:
    """Remove ``path`` and whatever a program left below it; never recurses, never raises.

    ``shutil.rmtree`` recurses once per directory level, so a program that built a chain of
    1,500 directories made it raise ``RecursionError`` (which ``ignore_errors`` does not cover)
    and left the tree on disk. This walks the tree with an explicit stack and at most two open
    descriptors (down by name with ``O_NOFOLLOW``, back up through ``..``, checked against the
    device and inode recorded on the way down), never leaves the file system ``path`` is on,
    unlinks symbolic links instead of following them, and makes directories of ours that a
    program made unreadable (``chmod 0``) readable again. Whatever is left after that (or after
    ``timeout_s``) is handed to ``rm -rf --one-file-system`` under the same timeout.

    Args:
        path: file or directory to remove (a missing path is fine).
        timeout_s: seconds allowed to the walk, and again to ``rm``.

    Returns:
        ``True`` when ``path`` no longer exists.
    """
    try:
        path = os.path.abspath(path)
        with contextlib.suppress(Exception):  # anything left is for rm below
            _remove_walk(path, time.monotonic() + timeout_s)
        if not os.path.lexists(path):
            return True
        rm = shutil.which("rm", path="/usr/bin:/bin")
        if rm is not None:
            with contextlib.suppress(Exception):
                subprocess.run([rm, "-rf", "--one-file-system", "--", path], check=False,
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, timeout=timeout_s)
        return not os.path.lexists(path)
    except Exception:  # noqa: BLE001 - cleanup must never break a verdict
        return False


def _open_dir(name: str, dir_fd: int) -> int:
    """Open a directory below ``dir_fd`` (no links), making it ``0o700`` first when it is ours
    and we may not read it; raises ``OSError``."""
    try:
        fd = os.open(name, _DIR_OPEN, dir_fd=dir_fd)
    except PermissionError:
        info = os.lstat(name, dir_fd=dir_fd)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
            raise
        os.chmod(name, 0o700, dir_fd=dir_fd)  # a directory (checked just above), not a link
        fd = os.open(name, _DIR_OPEN, dir_fd=dir_fd)
    try:
        info = os.fstat(fd)
        if os.geteuid() != 0 and info.st_uid == os.geteuid() and info.st_mode & 0o700 != 0o700:
            os.fchmod(fd, 0o700)  # we need write and search permission to empty it
    except OSError:
        os.close(fd)
        raise
    return fd


def _empty_dir(fd: int) -> list[str]:
    """Unlink every non-directory entry of the directory ``fd``; the names of its directories."""
    subdirs = []
    with os.scandir(fd) as entries:
        for entry in entries:
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                is_dir = False
            if is_dir:
                subdirs.append(entry.name)
                continue
            try:
                os.unlink(entry.name, dir_fd=fd)
            except IsADirectoryError:
                subdirs.append(entry.name)
            except OSError:
                pass
    return subdirs


def _remove_walk(path: str, deadline: float) -> None:
    """The iterative part of :func:`remove_tree` (raises on anything unexpected)."""
    parent, name = os.path.split(path)
    top = os.open(parent or "/", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    cur = -1
    try:
        try:
            info = os.lstat(name, dir_fd=top)
        except FileNotFoundError:
            return
        if not stat.S_ISDIR(info.st_mode):
            os.unlink(name, dir_fd=top)
            return
        cur = _open_dir(name, top)
        here = os.fstat(cur)
        device = here.st_dev
        # one frame per level: [name, inode, subdirectories still to remove, rescanned]
        stack: list[list] = [[name, here.st_ino, _empty_dir(cur), False]]
        steps = 0
        while stack:
            steps += 1
            if steps % 256 == 0 and time.monotonic() > deadline:
                raise TimeoutError("remove_tree: out of time")
            frame = stack[-1]
            if frame[2]:
                child_name = frame[2].pop()
                try:
                    child = _open_dir(child_name, cur)
                except OSError:
                    continue
                child_info = os.fstat(child)
                if child_info.st_dev != device:  # a mount point: never leave the file system
                    os.close(child)
                    continue
                os.close(cur)
                cur = child
                stack.append([child_name, child_info.st_ino, _empty_dir(cur), False])
                continue
            if not frame[3]:  # once more: entries missed while the directory was changing
                frame[3] = True
                frame[2] = _empty_dir(cur)
                continue
            if len(stack) == 1:
                os.close(cur)
                cur = -1
                os.rmdir(name, dir_fd=top)
                return
            up = os.open("..", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=cur)
            up_info = os.fstat(up)
            os.close(cur)
            cur = up
            if (up_info.st_dev, up_info.st_ino) != (device, stack[-2][1]):
                raise OSError("remove_tree: the tree moved while it was being removed")
            stack.pop()
            with contextlib.suppress(OSError):
                os.rmdir(frame[0], dir_fd=cur)
    finally:
        if cur >= 0:
            os.close(cur)
        os.close(top)




def measure_tree(path: str, max_entries: int, *, timeout_s: float = 30.0) -> tuple[int, int]:
    """Count the entries (files, directories, links, ...) below ``path`` and the bytes they use.

    The walk is iterative (any depth) and has the same guards as :func:`remove_tree`: it opens
    directories by name with ``O_NOFOLLOW``, goes back up through ``..`` checked against the
    recorded device and inode, never leaves the file system, and makes directories of ours that
    a program made unreadable readable again (so nothing can be hidden below a ``chmod 0``). It
    stops as soon as more than ``max_entries`` entries were seen, so its work is bounded by
    ``max_entries`` whatever the program left.

    Args:
        path: the directory (not counted itself).
        max_entries: stop counting past this many entries.
        timeout_s: seconds allowed to the walk.

    Returns:
        ``(entries, bytes)``: bytes are allocated bytes (``st_blocks * 512``, what the files take
        on disk). ``entries`` is ``max_entries + 1`` when the walk stopped early: past the count,
        out of time, a tree that moved, or a directory it could not open (all of which the caller
        treats as over the limit).
    """
    over = max_entries + 1
    deadline = time.monotonic() + timeout_s
    entries = used = 0
    try:
        cur = os.open(path, _DIR_OPEN)
    except OSError:
        return 0, 0
    try:
        here = os.fstat(cur)
        device = here.st_dev
        stack: list[list] = []  # one frame per level: [inode, subdirectories still to visit]
        pending = None
        while True:
            if pending is None:  # entered a directory: count what it holds
                pending = []
                with os.scandir(cur) as listing:
                    for entry in listing:
                        entries += 1
                        if entries > max_entries or time.monotonic() > deadline:
                            return over, used
                        info = entry.stat(follow_symlinks=False)
                        used += info.st_blocks * 512
                        if stat.S_ISDIR(info.st_mode):
                            pending.append(entry.name)
                stack.append([os.fstat(cur).st_ino, pending])
            frame = stack[-1]
            if frame[1]:
                child = _open_dir(frame[1].pop(), cur)
                if os.fstat(child).st_dev != device:
                    os.close(child)
                    return over, used
                os.close(cur)
                cur, pending = child, None
                continue
            stack.pop()
            if not stack:
                return entries, used
            up = os.open("..", _DIR_OPEN & ~os.O_NOFOLLOW, dir_fd=cur)
            os.close(cur)
            cur = up
            info = os.fstat(cur)
            if (info.st_dev, info.st_ino) != (device, stack[-1][0]):
                return over, used
            pending = stack[-1][1]
    except OSError:
        return over, used
    finally:
        os.close(cur)
