"""An embedded model as a folder vLLM can serve (safetensors, config, tokenizer).

vLLM 0.32 no longer loads GGUF files on a CPU (its GGUF plugin needs CUDA), so the team server
cannot serve the embedded model as it is. This module derives the folder once from the verified
GGUF: transformers dequantizes the GGUF (``from_pretrained(..., gguf_file=...)``, which needs
the ``gguf`` package); its ``save_pretrained`` refuses a model loaded that way, so the tensors
are written with safetensors and the config and tokenizer by themselves. About a minute and
3 GB of memory on two cores for the 0.5B (1.3 GB of bf16 on disk); the 1.5B takes about three
times that (3.1 GB on disk).

Like the GGUF, the folder is trusted only while it matches its stamp: the SHA-256 of every file
recorded when it was written, hashed again before a server is started on it (a few seconds),
and derived again from the GGUF when it does not match.

Runs where vLLM is installed (torch, transformers, safetensors, gguf): the imports are inside.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsp_infer.models import (
    DEFAULT_MODEL,
    EmbeddedModel,
    ModelError,
    cache_dir,
    ensure_embedded,
    sha256_of,
)

STAMP = "lsp-infer-stamp.json"
# Bumped when the derivation changes: a folder from an older one is derived again.
DERIVATION = 2


def vllm_model_path(model: EmbeddedModel = DEFAULT_MODEL) -> Path:
    """The folder in the model cache, beside the GGUF it is derived from."""
    return cache_dir() / model.file_name.replace("-q4_k_m.gguf", "-vllm")


def folder_problem(folder: Path, model: EmbeddedModel = DEFAULT_MODEL) -> str | None:
    """None when every file the stamp names is there with its hash; else what is wrong."""
    try:
        stamp = json.loads((folder / STAMP).read_text())
    except (OSError, ValueError):
        return f"{folder} has no readable {STAMP} (not made by lsp-infer, or made halfway)"
    if stamp.get("source_sha256") != model.sha256 or stamp.get("derivation") != DERIVATION:
        return f"{folder} was derived from another model or by another version of lsp-infer"
    files: dict[str, str] = stamp.get("files", {})
    for name, sha256 in sorted(files.items()):
        path = folder / name
        if not path.is_file():
            return f"{path} is missing"
        if sha256_of(path) != sha256:
            return f"{path} does not match the SHA-256 recorded when it was written"
    if "model.safetensors" not in files or "config.json" not in files:
        return f"{folder}'s stamp names no weights or no config"
    return None


def ensure_vllm_model(
    deriving: Callable[[str], None] | None = None, model: EmbeddedModel = DEFAULT_MODEL
) -> Path:
    """The folder, derived from the embedded GGUF when missing or not matching its stamp
    (``deriving`` is told why first: it takes about a minute)."""
    folder = vllm_model_path(model)
    problem = folder_problem(folder, model) if folder.is_dir() else f"{folder} is not there yet"
    if problem is None:
        return folder
    if deriving is not None:
        deriving(problem)
    source = ensure_embedded(model)
    partial = folder.with_name(f".{folder.name}.{os.getpid()}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    try:
        _derive(source, partial, model)
        shutil.rmtree(folder, ignore_errors=True)
        os.replace(partial, folder)
    except OSError as exc:
        raise ModelError(
            f"could not write the vLLM copy of the embedded model to {folder}: check that "
            f"{folder.parent} is writable and has about {model.size * 3 // 10**9 + 1} GB free "
            f"({exc.strerror})"
        ) from None
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return folder


def _derive(gguf: Path, folder: Path, embedded: EmbeddedModel) -> None:
    try:
        import torch
        from safetensors.torch import save_file
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:
        raise ModelError(
            f"deriving the vLLM copy of the embedded model needs vLLM's packages ({exc.name} "
            "is missing): run it where vLLM is installed (pip install 'lsp-infer[team-cpu]' "
            "or 'lsp-infer[team]', and gguf)"
        ) from None
    folder.mkdir(parents=True)
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(
        str(gguf.parent), gguf_file=gguf.name, dtype=torch.bfloat16
    )
    # Tied embeddings share one tensor; safetensors refuses shared memory, and vLLM ties them
    # again from the config.
    tensors: dict[str, Any] = {
        name: tensor.contiguous()
        for name, tensor in model.state_dict().items()
        if not (model.config.tie_word_embeddings and name == "lm_head.weight")
    }
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
    model.config.architectures = [type(model).__name__]
    # The config remembers the GGUF's quantization; the tensors written are plain bf16, and
    # vLLM refuses a "gguf" quantization it cannot load.
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.config.save_pretrained(str(folder))
    model.generation_config.save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    files = {path.name: sha256_of(path) for path in sorted(folder.iterdir()) if path.name != STAMP}
    stamp = {"source_sha256": embedded.sha256, "derivation": DERIVATION, "files": files}
    (folder / STAMP).write_text(json.dumps(stamp, indent=1))
