"""The model cache cannot be turned against its user (issue 52, #11, #12).

Each test plants what an attacker with write access to a cache name could plant (symlinks as the
sampling config's temporary file, the lock, the old ``.tmp-<pid>`` build directory and the entry
itself; a cache directory of another user or writable by others) and runs the real
:func:`~discoverygym.agents.policies.embedded.convert` with fake ``torch``/``transformers`` modules
(a conversion then takes milliseconds and needs neither library nor the model package).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import types
from pathlib import Path

import pytest

from discoverygym.agents.policies import embedded
from discoverygym.agents.policies.model_cache import CacheRefused, secure_dir

SPEC = embedded.EMBEDDED["smollm2"]


class _Model:
    """Stands in for the GGUF-loaded model: ``save_pretrained`` writes a config.json."""

    def __init__(self, config=None):
        self.config = config or types.SimpleNamespace(tie_word_embeddings=False)
        self.generation_config = types.SimpleNamespace(eos_token_id=None)

    def state_dict(self):
        return {}

    def load_state_dict(self, *args, **kwargs):
        pass

    def save_pretrained(self, folder, **kwargs):
        Path(folder, "config.json").write_text('{"model": "converted"}')
        Path(folder, "generation_config.json").write_text("{}")


class _Tokenizer:
    def get_vocab(self):
        return {}

    def save_pretrained(self, folder):
        Path(folder, "tokenizer.json").write_text("{}")


@pytest.fixture
def fake_conversion(tmp_path, monkeypatch):
    """A cache under tmp_path and a conversion with fake torch/transformers; returns the models dir."""
    torch = types.ModuleType("torch")
    torch.float32 = "float32"
    torch.device = lambda *a: contextlib.nullcontext()
    transformers = types.ModuleType("transformers")
    transformers.AutoTokenizer = types.SimpleNamespace(from_pretrained=lambda *a, **k: _Tokenizer())
    transformers.AutoModelForCausalLM = types.SimpleNamespace(from_pretrained=lambda *a, **k: _Model())
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setitem(sys.modules, "transformers", transformers)
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF")
    monkeypatch.setattr(embedded, "_gguf_path", lambda spec: gguf)
    monkeypatch.setattr(embedded, "_find_package", lambda name: object())
    monkeypatch.setenv("DISCOVERYGYM_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache" / "models"


def test_the_cache_is_created_private_and_an_honest_conversion_works(fake_conversion):
    out = embedded.convert(SPEC, log=False)
    assert out == fake_conversion / SPEC.directory_name and out.is_dir() and not out.is_symlink()
    for folder in (fake_conversion.parent, fake_conversion):
        assert folder.stat().st_mode & 0o777 == 0o700
    assert json.loads((out / "generation_config.json").read_text())["do_sample"] is True
    assert embedded.convert(SPEC, log=False) == out  # the cached entry is checked and used


def test_planted_symlinks_redirect_no_write(fake_conversion, tmp_path):
    models = secure_dir(secure_dir(fake_conversion.parent) / "models")
    evil = tmp_path / "evil"
    evil.mkdir()
    (evil / "config.json").write_text('{"attacker": true}')
    for pid in range(os.getpid() - 2, os.getpid() + 3):  # the old code's predictable build directory
        os.symlink(evil, models / f".{SPEC.directory_name}.tmp-{pid}")
    out = embedded.convert(SPEC, log=False)
    assert not out.is_symlink() and json.loads((out / "config.json").read_text()) == {"model": "converted"}
    assert json.loads((evil / "config.json").read_text()) == {"attacker": True}
    # the sampling config's temporary file: a planted link to a file of the user's is not written through
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (out / "generation_config.json").write_text("{}")
    os.symlink(victim, out / f".generation_config.json.{os.getpid()}")
    embedded.sampling_generation_config(out)
    assert victim.read_text() == "precious"
    assert json.loads((out / "generation_config.json").read_text())["do_sample"] is True


def test_a_planted_lock_link_is_refused_and_its_target_not_created(fake_conversion, tmp_path):
    models = secure_dir(secure_dir(fake_conversion.parent) / "models")
    os.symlink(tmp_path / "created_by_lock", models / f".{SPEC.directory_name}.lock")
    with pytest.raises(CacheRefused, match="lock"):
        embedded.convert(SPEC, log=False)
    assert not (tmp_path / "created_by_lock").exists()


def test_an_entry_that_is_a_link_is_refused(fake_conversion, tmp_path):
    models = secure_dir(secure_dir(fake_conversion.parent) / "models")
    evil = tmp_path / "evil"
    evil.mkdir()
    (evil / "config.json").write_text("{}")
    (evil / "discoverygym-embedded.json").write_text(json.dumps({"format": embedded._FORMAT}))
    os.symlink(evil, models / SPEC.directory_name)
    with pytest.raises(CacheRefused, match="symbolic link"):
        embedded.convert(SPEC, log=False)
    # a conversion forced anew replaces the link itself (never the directory it points to)
    out = embedded.convert(SPEC, force=True, log=False)
    assert not out.is_symlink() and (evil / "config.json").read_text() == "{}"


def test_a_cache_writable_by_others_is_refused(fake_conversion):
    fake_conversion.parent.mkdir(parents=True)
    fake_conversion.parent.chmod(0o777)
    with pytest.raises(CacheRefused, match="writable by group or others"):
        embedded.convert(SPEC, log=False)


def test_a_cache_of_another_user_is_refused(fake_conversion, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: os.getuid() + 1)  # as if the directory were someone else's
    with pytest.raises(CacheRefused, match="belongs to uid"):
        embedded.convert(SPEC, log=False)
