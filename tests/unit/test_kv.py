"""KV bookkeeping without the model: reuse plans, the state LRU, soft cancels, GPU layers."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from lsp_infer.config import load_settings
from lsp_infer.core.cancel import CancelReason, CancelToken
from lsp_infer.local.devices import gpu_layers_for
from lsp_infer.local.kv.sequence import state_buffer
from lsp_infer.local.kv.states import KvState, KvStates
from lsp_infer.local.kv.token_reuse import Move, ReusePlan, plan_reuse
from lsp_infer.local.suggestion_reuse import CursorView, edited_on_cursor_line, settled_length

HEAD = list(range(100, 140))  # 40 tokens: extra context and the suffix
LINES = [list(range(1000 + 10 * i, 1010 + 10 * i)) for i in range(20)]  # 20 lines, 10 each


def prompt(first_line: int, last_line: int = 20, tail: tuple[int, ...] = ()) -> list[int]:
    return HEAD + [t for line in LINES[first_line:last_line] for t in line] + list(tail)


@pytest.mark.parametrize(
    ("cached", "wanted", "expected"),
    [
        # the same prompt: all of it, in place
        (prompt(0), prompt(0), ReusePlan(240)),
        # typing at the end: the shared start
        (prompt(0), prompt(0, tail=(7, 8)), ReusePlan(240)),
        # the window moved down 8 lines: the rest is shifted into place
        (prompt(0), prompt(8, tail=(7,)), ReusePlan(40, (Move(120, 40, 120),))),
        # ... and lines were added at its end since: the shifted run stops where they start
        (prompt(0, 16), prompt(8), ReusePlan(40, (Move(120, 40, 80),))),
        # too short a run to shift: only the shared start
        (prompt(0), prompt(17), ReusePlan(40)),
        # nothing in common
        ([1, 2, 3], [4, 5, 6], ReusePlan(0)),
        ([], prompt(0), ReusePlan(0)),
    ],
)
def test_plan_reuse(cached: list[int], wanted: list[int], expected: ReusePlan) -> None:
    plan = plan_reuse(cached, wanted, min_run=64)
    assert plan == expected
    # What the plan says the cache will hold is what the prompt starts with.
    rebuilt = cached[: plan.prefix]
    for move in plan.moves:
        rebuilt += cached[move.source : move.source + move.length]
    assert rebuilt == wanted[: plan.reused]


def state(size: int, model: str = "m", tokens: tuple[int, ...] = (1, 2)) -> KvState:
    return KvState(tokens, b"x" * size, model)


def test_states_are_kept_per_document_and_model() -> None:
    states = KvStates(1000)
    assert states.put("a", "live", state(100))
    assert states.get("a", "live", "m") == state(100)
    assert states.get("a", "parked", "m") is None
    assert states.get("a", "live", "another model") is None  # dropped: never restored
    assert states.get("a", "live", "m") is None
    assert states.bytes_held == 0


def test_the_least_recently_used_go_first_when_the_bound_is_reached() -> None:
    states = KvStates(300)
    for uri in "abc":
        states.put(uri, "live", state(100))
    assert states.get("a", "live", "m") is not None  # a is now the most recent
    states.put("d", "live", state(100))
    assert states.get("b", "live", "m") is None and states.stats.evictions == 1
    assert {uri for uri in "acd" if states.get(uri, "live", "m")} == set("acd")
    assert states.bytes_held == 300
    assert not states.put("e", "live", state(301))  # alone larger than the bound
    assert states.get("e", "live", "m") is None and states.bytes_held == 300


def test_resizing_evicts_and_zero_keeps_nothing() -> None:
    states = KvStates(1000)
    for uri in "abcd":
        states.put(uri, "live", state(200))
    states.resize(450)
    assert states.bytes_held <= 450 and len(states) == 2
    states.resize(0)
    assert len(states) == 0 and not states.enabled
    assert not states.put("a", "live", state(10))


def test_copies_held_aside_and_in_the_making_count_against_the_bound() -> None:
    states = KvStates(300)
    for uri in "abc":
        states.put(uri, "live", state(100))
    states.hold_aside(100)  # a request's cache set aside during background work
    assert states.get("a", "live", "m") is None and states.stats.evictions == 1
    assert states.bytes_held == 300 and states.as_json()["bytesAside"] == 100
    assert not states.put("big", "parked", state(250))  # it and the aside copy exceed it
    states.make_room(150)  # a copy about to be made: b and c both go
    assert len(states) == 0 and states.bytes_held == 100
    states.release_aside(100)
    assert states.bytes_held == 0 and states.put("d", "live", state(300))


def test_dropping_a_document_drops_both_kinds() -> None:
    states = KvStates(1000)
    states.put("a", "live", state(10))
    states.put("a", "parked", state(10))
    states.put("b", "live", state(10))
    states.drop("a")
    assert len(states) == 1 and states.as_json()["bytesHeld"] == 10
    assert states.take("b", "live", "m") is not None and len(states) == 0


BEFORE = "def f(a):\n    x = 1\n    return "
AFTER = "\n\nprint(f(1))\n"
VIEW = CursorView.at(BEFORE + AFTER, len(BEFORE), 4096)


@pytest.mark.parametrize(
    ("text", "on_line"),
    [
        (BEFORE + "a" + AFTER, True),  # typing at the cursor
        (BEFORE[:-1] + AFTER, True),  # a backspace
        (BEFORE + "a +\n    " + AFTER, True),  # Enter: the text before the line is intact
        ("def f(b):\n    x = 1\n    return " + AFTER, False),  # an earlier line changed
        (BEFORE + AFTER[1:], False),  # a delete after the cursor
        (BEFORE + AFTER + "more\n", False),  # the end of the file changed (within reach)
        ("def f(a):\n    x = 1\n" + AFTER, True),  # the line's text deleted: the rest intact
        ("def f(a):\n    x = 1" + AFTER, False),  # ... and the line break before it
    ],
)
def test_edited_on_cursor_line(text: str, on_line: bool) -> None:
    assert edited_on_cursor_line(VIEW, len(BEFORE + AFTER), text) is on_line


@pytest.mark.parametrize(
    ("line", "settled"),
    [
        ("", 0),
        ("    retu", 0),  # still the first word (the indentation goes with it)
        ("    return fo", len("    return")),
        ("    return ", len("    return")),  # complete: the space goes with the next word
        ("    x = 1  ", len("    x = 1")),
        ("    ", 0),
        ("    for restr in (r'(?P<del", len("    for restr in")),
        ("\tif a and\tb", len("\tif a and")),
        ("x  = y", len("x  =")),
    ],
)
def test_settled_length(line: str, settled: int) -> None:
    assert settled_length(line) == settled


@pytest.mark.parametrize(
    ("text", "on_line"),
    [
        (BEFORE + "a" + AFTER, True),  # typing after the settled words
        (BEFORE[:-1] + AFTER, True),  # a backspace over the space after them
        (BEFORE + "a +\n    " + AFTER, True),  # Enter
        ("def f(a):\n    x = 1\n    retur " + AFTER, False),  # a settled word changed
        ("def f(a):\n    x = 1\n" + AFTER, False),  # the line's text deleted
    ],
)
def test_edited_after_the_settled_words(text: str, on_line: bool) -> None:
    settled = settled_length("    return ")
    assert edited_on_cursor_line(VIEW, len(BEFORE + AFTER), text, settled) is on_line


def test_a_soft_cancel_hardens_but_a_hard_one_stays() -> None:
    token = CancelToken()
    token.cancel(CancelReason.TYPED_ON_LINE)
    assert token.cancelled and token.soft
    token.cancel(CancelReason.SUPERSEDED)
    assert token.reason is CancelReason.SUPERSEDED and not token.soft
    token.cancel(CancelReason.TYPED_ON_LINE)
    assert token.reason is CancelReason.SUPERSEDED


@pytest.mark.parametrize(
    ("setting", "supported", "layers", "warns"),
    [
        ("auto", True, -1, False),
        ("auto", False, 0, False),
        ("20", True, 20, False),
        ("20", False, 0, True),  # one warning; the model runs on the CPU
        ("0", False, 0, False),
    ],
)
def test_gpu_layers(setting: str, supported: bool, layers: int, warns: bool) -> None:
    got, warning = gpu_layers_for(setting, supported)
    assert got == layers and (warning is not None) is warns


@pytest.mark.parametrize(
    ("raw", "field", "value", "problem"),
    [
        ({"model": {"gpuLayers": 12}}, "gpu_layers", "12", None),
        ({"model": {"gpuLayers": "auto"}}, "gpu_layers", "auto", None),
        ({"model": {"gpuLayers": -3}}, "gpu_layers", "auto", 'expected "auto"'),
        ({"model": {"gpuLayers": "many"}}, "gpu_layers", "auto", 'expected "auto"'),
        ({"model": {"stateCacheMb": 0}}, "state_cache_mb", 0, None),
        ({"model": {"stateCacheMb": -1}}, "state_cache_mb", 256, "between 0 and 65536"),
        ({"model": {"requantize": "q4_0"}}, "requantize", "q4_0", None),
        ({"model": {"requantize": "q2_k"}}, "requantize", "off", "q4_0"),
        ({"model": {"requantize": True}}, "requantize", "off", "model.requantize"),
    ],
)
def test_model_settings(raw: dict[str, object], field: str, value: object, problem: str | None):
    settings, problems = load_settings(raw)
    assert getattr(settings.model, field) == value
    assert (problem is None and not problems) or (problem and problem in problems[0])


def test_the_state_cache_bound_is_not_a_reason_to_reload_the_model() -> None:
    small, _ = load_settings({"model": {"stateCacheMb": 1}})
    large, _ = load_settings({"model": {"stateCacheMb": 1024}})
    other, _ = load_settings({"model": {"nCtx": 2048}})
    assert small.model.load_key() == large.model.load_key() != other.model.load_key()
    # Other weights: another model, whose saved states would not fit it.
    requantized, _ = load_settings({"model": {"requantize": "q4_0"}})
    assert requantized.model.load_key() != small.model.load_key()


def _rss_mb() -> float:
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("VmRSS"))
    return int(line.split()[1]) / 1024


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc (Linux)")
def test_a_dropped_state_buffer_goes_back_to_the_os() -> None:
    before = _rss_mb()
    buffer = state_buffer(64 * 2**20)
    for page in range(0, len(buffer), 4096):  # touch every page
        buffer[page] = 1
    assert _rss_mb() - before > 48
    del buffer
    gc.collect()
    assert _rss_mb() - before < 16


def test_a_state_buffer_is_zeroed_and_sized() -> None:
    assert list(state_buffer(5)) == [0] * 5
    assert len(state_buffer(0)) == 0
