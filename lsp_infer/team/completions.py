"""Invoked completions from the team model (``team.completions``), the local model as the
fallback: a fill-in-the-middle backend over the team's OpenAI-compatible API."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from lsp_infer.config import CompletionSettings, TeamSettings
from lsp_infer.core.backend import CompletionJob, Generation
from lsp_infer.core.cancel import CancelToken
from lsp_infer.core.engine import CompletionEngine
from lsp_infer.core.prompts import TEMPLATES, prompt_text
from lsp_infer.core.window import fit_window
from lsp_infer.session import Session
from lsp_infer.team.client import TeamClient, TeamError
from lsp_infer.text import SHORT_CHARS_PER_TOKEN

log = logging.getLogger(__name__)


class TeamCompletionBackend:
    """Fill-in-the-middle completions from the team server. The prompt is cut by characters —
    there is no tokenizer here — and the team model's FIM markers go in as text: vLLM's
    tokenizer turns them into the special tokens."""

    name = "team"

    def __init__(self, client: TeamClient, template_name: str) -> None:
        self.client = client
        self.template = TEMPLATES[template_name]

    async def generate(self, job: CompletionJob, cancel: CancelToken) -> Generation:
        window = fit_window(
            job.text, job.offset, job.budget_tokens,
            lambda text: len(text) // SHORT_CHARS_PER_TOKEN + 1,
            suffix_tokens=job.suffix_tokens,
        )  # fmt: skip
        prompt = prompt_text(self.template.build(window.prefix, window.suffix, "psm"))
        request = asyncio.ensure_future(
            self.client.completion(
                prompt, job.max_tokens, stop=list(self.template.stop) or None, priority=0
            )
        )
        while not request.done():  # the cancel token is thread-side: poll it
            await asyncio.wait([request], timeout=0.05)
            if cancel.cancelled:
                request.cancel()  # closes the HTTP request: vLLM aborts the generation
                cancel.raise_if_cancelled()
        answer = request.result()
        return Generation(text=answer.text, stop_reason="end")


class TeamCompletions:
    """Explicitly invoked completions from the team model, when ``team.completions`` is on."""

    def __init__(self, session: Session, client_for: Callable[[TeamSettings], TeamClient]):
        self._session = session
        self._client_for = client_for
        self._unhealthy_until = 0.0

    async def suggest(
        self, uri: str, text: str, offset: int, team: TeamSettings, completion: CompletionSettings
    ) -> str | None:
        """The team model's suggestion, or None to fall back to the local model: not
        configured, excluded file, recently failing, too slow (team.completionTimeoutMs) or
        an error."""
        if not (team.completions and team.url) or time.monotonic() < self._unhealthy_until:
            return None
        if not self._session.policy().allowed(uri):
            return None  # excluded or outside the workspace: never sent
        backend = TeamCompletionBackend(self._client_for(team), team.fim_template)
        job = CompletionEngine(backend).complete(text, offset, completion, CancelToken())
        try:
            suggestion = await asyncio.wait_for(job, timeout=team.completion_timeout_ms / 1000)
        except (TeamError, asyncio.TimeoutError) as exc:
            log.info("team completion unavailable, using the local model: %s", exc or "timeout")
            self._unhealthy_until = time.monotonic() + 60
            return None
        return suggestion.text or None
