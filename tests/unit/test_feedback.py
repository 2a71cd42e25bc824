"""The suggestion lifecycle's bookkeeping (lsp_infer/feedback.py), as tables: a script of
answers and editor reports, and the counts lspInfer/stats shows after it."""

from __future__ import annotations

from typing import Any

import pytest

from lsp_infer.feedback import CHAR_BUCKETS, Feedback, bucket
from lsp_infer.stats import ByMinute, Stats, TimedSamples

URI = "file:///w/a.py"
DOC = "def add(a, b):\n    return "
AT = len(DOC)

# A script is a list of steps:
#   ("issue", name, offset, text, document)     the server answers; the item is called `name`
#   ("show" | "accept" | "dismiss", name, t)     the editor reports, at time t (seconds)
#   ("partly", name, accepted_length, t)
Step = tuple[Any, ...]


def run(script: list[Step], capacity: int = 1000) -> tuple[Feedback, dict[str, str]]:
    feedback = Feedback(capacity)
    ids: dict[str, str] = {}
    for step in script:
        kind, name = step[0], step[1]
        if kind == "issue":
            _, _, offset, text, document = step
            ids[name] = feedback.issue(
                URI, offset, [text], document, source="model", with_extra=False
            )[0]
        elif kind == "partly":
            feedback.partly_accepted(ids[name], step[2], step[3])
        else:
            report = {"show": feedback.shown, "accept": feedback.accepted}.get(kind)
            (report or feedback.dismissed)(ids[name], step[2])
    return feedback, ids


def counts(feedback: Feedback) -> dict[str, Any]:
    data = feedback.as_json()
    keys = ("issued", "shown", "accepted", "partlyAccepted", "dismissed", "pending")
    return {key: data[key] for key in keys} | {"chars": data["charactersAccepted"]}


def expect(issued=1, shown=1, accepted=0, partly=0, dismissed=0, chars=0) -> dict[str, Any]:
    pending = shown - accepted - partly - dismissed
    return {
        "issued": issued, "shown": shown, "accepted": accepted, "partlyAccepted": partly,
        "dismissed": dismissed, "pending": pending, "chars": chars,
    }  # fmt: skip


ISSUE_A = ("issue", "a", AT, "a + b", DOC)
TYPED_A = ("issue", "rest", AT + 2, "+ b", DOC + "a ")  # the user typed "a " of it

CASES = {
    "issued, never shown": ([ISSUE_A], expect(shown=0)),
    "shown, still on screen": ([ISSUE_A, ("show", "a", 1)], expect()),
    "shown twice counts once": ([ISSUE_A, ("show", "a", 1), ("show", "a", 2)], expect()),
    "accepted": ([ISSUE_A, ("show", "a", 1), ("accept", "a", 3)], expect(accepted=1, chars=5)),
    "accepted twice counts once": (
        [ISSUE_A, ("show", "a", 1), ("accept", "a", 3), ("accept", "a", 4)],
        expect(accepted=1, chars=5),
    ),
    "accepted without a shown report was shown": (
        [ISSUE_A, ("accept", "a", 3)],
        expect(accepted=1, chars=5),
    ),
    "dismissed": ([ISSUE_A, ("show", "a", 1), ("dismiss", "a", 2)], expect(dismissed=1)),
    "dismissed after accepting is ignored": (
        [ISSUE_A, ("show", "a", 1), ("accept", "a", 2), ("dismiss", "a", 3)],
        expect(accepted=1, chars=5),
    ),
    "accepted after a dismissal: accepted": (
        [ISSUE_A, ("show", "a", 1), ("dismiss", "a", 2), ("accept", "a", 3)],
        expect(accepted=1, chars=5),
    ),
    "shown again after a dismissal: pending again": (
        [ISSUE_A, ("show", "a", 1), ("dismiss", "a", 2), ("show", "a", 3)],
        expect(),
    ),
    "a word accepted, then dismissed: partly": (
        [ISSUE_A, ("show", "a", 1), ("partly", "a", 2, 2), ("dismiss", "a", 3)],
        expect(partly=1, chars=2),
    ),
    "word by word: characters accepted grow, the suggestion counts once": (
        [ISSUE_A, ("show", "a", 1), ("partly", "a", 1, 2), ("partly", "a", 3, 3)],
        expect(partly=1, chars=3),
    ),
    "a smaller accepted length than before changes nothing": (
        [ISSUE_A, ("show", "a", 1), ("partly", "a", 3, 2), ("partly", "a", 1, 3)],
        expect(partly=1, chars=3),
    ),
    "partly, then the rest with Tab: accepted, every character once": (
        [ISSUE_A, ("show", "a", 1), ("partly", "a", 2, 2), ("accept", "a", 3)],
        expect(accepted=1, chars=5),
    ),
    "word by word to the end: accepted": (
        [ISSUE_A, ("show", "a", 1), ("partly", "a", 2, 2), ("partly", "a", 5, 3)],
        expect(accepted=1, chars=5),
    ),
    "typed through, the rest accepted: one suggestion, accepted": (
        [ISSUE_A, ("show", "a", 1), TYPED_A, ("show", "rest", 2), ("accept", "rest", 3)],
        expect(accepted=1, chars=3),
    ),
    "the first item's dismissal after its rest was shown is ignored": (
        [ISSUE_A, ("show", "a", 1), TYPED_A, ("show", "rest", 2), ("dismiss", "a", 2)],
        expect(),
    ),
    "the rest dismissed: the suggestion is dismissed": (
        [ISSUE_A, ("show", "a", 1), TYPED_A, ("show", "rest", 2), ("dismiss", "rest", 3)],
        expect(dismissed=1),
    ),
    "the rest answered but never shown: the first item's dismissal counts": (
        [ISSUE_A, ("show", "a", 1), TYPED_A, ("dismiss", "a", 2)],
        expect(dismissed=1),
    ),
    "a word accepted, its rest dismissed: partly": (
        [
            *(ISSUE_A, ("show", "a", 1), ("partly", "a", 2, 2)),
            *(TYPED_A, ("show", "rest", 3), ("dismiss", "rest", 4)),
        ],
        expect(partly=1, chars=2),
    ),
    "something else typed: a new suggestion": (
        [
            *(ISSUE_A, ("show", "a", 1), ("issue", "b", AT + 1, " - b", DOC + "a")),
            *(("show", "b", 2), ("dismiss", "a", 2)),
        ],
        expect(issued=2, shown=2, dismissed=1),
    ),
    "a different suggestion at the same place is a new one": (
        [ISSUE_A, ("issue", "b", AT, "b + a", DOC), ("show", "b", 1)],
        expect(issued=2, shown=1),
    ),
}


@pytest.mark.parametrize(("script", "expected"), CASES.values(), ids=CASES.keys())
def test_lifecycle(script: list[Step], expected: dict[str, Any]) -> None:
    feedback, _ = run(script)
    assert counts(feedback) == expected


def test_the_same_answer_again_is_the_same_item() -> None:
    _, ids = run([ISSUE_A, ("issue", "again", AT, "a + b", DOC)])
    assert ids["again"] == ids["a"]
    _, ids = run([ISSUE_A, TYPED_A])
    assert ids["rest"] != ids["a"]


def test_an_empty_answer_leaves_the_suggestion_continuable() -> None:
    feedback, _ = run([ISSUE_A, ("show", "a", 1)])
    assert feedback.issue(URI, AT + 1, [], DOC + "a", source="model", with_extra=False) == []
    rest = feedback.issue(URI, AT + 2, ["+ b"], DOC + "a ", source="model", with_extra=False)
    feedback.accepted(rest[0], 2)
    assert counts(feedback) == expect(accepted=1, chars=3)


def test_a_closed_document_is_forgotten_but_its_ids_still_count() -> None:
    feedback, ids = run([ISSUE_A, ("show", "a", 1)])
    feedback.forget(URI)
    rest = feedback.issue(URI, AT + 2, ["+ b"], DOC + "a ", source="model", with_extra=False)
    assert counts(feedback)["issued"] == 2  # not a continuation any more
    assert feedback.accepted(ids["a"], 2) and rest


def test_several_items_in_one_answer() -> None:
    feedback = Feedback()
    ids = feedback.issue(URI, AT, ["a + b", "b + a", "a"], DOC, source="model", with_extra=True)
    assert len(set(ids)) == 3
    again = feedback.issue(URI, AT, ["a + b", "b + a", "a"], DOC, source="model", with_extra=True)
    assert again == ids  # cycling through choices asks again: the same items
    feedback.shown(ids[0], 1)
    feedback.shown(ids[1], 2)
    feedback.accepted(ids[1], 4)
    data = feedback.as_json()
    assert (data["issued"], data["shown"], data["accepted"]) == (3, 2, 1)
    assert data["byExtraContext"]["with"] == {"shown": 2, "accepted": 1, "acceptanceRate": 0.5}


def test_unknown_and_forgotten_ids_are_refused() -> None:
    feedback, ids = run([ISSUE_A, ("issue", "b", 0, "x", "")], capacity=1)
    assert not feedback.shown("nope", 1)
    assert not feedback.accepted(ids["a"], 1)  # evicted: capacity 1
    assert feedback.shown(ids["b"], 1)
    assert counts(feedback)["shown"] == 1


def test_memory_is_bounded() -> None:
    feedback = Feedback(capacity=10)
    for n in range(500):
        uri = f"file:///w/{n}.py"
        feedback.issue(uri, 0, [f"x{n}"], "", source="model", with_extra=False)
    assert len(feedback._items) == 10 and len(feedback._latest) == 10
    assert feedback.as_json()["issued"] == 500


def test_rates_breakdowns_and_times() -> None:
    feedback = Feedback()
    texts = ["x" * 5, "y" * 20, "z" * 50 + "\nmore\nand more", "w" * 200]
    for n, text in enumerate(texts):
        extra = n % 2 == 1
        (item,) = feedback.issue(URI, n * 1000, [text], "", source="model", with_extra=extra)
        feedback.shown(item, 100.0)
        if n < 2:
            feedback.accepted(item, 100.0 + 0.25 * (n + 1))
    data = feedback.as_json()
    assert data["acceptanceRate"] == 0.5
    assert data["charactersAccepted"] == 25
    assert data["shownToAcceptedMs"] == {"p50": 250.0, "p95": 500.0, "max": 500.0, "count": 2}
    assert data["byLength"] == {
        "1-15": {"shown": 1, "accepted": 1, "acceptanceRate": 1.0},
        "16-40": {"shown": 1, "accepted": 1, "acceptanceRate": 1.0},
        "41-100": {"shown": 1, "accepted": 0, "acceptanceRate": 0.0},
        "101+": {"shown": 1, "accepted": 0, "acceptanceRate": 0.0},
    }
    assert data["byLines"]["1"] == {"shown": 3, "accepted": 2, "acceptanceRate": 2 / 3}
    assert data["byLines"]["2-4"] == {"shown": 1, "accepted": 0, "acceptanceRate": 0.0}
    assert data["byLines"]["5+"]["acceptanceRate"] is None  # none shown: no rate
    assert data["byExtraContext"]["without"]["accepted"] == 1
    assert data["bySource"] == {"model": {"shown": 4, "accepted": 2, "acceptanceRate": 0.5}}
    assert data["byMinute"] == {
        "bucketSeconds": 60,
        "points": [{"t": 60, "shown": 4, "accepted": 2}],
    }


def test_no_suggestions_no_rates() -> None:
    data = Feedback().as_json()
    assert data["acceptanceRate"] is None and data["shown"] == 0
    assert data["shownToAcceptedMs"]["p50"] is None


@pytest.mark.parametrize(
    ("chars", "label"), [(1, "1-15"), (15, "1-15"), (16, "16-40"), (100, "41-100"), (101, "101+")]
)
def test_length_buckets(chars: int, label: str) -> None:
    assert bucket(chars, CHAR_BUCKETS) == label


# -- latency over time (stats.py) --------------------------------------------------------


def test_latency_by_minute_keeps_the_last_hour() -> None:
    series = ByMinute(minutes=60)
    series.add(10.0, 59.0)  # minute 0
    series.add(30.0, 61.0)  # minute 1
    series.add(20.0, 62.0)
    assert series.as_json()["points"] == [
        {"t": 0, "count": 1, "p50": 10.0, "p95": 10.0},
        {"t": 60, "count": 2, "p50": 20.0, "p95": 30.0},
    ]
    series.add(5.0, 60 * 61 + 1)  # an hour later: the first two minutes are gone
    assert [p["t"] for p in series.as_json()["points"]] == [60 * 61]


def test_stats_latency_samples_feed_the_series_without_changing_old_keys() -> None:
    clock = iter([120.0, 130.0, 185.0])
    stats = Stats(latency_ms=TimedSamples(maxlen=2000, clock=lambda: next(clock)))
    for value in (100.0, 300.0, 50.0):
        stats.latency_ms.append(value)
    data = stats.as_json(queue_depth=0)
    assert data["latencyMs"]["count"] == 3.0 and data["latencyMs"]["max"] == 300.0
    assert data["latencyByMinute"]["points"] == [
        {"t": 120, "count": 2, "p50": 100.0, "p95": 300.0},
        {"t": 180, "count": 1, "p50": 50.0, "p95": 50.0},
    ]


def test_by_confidence_counts_shown_accepted_and_hidden_per_band() -> None:
    feedback = Feedback()
    sure, unsure = ("s", 0.93), ("u", 0.31)
    ids = {}
    for (name, confidence), place in zip((sure, unsure), (AT, AT - 3), strict=True):
        ids[name] = feedback.issue(URI, place, [f"x{name}"], DOC, source="model",
                                   with_extra=False, confidence=confidence)[0]  # fmt: skip
        feedback.shown(ids[name], 1.0)
    feedback.accepted(ids["s"], 2.0)
    feedback.dismissed(ids["u"], 2.0)
    feedback.hidden(0.05)
    feedback.hidden(0.12)
    feedback.hidden(None)  # a hidden answer whose confidence is not known (never happens now)
    cached = feedback.issue("file:///w/b.py", 0, ["y"], "", source="cache", with_extra=False)
    feedback.shown(cached[0], 3.0)
    data = feedback.as_json()
    assert data["hidden"] == 3
    bands = data["byConfidence"]
    assert list(bands) == ["0-0.2", "0.2-0.4", "0.4-0.6", "0.6-0.8", "0.8-1", "unknown"]
    assert bands["0.8-1"] == {"shown": 1, "accepted": 1, "acceptanceRate": 1.0, "hidden": 0}
    assert bands["0.2-0.4"] == {"shown": 1, "accepted": 0, "acceptanceRate": 0.0, "hidden": 0}
    assert bands["0-0.2"] == {"shown": 0, "accepted": 0, "acceptanceRate": None, "hidden": 2}
    assert bands["unknown"] == {"shown": 1, "accepted": 0, "acceptanceRate": 0.0, "hidden": 1}
    assert data["issued"] == 3  # hidden answers are not issued suggestions
