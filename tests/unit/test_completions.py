"""The keystroke path's decisions, with a scripted stand-in for the model (fast, no model).

The real model is exercised end to end in tests/e2e; here the backend writes a scripted
answer one character every few milliseconds on the real model lane, so supersede, in-flight
reuse, type-ahead, caching and precompute can be checked exactly.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import replace

import pytest

from lsp_infer.config import CompletionSettings, ExtraContextSettings
from lsp_infer.core.backend import CompletionJob, Generation, StopReason
from lsp_infer.core.cancel import CancelReason, CancelToken
from lsp_infer.core.engine import CompletionEngine
from lsp_infer.local.completions import YIELD_MS, Completions, Flight, FlightKind, Tuning
from lsp_infer.local.lane import ModelLane

SETTINGS = CompletionSettings(precompute=False, debounce_ms=0)


class ScriptedBackend:
    name = "scripted"

    def __init__(
        self,
        lane: ModelLane,
        script: Callable[[str], str],
        char_seconds: float = 0.005,
        prompt_seconds: float = 0.0,
    ):
        self.lane = lane
        self.script = script
        self.char_seconds = char_seconds
        self.prompt_seconds = prompt_seconds  # the "prompt evaluation", cancellable
        self.jobs: list[str] = []  # text before the cursor, per generation run
        self.extras: list[tuple[tuple[str, str], ...]] = []  # other files' code, per run
        self.runs: list[CompletionJob] = []  # every job, as the backend got it
        # A job with a cold-start budget is answered from a smaller window, as the real
        # backend does when the cache holds none of the prompt, with this text instead.
        self.cold_answer: str | None = None
        # The output's probability, as the real backend reports each token's (None: none).
        self.probability: float | None = None

    async def generate(self, job: CompletionJob, cancel: CancelToken) -> Generation:
        return await self.lane.run(self._run, job, cancel)

    def _run(self, job: CompletionJob, cancel: CancelToken) -> Generation:
        cancel.raise_if_cancelled()
        before = job.text[: job.offset]
        self.jobs.append(before)
        self.extras.append(job.extra)
        self.runs.append(job)
        job.progress.started_at = time.monotonic()
        while time.monotonic() < job.progress.started_at + self.prompt_seconds:
            time.sleep(0.005)
            if cancel.cancelled:
                job.progress.stopped_at = time.monotonic()
                cancel.raise_if_cancelled()
        job.progress.prompt_done_at = time.monotonic()
        text = ""
        reduced = self.cold_answer is not None and job.cold_seconds is not None
        for char in self.cold_answer if reduced and self.cold_answer else self.script(before):
            time.sleep(self.char_seconds)
            if cancel.cancelled:
                job.progress.stopped_at = time.monotonic()
                cancel.raise_if_cancelled()
            text += char
            job.progress.text, job.progress.generated_tokens = text, len(text)
            if job.should_stop(text):
                return self._generation(job, text, "stopped")
        return self._generation(job, text, "end")

    def _generation(self, job: CompletionJob, text: str, reason: StopReason) -> Generation:
        reduced = self.cold_answer is not None and job.cold_seconds is not None
        # The whole output as one token: a one-line output's confidence is the probability.
        probs = () if self.probability is None or not text else ((len(text), self.probability),)
        return Generation(text, reason, generated_tokens=len(text), window_reduced=reduced,
                          probs=probs)  # fmt: skip


def add_script(before: str) -> str:
    if before.endswith("return a + b"):
        return "  # sum"
    if before.endswith("return a"):
        return " + b"
    return "a + b" if before.endswith("return ") else ""


DOC = "def add(a, b):\n    return \n"
CURSOR = DOC.index("return ") + len("return ")


def make(
    script=add_script, char_seconds: float = 0.005, prompt_seconds: float = 0.0
) -> tuple[Completions, ScriptedBackend]:
    lane = ModelLane()
    backend = ScriptedBackend(lane, script, char_seconds, prompt_seconds)
    return Completions(CompletionEngine(backend), lane), backend


def typed(text: str, offset: int, chars: str) -> tuple[str, int]:
    return text[:offset] + chars + text[offset:], offset + len(chars)


async def test_generation_then_cache_hit() -> None:
    completions, backend = make()
    assert await completions.suggest("u", DOC, CURSOR, Tuning(SETTINGS, "m")) == "a + b"
    assert await completions.suggest("u", DOC, CURSOR, Tuning(SETTINGS, "m")) == "a + b"
    assert len(backend.jobs) == 1
    assert completions.stats.cache_hits == 1 and completions.stats.answered == 2


async def test_type_ahead_answers_the_rest_without_the_model() -> None:
    completions, backend = make()
    await completions.suggest("u", DOC, CURSOR, Tuning(SETTINGS, "m"))
    text, offset = typed(DOC, CURSOR, "a +")
    completions.document_changed("u", text)
    assert await completions.suggest("u", text, offset, Tuning(SETTINGS, "m")) == " b"
    assert len(backend.jobs) == 1 and completions.stats.type_ahead_hits == 1


async def test_an_incompatible_edit_supersedes_the_running_generation() -> None:
    completions, _backend = make(char_seconds=0.05)
    first = asyncio.ensure_future(completions.suggest("u", DOC, CURSOR, Tuning(SETTINGS, "m")))
    await until(lambda: (going := flight_of(completions, "u")) is not None and going.progress.text)
    flight = running(completions, "u")
    text, _offset = typed(DOC, CURSOR, "x")  # not what the model is writing
    completions.document_changed("u", text)
    assert await first == ""  # answered, empty: superseded
    assert completions.stats.superseded == 1
    assert flight.task is not None
    await asyncio.wait([flight.task])  # the answer goes out at once; the model stops next
    assert completions.stats.tokens_wasted >= 1
    assert completions.stats.cancel_to_stop_ms  # the model stopped, and we measured how fast


async def test_a_keystroke_that_matches_the_output_so_far_reuses_the_generation() -> None:
    completions, backend = make(char_seconds=0.03)
    first = asyncio.ensure_future(completions.suggest("u", DOC, CURSOR, Tuning(SETTINGS, "m")))
    while (running := flight_of(completions, "u")) is None or not running.progress.text.startswith(
        "a "
    ):
        await asyncio.sleep(0.005)
    text, offset = typed(DOC, CURSOR, "a")
    completions.document_changed("u", text)  # kept: the model already wrote "a "
    second = await completions.suggest("u", text, offset, Tuning(SETTINGS, "m"))
    assert second == " + b"
    assert await first == "a + b"  # the first request still gets one answer
    assert len(backend.jobs) == 1 and completions.stats.in_flight_hits == 1


async def test_a_newer_request_supersedes_an_older_one_for_the_same_document() -> None:
    completions, _backend = make(
        script=lambda before: "value" if before.endswith("= ") else "", char_seconds=0.05
    )
    doc = "x = \ny = \n"
    first = asyncio.ensure_future(completions.suggest("u", doc, 4, Tuning(SETTINGS, "m")))
    await asyncio.sleep(0.06)
    # Another place, same file:
    second = await completions.suggest("u", doc, 9, Tuning(SETTINGS, "m"))
    assert await first == "" and second == "value"
    assert completions.stats.superseded == 1


async def test_client_cancel_stops_the_model_when_nobody_else_waits() -> None:
    completions, _backend = make(char_seconds=0.05)
    request = asyncio.ensure_future(completions.suggest("u", DOC, CURSOR, Tuning(SETTINGS, "m")))
    await asyncio.sleep(0.08)
    flight = running(completions, "u")
    request.cancel()
    with pytest.raises(asyncio.CancelledError):
        await request
    assert flight.token.reason is CancelReason.CLIENT
    assert completions.stats.cancelled == 1


async def test_precompute_prepares_the_suggestion_after_acceptance() -> None:
    completions, backend = make()
    settings = CompletionSettings(precompute=True, debounce_ms=0)
    assert await completions.suggest("u", DOC, CURSOR, Tuning(settings, "m")) == "a + b"
    accepted, offset = typed(DOC, CURSOR, "a + b")
    completions.document_changed("u", accepted)  # the editor inserts the accepted text
    assert await completions.suggest("u", accepted, offset, Tuning(settings, "m")) == "  # sum"
    assert backend.jobs[-1].endswith("return a + b")
    assert len(backend.jobs) == 2  # the precompute was the only other run
    assert completions.stats.precompute_hits + completions.stats.cache_hits == 1


async def test_typing_something_else_cancels_the_precompute() -> None:
    completions, _backend = make(char_seconds=0.05)
    settings = CompletionSettings(precompute=True, debounce_ms=0)
    await completions.suggest("u", DOC, CURSOR, Tuning(settings, "m"))
    precompute = running(completions, "u")
    text, _ = typed(DOC, CURSOR, "b")
    completions.document_changed("u", text)
    # Typed on the cursor's line: a soft cancel (the prompt up to that line stays valid).
    assert precompute.token.reason is CancelReason.TYPED_ON_LINE


async def test_closing_the_document_cancels_its_work() -> None:
    completions, _backend = make(char_seconds=0.05)
    request = asyncio.ensure_future(completions.suggest("u", DOC, CURSOR, Tuning(SETTINGS, "m")))
    await asyncio.sleep(0.06)
    completions.document_closed("u")
    assert await request == ""
    # Nothing per document outlives it (a day of opening files must not grow the server).
    assert "u" not in completions._documents


async def test_debounce_drops_a_request_overtaken_by_the_next_keystroke() -> None:
    completions, backend = make()
    settings = CompletionSettings(precompute=False, debounce_ms=100)
    first = asyncio.ensure_future(completions.suggest("u", DOC, CURSOR, Tuning(settings, "m")))
    await asyncio.sleep(0.02)
    text, offset = typed(DOC, CURSOR, "a")
    completions.document_changed("u", text)  # the next keystroke, within the debounce
    second = await completions.suggest("u", text, offset, Tuning(settings, "m"))
    assert await first == "" and second == " + b"
    assert len(backend.jobs) == 1  # the overtaken request never reached the model
    # An explicitly invoked request does not wait.
    started = asyncio.get_running_loop().time()
    await completions.suggest("v", DOC, CURSOR, Tuning(settings, "m"), explicit=True)
    assert asyncio.get_running_loop().time() - started < 5


class CountingContext:
    """Extra context that says how often it was picked."""

    def __init__(self, prepare_seconds: float = 0.0) -> None:
        self.picks = 0
        self.prepares = 0
        self.prepared = 0  # prepares that ran to their end
        self.prepare_seconds = prepare_seconds

    def pick(
        self, uri: str, text: str, offset: int, budget_tokens: int
    ) -> tuple[tuple[str, str], ...]:
        self.picks += 1
        return (("other.py", "def helper(): ..."),)

    async def prepare(
        self, uri: str, text: str, offset: int, settings: ExtraContextSettings
    ) -> None:
        self.prepares += 1
        await asyncio.sleep(self.prepare_seconds)
        self.prepared += 1

    def path(self, uri: str) -> str:
        return uri


def make_with_context(
    char_seconds: float = 0.005, prompt_seconds: float = 0.0, prepare_seconds: float = 0.0
) -> tuple[Completions, ScriptedBackend, CountingContext]:
    lane = ModelLane()
    backend = ScriptedBackend(lane, add_script, char_seconds, prompt_seconds)
    context = CountingContext(prepare_seconds)
    return Completions(CompletionEngine(backend), lane, context), backend, context


def flight_of(completions: Completions, uri: str) -> Flight | None:
    """The document's flight, queued or running (white-box: the scheduler's own record)."""
    document = completions._documents.get(uri)
    return document.flight if document is not None else None


def running(completions: Completions, uri: str) -> Flight:
    flight = flight_of(completions, uri)
    assert flight is not None, f"no flight for {uri}"
    return flight


async def until(condition: Callable[[], object], seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        await asyncio.sleep(0.05)


async def test_extra_context_is_picked_at_a_pause_never_while_typing() -> None:
    completions, backend, context = make_with_context()
    extra = ExtraContextSettings(idle_ms=100)
    # Typing: the first request does not pick (or wait for) other files' code ...
    assert await completions.suggest("u", DOC, CURSOR, Tuning(SETTINGS, "m", extra))
    assert context.picks == 0 and backend.extras == [()]
    # ... and a keystroke before the pause is over puts the pick off.
    text, offset = typed(DOC, CURSOR, "a")
    await asyncio.sleep(0.05)
    completions.document_changed("u", text)
    await asyncio.sleep(0.15)
    assert context.picks == 0
    # A pause: picked, and a background generation evaluates it.
    assert await completions.suggest("u", text, offset, Tuning(SETTINGS, "m", extra))
    await asyncio.sleep(0.3)
    assert context.picks == 1 and completions.stats.context_refreshes == 1
    assert backend.extras[-1] == (("other.py", "def helper(): ..."),)
    # The pick is pinned: the next keystroke's generation has it, without picking again
    # (the pause after it re-picks the same and evaluates nothing).
    runs = len(backend.jobs)
    text, offset = typed(text, offset, "x")
    completions.document_changed("u", text)
    await completions.suggest("u", text, offset, Tuning(SETTINGS, "m", extra))
    assert len(backend.jobs) == runs + 1 and backend.extras[-1] == backend.extras[-2]
    await asyncio.sleep(0.3)
    assert completions.stats.context_refreshes == 1 and len(backend.jobs) == runs + 1
    # A request the user makes picks at once.
    await completions.suggest("v", DOC, CURSOR, Tuning(SETTINGS, "m", extra), explicit=True)
    assert backend.extras[-1] == (("other.py", "def helper(): ..."),)


async def test_the_pause_asks_for_definitions_before_the_pick_and_a_keystroke_stops_it() -> None:
    # The pick after a pause comes after prepare (the editor's definitions), which takes
    # 200 ms here; a keystroke during it abandons that pick, as one during the pause does.
    completions, backend, context = make_with_context(prepare_seconds=0.2)
    extra = ExtraContextSettings(idle_ms=100)
    assert await completions.suggest("u", DOC, CURSOR, Tuning(SETTINGS, "m", extra))
    await asyncio.sleep(0.2)  # the pause is over: preparing, not picked yet
    assert context.prepares == 1 and context.prepared == 0 and context.picks == 0
    text, offset = typed(DOC, CURSOR, "a")
    completions.document_changed("u", text)
    await asyncio.sleep(0.3)
    assert context.prepared == 0 and context.picks == 0
    # The next pause prepares again, then picks.
    assert await completions.suggest("u", text, offset, Tuning(SETTINGS, "m", extra))
    await asyncio.sleep(0.5)
    assert context.prepares == 2 and context.prepared == 1 and context.picks == 1
    assert backend.extras[-1] == (("other.py", "def helper(): ..."),)


async def test_the_pick_waits_for_background_work_still_running_at_the_pause() -> None:
    # The precompute of the shown suggestion outlasts the pause (usual on 2 cores): the pick
    # is made once it ends, not given up until the next request.
    completions, backend, context = make_with_context(char_seconds=0.05)
    extra = ExtraContextSettings(idle_ms=100)
    settings = CompletionSettings(precompute=True, debounce_ms=0)
    assert await completions.suggest("u", DOC, CURSOR, Tuning(settings, "m", extra))
    precompute = running(completions, "u")
    # " # sum" at 50 ms a character: longer than the pause.
    assert precompute.kind is FlightKind.PRECOMPUTE
    await asyncio.sleep(0.15)
    assert context.picks == 0 and flight_of(completions, "u") is not None
    await until(lambda: completions.stats.context_refreshes)
    assert precompute.task is not None and precompute.task.done()
    assert not precompute.token.cancelled  # the pick waited; it did not stop the precompute
    assert context.picks == 1 and completions.stats.context_refreshes == 1
    refresh = running(completions, "u")
    assert refresh.task is not None
    await refresh.task
    assert backend.extras[-1] == (("other.py", "def helper(): ..."),)


async def test_a_keystroke_during_a_new_picks_evaluation_keeps_the_old_pick() -> None:
    # Evaluating a new pick takes longer than a short pause (seconds on 2 cores). It goes on
    # while the user types on the line; a request stops it only after a pause (YIELD_MS), and
    # must not pay for the rest: the old pick stays in use until a later pause finishes it.
    completions, backend, _context = make_with_context(prompt_seconds=1.0)
    extra = ExtraContextSettings(idle_ms=100)
    assert await completions.suggest("u", DOC, CURSOR, Tuning(SETTINGS, "m", extra))
    await asyncio.sleep(0.2)  # the pause: the new pick's evaluation starts
    evaluation = running(completions, "u")
    assert evaluation.kind is FlightKind.NEW_PICK and evaluation.shape.extra
    assert completions.stats.context_refreshes == 1
    runs = len(backend.jobs)
    text, offset = typed(DOC, CURSOR, "x")  # not what was suggested: the model runs
    completions.document_changed("u", text)  # typing resumes before it is done
    assert not evaluation.token.cancelled  # typing on the line: the evaluation goes on
    started = time.monotonic()
    await completions.suggest("u", text, offset, Tuning(SETTINGS, "m", extra))
    assert time.monotonic() - started >= YIELD_MS / 1000  # a pause stopped it, not a key
    assert evaluation.token.reason is CancelReason.SUPERSEDED
    assert len(backend.jobs) == runs + 1
    assert backend.extras[-1] == () and completions.stats.context_switches == 0
    # The next pause evaluates it again; once its prompt is done it is in use.
    await until(lambda: completions.stats.context_switches)
    assert completions.stats.context_refreshes == 2 and completions.stats.context_switches == 1
    text, offset = typed(text, offset, " ")
    completions.document_changed("u", text)
    await completions.suggest("u", text, offset, Tuning(SETTINGS, "m", extra))
    assert backend.extras[-1] == (("other.py", "def helper(): ..."),)


async def test_a_background_evaluation_goes_on_while_the_user_types() -> None:
    # Keystrokes faster than YIELD_MS neither stop the evaluation nor start the model.
    completions, backend, _context = make_with_context(prompt_seconds=1.5)
    extra = ExtraContextSettings(idle_ms=100)
    assert await completions.suggest("u", DOC, CURSOR, Tuning(SETTINGS, "m", extra))
    await asyncio.sleep(0.2)  # the pause: the new pick's evaluation starts
    evaluation = running(completions, "u")
    assert evaluation.kind is FlightKind.NEW_PICK
    runs = len(backend.jobs)
    text, offset = DOC, CURSOR
    requests = []
    for char in "xyz":
        text, offset = typed(text, offset, char)
        completions.document_changed("u", text)
        request = completions.suggest("u", text, offset, Tuning(SETTINGS, "m", extra))
        requests.append(asyncio.ensure_future(request))
        await asyncio.sleep(0.1)
    assert [await r for r in requests[:-1]] == ["", ""]  # overtaken by the next keystroke
    assert not evaluation.token.cancelled and len(backend.jobs) == runs
    await requests[-1]  # the pause after the last key: it stopped the evaluation and ran
    assert evaluation.token.reason is CancelReason.SUPERSEDED and len(backend.jobs) == runs + 1


# -- the cursor at rest (lspInfer/warm) ---------------------------------------------------


async def test_a_warm_evaluates_the_whole_prompt_in_the_background_and_decodes_one_token() -> None:
    completions, backend = make()
    tuning = Tuning(SETTINGS, "m")
    assert completions.warm("u", DOC, CURSOR, tuning)
    await until(lambda: flight_of(completions, "u") is None)
    job = backend.runs[-1]
    # The whole window (no cold-start size), kept in the cache, one token decoded.
    assert (job.max_tokens, job.keep_cache, job.background, job.cold_seconds) == (
        1, True, True, None,
    )  # fmt: skip
    assert completions.stats.warms == 1
    # The request there is the user's own generation: a warm's output is never shown.
    assert await completions.suggest("u", DOC, CURSOR, tuning) == "a + b"
    assert backend.runs[-1].max_tokens == SETTINGS.max_tokens and len(backend.runs) == 2


async def test_no_warm_where_the_suggestion_is_known_or_the_document_has_work() -> None:
    completions, backend = make(char_seconds=0.05)
    tuning = Tuning(SETTINGS, "m")
    request = asyncio.ensure_future(completions.suggest("u", DOC, CURSOR, tuning))
    await until(lambda: flight_of(completions, "u") is not None)
    assert not completions.warm("u", DOC, CURSOR, tuning)  # a request is running
    assert await request == "a + b"
    assert not completions.warm("u", DOC, CURSOR, tuning)  # its answer is cached there
    assert completions.stats.warms == 0 and len(backend.runs) == 1


async def test_a_warm_elsewhere_replaces_the_precompute_of_the_last_suggestion() -> None:
    completions, _backend = make(char_seconds=0.05)
    tuning = Tuning(CompletionSettings(precompute=True, debounce_ms=0), "m")
    assert await completions.suggest("u", DOC, CURSOR, tuning) == "a + b"
    precompute = running(completions, "u")
    assert precompute.kind is FlightKind.PRECOMPUTE
    assert completions.warm("u", DOC, 0, tuning)  # the cursor moved to the file's start
    assert precompute.token.reason is CancelReason.SUPERSEDED
    assert running(completions, "u").kind is FlightKind.WARM
    # A warm does not replace a warm (or any whole-window evaluation) of the document.
    assert not completions.warm("u", DOC, 4, tuning)
    completions.shutdown()


async def test_a_request_supersedes_a_warm_whose_prompt_is_not_done() -> None:
    # It does not wait for the warm: the warm's stopped part is the backend's to park.
    completions, backend = make(prompt_seconds=2.0)
    tuning = Tuning(SETTINGS, "m")
    assert completions.warm("u", DOC, CURSOR, tuning)
    warm = running(completions, "u")
    await asyncio.sleep(0.1)
    request = asyncio.ensure_future(completions.suggest("u", DOC, CURSOR, tuning))
    await until(lambda: warm.token.cancelled)
    assert warm.token.reason is CancelReason.SUPERSEDED
    assert await request == "a + b"
    assert [job.max_tokens for job in backend.runs] == [1, SETTINGS.max_tokens]


async def test_a_warm_in_another_document_stops_background_work_in_the_first() -> None:
    completions, _backend = make(prompt_seconds=2.0)
    tuning = Tuning(SETTINGS, "m")
    assert completions.warm("a", DOC, CURSOR, tuning)
    first = running(completions, "a")
    assert completions.warm("b", DOC, CURSOR, tuning)  # the user switched to b
    assert first.token.reason is CancelReason.SUPERSEDED
    assert not running(completions, "b").token.cancelled
    completions.shutdown()


# -- invoked means whole; confidence -------------------------------------------------------

COLD = CompletionSettings(precompute=False, debounce_ms=0, cold_start_ms=1500)


async def test_an_invoked_request_gets_the_whole_window_typing_a_cold_starts() -> None:
    completions, backend = make()
    await completions.suggest("u", DOC, CURSOR, Tuning(COLD, "m"))
    assert backend.runs[-1].cold_seconds == 1.5 and not backend.runs[-1].invoked
    for choices in (1, 3):  # with and without choices to cycle through
        settings = CompletionSettings(precompute=False, cold_start_ms=1500, choices=choices)
        text, offset = typed(DOC, CURSOR, "x" * choices)  # a new place: no cached answer
        await completions.suggest("u", text, offset, Tuning(settings, "m"), explicit=True)
        assert backend.runs[-1].cold_seconds is None and backend.runs[-1].invoked


async def test_an_invoked_request_does_not_answer_from_a_cold_windows_suggestion() -> None:
    completions, backend = make()
    backend.cold_answer = "a - b"  # what the smaller window writes
    typing = Tuning(COLD, "m")
    assert await completions.suggest("u", DOC, CURSOR, typing) == "a - b"
    # The whole window is evaluated in the background after it, and its suggestion kept.
    await until(lambda: not any(d.flight for d in completions._documents.values()))
    assert backend.runs[-1].cold_seconds is None
    invoked = Tuning(CompletionSettings(precompute=False, cold_start_ms=1500, choices=1), "m")
    assert await completions.suggest("u", DOC, CURSOR, invoked, explicit=True) == "a + b"
    # At a place only the small window answered, an invoked request runs the model again.
    completions.cache.clear()
    for document in completions._documents.values():
        document.shown = None
    assert await completions.suggest("u", DOC, CURSOR, typing) == "a - b"
    completions.document_closed("u")  # no background evaluation this time
    runs = len(backend.runs)
    assert await completions.suggest("u", DOC, CURSOR, typing) == "a - b"  # typing: cached
    assert len(backend.runs) == runs
    assert await completions.suggest("u", DOC, CURSOR, invoked, explicit=True) == "a + b"
    assert len(backend.runs) == runs + 1 and backend.runs[-1].cold_seconds is None


async def test_an_unsure_suggestion_is_hidden_when_typing_shown_when_invoked() -> None:
    completions, backend = make()
    backend.probability = 0.1
    unsure = CompletionSettings(precompute=False, debounce_ms=0, min_confidence=0.3)
    answer = await completions.answer("u", DOC, CURSOR, Tuning(unsure, "m"))
    assert answer.text == "" and answer.hidden and answer.confidence == pytest.approx(0.1)
    assert completions.stats.hidden == 1 and completions.stats.suggested == 0
    invoked = CompletionSettings(precompute=False, min_confidence=0.3, choices=1)
    answer = await completions.answer("u", DOC, CURSOR, Tuning(invoked, "m"), explicit=True)
    assert answer.text == "a + b" and not answer.hidden
    # At 0 the same output is shown as it was written.
    off = CompletionSettings(precompute=False, debounce_ms=0, min_confidence=0.0)
    answer = await completions.answer("u", DOC, CURSOR, Tuning(off, "other"))
    assert answer.text == "a + b" and answer.confidence == pytest.approx(0.1)


async def test_a_cold_starts_suggestion_is_held_to_the_stricter_threshold() -> None:
    completions, backend = make()
    backend.cold_answer, backend.probability = "a - b", 0.2  # the small window, fairly unsure
    settings = replace(COLD, min_confidence=0.1, cold_start_confidence=0.3)
    answer = await completions.answer("u", DOC, CURSOR, Tuning(settings, "m"))
    assert answer.text == "" and answer.hidden and completions.stats.hidden == 1
    assert backend.runs[-1].cold_seconds == 1.5
    # The whole window is evaluated right after; at the same confidence its answer is shown.
    await until(lambda: not any(d.flight for d in completions._documents.values()))
    assert backend.runs[-1].cold_seconds is None
    answer = await completions.answer("u", DOC, CURSOR, Tuning(settings, "m"))
    assert answer.text == "a + b" and not answer.hidden
    # At 0 the cold start's suggestion is shown as before.
    completions.cache.clear()
    completions.document_closed("u")
    trusting = Tuning(replace(settings, cold_start_confidence=0.0), "m")
    assert await completions.suggest("u", DOC, CURSOR, trusting) == "a - b"


def offer_recorder() -> tuple[list[tuple[str, int]], Callable[[str, str, int], bool]]:
    offered: list[tuple[str, int]] = []

    def offer(uri: str, text: str, offset: int) -> bool:
        offered.append((uri, offset))
        return True

    return offered, offer


def with_other_file_seen(char_seconds: float = 0.005) -> ScriptedBackend:
    """A model that writes another line once it sees the other file's code."""
    backend = ScriptedBackend(
        ModelLane(),
        lambda before: "helper()" if backend.extras[-1] else "a + b",
        char_seconds,
    )
    return backend


async def test_a_new_picks_suggestion_is_offered_where_the_cursor_rests() -> None:
    offered, offer = offer_recorder()
    backend = with_other_file_seen()
    completions = Completions(CompletionEngine(backend), backend.lane, CountingContext(), offer)
    typing = Tuning(SETTINGS, "m", ExtraContextSettings(idle_ms=100))
    assert await completions.suggest("u", DOC, CURSOR, typing) == "a + b"  # no pick yet
    # The user rests: the pause's pick is evaluated, and the editor told to ask again ...
    await until(lambda: offered)
    assert offered == [("u", CURSOR)] and completions.stats.offered_again == 1
    # ... which the cache answers with the new pick's suggestion.
    runs = len(backend.runs)
    assert await completions.suggest("u", DOC, CURSOR, typing) == "helper()"
    assert len(backend.runs) == runs


async def test_no_new_pick_is_offered_once_the_user_typed() -> None:
    offered, offer = offer_recorder()
    backend = with_other_file_seen(char_seconds=0.05)
    completions = Completions(CompletionEngine(backend), backend.lane, CountingContext(), offer)
    typing = Tuning(SETTINGS, "m", ExtraContextSettings(idle_ms=100))
    assert await completions.suggest("u", DOC, CURSOR, typing) == "a + b"
    await until(lambda: backend.extras[-1])  # the new pick's evaluation started
    text, _offset = typed(DOC, CURSOR, "a")
    completions.document_changed("u", text)
    await until(lambda: flight_of(completions, "u") is None)
    await asyncio.sleep(0.1)
    assert offered == [] and completions.stats.offered_again == 0
