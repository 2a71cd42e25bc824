"""Cursor views, type-ahead and the suggestion cache (pure)."""

from __future__ import annotations

import pytest

from lsp_infer.local.suggestion_reuse import (
    CursorView,
    Shown,
    SuggestionCache,
    rest_after_typing,
    type_ahead,
    typed_since,
)
from lsp_infer.stats import Stats, percentile

BASE = "def add(a, b):\n    return \n\nprint(add(1, 2))\n"
CURSOR = BASE.index("return ") + len("return ")


def insert(text: str, offset: int, typed: str) -> tuple[str, int]:
    return text[:offset] + typed + text[offset:], offset + len(typed)


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda t, o: insert(t, o, "a"), "a"),
        (lambda t, o: insert(t, o, "a + "), "a + "),
        (lambda t, o: (t, o), ""),  # nothing typed
        (lambda t, o: (t[: o - 1] + t[o:], o - 1), None),  # backspace
        (
            lambda t, o: (
                insert(t, o, "a")[0].replace("print", "pront")
                and (insert(t, o, "a")[0].replace("print", "pront"), o + 1)
            ),
            None,
        ),  # edit after the cursor
        (lambda t, o: ("#" + insert(t, o, "a")[0], o + 2), None),  # edit before the cursor
        (
            lambda t, o: (insert(t, o, "ab")[0], o + 1),
            None,
        ),  # cursor not at the end of the insertion
    ],
)
def test_typed_since(edit, expected) -> None:
    old = CursorView.at(BASE, CURSOR, 4096)
    text, offset = edit(BASE, CURSOR)
    assert typed_since(old, text, offset, 4096) == expected


def test_typed_since_only_looks_as_far_as_the_prompt_can_see() -> None:
    far_away = "x = 1\n" * 2000
    text = far_away + BASE
    old = CursorView.at(text, len(far_away) + CURSOR, 100)
    edited = "y" + text[1:]  # changed 10 kB above the cursor: invisible to the prompt
    assert typed_since(old, edited, len(far_away) + CURSOR, 100) == ""


@pytest.mark.parametrize(
    ("suggestion", "typed", "rest"),
    [
        ("a + b", "a", " + b"),
        ("a + b", "a + b", None),
        ("a + b", "x", None),
        ("a + b", "", "a + b"),
    ],
)
def test_rest_after_typing(suggestion: str, typed: str, rest: str | None) -> None:
    assert rest_after_typing(suggestion, typed) == rest


def test_type_ahead_returns_exactly_the_rest() -> None:
    shown = Shown(CursorView.at(BASE, CURSOR, 4096), "a + b")
    text, offset = insert(BASE, CURSOR, "a +")
    assert type_ahead(shown, text, offset, 4096) == " b"
    text, offset = insert(BASE, CURSOR, "a -")
    assert type_ahead(shown, text, offset, 4096) is None
    assert type_ahead(shown, BASE, CURSOR, 4096) is None  # nothing typed: not type-ahead
    assert type_ahead(None, BASE, CURSOR, 4096) is None


def test_suggestion_cache_is_keyed_by_context_and_settings() -> None:
    cache = SuggestionCache(size=2)
    here = CursorView.at(BASE, CURSOR, 4096)
    cache.put(here, ("model", 64), "a + b")
    assert cache.get(CursorView.at(BASE, CURSOR, 4096), ("model", 64)) == "a + b"
    assert cache.get(here, ("model", 32)) is None
    cache.put(CursorView.at(BASE, 0, 4096), ("model", 64), "x")
    cache.put(CursorView.at(BASE, 1, 4096), ("model", 64), "y")
    assert len(cache) == 2 and cache.get(here, ("model", 64)) is None  # least recently used went


@pytest.mark.parametrize(
    ("samples", "fraction", "expected"),
    [
        ([], 0.5, None),
        ([5.0], 0.95, 5.0),
        ([1.0, 2.0, 3.0, 4.0], 0.5, 2.0),
        (list(map(float, range(1, 101))), 0.95, 95.0),
    ],
)
def test_percentile(samples: list[float], fraction: float, expected: float | None) -> None:
    assert percentile(samples, fraction) == expected


def test_stats_json_is_camel_case() -> None:
    stats = Stats(requests=3)
    stats.latency_ms.extend([10.0, 20.0])
    data = stats.as_json(queue_depth=1)
    assert data["requests"] == 3 and data["queueDepth"] == 1
    assert data["latencyMs"]["p50"] == 10.0 and data["latencyMs"]["count"] == 2
    assert "typeAheadHits" in data and "tokensWasted" in data
