"""A model cache that cannot be turned against its user (issue 52, #11, #12).

The converted ``hf:smollm2`` directory lives in the user's cache (:func:`.embedded.cache_dir`). Anyone
who can plant a name in that cache could otherwise redirect the writes of a conversion: a symlink
``.generation_config.json.<pid>`` made a rewrite overwrite any file the user can write, and symlinks
planted as the lock and as ``.tmp-<pid>`` made the conversion create the lock's target and write the
converted model into a directory of the attacker's choice, then install that directory as the cache
entry. This module holds the rules every write into the cache follows:

* directories: created with mode 0700; used only when they are real directories (not symlinks),
  owned by this user and not writable by group or others (:func:`secure_dir`);
* files: created with ``O_CREAT | O_EXCL | O_NOFOLLOW`` under a random name (``tempfile.mkstemp``),
  or, for the lock, opened with ``O_NOFOLLOW`` and checked on the descriptor (:func:`open_lock`);
  a file is replaced only by ``os.replace`` of such a file (a rename replaces the name itself,
  never a symlink's target);
* the entry: built in a fresh ``mkdtemp`` directory inside the cache, renamed into place after any
  old entry (a symlink is unlinked, never followed), then checked again (:func:`check_entry`).

POSIX only (``O_NOFOLLOW``, ``fstat`` ownership), like the rest of the sandboxing.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from discoverygym.agents.policies.llm import ModelUnavailable

__all__ = ["CacheRefused", "check_entry", "open_lock", "replace_entry", "secure_dir", "write_file"]


class CacheRefused(ModelUnavailable):
    """A cache directory or entry this process must not use (someone else's, writable by others, a
    symlink); the message names the path and what to do."""


def _check_dir_info(path: Path, info: os.stat_result) -> None:
    """Refuse a directory (``lstat`` result ``info``) that is a symlink, not a directory, someone
    else's, or writable by group or others.

    Raises:
        CacheRefused: one line naming ``path`` and the rule.
    """
    if stat.S_ISLNK(info.st_mode):
        raise CacheRefused(f"model cache {path} is a symbolic link; remove it (the cache is used only as a real directory)")
    if not stat.S_ISDIR(info.st_mode):
        raise CacheRefused(f"model cache {path} is not a directory")
    if info.st_uid != os.geteuid():
        raise CacheRefused(f"model cache {path} belongs to uid {info.st_uid}, not to this user ({os.geteuid()}); "
                           "set DISCOVERYGYM_CACHE to a directory of your own")
    if info.st_mode & 0o022:
        raise CacheRefused(f"model cache {path} is writable by group or others (mode {stat.S_IMODE(info.st_mode):o}); "
                           f"run `chmod go-w {path}` or set DISCOVERYGYM_CACHE to a private directory")


def secure_dir(path: str | os.PathLike) -> Path:
    """``path`` as a private directory: created with mode 0700 when missing (its missing parents
    too, with the default mode), else checked.

    Returns:
        ``Path(path)``.

    Raises:
        CacheRefused: it is a symlink, not a directory, owned by another user, or writable by group
            or others.
        OSError: it cannot be created.
    """
    path = Path(path)
    try:
        os.mkdir(path, 0o700)
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    _check_dir_info(path, os.lstat(path))
    return path


@contextlib.contextmanager
def open_lock(path: str | os.PathLike) -> Iterator[int]:
    """An exclusive ``flock`` on the lock file ``path`` (in a :func:`secure_dir`), held while the block runs.

    The lock is opened with ``O_NOFOLLOW`` (a planted symlink makes the open fail instead of creating
    its target) and checked on the descriptor: a regular file owned by this user.

    Raises:
        CacheRefused: ``path`` is a symlink or not a regular file of this user.
    """
    import fcntl

    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, 0o600)
    except OSError as exc:
        raise CacheRefused(f"model cache lock {path} cannot be opened without following a link ({exc.strerror})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
            raise CacheRefused(f"model cache lock {path} is not a regular file of this user")
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield fd
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def write_file(path: str | os.PathLike, text: str) -> None:
    """Replace ``path`` with ``text`` (UTF-8) atomically, never through a link.

    The text goes into a new file of a random name beside ``path`` (``tempfile.mkstemp``:
    ``O_CREAT | O_EXCL | O_NOFOLLOW``, mode 0600, then 0644), which is renamed over ``path``: the
    name is replaced, so a symlink at ``path`` is replaced too, never its target.

    Raises:
        OSError: the directory cannot be written (the temporary file is removed).
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _remove(path: Path) -> None:
    """Remove the name ``path``: a symlink or file is unlinked (never followed), a directory removed
    with its content (``shutil.rmtree`` does not follow links inside it)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode):
        shutil.rmtree(path)
    else:
        os.unlink(path)


def replace_entry(built: Path, target: Path) -> None:
    """Install the directory ``built`` (a ``mkdtemp`` directory in the same cache) as ``target``:
    whatever is at ``target`` goes first (a symlink is unlinked, not followed), then a rename.

    Raises:
        OSError: the rename fails (``built`` is left for the caller to remove).
    """
    _remove(target)
    os.rename(built, target)


def check_entry(target: Path, files: tuple[str, ...]) -> Path:
    """Check a finished cache entry before it is used: ``target`` is a real directory of this user,
    not writable by others, and each of ``files`` in it is a regular file (not a symlink).

    Returns:
        ``target``.

    Raises:
        CacheRefused: a rule broken (one line naming the path).
    """
    _check_dir_info(target, os.lstat(target))
    for name in files:
        try:
            info = os.lstat(target / name)
        except FileNotFoundError:
            raise CacheRefused(f"model cache entry {target} has no {name}; remove the directory to convert again") from None
        if not stat.S_ISREG(info.st_mode):
            raise CacheRefused(f"model cache entry {target}: {name} is not a regular file (a link?); remove the "
                               "directory to convert again")
    return target
