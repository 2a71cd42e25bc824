"""The llama.cpp backend's KV cache around background evaluations, with the real model.

A new pick of extra context is evaluated in the background (a ``keep_cache`` job). Stopped
inside its prompt, it must leave the cache as the keystroke path left it, and carry on from
where it stopped the next time it runs.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from lsp_infer.config import ModelSettings
from lsp_infer.core.backend import CompletionJob, JobProgress
from lsp_infer.core.cancel import Cancelled, CancelReason, CancelToken
from lsp_infer.local.lane import ModelLane
from lsp_infer.local.llama_cpp import KvSnapshot, LlamaCppBackend

DOCUMENT = (
    '"""Reading and writing the tool\'s configuration file."""\n\nimport json\nimport os\n\n'
    'DEFAULT_PATH = os.path.expanduser("~/.config/tool/config.json")\n\n\n'
    "def read_config(path=DEFAULT_PATH):\n    with open(path) as f:\n        return "
)
# Other files' code, long enough that its evaluation takes well over the cancel delay.
OTHER = "".join(
    f"def helper_{i}(value, scale={i}):\n    return value * scale + {i}\n\n" for i in range(40)
)


@pytest.fixture(scope="module")
def backend() -> Iterator[LlamaCppBackend]:
    backend = LlamaCppBackend(ModelLane())
    backend.lane.run_blocking(backend.load_blocking, ModelSettings())
    assert backend.state == "ready", backend.error
    yield backend
    backend.close()


def job(extra: tuple[tuple[str, str], ...] = (), keep_cache: bool = False) -> CompletionJob:
    return CompletionJob(
        text=DOCUMENT,
        offset=len(DOCUMENT),
        budget_tokens=512,
        suffix_tokens=128,
        max_tokens=8,
        decode_seconds=30,
        progress=JobProgress(),
        extra=extra,
        extra_tokens=1024 if extra else 0,
        path="config.py",
        keep_cache=keep_cache,
    )


def run(backend: LlamaCppBackend, work: CompletionJob, cancel_at_tokens: int = 0) -> str:
    """The job's answer; with ``cancel_at_tokens``, a keystroke stops it once the model's
    cache holds that many tokens (in the middle of its prompt, whatever the machine's speed)."""
    token = CancelToken()
    if cancel_at_tokens:

        def keystroke() -> None:
            while backend._llm.n_tokens < cancel_at_tokens and not work.progress.prompt_done_at:
                time.sleep(0.001)
            token.cancel(CancelReason.DOCUMENT_CHANGED)

        threading.Thread(target=keystroke, daemon=True).start()
    return backend.lane.run_blocking(backend.generate_blocking, work, token).text


def test_a_stopped_background_evaluation_leaves_the_cache_as_it_was(backend: LlamaCppBackend):
    typing = job()
    expected = run(backend, typing)
    assert typing.progress.prompt_tokens > 32  # more than the backend would not keep
    background = job(extra=(("helpers.py", OTHER),), keep_cache=True)
    with pytest.raises(Cancelled):
        run(backend, background, cancel_at_tokens=256)  # one batch of n_batch
    assert background.progress.prompt_done_at is None, "the cancel came after the prompt"
    assert background.progress.prompt_tokens > 800  # the other file is in it
    assert background.progress.prompt_tokens_evaluated >= 256
    # The keystroke after it finds its own prompt cached, and the same answer.
    again = job()
    assert run(backend, again) == expected
    assert again.progress.prompt_tokens_reused == again.progress.prompt_tokens - 1
    # The background evaluation, run again, starts where it stopped.
    resumed = job(extra=(("helpers.py", OTHER),), keep_cache=True)
    answer = run(backend, resumed)
    assert resumed.progress.prompt_tokens_reused >= background.progress.prompt_tokens_evaluated
    # ... and answers as a fresh evaluation of the same prompt does.
    backend.lane.run_blocking(backend._restore, KvSnapshot([], b""))  # an empty cache
    fresh = job(extra=(("helpers.py", OTHER),))
    assert run(backend, fresh) == answer
    assert fresh.progress.prompt_tokens_reused == 0
