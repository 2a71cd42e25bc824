"""The llama.cpp backend's KV cache around background evaluations, with the real model.

A new pick of extra context is evaluated in the background (a ``keep_cache`` job). Stopped
inside its prompt, it must leave the cache as the keystroke path left it, and carry on from
where it stopped the next time it runs.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Iterator
from types import TracebackType

import pytest

from lsp_infer.config import ModelSettings
from lsp_infer.core.backend import CompletionJob, JobProgress
from lsp_infer.core.cancel import Cancelled, CancelReason, CancelToken
from lsp_infer.local.kv.states import KvState
from lsp_infer.local.lane import ModelLane
from lsp_infer.local.llama_cpp import LlamaCppBackend
from lsp_infer.local.suggestion_reuse import settled_length

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
def backend(loaded_backend: LlamaCppBackend) -> LlamaCppBackend:
    return loaded_backend


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
            while backend.cache.length < cancel_at_tokens and not work.progress.prompt_done_at:
                time.sleep(0.001)
            token.cancel(CancelReason.DOCUMENT_CHANGED)

        threading.Thread(target=keystroke, daemon=True).start()
    return backend.lane.run_blocking(backend.generate_blocking, work, token).text


def traceback_of(error: BaseException) -> Iterator[TracebackType]:
    tb = error.__traceback__
    while tb is not None:
        yield tb
        tb = tb.tb_next


def test_a_stopped_background_evaluation_leaves_the_cache_as_it_was(backend: LlamaCppBackend):
    typing = job()
    expected = run(backend, typing)
    assert typing.progress.prompt_tokens > 32  # more than the backend would not keep
    background = job(extra=(("helpers.py", OTHER),), keep_cache=True)
    with pytest.raises(Cancelled) as stopped:
        run(backend, background, cancel_at_tokens=256)  # one batch of n_batch
    # Its exception lives on with its task (a stopped pick is kept to resume): none of the
    # frames it keeps may hold a copy of the cache.
    frame_locals = [tb.tb_frame.f_locals for tb in traceback_of(stopped.value)]
    assert len(frame_locals) > 2
    assert not [v for each in frame_locals for v in each.values() if isinstance(v, KvState)]
    assert background.progress.prompt_done_at is None, "the cancel came after the prompt"
    assert background.progress.prompt_tokens > 800  # the other file is in it
    assert background.progress.prompt_tokens_evaluated >= 256
    assert backend.cache._states.as_json()["bytesAside"] == 0  # the copy it set aside is put back
    # The keystroke after it finds its own prompt cached, and the same answer.
    again = job()
    assert run(backend, again) == expected
    assert again.progress.prompt_tokens_reused == again.progress.prompt_tokens - 1
    # The background evaluation, run again, starts where it stopped.
    resumed = job(extra=(("helpers.py", OTHER),), keep_cache=True)
    answer = run(backend, resumed)
    assert resumed.progress.prompt_tokens_reused >= background.progress.prompt_tokens_evaluated
    # ... and answers as a fresh evaluation of the same prompt does.
    assert backend.cache is not None
    backend.lane.run_blocking(backend.cache.clear)  # an empty cache
    fresh = job(extra=(("helpers.py", OTHER),))
    assert run(backend, fresh) == answer
    assert fresh.progress.prompt_tokens_reused == 0


# -- documents' KV states, soft cancels and shifts -------------------------------------------

SECOND = (
    '"""Formatting numbers for reports."""\n\n\ndef percent(part, whole):\n'
    '    """part as a percentage of whole, rounded."""\n    if not whole:\n        return '
)


@pytest.fixture
def switching() -> Iterator[LlamaCppBackend]:
    """A backend that keeps documents' states (model.stateCacheMb)."""
    backend = LlamaCppBackend(ModelLane())
    backend.lane.run_blocking(backend.load_blocking, ModelSettings(state_cache_mb=64))
    assert backend.state == "ready", backend.error
    yield backend
    backend.close()


def doc_job(
    document: str, text: str, offset: int | None = None, budget: int = 512, stable_before: int = 0
) -> CompletionJob:
    return CompletionJob(
        text=text, offset=len(text) if offset is None else offset, budget_tokens=budget,
        suffix_tokens=128, max_tokens=8, decode_seconds=30, progress=JobProgress(),
        document=document, stable_before=stable_before,
    )  # fmt: skip


def generate(backend: LlamaCppBackend, work: CompletionJob) -> str:
    return backend.lane.run_blocking(backend.generate_blocking, work, CancelToken()).text


def test_switching_away_and_back_restores_the_documents_prompt(switching: LlamaCppBackend):
    first = doc_job("file:///a.py", DOCUMENT)
    expected = generate(switching, first)
    generate(switching, doc_job("file:///b.py", SECOND))  # replaces the live cache
    back = doc_job("file:///a.py", DOCUMENT)
    assert generate(switching, back) == expected
    # All but the last token came from the kept state instead of being evaluated again.
    assert back.progress.prompt_tokens_reused == back.progress.prompt_tokens - 1
    assert switching.cache._states.stats.restores == 1 and switching.cache._states.stats.saves >= 1
    # Closing the document frees its entry.
    switching.lane.run_blocking(switching.forget, "file:///a.py")
    assert switching.cache._states.get("file:///a.py", "live", switching.cache.model) is None


def test_a_state_that_does_not_restore_is_dropped_and_the_prompt_evaluated_afresh(
    switching: LlamaCppBackend,
):
    expected = generate(switching, doc_job("file:///a.py", DOCUMENT))
    generate(switching, doc_job("file:///b.py", SECOND))
    cache = switching.cache
    assert cache is not None
    kept = switching.cache._states.get("file:///a.py", "live", cache.model)
    assert kept is not None
    broken = dataclasses.replace(kept, data=bytes(len(kept.data) // 2))  # truncated bytes
    switching.cache._states.put("file:///a.py", "live", broken)
    again = doc_job("file:///a.py", DOCUMENT)
    assert generate(switching, again) == expected  # never a wrong answer
    assert again.progress.prompt_tokens_reused == 0
    assert switching.cache._states.stats.failures == 1
    assert switching.cache._states.get("file:///a.py", "live", cache.model) is None


def test_the_cache_set_aside_during_background_work_counts_against_the_bound(
    switching: LlamaCppBackend,
):
    states = switching.cache._states
    generate(switching, doc_job("file:///b.py", SECOND))
    generate(switching, doc_job("file:///a.py", DOCUMENT))  # b's prompt is kept now
    kept_b = states.get("file:///b.py", "live", switching.cache.model)
    assert kept_b is not None
    # Room for b's state and a little: a's cache, set aside while a background evaluation
    # of a runs, does not fit beside it.
    states.resize(kept_b.nbytes + 4096)
    background = dataclasses.replace(
        job(extra=(("helpers.py", OTHER),), keep_cache=True), document="file:///a.py"
    )
    seen: list[dict[str, int]] = []

    def sample() -> None:
        while switching.cache.length < 256 and not background.progress.prompt_done_at:
            time.sleep(0.001)
        seen.append(states.as_json())

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    generate(switching, background)
    sampler.join(10)
    during = seen[0]
    assert during["bytesAside"] > 0 and during["bytesHeld"] == during["bytesAside"]
    assert during["entries"] == 0 and states.stats.evictions >= 1  # b made room for it
    assert states.as_json()["bytesAside"] == 0 and states.bytes_held <= states.max_bytes


def soft_cancelled(
    backend: LlamaCppBackend, text: str, stable_before: int, reason: CancelReason
) -> tuple[CompletionJob, int]:
    """A request on ``text`` cancelled as it began, from an empty cache: the job, and the
    tokens the cache holds after it stopped."""
    backend.lane.run_blocking(backend.cache.clear)
    cancelled = doc_job("file:///a.py", text, stable_before=stable_before)
    with pytest.raises(Cancelled):
        run_cancelled(backend, cancelled, reason)
    return cancelled, backend.cache.length


def test_a_soft_cancel_finishes_the_prompt_up_to_the_cursors_line(switching: LlamaCppBackend):
    line_start = DOCUMENT.rfind("\n") + 1
    cancelled, held = soft_cancelled(switching, DOCUMENT, line_start, CancelReason.TYPED_ON_LINE)
    assert cancelled.progress.finished_stable
    # All of the prompt but the cursor's line, although cancelled as it began.
    assert cancelled.progress.prompt_tokens - 8 <= held < cancelled.progress.prompt_tokens
    # The next keystroke's request starts from there.
    nxt = doc_job("file:///a.py", DOCUMENT + "j", stable_before=line_start)
    generate(switching, nxt)
    assert nxt.progress.prompt_tokens_reused >= held - 1
    # A hard cancel at the same point stops at once.
    hard, _ = soft_cancelled(switching, DOCUMENT, line_start, CancelReason.DOCUMENT_CHANGED)
    assert not hard.progress.finished_stable and switching.cache.length < held


def test_a_soft_cancel_mid_line_finishes_the_prompt_up_to_the_last_word(
    switching: LlamaCppBackend,
):
    # A long line being typed: its words before the last one are finished too, so the pause
    # at its end evaluates only the last word (not the whole line again).
    line = "        pattern = re.compile(r'(?P<delim>[^\\w\\n\"\\'])(?P<space> ?)(?P<quo"
    text = DOCUMENT + "\n" + line
    line_start = len(text) - len(line)
    settled = line_start + settled_length(line)
    _, held_at_line = soft_cancelled(switching, text, line_start, CancelReason.TYPED_ON_LINE)
    mid_line, held = soft_cancelled(switching, text, settled, CancelReason.TYPED_ON_LINE)
    assert mid_line.progress.finished_stable
    assert held >= held_at_line + 10, (held_at_line, held)  # the regex's settled words
    assert held < mid_line.progress.prompt_tokens
    # The next keystroke's request starts from there.
    nxt = doc_job("file:///a.py", text + "t", stable_before=settled)
    generate(switching, nxt)
    assert nxt.progress.prompt_tokens_reused >= held - 1
    assert nxt.progress.prompt_tokens - nxt.progress.prompt_tokens_reused <= 8


def run_cancelled(backend: LlamaCppBackend, work: CompletionJob, reason: CancelReason) -> None:
    """Run ``work`` with a cancel for ``reason`` as soon as it has started."""
    token = CancelToken()

    def keystroke() -> None:
        while work.progress.started_at is None:
            time.sleep(0.0005)
        token.cancel(reason)

    threading.Thread(target=keystroke, daemon=True).start()
    backend.lane.run_blocking(backend.generate_blocking, work, token)


def test_a_moved_window_reuses_its_lines_by_shifting_them(switching: LlamaCppBackend):
    # Typing new lines: the text after the cursor stays, the window's first lines fall out.
    head = "def weighted(values):\n    total = 0\n"
    tail = "    return total\n\n\nprint(weighted([1, 2, 3]))\n"

    def typed(lines: int) -> str:
        return head + "".join(f"    total += values[{i}] * {i}\n" for i in range(lines)) + "    "

    before = doc_job("file:///w.py", typed(60) + tail, offset=len(typed(60)), budget=256)
    generate(switching, before)
    after = doc_job("file:///w.py", typed(68) + tail, offset=len(typed(68)), budget=256)
    answer = generate(switching, after)
    assert switching.cache.stats.shifts >= 1
    # Only the eight new lines are evaluated (and the healed last token): the lines still in
    # the window were shifted down, not evaluated again.
    new_lines = switching.vocabulary.count(typed(68)[len(typed(60)) - 4 :])
    assert after.progress.prompt_tokens_evaluated <= new_lines + 4
    assert "values" in answer  # still a sensible suggestion


def test_the_keystrokes_after_a_cold_start_keep_to_its_window(switching: LlamaCppBackend):
    # A file the cache has never held: the first request gets a small window. The next
    # keystroke affords a larger one (which would start elsewhere in the file and be
    # evaluated anew), but the small window in the cache, but for the typed letter, wins.
    text = OTHER + "def total(values):\n    "
    speed = 100.0
    switching.prompt_speed = speed
    first = dataclasses.replace(
        doc_job("file:///cold.py", text, budget=512), cold_seconds=120 / speed
    )
    generate(switching, first)
    assert first.progress.prompt_tokens <= 160  # a small window (at most 120 to evaluate)
    switching.prompt_speed = speed
    nxt = dataclasses.replace(
        doc_job("file:///cold.py", text + "r", budget=512), cold_seconds=300 / speed
    )
    generate(switching, nxt)
    uncached = nxt.progress.prompt_tokens - nxt.progress.prompt_tokens_reused
    assert uncached <= 16, (first.progress.prompt_tokens, nxt.progress.prompt_tokens)
    assert nxt.progress.prompt_tokens < 250  # not a larger window
    # With nothing of it in the cache, the same keystroke gets the larger window it affords.
    switching.lane.run_blocking(switching.cache.clear)
    switching.cache._states.drop("file:///cold.py")
    switching.prompt_speed = speed
    fresh = dataclasses.replace(
        doc_job("file:///cold.py", text + "r", budget=512), cold_seconds=300 / speed
    )
    generate(switching, fresh)
    assert fresh.progress.prompt_tokens > nxt.progress.prompt_tokens + 50


def test_a_cold_start_window_keeps_the_suffixs_share(switching: LlamaCppBackend) -> None:
    before = "".join(f"value_{i} = compute({i})  # before {i}\n" for i in range(60))
    after = "".join(f"other_{i} = compute({i})  # after {i}\n" for i in range(60))
    work = doc_job("file:///share.py", before + after, offset=len(before))
    backend = switching
    llm = backend._llm

    def windows() -> tuple[str, str]:
        assert backend.prompts is not None
        whole = backend.prompts.build(work, 512)
        # What an empty cache affords in 1.5 s here.
        cold = backend.prompts.within(whole, work, 220, lambda tokens: 0)
        assert cold.reduced and not whole.reduced
        return (llm.detokenize(whole.tokens).decode(), llm.detokenize(cold.tokens).decode())

    whole, cold = switching.lane.run_blocking(windows)
    # The whole window gives the suffix up to a quarter (128 of 512); the cold one keeps that
    # share instead of the count, which would have been half of it (more lines after the
    # cursor than before it, the prefix being cut back to a line that is a multiple of 8).
    share = [(text.count("# before "), text.count("# after ")) for text in (whole, cold)]
    assert all(before > after > 0 for before, after in share), share


def test_a_request_carries_on_from_a_stopped_background_evaluation(
    switching: LlamaCppBackend,
) -> None:
    # The whole window's background evaluation after a cold start (or a warm) stopped near the
    # end of its prompt by the next request: the part done is parked, the cold start's window
    # put back, and a request evaluates only the rest of the whole window, from the parked
    # part, where it would otherwise have got a cold start's window again: when that rest is
    # within a third of its budget; otherwise the small window held answers at once.
    uri, text = "file:///parked.py", OTHER + "def total(values):\n    "
    backend, speed = switching, 100.0

    def request(affordable: int = 200) -> CompletionJob:  # far less than the whole window
        backend.prompt_speed = speed
        return dataclasses.replace(doc_job(uri, text), cold_seconds=affordable / speed)

    first = request()
    generate(backend, first)  # the cold start: its small window is what the cache holds
    small = first.progress.prompt_tokens
    background = dataclasses.replace(doc_job(uri, text), keep_cache=True, background=True)
    with pytest.raises(Cancelled):
        run(backend, background, cancel_at_tokens=384)  # stopped near the end of its prompt
    total = background.progress.prompt_tokens
    parked = backend.cache._states.get(uri, "parked", backend.cache.model)
    assert total > small + 300 and parked is not None
    assert small <= backend.cache.length < 384  # the small window (and its answer) is back
    rest = total - len(parked.tokens)  # what is left of the whole window: over a third of 200

    # The rest fits the budget but takes more than a third of it, and the small window is
    # held: a pause gets the small window at once, not seconds of the whole window's rest
    # (the background finishes that after the answer), and the parked part stays.
    held = request()
    generate(backend, held)
    assert held.progress.prompt_tokens == small
    assert held.progress.prompt_tokens - held.progress.prompt_tokens_reused <= 16
    assert backend.cache._states.get(uri, "parked", backend.cache.model) is not None

    warmed = request(affordable=3 * rest + 3)  # the rest within a third of the budget
    assert 3 * rest + 3 < total  # the whole window would not fit from scratch
    answer = generate(backend, warmed)
    assert warmed.progress.prompt_tokens == total  # the whole window, not a smaller one
    assert warmed.progress.prompt_tokens_reused >= 384
    assert backend.cache._states.get(uri, "parked", backend.cache.model) is None
    # The same request with nothing kept gets a cold start's window; the whole window
    # evaluated afresh gives the answer the parked part did.
    backend.cache._states.drop(uri)
    backend.lane.run_blocking(backend.cache.clear)
    cold = request()
    generate(backend, cold)
    assert cold.progress.prompt_tokens < total - 100
    backend.cache._states.drop(uri)
    backend.lane.run_blocking(backend.cache.clear)
    fresh = doc_job(uri, text)
    assert generate(backend, fresh) == answer and fresh.progress.prompt_tokens_reused == 0


def test_a_background_evaluation_in_another_document_keeps_the_first_under_it(
    switching: LlamaCppBackend,
) -> None:
    # A warm in a file switched to, while the cache holds another file's prompt: that prompt
    # is kept under its document (no second copy set aside), and the warm's part done stays
    # in the cache for the new file's request when it is stopped.
    backend = switching
    first_uri, other_uri = "file:///first.py", "file:///other.py"
    first_text = "".join(f"# note {i}: numbers for reports\n" for i in range(12)) + SECOND
    first = doc_job(first_uri, first_text)
    expected = generate(backend, first)
    assert first.progress.prompt_tokens > 64  # enough to be worth keeping
    background = dataclasses.replace(
        doc_job(other_uri, OTHER + "def total(values):\n    "), keep_cache=True, background=True
    )
    with pytest.raises(Cancelled):
        run(backend, background, cancel_at_tokens=256)  # stopped half-way
    model = backend.cache.model
    assert backend.cache._states.get(first_uri, "live", model) is not None
    assert backend.cache._states.as_json()["bytesAside"] == 0
    assert backend.cache.length >= 256  # the part done, in the cache
    # Back in the first file: its prompt is restored, and the answer is the same.
    again = doc_job(first_uri, first_text)
    assert generate(backend, again) == expected
    assert again.progress.prompt_tokens_reused == again.progress.prompt_tokens - 1
