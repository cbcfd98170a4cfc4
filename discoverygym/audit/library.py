"""The bundled exploit library: every family's exploits, in one list."""

from __future__ import annotations

from discoverygym.audit.construction import EXPLOITS as CONSTRUCTION
from discoverygym.audit.cpp import EXPLOITS as CPP
from discoverygym.audit.exploits import Exploit
from discoverygym.audit.kernels import EXPLOITS as KERNELS
from discoverygym.audit.python_programs import EXPLOITS as PYTHON
from discoverygym.audit.side_channels import EXPLOITS as CROSS_PROCESS

__all__ = ["library"]


def library() -> list[Exploit]:
    """Every bundled exploit, family by family (construction, Python programs, kernels, C++,
    cross-process channels)."""
    return [*CONSTRUCTION, *PYTHON, *KERNELS, *CPP, *CROSS_PROCESS]
