"""Shared fixtures: the reference data in ../shared (optional: tests that need it skip without it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
PUBLISHED = SHARED / "data" / "published"


def published_files() -> list[Path]:
    """The published-record JSON files, or an empty list when ../shared is absent."""
    return sorted(PUBLISHED.glob("*.json")) if PUBLISHED.is_dir() else []


@pytest.fixture(params=published_files() or [None], ids=lambda p: p.stem if p else "no-shared-data")
def published(request) -> dict:
    """One published record (``problem``, ``construction``, ``expected_value``...), path under ``path``."""
    if request.param is None:
        pytest.skip("../shared/data/published is not present")
    record = json.loads(request.param.read_text())
    record["path"] = request.param
    return record


def pytest_configure(config) -> None:
    """Where bubblewrap cannot run (a CI machine without it), let the kernel tests judge their own
    test programs unconfined (the explicit opt-in users have too), so they exercise the fallback;
    the test of the refusal itself removes the variable."""
    import os

    try:
        from discoverygym.sandbox.kernels import box
    except ImportError:
        return
    if not box.available():
        os.environ.setdefault("DISCOVERYGYM_KERNELS_ALLOW_UNCONFINED", "1")


_REGISTRIES = (("discoverygym.agents.config", ("ABLATIONS", "ABLATION_DOCS")),
               ("discoverygym.agents.objectives", ("OBJECTIVES", "_ADV_EST_FACTORIES")),
               ("discoverygym.agents.losses", ("LOSSES",)))


@pytest.fixture(autouse=True)
def _restore_algorithm_registries():
    """Undo what a test registers by name (plugins, examples/algorithms/*.py): configs, objectives, losses.

    These registries are module globals that ``--plugin`` files fill; without this, a test that runs
    ``examples/algorithms/grpo_objective.py`` leaves ``grpo`` among the configs of every later test.
    """
    import importlib
    import sys

    saved = []
    for module_name, names in _REGISTRIES:
        if module_name not in sys.modules:
            try:
                importlib.import_module(module_name)
            except ImportError:  # the llm/rl extras are not installed: nothing to restore
                continue
        module = sys.modules[module_name]
        saved += [(getattr(module, n), dict(getattr(module, n))) for n in names if hasattr(module, n)]
    yield
    for registry, content in saved:
        registry.clear()
        registry.update(content)
