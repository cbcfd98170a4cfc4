"""Shared LLM test helpers: a tiny offline causal LM, built once per test session.

Use from a test module with::

    from tests.llm_fixtures import tiny_model_path  # noqa: F401  (pytest fixture)

or call :func:`tiny_model_dir` with ``tmp_path_factory.getbasetemp()`` (the same directory for the
whole session, so the model is built once). Tests are skipped when the ``llm`` extra
(torch, transformers, peft) is not installed.
"""

from __future__ import annotations

from pathlib import Path

import pytest


def tiny_model_dir(root: Path, **kwargs) -> Path:
    """Build (or reuse) the tiny model under ``root / "tiny-llm"``; kwargs go to ``build_tiny_model``."""
    pytest.importorskip("transformers")
    pytest.importorskip("peft")
    from discoverygym.agents.policies.tiny import build_tiny_model

    out = root / "tiny-llm"
    if not (out / "config.json").exists():
        build_tiny_model(out, **kwargs)
    return out


@pytest.fixture(scope="session")
def tiny_model_path(tmp_path_factory) -> Path:
    """Directory of the tiny random Llama model + byte-level tokenizer (built once per session)."""
    return tiny_model_dir(tmp_path_factory.getbasetemp())
