"""One completion outside the server: load the model, complete once, close.

For the command line (`lsp-infer complete`) and `lsp-infer doctor`, which have no editor and
no event loop of their own.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from lsp_infer.config import Settings
from lsp_infer.core.backend import BackendUnavailable
from lsp_infer.core.cancel import CancelToken
from lsp_infer.core.engine import CompletionEngine, Suggestion
from lsp_infer.local.lane import ModelLane
from lsp_infer.local.llama_cpp import LlamaCppBackend
from lsp_infer.local.loaded_model import LoadedModel
from lsp_infer.models import Progress


@dataclass(frozen=True)
class OneCompletion:
    suggestion: Suggestion
    model: LoadedModel
    load_seconds: float  # resolving (assembling, verifying) and loading the model
    complete_seconds: float


def complete_once(
    settings: Settings,
    text: str,
    offset: int,
    progress: Progress | None = None,
) -> OneCompletion:
    """The suggestion at ``offset`` of ``text``; BackendUnavailable when the model does not
    load (its message says why)."""
    lane = ModelLane()
    backend = LlamaCppBackend(lane)
    try:
        started = time.monotonic()
        lane.run_blocking(backend.load_blocking, settings.model, progress)
        if backend.state != "ready" or backend.loaded is None:
            raise BackendUnavailable(backend.error or f"the model is {backend.state}")
        loaded = time.monotonic()
        # The loaded model's profile fills in what the settings leave alone, as in the server.
        completion = backend.loaded.profile.completion(settings.completion, settings.explicit)
        engine = CompletionEngine(backend)
        suggestion = asyncio.run(engine.complete(text, offset, completion, CancelToken()))
        return OneCompletion(
            suggestion, backend.loaded, loaded - started, time.monotonic() - loaded
        )
    finally:
        backend.close()
        lane.shutdown()
