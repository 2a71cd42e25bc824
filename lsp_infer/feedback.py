"""What became of the suggestions: shown, accepted, partly accepted or dismissed.

Editors tell the server what happened to each inline completion item it answered with (the
``lspInfer/did…Suggestion`` notifications and the item's ``lspInfer.acceptSuggestion``
command); this module keeps the books for ``lspInfer/stats``. Pure and bounded: no LSP types,
no clock of its own (callers pass ``now``), the details of the last ``capacity`` items only.
Nothing here leaves the machine.

Items and suggestions. Every item the server answers with gets an id. Typing the start of a
shown suggestion (or accepting a word of it) makes the editor ask again, and the answer is the
rest of the same suggestion: a new item, of the same *suggestion*. Counts and rates are per
suggestion, so typing through one does not count as many suggestions shown and all but one
dismissed. An answer identical to one just given (same document, place and text: VS Code asks
again when the user cycles through choices) gets the same item and id back.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Any

from lsp_infer.stats import percentile

# Suggestion length buckets, in characters and in lines: (label, the largest value in it).
CHAR_BUCKETS = (("1-15", 15), ("16-40", 40), ("41-100", 100), ("101+", None))
LINE_BUCKETS = (("1", 1), ("2-4", 4), ("5+", None))
# How sure the model was of a suggestion's first line (core/confidence.py): (label, the
# largest value in it); "unknown" where no probability was reported (the team model, a
# suggestion answered from a cache or as the rest of an earlier one).
CONFIDENCE_BUCKETS = (
    ("0-0.2", 0.2), ("0.2-0.4", 0.4), ("0.4-0.6", 0.6), ("0.6-0.8", 0.8), ("0.8-1", None),
)  # fmt: skip
UNKNOWN = "unknown"

# A suggestion's state: issued (answered, not reported shown yet), then shown, then one of
# partly (some of it accepted with word/line accepts, never all), accepted or dismissed.
ISSUED, SHOWN, PARTLY, ACCEPTED, DISMISSED = "issued", "shown", "partly", "accepted", "dismissed"


def bucket(value: float, buckets: tuple[tuple[str, float | None], ...]) -> str:
    for label, most in buckets:
        if most is None or value <= most:
            return label
    return buckets[-1][0]


@dataclass
class Suggestion:
    """One suggestion of the model, as first answered (its later items are its rest)."""

    chars: int
    lines: int
    with_extra: bool
    source: str
    confidence: float | None = None
    state: str = ISSUED
    shown_at: float | None = None
    latest_shown: int = -1  # the sequence number of its latest item reported shown
    items: int = 0  # items made of it so far

    @property
    def groups(self) -> tuple[tuple[str, str], ...]:
        """The breakdowns it counts in: (breakdown, group)."""
        return (
            ("byLength", bucket(self.chars, CHAR_BUCKETS)),
            ("byLines", bucket(self.lines, LINE_BUCKETS)),
            ("byExtraContext", "with" if self.with_extra else "without"),
            ("bySource", self.source),
            ("byConfidence", confidence_band(self.confidence)),
        )


def confidence_band(confidence: float | None) -> str:
    return UNKNOWN if confidence is None else bucket(confidence, CONFIDENCE_BUCKETS)


@dataclass
class Item:
    id: str
    uri: str
    offset: int  # where its text goes in the document it was answered for
    text: str
    suggestion: Suggestion
    seq: int  # 0 for a suggestion's first item, then 1, 2, … for its rests
    partly_accepted: int = 0  # characters of its text accepted with partial accepts


@dataclass
class _Group:
    shown: int = 0
    accepted: int = 0
    hidden: int = 0  # byConfidence only: suggestions not shown for it

    def as_json(self) -> dict[str, Any]:
        rate = self.accepted / self.shown if self.shown else None
        return {"shown": self.shown, "accepted": self.accepted, "acceptanceRate": rate}


@dataclass
class _Counts:
    issued: int = 0
    hidden: int = 0
    shown: int = 0
    accepted: int = 0
    partly: int = 0
    dismissed: int = 0
    characters_accepted: int = 0
    shown_to_accepted_ms: deque[float] = field(default_factory=lambda: deque(maxlen=2000))
    groups: dict[tuple[str, str], _Group] = field(default_factory=dict)
    # Per wall-clock minute (the last hour): [shown, accepted].
    minutes: OrderedDict[int, list[int]] = field(default_factory=OrderedDict)

    def group(self, key: tuple[str, str]) -> _Group:
        return self.groups.setdefault(key, _Group())

    def per_minute(self, now: float, index: int) -> None:
        minute = int(now // 60)
        self.minutes.setdefault(minute, [0, 0])[index] += 1
        for old in list(self.minutes):
            if old <= minute - 60 or old > minute:
                del self.minutes[old]


class Feedback:
    def __init__(self, capacity: int = 1000) -> None:
        self.capacity = capacity
        self._items: OrderedDict[str, Item] = OrderedDict()
        self._latest: OrderedDict[str, list[Item]] = OrderedDict()  # uri → its latest answer
        self._ids = itertools.count(1)
        self._counts = _Counts()

    # -- answers ------------------------------------------------------------------------

    def issue(
        self,
        uri: str,
        offset: int,
        texts: list[str],
        document: str,
        *,
        source: str,
        with_extra: bool,
        confidence: float | None = None,
    ) -> list[str]:
        """Ids for the items of one answer (``texts`` at ``offset`` of ``document``): the
        same id for an item identical to one of the document's previous answer, an item of
        the same suggestion for the rest of one of those, else a new suggestion.
        ``confidence``: the first text's (the others' is not known)."""
        previous = self._latest.get(uri, [])
        items = []
        for index, text in enumerate(texts):
            item = self._same_or_rest(previous, uri, offset, text, document)
            if item is None:
                suggestion = Suggestion(
                    len(text), text.count("\n") + 1, with_extra, source,
                    confidence if index == 0 else None,
                )  # fmt: skip
                self._counts.issued += 1
                item = self._new_item(uri, offset, text, suggestion)
            items.append(item)
        if items:  # an empty answer leaves what is on screen as it was
            self._latest[uri] = items
            self._latest.move_to_end(uri)
            while len(self._latest) > self.capacity:
                self._latest.popitem(last=False)
        return [item.id for item in items]

    def _same_or_rest(
        self, previous: list[Item], uri: str, offset: int, text: str, document: str
    ) -> Item | None:
        for item in previous:
            if item.offset > offset or offset - item.offset > len(item.text):
                continue
            typed = document[item.offset : offset]
            if not item.text.startswith(typed) or item.text[len(typed) :] != text:
                continue
            if not typed:
                return item  # the same item again
            return self._new_item(uri, offset, text, item.suggestion)
        return None

    def _new_item(self, uri: str, offset: int, text: str, suggestion: Suggestion) -> Item:
        item = Item(f"s{next(self._ids)}", uri, offset, text, suggestion, suggestion.items)
        suggestion.items += 1
        self._items[item.id] = item
        while len(self._items) > self.capacity:
            self._items.popitem(last=False)
        return item

    def hidden(self, confidence: float | None) -> None:
        """A suggestion the model was unsure of was not shown (an empty answer):
        completion.minConfidence at work."""
        self._counts.hidden += 1
        self._counts.group(("byConfidence", confidence_band(confidence))).hidden += 1

    def forget(self, uri: str) -> None:
        """The document closed: nothing answered for it continues."""
        self._latest.pop(uri, None)

    # -- what the editor reports ----------------------------------------------------------

    def shown(self, item_id: str, now: float) -> bool:
        """The item is on screen. False for an id this server does not know (any more)."""
        item = self._items.get(item_id)
        if item is None:
            return False
        suggestion = item.suggestion
        suggestion.latest_shown = max(suggestion.latest_shown, item.seq)
        if suggestion.state == DISMISSED:  # shown again (asked for again): not dismissed
            self._counts.dismissed -= 1
            suggestion.state = SHOWN
        elif suggestion.state == ISSUED:
            self._count_shown(suggestion, now)
            suggestion.state = SHOWN
        return True

    def accepted(self, item_id: str, now: float) -> bool:
        """The item was accepted whole (its command ran)."""
        item = self._items.get(item_id)
        if item is None:
            return False
        suggestion = item.suggestion
        if suggestion.state == ACCEPTED:
            return True  # told twice
        self._leave(suggestion, now)
        counts = self._counts
        counts.accepted += 1
        counts.characters_accepted += max(0, len(item.text) - item.partly_accepted)
        item.partly_accepted = len(item.text)
        for key in suggestion.groups:
            counts.group(key).accepted += 1
        counts.per_minute(now, 1)
        if suggestion.shown_at is not None:
            counts.shown_to_accepted_ms.append(max(0.0, (now - suggestion.shown_at) * 1000))
        suggestion.state = ACCEPTED
        return True

    def partly_accepted(self, item_id: str, accepted_length: int, now: float) -> bool:
        """``accepted_length`` characters of the item's text are accepted so far (a word or a
        line at a time). All of it counts as accepting the item."""
        item = self._items.get(item_id)
        if item is None:
            return False
        if accepted_length >= len(item.text):
            return self.accepted(item_id, now)
        suggestion = item.suggestion
        if suggestion.state == ACCEPTED:
            return True
        gained = max(0, accepted_length - item.partly_accepted)
        item.partly_accepted += gained
        self._counts.characters_accepted += gained
        if suggestion.state != PARTLY and gained:
            self._leave(suggestion, now)
            self._counts.partly += 1
            suggestion.state = PARTLY
        return True

    def dismissed(self, item_id: str, now: float) -> bool:
        """The item went away without being accepted. Ignored when a later item of its
        suggestion (its rest, after the user typed or accepted part of it) has been shown
        since: the suggestion lives on in that one."""
        item = self._items.get(item_id)
        if item is None:
            return False
        suggestion = item.suggestion
        if item.seq < suggestion.latest_shown or suggestion.state in (PARTLY, ACCEPTED, DISMISSED):
            return True
        if suggestion.state == ISSUED:
            self._count_shown(suggestion, now)
        self._counts.dismissed += 1
        suggestion.state = DISMISSED
        return True

    def _count_shown(self, suggestion: Suggestion, now: float) -> None:
        suggestion.shown_at = now
        self._counts.shown += 1
        for key in suggestion.groups:
            self._counts.group(key).shown += 1
        self._counts.per_minute(now, 0)

    def _leave(self, suggestion: Suggestion, now: float) -> None:
        """Take the suggestion out of the count of its current outcome (before a new one);
        one accepted or partly accepted without having been reported shown was shown."""
        if suggestion.state == ISSUED:
            self._count_shown(suggestion, now)
        elif suggestion.state == PARTLY:
            self._counts.partly -= 1
        elif suggestion.state == DISMISSED:
            self._counts.dismissed -= 1

    # -- lspInfer/stats ---------------------------------------------------------------------

    def as_json(self) -> dict[str, Any]:
        counts = self._counts
        times = list(counts.shown_to_accepted_ms)
        result: dict[str, Any] = {
            "issued": counts.issued,
            "hidden": counts.hidden,
            "shown": counts.shown,
            "accepted": counts.accepted,
            "partlyAccepted": counts.partly,
            "dismissed": counts.dismissed,
            "pending": counts.shown - counts.accepted - counts.partly - counts.dismissed,
            "acceptanceRate": counts.accepted / counts.shown if counts.shown else None,
            "charactersAccepted": counts.characters_accepted,
            "shownToAcceptedMs": {
                "p50": percentile(times, 0.50),
                "p95": percentile(times, 0.95),
                "max": max(times) if times else None,
                "count": len(times),
            },
        }
        breakdowns: dict[str, list[str]] = {
            "byLength": [label for label, _ in CHAR_BUCKETS],
            "byLines": [label for label, _ in LINE_BUCKETS],
            "byExtraContext": ["with", "without"],
            "bySource": sorted({g for (b, g) in counts.groups if b == "bySource"}),
            "byConfidence": [label for label, _ in CONFIDENCE_BUCKETS] + [UNKNOWN],
        }
        for name, labels in breakdowns.items():
            result[name] = {label: counts.group((name, label)).as_json() for label in labels}
        for label, group in result["byConfidence"].items():
            group["hidden"] = counts.group(("byConfidence", label)).hidden
        result["byMinute"] = {
            "bucketSeconds": 60,
            "points": [
                {"t": minute * 60, "shown": shown, "accepted": accepted}
                for minute, (shown, accepted) in sorted(counts.minutes.items())
            ],
        }
        return result
