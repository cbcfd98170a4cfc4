"""A C++ program compiled once and run many times on binary inputs in the native sandbox.

:mod:`.ahc_judge` judges text cases in parallel; numeric tasks (``LassoPath-v0``) instead feed a
binary input on stdin, read a binary answer from stdout and time each run, one run at a time (so
that runs do not compete for the CPU). :class:`CompiledProgram` holds the private directory, the
binary and the limits; every run goes through :func:`~discoverygym.sandbox.native.run_executable`
(no network, no fork beyond threads, confined files, wall/CPU and memory limits; see
:mod:`discoverygym.sandbox.native`).

Example:
    >>> with CompiledProgram(source, flags=("-O2",)) as prog:          # doctest: +SKIP
    ...     if prog.compiled.ok:
    ...         result = prog.run(b"input bytes", NativeLimits(time_limit_s=5))
"""

from __future__ import annotations

import os
import tempfile
from typing import TYPE_CHECKING

from discoverygym.sandbox._process import remove_tree
from discoverygym.sandbox.native import (
    CPP_FLAGS,
    CompileResult,
    NativeLimits,
    NativeResult,
    compile_cpp,
    run_executable,
)

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["CompiledProgram"]


class CompiledProgram:
    """Compile ``source`` once in a private temporary directory; run it on byte inputs; clean up.

    Args:
        source: C++ text.
        flags: g++ flags (default :data:`~discoverygym.sandbox.native.CPP_FLAGS`).
        compile_timeout_s: wall-clock limit of the compilation in seconds.
        use_bwrap, allow_unconfined: as in :class:`~discoverygym.sandbox.native.NativeLimits`
            (used for the compilation; each run takes its own limits).

    Attributes:
        compiled: the :class:`~discoverygym.sandbox.native.CompileResult` (``ok=False`` with the
            compiler's log when it failed; :meth:`run` then raises).

    Raises:
        BackendUnavailable: no g++, bubblewrap required and missing, or no confinement.
    """

    def __init__(self, source: str, *, flags: tuple[str, ...] = CPP_FLAGS, compile_timeout_s: float = 120.0,
                 use_bwrap: bool | None = None, allow_unconfined: bool = False) -> None:
        self.root = os.path.realpath(tempfile.mkdtemp(prefix="discoverygym-native-"))
        self._runs = 0
        try:
            build = os.path.join(self.root, "build")
            os.mkdir(build)
            self.compiled: CompileResult = compile_cpp(source, build, flags=flags, timeout_s=compile_timeout_s,
                                                       use_bwrap=use_bwrap, allow_unconfined=allow_unconfined)
        except BaseException:
            self.close()
            raise

    def run(self, stdin: bytes, limits: NativeLimits) -> NativeResult:
        """Run the binary once with ``stdin`` as standard input under ``limits``.

        Returns:
            :class:`~discoverygym.sandbox.native.NativeResult` (``stdout`` holds the output;
            ``wall_s`` is the launcher's fork-to-exit wall time). Never raises for anything the
            program does.

        Raises:
            RuntimeError: the program did not compile (check :attr:`compiled` first).
        """
        if not self.compiled.ok or self.compiled.binary is None:
            raise RuntimeError("the program did not compile")
        self._runs += 1
        workdir = os.path.join(self.root, f"run-{self._runs}")
        os.mkdir(workdir)
        try:
            path = os.path.join(workdir, "input.bin")
            with open(path, "wb") as fh:
                fh.write(stdin)
            return run_executable(self.compiled.binary, stdin_path=path, workdir=workdir, limits=limits)
        finally:
            remove_tree(workdir)

    def close(self) -> None:
        """Remove the private directory (binary included); idempotent."""
        if self.root:
            remove_tree(self.root)
            self.root = ""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
