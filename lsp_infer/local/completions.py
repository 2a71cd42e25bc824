"""The keystroke path: what answers a completion request, fastest first.

1. **Type-ahead**: the user typed the first characters of the suggestion on screen → the rest.
2. **Suggestion cache**: this exact cursor view was answered before → that answer.
3. **In-flight reuse**: a generation for this document is running and what the user typed
   since it started matches what it has produced so far → wait for it, answer the rest.
4. **A new generation**, which supersedes the document's previous one (latest wins).

After a suggestion is shown, an idle **precompute** starts the generation for the state where
the user accepted it; a keystroke that is not part of the suggestion cancels it.

Every request gets exactly one answer: a suggestion, an empty string (superseded, stale or
nothing to say), or asyncio.CancelledError for an explicit client cancel.

What the scheduler knows of a document lives in one record (``DocumentState``: its flight, the
suggestion shown, the pinned and the candidate pick, the idle timer), dropped whole when the
document closes. A flight's ``FlightKind`` says what it is for, and ``Flight.options`` turns
the kind into what the backend needs to know (ARCHITECTURE.md, "Glossary", defines flight,
pick, shape, settled, lead, whole window and parked).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any, Protocol

from lsp_infer.config import CompletionSettings, ExtraContextSettings
from lsp_infer.core.backend import JobOptions, JobProgress
from lsp_infer.core.cancel import Cancelled, CancelReason, CancelToken
from lsp_infer.core.confidence import unsure
from lsp_infer.core.engine import CompletionEngine, Suggestion
from lsp_infer.local.lane import ModelLane
from lsp_infer.local.suggestion_reuse import (
    CursorView,
    Shown,
    SuggestionCache,
    edited_on_cursor_line,
    rest_after_typing,
    settled_length,
    type_ahead,
    typed_since,
)
from lsp_infer.stats import Stats
from lsp_infer.text import MAX_CHARS_PER_TOKEN

log = logging.getLogger(__name__)

# While a background evaluation runs for a document, a request stops it only after the user
# has not typed for this long: a typist's keystrokes come faster, so the evaluation goes on
# while they type (measured: bench/HISTORY.md, "Switching files").
YIELD_MS = 250

Extra = tuple[tuple[str, str], ...]  # other files' code for the prompt: (path, text) pairs


@dataclass(frozen=True)
class Tuning:
    """What shapes every suggestion until the settings change."""

    completion: CompletionSettings
    model_key: Hashable = ()  # the model's settings: the same settings, the same model
    extra_context: ExtraContextSettings | None = None  # None: no extra context

    @property
    def extra_enabled(self) -> bool:
        return self.extra_context is not None and self.extra_context.enabled


@dataclass(frozen=True)
class Shape:
    """One request's shape, built once: its settings, the extra context pinned for it and
    that context's budget, how far the prompt can see around the cursor, and the cache key
    of all of these (everything besides the cursor view that shapes a suggestion)."""

    settings: CompletionSettings
    extra: Extra
    extra_tokens: int
    reach: int  # characters the prompt can see on either side of the cursor
    key: Hashable

    @classmethod
    def of(cls, tuning: Tuning, extra: Extra = ()) -> Shape:
        settings = tuning.completion
        budget = tuning.extra_context.extra_tokens if tuning.extra_context else 0
        key = (tuning.model_key, settings.max_tokens, settings.max_lines, settings.context_tokens,
               settings.suffix_tokens, settings.min_confidence, budget, hash(extra))  # fmt: skip
        return cls(settings, extra, budget, settings.context_tokens * MAX_CHARS_PER_TOKEN, key)


class FlightKind(Enum):
    """What a flight is for. Only REQUEST and INVOKED have someone waiting for them."""

    REQUEST = "request"  # typing asked (an automatic request)
    INVOKED = "invoked"  # the user asked: the whole window, and choices when set
    PRECOMPUTE = "precompute"  # what follows the shown suggestion, if it is accepted
    WARM = "warm"  # the whole window's prompt where the cursor rests (lspInfer/warm)
    WHOLE_WINDOW = "whole window"  # after a cold start's answer, the whole window's prompt
    NEW_PICK = "new pick"  # a new extra-context pick's prompt, before it comes into use

    @property
    def background(self) -> bool:
        """Speculative work, which any request supersedes."""
        return self not in (FlightKind.REQUEST, FlightKind.INVOKED)

    @property
    def evaluates_prompt(self) -> bool:
        """Work for a prompt the next requests need (a warm, the whole window, a new pick):
        it goes on while the user types on the line, and a keystroke that stops it inside
        its prompt parks the part done and puts the cache back (JobOptions.keep_cache)."""
        return self in (FlightKind.WARM, FlightKind.WHOLE_WINDOW, FlightKind.NEW_PICK)


@dataclass
class Flight:
    """One generation running (or queued) for a document."""

    uri: str
    shape: Shape
    origin: CursorView  # where typing that this generation continues starts
    origin_length: int  # document length at origin (to find the cursor after an insertion)
    kind: FlightKind = FlightKind.REQUEST
    lead: str = ""  # text assumed typed at origin before the generation's own output
    choices: int = 1  # an invoked request's: that many suggestions to cycle through
    token: CancelToken = field(default_factory=CancelToken)
    progress: JobProgress = field(default_factory=JobProgress)
    task: asyncio.Future[Suggestion] | None = None
    # Done when the generation is stopped: its waiters are answered at once, even while the
    # model still finishes the part of the prompt a soft cancel lets it finish.
    released: asyncio.Future[None] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )
    waiters: int = 0
    kept_by_edit: bool = False  # an edit continued it: a request for it is on its way
    launched_at: float = field(default_factory=time.monotonic)

    @classmethod
    def at(cls, uri: str, shape: Shape, text: str, offset: int, **options: Any) -> Flight:
        """A generation whose typing starts at ``offset`` of ``text``."""
        return cls(uri, shape, CursorView.at(text, offset, shape.reach), len(text), **options)

    def options(self, path: str) -> JobOptions:
        """What the backend needs to know of this flight besides the text: the whole table of
        what each kind means for the job."""
        kind, cold_ms = self.kind, self.shape.settings.cold_start_ms
        return JobOptions(
            document=self.uri,
            extra=self.shape.extra,
            extra_tokens=self.shape.extra_tokens,
            path=path,
            keep_cache=kind.evaluates_prompt,
            stable_before=self.stable_before,
            # Background work evaluates the whole window: that is how a cold start warms up.
            # A request the user invoked gets the whole window too: they wait for it anyway,
            # and a cold start's suggestions are worse (bench/HISTORY.md, "Cold start").
            cold_seconds=cold_ms / 1000 if cold_ms and kind is FlightKind.REQUEST else None,
            choices=self.choices,
            background=kind.background,
            invoked=kind is FlightKind.INVOKED,
        )

    def stop(self, reason: CancelReason) -> None:
        """Cancel the generation: a running one stops at its next check (within a token or a
        decode chunk); one still queued for the lane is taken out of the queue, so a burst of
        superseded requests never piles up there."""
        self.token.cancel(reason)
        if self.progress.started_at is None and self.task is not None:
            self.task.cancel()
        if not self.released.done():
            self.released.set_result(None)

    def supersede(self) -> None:
        """A newer generation for the document takes over. One stopped softly stays soft:
        what it still evaluates is the newer one's start too."""
        self.stop(self.token.reason if self.token.reason else CancelReason.SUPERSEDED)

    @property
    def settled(self) -> int:
        """Characters at the start of the cursor's line that typing there leaves alone (its
        words before the last one). A new pick's evaluation goes on through any edit on the
        line (see document_changed), so for it only the text before the line counts."""
        if self.kind.evaluates_prompt:
            return 0
        return settled_length(self._cursor_line())

    @property
    def stable_before(self) -> int:
        """Where the part of the prompt that typing changes starts (an offset in the text the
        job runs on): the prompt before it stays valid while the user types on the line."""
        return self.origin.offset - len(self._cursor_line()) + self.settled

    def _cursor_line(self) -> str:
        before = self.origin.before
        return before[before.rfind("\n") + 1 :]

    def expected(self) -> str:
        """Everything this generation stands for, typed or generated, so far."""
        return self.lead + self.progress.text

    def typed(self, text: str, offset: int) -> str | None:
        typed = typed_since(self.origin, text, offset, self.shape.reach)
        if typed is None or not self.expected().startswith(typed):
            return None
        return typed

    async def wait(self) -> Suggestion:
        """Its suggestion; _Superseded when it is stopped (it may still be finishing its
        prompt) or dropped before it started."""
        task = self.task
        assert task is not None
        self.waiters += 1
        try:
            # asyncio.wait never cancels what it waits for: a waiter cancelled by its client
            # must not cancel a generation another request (or the next keystroke) still wants.
            await asyncio.wait((task, self.released), return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            if self.waiters == 1 and not self.kept_by_edit:
                self.stop(CancelReason.CLIENT)  # nobody else wants it: stop the model
            raise
        finally:
            self.waiters -= 1
        if not task.done() or task.cancelled() or isinstance(task.exception(), Cancelled):
            raise _Superseded
        return task.result()


@dataclass
class DocumentState:
    """What the scheduler keeps for one document, dropped whole when it closes."""

    flight: Flight | None = None  # its generation, queued or running (latest wins)
    shown: Shown | None = None  # the suggestion last shown
    # Extra context is pinned per document while the user types (it comes first in the
    # prompt: a stable pick keeps the KV cache valid). It is picked when the user pauses
    # and evaluated then (prefetch), so no keystroke starts that work; the first automatic
    # request in a document has none yet (bench/HISTORY.md, "What extra context costs").
    pinned: Extra | None = None
    # A new pick being evaluated in the background. It replaces the pinned one only once
    # its prompt is in the KV cache: a keystroke that stops the evaluation halfway keeps
    # the old pick and the old cache (the backend puts it back), so it costs no latency;
    # the evaluation carries on at the next pause.
    candidate: tuple[Extra, Flight] | None = None
    idle: asyncio.TimerHandle | None = None  # the pick's refresh after a pause
    # That refresh asking the editor for definitions first (at most context.definitionsMs).
    preparing: asyncio.Future[None] | None = None
    # Requests and edits, to see whether a newer one came during a debounce.
    activity: int = 0
    last_edit: float = 0.0  # monotonic time of the last edit
    # Answered from a smaller window (a cold start): the whole one is evaluated in the
    # background once the answer is out.
    cold: bool = False

    def cancel_idle(self) -> None:
        if self.idle is not None:
            self.idle.cancel()
            self.idle = None
        if self.preparing is not None:
            self.preparing.cancel()  # stops the wait only: the editor's answer is still kept
            self.preparing = None

    def promote(self) -> None:
        """The candidate pick's prompt is in the KV cache: requests use it from now on."""
        assert self.candidate is not None
        self.pinned, self.candidate = self.candidate[0], None

    def evaluated(self, flight: Flight, finished: bool) -> bool:
        """``flight`` ended; whether it brought the candidate pick into use (its prompt got
        evaluated)."""
        # A backend without a KV cache to speak of (HTTP) never reports its prompt done:
        # its finished run counts.
        done = flight.progress.prompt_done_at is not None or finished
        if flight.kind.evaluates_prompt:
            log.debug(
                "%s for %s: evaluation %s (%s)", flight.kind.value, flight.uri,
                "done" if done else "not done", flight.token.reason or "finished",
            )  # fmt: skip
        if self.candidate is not None and self.candidate[1] is flight and done:
            self.promote()
            return True
        return False

    def forget_suggestions(self) -> None:
        """The model changed: what was shown and picked came with the old one."""
        self.shown = self.pinned = self.candidate = None

    def quiet_ms(self, debounce_ms: int) -> float:
        """How long an automatic request waits before it starts the model: the debounce; and
        while a background evaluation of a prompt runs (a new pick, or the whole window after
        a cold start), until the user has not typed for YIELD_MS — that evaluation goes on
        while the user types, and only a pause stops it for the request."""
        flight = self.flight
        if flight is None or not flight.kind.evaluates_prompt or flight.token.cancelled:
            return debounce_ms
        since_edit = (time.monotonic() - self.last_edit) * 1000
        return max(debounce_ms, YIELD_MS - since_edit)


@dataclass(frozen=True)
class Answer:
    """What a request gets: the suggestion ("" for none), where it came from (type-ahead,
    cache, in-flight, precompute, model; superseded when it went stale), whether other
    files' code was in its prompt, how sure the model was of its first line (None: not
    known here), and whether it was hidden for that (completion.minConfidence)."""

    text: str
    source: str
    with_extra: bool = False
    choices: tuple[str, ...] = ()  # other suggestions, for an invoked request (best first)
    confidence: float | None = None
    hidden: bool = False


@dataclass(frozen=True)
class _Found:
    """An answer found on the keystroke path, before the request's bookkeeping."""

    text: str
    source: str
    choices: tuple[str, ...] = ()
    confidence: float | None = None  # the first line's, where known
    whole: bool = True  # from the whole window, not a cold start's


# A finished suggestion's text and its first line's confidence (None: not known).
Cached = tuple[str, float | None]


def _offer_if_better(
    offer: OfferAgain | None,
    stats: Stats,
    document: DocumentState,
    flight: Flight,
    text: str,
    offset: int,
    answered: str,
) -> None:
    """Once ``flight`` (background work at the cursor: the whole window after a cold start's
    answer, a new pick) has its suggestion, ``offer`` it to the editor when it is one typing
    would be shown and not the one ``answered`` (most often a cold window's was hidden), so
    that it asks again while the cursor rests there; the request finds it in the cache. Not
    once anything was typed or asked in the document, or it was closed."""
    if offer is None:
        return
    threshold = flight.shape.settings.min_confidence
    activity = document.activity
    assert flight.task is not None

    def done(task: asyncio.Future[Suggestion]) -> None:
        if task.cancelled() or task.exception() is not None or document.activity != activity:
            return
        found = task.result()
        if found.text and found.text != answered and not unsure(found.confidence, threshold):
            stats.offered_again += offer(flight.uri, text, offset)

    flight.task.add_done_callback(done)


def _cold_key(key: Hashable) -> Hashable:
    """Where a suggestion from a cold start's smaller window is cached: apart from the whole
    window's, which an invoked request looks up alone."""
    return ("cold window", key)


class _Superseded(Exception):
    pass


class ExtraContextSource(Protocol):
    """Where other files' code comes from (extra_context.ExtraContext: the open documents and
    the chunk ring)."""

    def pick(self, uri: str, text: str, offset: int, budget_tokens: int) -> Extra: ...

    async def prepare(
        self, uri: str, text: str, offset: int, settings: ExtraContextSettings
    ) -> None:
        """Before a pause's pick: fetch what the pick needs from elsewhere (the editor's
        definitions), within the settings' budget; never raises."""

    def path(self, uri: str) -> str: ...


class OfferAgain(Protocol):
    """Tells the editor that a better suggestion is ready at ``offset`` of ``text`` (the
    document ``uri`` as it was answered), so that it asks again; whether it was told."""

    def __call__(self, uri: str, text: str, offset: int) -> bool: ...


class Completions:
    def __init__(
        self,
        engine: CompletionEngine,
        lane: ModelLane,
        extra_source: ExtraContextSource | None = None,
        offer: OfferAgain | None = None,
    ) -> None:
        self.engine = engine
        self.offer = offer
        self.lane = lane
        self.extra_source = extra_source
        self.stats = Stats()
        self.cache: SuggestionCache[Cached] = SuggestionCache()
        # An invoked request's choices, so asking again (cycling) gives the same ones in order.
        self.choices: SuggestionCache[tuple[str, ...]] = SuggestionCache(64)
        self._documents: dict[str, DocumentState] = {}

    def _document(self, uri: str) -> DocumentState:
        return self._documents.setdefault(uri, DocumentState())

    # -- requests -------------------------------------------------------------------

    async def suggest(
        self,
        uri: str,
        text: str,
        offset: int,
        tuning: Tuning,
        *,
        explicit: bool = False,
        is_current: Callable[[], bool] = lambda: True,
    ) -> str:
        """The suggestion's text (see ``answer``)."""
        answer = await self.answer(
            uri, text, offset, tuning, explicit=explicit, is_current=is_current
        )
        return answer.text

    async def answer(
        self,
        uri: str,
        text: str,
        offset: int,
        tuning: Tuning,
        *,
        explicit: bool = False,
        is_current: Callable[[], bool] = lambda: True,
    ) -> Answer:
        """The suggestion at ``offset``; empty when there is none or the request went stale
        (``is_current`` says whether the document is still the version ``text`` came from).
        ``explicit``: the user asked for it (not typing): no debounce, extra context now."""
        started = time.monotonic()
        self.stats.requests += 1
        self._document(uri).activity += 1
        self.stats.queue_depth_max = max(self.stats.queue_depth_max, self.lane.pending)
        self._yield_background(uri)
        shape = Shape.of(tuning, self._extra(uri, text, offset, tuning, explicit))
        try:
            if explicit and shape.settings.choices > 1:
                found = await self._choices(uri, text, offset, shape)
            else:
                found = await self._answer(uri, text, offset, shape, explicit)
        except _Superseded:
            self.stats.superseded += 1
            return Answer("", "superseded")
        except asyncio.CancelledError:
            self.stats.cancelled += 1
            raise
        if not is_current():  # computed for a version that is gone
            self.stats.superseded += 1
            return Answer("", "superseded")
        # The model doubts its first line: typing gets nothing rather than that; a user who
        # invoked a suggestion gets it (completion.minConfidence). A cold start's smaller
        # window is held to a stricter threshold (completion.coldStartConfidence): it guesses
        # more, and the whole window, evaluated next, answers the next request (and the
        # editor is told to ask again when its suggestion is ready: _offer_if_better).
        threshold = max(
            shape.settings.min_confidence,
            0.0 if found.whole else shape.settings.cold_start_confidence,
        )
        hidden = bool(found.text) and not explicit and unsure(found.confidence, threshold)
        answer = "" if hidden else found.text
        self.stats.answer(answer, found.source, (time.monotonic() - started) * 1000, hidden)
        self._after_answer(uri, text, offset, shape, answer, found.whole)
        if tuning.extra_enabled:
            self._when_idle(uri, text, offset, tuning, answer)
        return Answer(answer, found.source, bool(shape.extra), found.choices, found.confidence,
                      hidden)  # fmt: skip

    def _after_answer(
        self, uri: str, text: str, offset: int, shape: Shape, answer: str, whole: bool
    ) -> None:
        """The background work an answer starts: after a cold start's answer, the whole
        window; after a suggestion, its precompute (what follows if it is accepted)."""
        document = self._document(uri)
        if answer:
            document.shown = Shown(CursorView.at(text, offset, shape.reach), answer, whole)
        if document.cold and document.flight is None:
            # Answered from a smaller window: evaluate the whole one now, in the background,
            # stopped by a keystroke and carried on at the next pause (as a new pick is).
            flight = Flight.at(uri, shape, text, offset, kind=FlightKind.WHOLE_WINDOW)
            self._launch(flight, text, offset)
            _offer_if_better(self.offer, self.stats, document, flight, text, offset, answer)
        elif answer and shape.settings.precompute and document.flight is None:
            # What would follow if the user accepted the suggestion, unless already known.
            accepted, cursor = text[:offset] + answer + text[offset:], offset + len(answer)
            if self.cache.get(CursorView.at(accepted, cursor, shape.reach), shape.key) is None:
                kind = FlightKind.PRECOMPUTE
                flight = Flight.at(uri, shape, text, offset, lead=answer, kind=kind)
                self._launch(flight, accepted, cursor)
        document.cold = False

    # -- the cursor at rest -------------------------------------------------------------

    def warm(self, uri: str, text: str, offset: int, tuning: Tuning) -> bool:
        """The editor says the cursor rests at ``offset`` (lspInfer/warm: a file switched to,
        the cursor moved): evaluate the whole window's prompt there in the background, so the
        first suggestion there reuses it instead of starting cold. Whether work was started.

        The warm decodes one token: what the user will type is unknown, and its prompt is what
        takes seconds. Its shape differs from a request's, so no request waits for it: one
        that comes before its prompt is done supersedes it (the part done stays in the cache,
        or is parked when the cache goes back to what it held, and the request carries on from
        it when the rest fits its cold-start budget), and one that comes after reuses it."""
        running = self._document(uri).flight
        if running is not None and running.kind is not FlightKind.PRECOMPUTE:
            return False  # a request, or a prompt being evaluated
        # (A precompute of what follows the last suggestion is replaced: the cursor moved.)
        shape = Shape.of(tuning, self._extra(uri, text, offset, tuning, explicit=False))
        if self.cache.get(CursorView.at(text, offset, shape.reach), shape.key) is not None:
            return False  # the suggestion there is known
        self._yield_background(uri)  # the user's attention moved here
        self.stats.warms += 1
        prompt_only = replace(tuning, completion=replace(tuning.completion, max_tokens=1))
        warm_shape = Shape.of(prompt_only, shape.extra)
        flight = Flight.at(uri, warm_shape, text, offset, kind=FlightKind.WARM)
        self._launch(flight, text, offset)
        return True

    # -- extra context ----------------------------------------------------------------

    def _extra(self, uri: str, text: str, offset: int, tuning: Tuning, explicit: bool) -> Extra:
        """The pinned extra context. A request the user made explicitly picks it now if
        there is none yet (they wait for the answer anyway); one made by typing does not."""
        if self.extra_source is None or not tuning.extra_enabled:
            return ()
        assert tuning.extra_context is not None
        document = self._document(uri)
        if (candidate := document.candidate) is not None:
            fresh, flight = candidate
            if flight.progress.prompt_done_at is not None:
                document.promote()
                self.stats.context_switches += 1
            elif (
                document.flight is flight
                and not flight.token.cancelled
                and flight.typed(text, offset) is not None
            ):
                return fresh  # a request where the evaluation is under way waits for it
        if explicit and document.pinned is None:
            budget = tuning.extra_context.extra_tokens
            document.pinned = self.extra_source.pick(uri, text, offset, budget)
        return document.pinned or ()

    def _when_idle(self, uri: str, text: str, offset: int, tuning: Tuning, answered: str) -> None:
        """After a pause, pick the extra context again; if it changed, compute the suggestion
        here with it in the background (which also puts the new prompt in the KV cache).
        ``answered``: the suggestion the request before the pause got."""
        document = self._document(uri)
        document.cancel_idle()
        assert tuning.extra_context is not None
        pause = tuning.extra_context.idle_ms / 1000
        loop = asyncio.get_running_loop()

        def refresh() -> None:
            document.idle = None
            if document.flight is not None:
                # Background work (the precompute of the suggestion just shown) is still on
                # the lane: look again after another pause rather than give the pick up. A
                # keystroke meanwhile cancels this timer, as it does the first.
                document.idle = loop.call_later(pause, refresh)
                return
            self._evaluate_new_pick(uri, text, offset, tuning, answered)

        async def prepare_then_refresh() -> None:
            assert self.extra_source is not None and tuning.extra_context is not None
            await self.extra_source.prepare(uri, text, offset, tuning.extra_context)
            document.preparing = None
            refresh()

        def start() -> None:
            document.idle = None
            # A keystroke during the wait cancels it (cancel_idle), as it does the timer.
            document.preparing = asyncio.ensure_future(prepare_then_refresh())

        document.idle = loop.call_later(pause, start)

    def _evaluate_new_pick(
        self, uri: str, text: str, offset: int, tuning: Tuning, answered: str
    ) -> None:
        """Pick the extra context; if it differs from the pinned one, evaluate it in the
        background (a NEW_PICK flight) as the candidate to put in use once done. Its
        suggestion is offered where the cursor still rests when it is not the one
        ``answered``: it is the suggestion an invoked request gets, which picks at once, and
        without it the user who rests saw a worse one (bench/HISTORY.md, "The rested path
        and the new pick")."""
        if self.extra_source is None or tuning.extra_context is None:
            return
        document = self._document(uri)
        fresh = self.extra_source.pick(uri, text, offset, tuning.extra_context.extra_tokens)
        if fresh == (document.pinned or ()):
            document.candidate = None
            return
        self.stats.context_refreshes += 1
        tried = document.candidate
        log.debug(
            "extra context for %s: evaluating %s pick, %d characters from %s",
            uri, "the stopped" if tried and tried[0] == fresh else "a new",
            sum(len(text) for _path, text in fresh), [path for path, _text in fresh],
        )  # fmt: skip
        flight = Flight.at(uri, Shape.of(tuning, fresh), text, offset, kind=FlightKind.NEW_PICK)
        self._launch(flight, text, offset)
        document.candidate = (fresh, flight)
        _offer_if_better(self.offer, self.stats, document, flight, text, offset, answered)

    def _yield_background(self, uri: str) -> None:
        """The user is active: background work for other documents stops (one model lane),
        and so does the prompt another document's soft cancel was finishing."""
        for other, document in list(self._documents.items()):
            flight = document.flight
            if other != uri and flight and (flight.kind.background or flight.token.soft):
                flight.stop(CancelReason.SUPERSEDED)

    async def _answer(
        self, uri: str, text: str, offset: int, shape: Shape, explicit: bool
    ) -> _Found:
        """The answer and where it came from. An explicit request takes nothing that may
        come from a cold start's smaller window: it waits for the whole window."""
        shown = self._document(uri).shown
        rest = type_ahead(shown, text, offset, shape.reach)
        if rest is not None and shown is not None and (shown.whole or not explicit):
            self.stats.type_ahead_hits += 1
            return _Found(rest, "type-ahead", whole=shown.whole)
        view = CursorView.at(text, offset, shape.reach)
        cached = self.cache.get(view, shape.key)
        whole = cached is not None
        if cached is None and not explicit:
            cached = self.cache.get(view, _cold_key(shape.key))
        if cached is not None:
            self.stats.cache_hits += 1
            return _Found(cached[0], "cache", confidence=cached[1], whole=whole)
        reused = await self._from_flight(uri, text, offset, shape, explicit)
        if reused is not None:
            return reused
        if not explicit:
            await self._settle(uri, shape.settings.debounce_ms)
        kind = FlightKind.INVOKED if explicit else FlightKind.REQUEST
        flight = self._launch(Flight.at(uri, shape, text, offset, kind=kind), text, offset)
        return _found(await flight.wait(), "model")

    async def _choices(self, uri: str, text: str, offset: int, shape: Shape) -> _Found:
        """An invoked request: up to ``completion.choices`` suggestions from the whole
        window, the same ones in the same order when asked again at the same place (editors
        ask again to cycle)."""
        view = CursorView.at(text, offset, shape.reach)
        cached = self.choices.get(view, shape.key)
        if cached is not None:
            self.stats.cache_hits += 1
            return _Found(cached[0], "cache", cached[1:])
        flight = Flight.at(uri, shape, text, offset, kind=FlightKind.INVOKED,
                           choices=shape.settings.choices)  # fmt: skip
        return _found(await self._launch(flight, text, offset).wait(), "model")

    async def _from_flight(
        self, uri: str, text: str, offset: int, shape: Shape, explicit: bool = False
    ) -> _Found | None:
        """The rest of the document's running generation, when what the user typed since it
        started is what it has produced so far (None otherwise). An explicit request does
        not wait for a typing request's generation: it may answer from a cold window."""
        flight = self._document(uri).flight
        if flight is None or flight.shape.key != shape.key or flight.token.cancelled:
            return None
        if explicit and flight.kind is FlightKind.REQUEST:
            return None
        typed = flight.typed(text, offset)
        # A precompute answers once its whole lead (the shown suggestion) was typed;
        # before that, type-ahead answers from the suggestion itself.
        if typed is None or not typed.startswith(flight.lead):
            return None
        suggestion = await flight.wait()
        rest = rest_after_typing(flight.lead + suggestion.text, typed)
        if rest is None:
            return None  # the generation went elsewhere than the user typed: start afresh
        if flight.kind.background:
            self.stats.precompute_hits += 1
        else:
            self.stats.in_flight_hits += 1
        source = "precompute" if flight.kind.background else "in-flight"
        return replace(_found(suggestion, source), text=rest)

    async def _settle(self, uri: str, debounce_ms: int) -> None:
        """Wait a moment before starting the model for an automatic request: when the next
        keystroke comes that fast, the generation would be thrown away. 50 ms trims that
        waste; 150 ms trims more but shows far fewer suggestions while typing (bench/HISTORY.md,
        "Debounce"). Longer while a prompt is evaluated for the document (quiet_ms)."""
        document = self._document(uri)
        quiet_ms = document.quiet_ms(debounce_ms)
        if quiet_ms <= 0:
            return
        before = document.activity
        await asyncio.sleep(quiet_ms / 1000)
        if self._documents.get(uri) is not document or document.activity != before:
            raise _Superseded

    # -- generations ------------------------------------------------------------------

    def _launch(self, flight: Flight, text: str, offset: int) -> Flight:
        """Start ``flight`` on ``text`` at ``offset``, superseding the document's previous
        generation (latest wins)."""
        document = self._document(flight.uri)
        if document.flight is not None:
            document.flight.supersede()
        document.flight = flight
        flight.task = asyncio.ensure_future(self._run(flight, text, offset))
        flight.task.add_done_callback(_consume_exception)
        return flight

    async def _run(self, flight: Flight, text: str, offset: int) -> Suggestion:
        self.stats.generations += 1
        self.stats.generations_with_extra += bool(flight.shape.extra)
        finished = False
        path = self.extra_source.path(flight.uri) if self.extra_source else ""
        try:
            suggestion = await self.engine.complete(
                text, offset, flight.shape.settings, flight.token, flight.progress,
                flight.options(path),
            )  # fmt: skip
            finished = True
            reduced = suggestion.generation is not None and suggestion.generation.window_reduced
            if reduced:
                self.stats.reduced_windows += 1
                self._document(flight.uri).cold = True
            view = CursorView.at(text, offset, flight.shape.reach)
            key = _cold_key(flight.shape.key) if reduced else flight.shape.key
            self.cache.put(view, key, (suggestion.text, suggestion.confidence))
            if flight.choices > 1:
                every = (suggestion.text, *suggestion.alternatives)
                self.choices.put(view, flight.shape.key, every)
            return suggestion
        finally:
            _account(self.stats, flight)
            document = self._documents.get(flight.uri)
            if document is not None:
                if document.flight is flight:
                    document.flight = None
                self.stats.context_switches += document.evaluated(flight, finished)

    # -- document events ------------------------------------------------------------

    def document_changed(self, uri: str, text: str) -> None:
        """An edit: keep a generation the edit continues, cancel any other (latest wins)."""
        self.stats.keystrokes += 1
        document = self._document(uri)
        document.activity += 1
        document.last_edit = time.monotonic()
        self._yield_background(uri)
        document.cancel_idle()  # not idle: the refresh waits for the next pause
        flight = document.flight
        if flight is None:
            return
        cursor = flight.origin.offset + len(text) - flight.origin_length
        if flight.typed(text, cursor) is not None:
            flight.kept_by_edit = True
        elif edited_on_cursor_line(flight.origin, flight.origin_length, text, flight.settled):
            if flight.kind.evaluates_prompt and flight.progress.prompt_done_at is None:
                return  # its prompt up to the line stays valid: it goes on (see quiet_ms)
            flight.stop(CancelReason.TYPED_ON_LINE)
        else:
            flight.stop(CancelReason.DOCUMENT_CHANGED)

    def document_closed(self, uri: str) -> None:
        """Everything of the document goes; its work stops, and a request still settling
        finds its record gone (stale)."""
        document = self._documents.pop(uri, None)
        if document is None:
            return
        document.activity += 1  # what background work would offer is for nobody now
        if document.flight is not None:
            document.flight.stop(CancelReason.DOCUMENT_CLOSED)
        document.cancel_idle()

    def forget_suggestions(self) -> None:
        """The model changed: suggestions shown or cached came from the old one. (Running
        generations are on the lane behind the reload and will use the new model.)"""
        for document in self._documents.values():
            document.forget_suggestions()
        self.cache.clear()
        self.choices.clear()

    def shutdown(self) -> None:
        for document in self._documents.values():
            if document.flight is not None:
                document.flight.stop(CancelReason.SHUTDOWN)
                document.flight = None


def _account(stats: Stats, flight: Flight) -> None:
    """A flight's work in the counters, whatever became of it."""
    progress, token = flight.progress, flight.token
    if log.isEnabledFor(logging.DEBUG):
        log.debug("%s", _timeline(flight))
    stats.prompt_tokens_evaluated += progress.prompt_tokens_evaluated
    stats.prompt_tokens_reused += progress.prompt_tokens_reused
    stats.tokens_generated += progress.generated_tokens
    if flight.kind.background:
        stats.tokens_precomputed += progress.generated_tokens
    elif token.cancelled or flight.waiters == 0:
        stats.tokens_wasted += progress.generated_tokens
    # A soft cancel may stop late on purpose (it finished the prompt up to the last word).
    stopped = progress.stopped_at
    if token.cancelled_at is not None and stopped is not None and not progress.finished_stable:
        stats.cancel_to_stop_ms.append((stopped - token.cancelled_at) * 1000)


def _found(suggestion: Suggestion, source: str) -> _Found:
    generation = suggestion.generation
    whole = generation is None or not generation.window_reduced
    return _Found(suggestion.text, source, suggestion.alternatives, suggestion.confidence,
                  whole)  # fmt: skip


def _timeline(flight: Flight) -> str:
    """Where one generation's time went, for the debug log."""
    progress, now = flight.progress, time.monotonic()
    started = progress.started_at
    prompt_done = progress.prompt_done_at
    queued = (started or now) - flight.launched_at
    prompt = (prompt_done or progress.stopped_at or now) - started if started else 0.0
    decode = now - prompt_done if prompt_done else 0.0
    token = flight.token
    stop = ""
    if token.cancelled_at is not None and progress.stopped_at is not None:
        stop = f", stopped {(progress.stopped_at - token.cancelled_at) * 1000:.0f} ms after"
    return (
        f"{flight.kind.value} {flight.uri}: queued {queued * 1000:.0f} ms, prompt "
        f"{progress.prompt_tokens} tokens ({progress.prompt_tokens_reused} reused, "
        f"{progress.prompt_tokens_evaluated} evaluated) {prompt * 1000:.0f} ms, decoded "
        f"{progress.generated_tokens} tokens {decode * 1000:.0f} ms; "
        f"{token.reason.name if token.reason else 'finished'}{stop}"
        f"{' (its prompt up to the last word finished)' if progress.finished_stable else ''}"
    )


def _consume_exception(task: asyncio.Future[Suggestion]) -> None:
    """A generation nobody waited for (precompute, superseded) may end in an exception;
    retrieve it so asyncio does not log it as never retrieved."""
    if not task.cancelled():
        error = task.exception()
        if error is not None and not isinstance(error, Cancelled):
            log.warning("background generation failed: %s", error)
