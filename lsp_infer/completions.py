"""The keystroke path: what answers a completion request, fastest first.

1. **Type-ahead**: the user typed the first characters of the suggestion on screen → the rest.
2. **Suggestion cache**: this exact cursor context was answered before → that answer.
3. **In-flight reuse**: a generation for this document is running and what the user typed
   since it started matches what it has produced so far → wait for it, answer the rest.
4. **A new generation**, which supersedes the document's previous one (latest wins).

After a suggestion is shown, an idle **precompute** starts the generation for the state where
the user accepted it; a keystroke that is not part of the suggestion cancels it.

Every request gets exactly one answer: a suggestion, an empty string (superseded, stale or
nothing to say), or asyncio.CancelledError for an explicit client cancel.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Protocol

from lsp_infer.backends import JobProgress
from lsp_infer.cache import (
    CursorContext,
    Shown,
    SuggestionCache,
    rest_after_typing,
    type_ahead,
    typed_since,
)
from lsp_infer.config import CompletionSettings, ContextSettings
from lsp_infer.context import MAX_CHARS_PER_TOKEN
from lsp_infer.engine import CompletionEngine, Suggestion
from lsp_infer.scheduling import Cancelled, CancelReason, CancelToken, ModelLane
from lsp_infer.stats import Stats

log = logging.getLogger(__name__)


@dataclass
class Flight:
    """One generation running (or queued) for a document."""

    uri: str
    reach: int  # characters the prompt can see on either side (from the settings)
    origin: CursorContext  # where typing that this generation continues starts
    origin_length: int  # document length at origin (to find the cursor after an insertion)
    lead: str  # text assumed typed at origin before the generation's own output (precompute)
    settings_key: Hashable
    precompute: bool  # background work (idle precompute or a context refresh), not a request
    extra: tuple[tuple[str, str], ...] = ()  # other files' code in the prompt (pinned)
    extra_tokens: int = 0  # its token budget
    keep_cache: bool = False  # a new pick's evaluation: stopped in its prompt, the cache is kept
    token: CancelToken = field(default_factory=CancelToken)
    progress: JobProgress = field(default_factory=JobProgress)
    task: asyncio.Future[Suggestion] | None = None
    waiters: int = 0
    kept_by_edit: bool = False  # an edit continued it: a request for it is on its way

    def stop(self, reason: CancelReason) -> None:
        """Cancel the generation: a running one stops at its next check (within a token or a
        decode chunk); one still queued for the lane is taken out of the queue, so a burst of
        superseded requests never piles up there."""
        self.token.cancel(reason)
        if self.progress.started_at is None and self.task is not None:
            self.task.cancel()

    def expected(self) -> str:
        """Everything this generation stands for, typed or generated, so far."""
        return self.lead + self.progress.text

    def typed(self, text: str, offset: int) -> str | None:
        typed = typed_since(self.origin, text, offset, self.reach)
        if typed is None or not self.expected().startswith(typed):
            return None
        return typed


class _Superseded(Exception):
    pass


class ContextSource(Protocol):
    """Where other files' code comes from (the server: open documents, the chunk ring)."""

    def pick(self, uri: str, text: str, offset: int, budget_tokens: int) -> Extra: ...

    def path(self, uri: str) -> str: ...


Extra = tuple[tuple[str, str], ...]


class Completions:
    def __init__(
        self, engine: CompletionEngine, lane: ModelLane, context: ContextSource | None = None
    ) -> None:
        self.engine = engine
        self.lane = lane
        self.context = context
        self.stats = Stats()
        self.cache = SuggestionCache()
        self._flights: dict[str, Flight] = {}
        self._shown: dict[str, Shown] = {}
        # Extra context is pinned per document while the user types (it comes first in the
        # prompt: a stable pick keeps the KV cache valid). It is picked when the user pauses
        # and evaluated then (prefetch), so no keystroke starts that work; the first automatic
        # request in a document has none yet (BENCHMARKS.md, "What extra context costs").
        self._pinned: dict[str, Extra] = {}
        # A new pick being evaluated in the background. It replaces the pinned one only once
        # its prompt is in the KV cache: a keystroke that stops the evaluation halfway keeps
        # the old pick and the old cache (the backend puts it back), so it costs no latency;
        # the evaluation carries on at the next pause.
        self._candidate: dict[str, tuple[Extra, Flight]] = {}
        self._idle: dict[str, asyncio.TimerHandle] = {}
        # Requests and edits per document, to see whether a newer one came during a debounce.
        self._activity: dict[str, int] = {}

    # -- requests -------------------------------------------------------------------

    async def suggest(
        self,
        uri: str,
        text: str,
        offset: int,
        settings: CompletionSettings,
        model_key: Hashable,
        is_current: Callable[[], bool] = lambda: True,
        context_settings: ContextSettings | None = None,
        explicit: bool = False,
    ) -> str:
        """The suggestion at ``offset``; "" when there is none or the request went stale
        (``is_current`` says whether the document is still the version ``text`` came from)."""
        started = time.monotonic()
        self.stats.requests += 1
        self._activity[uri] = self._activity.get(uri, 0) + 1
        self.stats.queue_depth_max = max(self.stats.queue_depth_max, self.lane.pending)
        self._yield_background(uri)
        reach = settings.context_tokens * MAX_CHARS_PER_TOKEN
        context = CursorContext.at(text, offset, reach)
        extra = self._extra(uri, text, offset, context_settings, explicit)
        budget = context_settings.extra_tokens if context_settings else 0
        key = self._key(model_key, settings, budget, extra)
        try:
            answer, source = await self._answer(
                uri, text, offset, context, key, settings, extra, budget, explicit
            )
        except _Superseded:
            self.stats.superseded += 1
            return ""
        except asyncio.CancelledError:
            self.stats.cancelled += 1
            raise
        if not is_current():  # computed for a version that is gone
            self.stats.superseded += 1
            return ""
        self.stats.answered += 1
        elapsed_ms = (time.monotonic() - started) * 1000
        self.stats.latency_ms.append(elapsed_ms)
        if source == "type-ahead":
            self.stats.type_ahead_ms.append(elapsed_ms)
        if answer:
            self.stats.suggested += 1
            self._shown[uri] = Shown(context, answer)
            if settings.precompute and uri not in self._flights:
                self._precompute(uri, text, offset, answer, key, settings, extra, budget)
        if context_settings is not None and context_settings.enabled:
            self._when_idle(uri, text, offset, settings, model_key, context_settings)
        return answer

    # -- extra context ----------------------------------------------------------------

    @staticmethod
    def _key(
        model_key: Hashable, settings: CompletionSettings, extra_tokens: int, extra: Extra
    ) -> Hashable:
        """Everything besides the cursor context that shapes a suggestion."""
        return (model_key, settings.max_tokens, settings.max_lines, settings.context_tokens,
                settings.suffix_tokens, extra_tokens, hash(extra))  # fmt: skip

    def _extra(
        self,
        uri: str,
        text: str,
        offset: int,
        context_settings: ContextSettings | None,
        explicit: bool,
    ) -> Extra:
        """The pinned extra context. A request the user made explicitly picks it now if
        there is none yet (they wait for the answer anyway); one made by typing does not."""
        if self.context is None or context_settings is None or not context_settings.enabled:
            return ()
        if (candidate := self._candidate.get(uri)) is not None:
            fresh, flight = candidate
            if flight.progress.prompt_done_at is not None:
                self._promote(uri)
            elif (
                self._flights.get(uri) is flight
                and not flight.token.cancelled
                and flight.typed(text, offset) is not None
            ):
                return fresh  # a request where the evaluation is under way waits for it
        if explicit and uri not in self._pinned:
            self._pinned[uri] = self.context.pick(uri, text, offset, context_settings.extra_tokens)
        return self._pinned.get(uri, ())

    def _when_idle(
        self,
        uri: str,
        text: str,
        offset: int,
        settings: CompletionSettings,
        model_key: Hashable,
        context_settings: ContextSettings,
    ) -> None:
        """After a pause, pick the extra context again; if it changed, compute the suggestion
        here with it in the background (which also puts the new prompt in the KV cache)."""
        self._cancel_idle(uri)

        loop = asyncio.get_running_loop()

        def refresh() -> None:
            self._idle.pop(uri, None)
            if self.context is None:
                return
            if uri in self._flights:
                # Background work (the precompute of the suggestion just shown) is still on
                # the lane: look again after another pause rather than give the pick up. A
                # keystroke meanwhile cancels this timer, as it does the first.
                self._idle[uri] = loop.call_later(context_settings.idle_ms / 1000, refresh)
                return
            fresh = self.context.pick(uri, text, offset, context_settings.extra_tokens)
            if fresh == self._pinned.get(uri, ()):
                self._candidate.pop(uri, None)
                return
            self.stats.context_refreshes += 1
            tried = self._candidate.get(uri)
            log.debug(
                "extra context for %s: evaluating %s pick, %d characters from %s",
                uri, "the stopped" if tried and tried[0] == fresh else "a new",
                sum(len(text) for _path, text in fresh), [path for path, _text in fresh],
            )  # fmt: skip
            reach = settings.context_tokens * MAX_CHARS_PER_TOKEN
            origin = CursorContext.at(text, offset, reach)
            key = self._key(model_key, settings, context_settings.extra_tokens, fresh)
            flight = self._start(
                uri, text, offset, origin, "", key, settings, precompute=True,
                extra=fresh, extra_tokens=context_settings.extra_tokens, keep_cache=True,
            )  # fmt: skip
            self._candidate[uri] = (fresh, flight)

        self._idle[uri] = loop.call_later(context_settings.idle_ms / 1000, refresh)

    def _cancel_idle(self, uri: str) -> None:
        if (timer := self._idle.pop(uri, None)) is not None:
            timer.cancel()

    def _yield_background(self, uri: str) -> None:
        """The user is active: background work for other documents stops (one model lane)."""
        for other, flight in list(self._flights.items()):
            if other != uri and flight.precompute:
                flight.stop(CancelReason.SUPERSEDED)

    async def _answer(
        self,
        uri: str,
        text: str,
        offset: int,
        context: CursorContext,
        key: Hashable,
        settings: CompletionSettings,
        extra: Extra = (),
        extra_tokens: int = 0,
        explicit: bool = False,
    ) -> tuple[str, str]:
        """The answer and where it came from."""
        reach = settings.context_tokens * MAX_CHARS_PER_TOKEN
        rest = type_ahead(self._shown.get(uri), text, offset, reach)
        if rest is not None:
            self.stats.type_ahead_hits += 1
            return rest, "type-ahead"
        cached = self.cache.get(context, key)
        if cached is not None:
            self.stats.cache_hits += 1
            return cached, "cache"
        flight = self._flights.get(uri)
        if flight is not None and flight.settings_key == key and not flight.token.cancelled:
            typed = flight.typed(text, offset)
            # A precompute answers once its whole lead (the shown suggestion) was typed;
            # before that, type-ahead answers from the suggestion itself.
            if typed is not None and typed.startswith(flight.lead):
                result = await self._wait_for(flight)
                rest = rest_after_typing(flight.lead + result, typed)
                if rest is not None:
                    if flight.precompute:
                        self.stats.precompute_hits += 1
                        return rest, "precompute"
                    self.stats.in_flight_hits += 1
                    return rest, "in-flight"
                # The generation went elsewhere than the user typed: start afresh.
        if not explicit and settings.debounce_ms:
            await self._settle(uri, settings.debounce_ms)
        flight = self._start(
            uri, text, offset, context, "", key, settings,
            precompute=False, extra=extra, extra_tokens=extra_tokens,
        )  # fmt: skip
        return await self._wait_for(flight), "model"

    async def _wait_for(self, flight: Flight) -> str:
        assert flight.task is not None
        flight.waiters += 1
        try:
            # shield: a waiter cancelled by its client must not cancel a generation that
            # another request (or the next keystroke) still wants.
            suggestion = await asyncio.shield(flight.task)
        except Cancelled:
            raise _Superseded from None
        except asyncio.CancelledError:
            if flight.task.cancelled() and flight.token.reason is not CancelReason.CLIENT:
                raise _Superseded from None  # the generation was dropped before it started
            if flight.waiters == 1 and not flight.kept_by_edit:
                flight.stop(CancelReason.CLIENT)  # nobody else wants it: stop the model
            raise
        finally:
            flight.waiters -= 1
        return suggestion.text

    async def _settle(self, uri: str, debounce_ms: int) -> None:
        """Wait a moment before starting the model for an automatic request: when the next
        keystroke comes that fast, the generation would be thrown away. 50 ms trims that
        waste; 150 ms trims more but shows far fewer suggestions while typing (BENCHMARKS.md,
        "Debounce")."""
        before = self._activity.get(uri)
        await asyncio.sleep(debounce_ms / 1000)
        if self._activity.get(uri) != before:
            raise _Superseded

    # -- generations ------------------------------------------------------------------

    def _start(
        self,
        uri: str,
        text: str,
        offset: int,
        origin: CursorContext,
        lead: str,
        key: Hashable,
        settings: CompletionSettings,
        *,
        precompute: bool,
        job_text: str | None = None,
        job_offset: int | None = None,
        extra: Extra = (),
        extra_tokens: int = 0,
        keep_cache: bool = False,
    ) -> Flight:
        previous = self._flights.get(uri)
        if previous is not None:
            previous.stop(CancelReason.SUPERSEDED)
        reach = settings.context_tokens * MAX_CHARS_PER_TOKEN
        flight = Flight(
            uri, reach, origin, len(text), lead, key, precompute, extra, extra_tokens, keep_cache
        )
        self._flights[uri] = flight
        flight.task = asyncio.ensure_future(
            self._run(
                flight,
                job_text if job_text is not None else text,
                job_offset if job_offset is not None else offset,
                settings,
            )
        )
        flight.task.add_done_callback(_consume_exception)
        return flight

    def _precompute(
        self,
        uri: str,
        text: str,
        offset: int,
        shown: str,
        key: Hashable,
        settings: CompletionSettings,
        extra: Extra = (),
        extra_tokens: int = 0,
    ) -> None:
        """Generate, in the background, what would follow if the user accepted ``shown``."""
        reach = settings.context_tokens * MAX_CHARS_PER_TOKEN
        accepted = text[:offset] + shown + text[offset:]
        if self.cache.get(CursorContext.at(accepted, offset + len(shown), reach), key) is not None:
            return  # already known
        origin = CursorContext.at(text, offset, reach)
        self._start(
            uri, text, offset, origin, shown, key, settings,
            precompute=True, job_text=accepted, job_offset=offset + len(shown),
            extra=extra, extra_tokens=extra_tokens,
        )  # fmt: skip

    async def _run(
        self, flight: Flight, text: str, offset: int, settings: CompletionSettings
    ) -> Suggestion:
        self.stats.generations += 1
        self.stats.generations_with_extra += bool(flight.extra)
        finished = False
        try:
            suggestion = await self.engine.complete(
                text, offset, settings, flight.token, flight.progress,
                extra=flight.extra,
                extra_tokens=flight.extra_tokens,
                keep_cache=flight.keep_cache,
                path=self.context.path(flight.uri) if self.context else "",
            )  # fmt: skip
            finished = True
            context = CursorContext.at(text, offset, flight.reach)
            self.cache.put(context, flight.settings_key, suggestion.text)
            return suggestion
        finally:
            self._account(flight)
            if self._flights.get(flight.uri) is flight:
                del self._flights[flight.uri]
            candidate = self._candidate.get(flight.uri)
            # A backend without a KV cache to speak of (HTTP) never reports its prompt done:
            # its finished run counts.
            done = flight.progress.prompt_done_at is not None or finished
            if candidate and candidate[1] is flight and done:
                self._promote(flight.uri)
            if flight.keep_cache:
                log.debug(
                    "extra context for %s: evaluation %s (%s)", flight.uri,
                    "done, in use" if done else "not done", flight.token.reason or "finished",
                )  # fmt: skip

    def _promote(self, uri: str) -> None:
        """The candidate pick's prompt is in the KV cache: requests use it from now on."""
        fresh, _flight = self._candidate.pop(uri)
        self._pinned[uri] = fresh
        self.stats.context_switches += 1

    def _account(self, flight: Flight) -> None:
        progress, token = flight.progress, flight.token
        self.stats.prompt_tokens_evaluated += progress.prompt_tokens_evaluated
        self.stats.prompt_tokens_reused += progress.prompt_tokens_reused
        self.stats.tokens_generated += progress.generated_tokens
        if flight.precompute:
            self.stats.tokens_precomputed += progress.generated_tokens
        elif token.cancelled or flight.waiters == 0:
            self.stats.tokens_wasted += progress.generated_tokens
        if token.cancelled_at is not None and progress.stopped_at is not None:
            self.stats.cancel_to_stop_ms.append((progress.stopped_at - token.cancelled_at) * 1000)

    # -- document events ------------------------------------------------------------

    def document_changed(self, uri: str, text: str) -> None:
        """An edit: keep a generation the edit continues, cancel any other (latest wins)."""
        self.stats.keystrokes += 1
        self._activity[uri] = self._activity.get(uri, 0) + 1
        self._yield_background(uri)
        self._cancel_idle(uri)  # not idle: the refresh waits for the next pause
        flight = self._flights.get(uri)
        if flight is None:
            return
        cursor = flight.origin.offset + len(text) - flight.origin_length
        if flight.typed(text, cursor) is not None:
            flight.kept_by_edit = True
        else:
            flight.stop(CancelReason.DOCUMENT_CHANGED)

    def document_closed(self, uri: str) -> None:
        flight = self._flights.pop(uri, None)
        if flight is not None:
            flight.stop(CancelReason.DOCUMENT_CLOSED)
        self._shown.pop(uri, None)
        self._pinned.pop(uri, None)
        self._candidate.pop(uri, None)
        self._activity.pop(uri, None)  # a request still settling sees the change: stale
        self._cancel_idle(uri)

    def forget_suggestions(self) -> None:
        """The model changed: suggestions shown or cached came from the old one. (Running
        generations are on the lane behind the reload and will use the new model.)"""
        self._shown.clear()
        self._pinned.clear()
        self._candidate.clear()
        self.cache.clear()

    def shutdown(self) -> None:
        for flight in self._flights.values():
            flight.stop(CancelReason.SHUTDOWN)
        self._flights.clear()


def _consume_exception(task: asyncio.Future[Suggestion]) -> None:
    """A generation nobody waited for (precompute, superseded) may end in an exception;
    retrieve it so asyncio does not log it as never retrieved."""
    if not task.cancelled():
        error = task.exception()
        if error is not None and not isinstance(error, Cancelled):
            log.warning("background generation failed: %s", error)
