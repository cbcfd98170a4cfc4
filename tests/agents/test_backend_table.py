"""The one backend table: every entry is complete, and an unknown or untrainable backend is an error, never vLLM."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from discoverygym.agents.build import build_learners
from discoverygym.agents.policies.backends import BACKENDS
from discoverygym.policy import LLM_BACKENDS, LLMBackend, llm_backend, llm_specs, register_backend


def test_every_backend_of_the_table_is_registered_and_consistent():
    assert [b.name for b in BACKENDS] == list(LLM_BACKENDS)[: len(BACKENDS)]
    for entry in BACKENDS:
        assert entry.extra and entry.settings and entry.summary
        assert not (entry.chat and (entry.trainable or entry.post_train)), entry.name
        assert entry.post_train <= entry.trainable, entry.name
    assert [b.name for b in BACKENDS if b.chat] == ["litellm"]
    assert [b.name for b in BACKENDS if b.post_train] == ["hf", "tinker"]
    assert llm_specs("train") == "hf:PATH_OR_ID, openai:URL, vllm:MODEL, tinker:MODEL"


def test_an_unknown_backend_names_the_known_ones():
    with pytest.raises(ValueError, match="unknown LLM backend 'nope'; known: hf, openai, vllm, tinker, litellm"):
        llm_backend("nope")
    with pytest.raises(ValueError, match="LLM policy spec must be one of hf:PATH_OR_ID"):
        build_learners(SimpleNamespace(family="llm", policy="nope:x"), None, None)


def test_a_backend_without_a_learner_is_refused_not_built_with_vllm(monkeypatch):
    monkeypatch.setitem(LLM_BACKENDS, "frozen", LLMBackend("frozen", "MODEL", "a test backend", lambda: object))
    config = SimpleNamespace(family="llm", policy="frozen:m", llm=SimpleNamespace(warm_start=None))
    with pytest.raises(ValueError, match="'frozen:m' cannot be trained; train with hf:PATH_OR_ID"):
        build_learners(config, None, None)


def test_register_backend_refuses_names_with_a_colon():
    with pytest.raises(ValueError, match="contain no ':'"):
        register_backend(LLMBackend("a:b", "X", "bad", lambda: object))
