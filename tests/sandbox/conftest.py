"""Fixtures of the Python-sandbox tests: ``use_bwrap`` (both backends), ``marker`` and ``run``."""

from __future__ import annotations

import textwrap
import uuid

import pytest

from discoverygym.sandbox import python as sandbox
from discoverygym.sandbox.python import SandboxLimits, SandboxResult, run_program
from tests.sandbox.support import BACKENDS, processes_containing


@pytest.fixture(params=BACKENDS)
def use_bwrap(request) -> bool:
    return request.param


@pytest.fixture
def marker() -> str:
    return f"dgmark{uuid.uuid4().hex}"


@pytest.fixture
def run(use_bwrap, marker, monkeypatch):
    """``run(source, kwargs=None, entry="construct", **limits)`` on one backend, then no stray process."""
    token = f"dgtok{uuid.uuid4().hex}"
    monkeypatch.setattr(sandbox, "_new_token", lambda: token)

    def _run(source: str, kwargs: dict | None = None, entry: str = "construct",
             **overrides) -> SandboxResult:
        overrides.setdefault("timeout_s", 10.0)
        limits = SandboxLimits(use_bwrap=use_bwrap, **overrides)
        result = run_program(textwrap.dedent(source), entry=entry, kwargs=kwargs, limits=limits)
        assert result.backend == ("bwrap" if use_bwrap else "fallback")
        assert processes_containing(token) == [], "a sandboxed process survived"
        assert processes_containing(marker) == [], "a process started by the program survived"
        return result

    return _run

