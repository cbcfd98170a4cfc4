"""The bundled exploit library: every family's exploits, in one list."""

from __future__ import annotations

from discoverygym.audit import construction, cpp, kernels, python_programs
from discoverygym.audit.exploits import Exploit

__all__ = ["library"]


def library() -> list[Exploit]:
    """Every bundled exploit, family by family (construction, Python programs, kernels, C++)."""
    return [*construction.EXPLOITS, *python_programs.EXPLOITS, *kernels.EXPLOITS, *cpp.EXPLOITS]
