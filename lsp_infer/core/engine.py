"""One completion: cursor line → job → backend → postprocess. No LSP types, no model here."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from lsp_infer.config import CompletionSettings
from lsp_infer.core.backend import Backend, CompletionJob, Generation, JobOptions, JobProgress
from lsp_infer.core.cancel import CancelToken
from lsp_infer.core.confidence import judge
from lsp_infer.core.postprocess import complete_lines, postprocess
from lsp_infer.core.window import CursorLine, cursor_line


@dataclass(frozen=True)
class Suggestion:
    text: str  # "" means no suggestion
    generation: Generation | None = None
    # Other suggestions (JobOptions.choices): distinct from ``text`` and from each other.
    alternatives: tuple[str, ...] = ()
    # How sure the model was of the first line (core/confidence.py; None: not known): below
    # completion.minConfidence, the scheduler hides it from typing.
    confidence: float | None = None


def _uses_crlf(text: str, offset: int) -> bool:
    """Whether the document's line ends near the cursor are CRLF."""
    nearby = text[max(0, offset - 2000) : offset + 2000]
    return "\r\n" in nearby


def finish(raw: str, generation: Generation, line: CursorLine, max_lines: int) -> str:
    """The suggestion to show for a finished (or cut short) generation."""
    if generation.stop_reason == "deadline" or (
        generation.stop_reason in ("max_tokens", "context_full") and "\n" in raw
    ):
        # Cut short: keep only whole lines rather than show half a line.
        raw = complete_lines(raw)
    return postprocess(raw, line, max_lines).text


class CompletionEngine:
    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    async def complete(
        self,
        text: str,
        offset: int,
        settings: CompletionSettings,
        cancel: CancelToken,
        progress: JobProgress | None = None,
        options: JobOptions | None = None,
    ) -> Suggestion:
        options = options or JobOptions()
        line = cursor_line(text, offset)
        max_lines = 1 if line.after.strip() else settings.max_lines
        job = CompletionJob(
            text=text,
            offset=offset,
            budget_tokens=settings.context_tokens,
            suffix_tokens=settings.suffix_tokens,
            max_tokens=settings.max_tokens,
            decode_seconds=settings.timeout_ms / 1000,
            should_stop=lambda so_far: postprocess(so_far, line, max_lines).truncated,
            progress=progress or JobProgress(),
            **{f.name: getattr(options, f.name) for f in dataclasses.fields(options)},
        )
        generation = await self.backend.generate(job, cancel)
        crlf = _uses_crlf(text, offset)
        threshold = settings.min_confidence
        judged = judge(generation.text, generation.probs, threshold)
        suggestion = _line_ends(finish(judged.text, generation, line, max_lines), crlf)
        others: list[str] = []
        for decoded in generation.alternatives:
            # An alternative is cut like the suggestion; a cut-short one keeps whole lines.
            raw = judge(decoded.text, decoded.probs, threshold).text
            branch = dataclasses.replace(generation, text=raw, stop_reason=decoded.stop_reason)
            other = _line_ends(finish(raw, branch, line, max_lines), crlf)
            if other and other != suggestion and other not in others:
                others.append(other)
        return Suggestion(suggestion, generation, tuple(others), judged.confidence)


def _line_ends(suggestion: str, crlf: bool) -> str:
    return suggestion.replace("\n", "\r\n") if suggestion and crlf else suggestion
