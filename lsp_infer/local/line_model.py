"""The local model as next edits ask it (next_edit/service.py's ``LineModel``): a plain prompt
continued greedily to the end of its line, through the one backend interface."""

from __future__ import annotations

from lsp_infer.core.backend import MAX_LINE_TOKENS, Backend, CompletionJob, Decoded
from lsp_infer.core.cancel import CancelToken

# The prompt's KV state is kept in the prompt cache under this name, beside the documents'
# (a uri never has this form), so the next keystroke in a file still reuses that file's.
NEXT_EDIT_DOCUMENT = "lsp-infer:next-edit"


class LocalLineModel:
    def __init__(self, backend: Backend) -> None:
        self._backend = backend

    async def continue_line(self, prompt: str, seconds: float, cancel: CancelToken) -> Decoded:
        """``prompt`` continued to the end of its line (or ``seconds`` of decoding); the
        output's text, why it stopped and its tokens' probabilities."""
        job = CompletionJob(
            document=NEXT_EDIT_DOCUMENT, plain=True, background=True,
            text=prompt, offset=len(prompt), budget_tokens=0, suffix_tokens=0,
            max_tokens=MAX_LINE_TOKENS, decode_seconds=seconds,
            should_stop=lambda text: "\n" in text,
        )  # fmt: skip
        generation = await self._backend.generate(job, cancel)
        return Decoded(generation.text, generation.stop_reason, generation.probs)
