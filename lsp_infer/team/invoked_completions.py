"""Invoked completions from the team model (``team.completions``), the local model as the
fallback: a fill-in-the-middle backend over the team's OpenAI-compatible API.

A request is for one document version. A keystroke in that document, or a newer request for
it, cancels it (its HTTP request is closed, so vLLM stops); an answer that arrives for a
version the user has moved past is dropped. A timeout or an error leaves this request to the
local model and nothing else: the next invoked completion asks the team again, unless the
router knows every replica is down (it probes them and brings them back).
"""

from __future__ import annotations

import asyncio
import logging
import time

from lsp_infer.config import CompletionSettings, TeamSettings
from lsp_infer.core.backend import CompletionJob, Generation
from lsp_infer.core.cancel import Cancelled, CancelReason, CancelToken
from lsp_infer.core.engine import CompletionEngine
from lsp_infer.core.prompts import TEMPLATES, prompt_text
from lsp_infer.core.window import fit_window
from lsp_infer.documents import Snapshot
from lsp_infer.session import Session
from lsp_infer.team.counters import CompletionCounters
from lsp_infer.team.http_client import Clients, TeamClient, TeamError
from lsp_infer.text import SHORT_CHARS_PER_TOKEN

log = logging.getLogger(__name__)

INTERACTIVE_PRIORITY = 0  # vLLM runs lower first: completions before refactors (10)
POLL_S = 0.02  # how often a request in flight looks at its cancel token


class TeamCompletionBackend:
    """Fill-in-the-middle completions from the team server. The prompt is cut by characters —
    there is no tokenizer here — and the team model's FIM markers go in as text: vLLM's
    tokenizer turns them into the special tokens."""

    name = "team"

    def __init__(self, client: TeamClient, template_name: str, affinity: str | None = None):
        self.client = client
        self.template = TEMPLATES[template_name]
        self.affinity = affinity  # the document: its replica has its prefix cached

    async def generate(self, job: CompletionJob, cancel: CancelToken) -> Generation:
        window = fit_window(
            job.text, job.offset, job.budget_tokens,
            lambda text: len(text) // SHORT_CHARS_PER_TOKEN + 1,
            suffix_tokens=job.suffix_tokens,
        )  # fmt: skip
        prompt = prompt_text(self.template.build(window.prefix, window.suffix, "psm"))
        request = asyncio.ensure_future(
            self.client.completion(
                prompt, job.max_tokens, stop=list(self.template.stop) or None,
                priority=INTERACTIVE_PRIORITY, affinity=self.affinity,
            )
        )  # fmt: skip
        try:
            while not request.done():  # the cancel token is thread-safe, not awaitable
                await asyncio.wait([request], timeout=POLL_S)
                cancel.raise_if_cancelled()
        finally:
            request.cancel()  # closes the HTTP request (vLLM aborts the generation)
        answer = request.result()
        return Generation(text=answer.text, stop_reason="end")


class TeamCompletions:
    """Explicitly invoked completions from the team model, when ``team.completions`` is on."""

    def __init__(self, session: Session, clients: Clients, counters: CompletionCounters):
        self._session = session
        self._clients = clients
        self.counters = counters
        self._tokens: dict[str, CancelToken] = {}

    async def suggest(
        self,
        snapshot: Snapshot,
        offset: int,
        team: TeamSettings,
        completion: CompletionSettings,
    ) -> str | None:
        """The team model's suggestion; "" when the document moved on meanwhile (nothing to
        show); None to let the local model answer: not configured, excluded file, no
        replica up, too slow (team.completionTimeoutMs), an error, or nothing to say."""
        client = self._client(snapshot.uri, team)
        if client is None:
            return None
        counters = self.counters
        counters.requests += 1
        token = self._token_for(snapshot.uri)
        started = time.monotonic()
        try:
            async with client.lease():
                backend = TeamCompletionBackend(client, team.fim_template, affinity=snapshot.uri)
                job = CompletionEngine(backend).complete(snapshot.text, offset, completion, token)
                suggestion = await asyncio.wait_for(job, timeout=team.completion_timeout_ms / 1000)
        except Cancelled:
            counters.stale += 1
            return ""  # a keystroke, or a newer request for this document
        except asyncio.CancelledError:
            counters.cancelled += 1  # $/cancelRequest: pygls answers RequestCancelled
            raise
        except (TeamError, asyncio.TimeoutError) as exc:
            counters.fallbacks += 1
            log.info("team completion unavailable, using the local model: %s", exc or "timeout")
            return None
        finally:
            if self._tokens.get(snapshot.uri) is token:
                del self._tokens[snapshot.uri]
        if not self._session.is_current(snapshot.uri, snapshot.version):
            counters.stale += 1
            return ""
        counters.answered += 1
        counters.latency_ms.append((time.monotonic() - started) * 1000)
        return suggestion.text or None

    def _client(self, uri: str, team: TeamSettings) -> TeamClient | None:
        """The client to ask, or None when the team cannot be asked about this document."""
        if not (team.completions and team.urls()):
            return None
        if not self._session.policy().allowed(uri):
            return None  # excluded or outside the workspace: never sent
        try:
            client = self._clients.get(team)
        except TeamError:
            return None
        if not any(replica.healthy for replica in client.replicas):
            self.counters.requests += 1
            self.counters.fallbacks += 1
            return None  # every replica is down and being probed
        return client

    def _token_for(self, uri: str) -> CancelToken:
        """A new request's cancel token; the document's previous one is superseded."""
        previous = self._tokens.get(uri)
        if previous is not None:
            previous.cancel(CancelReason.SUPERSEDED)
        token = self._tokens[uri] = CancelToken()
        return token

    def document_changed(self, uri: str) -> None:
        """A keystroke: the document's team completion in flight is stale."""
        if (token := self._tokens.get(uri)) is not None:
            token.cancel(CancelReason.DOCUMENT_CHANGED)
