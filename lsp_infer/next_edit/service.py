"""Next-edit suggestions as the server offers them: the edit histories, the predictions
issued (by id, for the shown / accepted / rejected notifications) and their counters. No LSP
types: the handler converts positions and ranges at the protocol edge."""

from __future__ import annotations

import itertools
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

from cachetools import LRUCache

from lsp_infer.documents import Snapshot, Splice
from lsp_infer.next_edit.history import EditHistories
from lsp_infer.next_edit.predict import Prediction, is_python, predict
from lsp_infer.stats import percentile

ISSUED_KEPT = 256  # predictions remembered for their notifications
OUTCOMES = ("shown", "accepted", "rejected")


@dataclass
class _Issued:
    kind: str
    outcomes: set[str]


class NextEdits:
    def __init__(self) -> None:
        self.histories = EditHistories()
        self._issued: LRUCache[str, _Issued] = LRUCache(maxsize=ISSUED_KEPT)
        self._ids = itertools.count(1)
        self._requests = 0
        self._by_kind: dict[str, dict[str, int]] = {}
        self._latencies: deque[float] = deque(maxlen=500)

    # -- the document's edits -----------------------------------------------------------

    def changed(self, uri: str, before: str, splices: list[Splice]) -> None:
        """A didChange of a document whose edits may be recorded (not an excluded file's)."""
        self.histories.record(uri, before, splices)

    def forget(self, uri: str) -> None:
        """Closed, or excluded now: its edits go."""
        self.histories.forget(uri)

    # -- predictions --------------------------------------------------------------------

    def predict(self, snapshot: Snapshot) -> tuple[str, Prediction] | None:
        """The next edit for this version of the document, with the id it is issued under."""
        started = time.perf_counter()
        self._requests += 1
        history = self.histories.get(snapshot.uri)
        prediction = None
        if history is not None:
            python = is_python(snapshot.uri, snapshot.language_id)
            prediction = predict(snapshot.text, history.edits, python)
        self._latencies.append((time.perf_counter() - started) * 1000)
        if prediction is None:
            return None
        item_id = f"ne-{next(self._ids)}"
        self._issued[item_id] = _Issued(prediction.kind, set())
        self._count(prediction.kind, "predicted")
        return item_id, prediction

    def outcome(self, item_id: str, outcome: str) -> bool:
        """``outcome`` (shown, accepted, rejected) of an issued prediction, counted once
        each; False for an id never issued or forgotten."""
        issued = self._issued.get(item_id)
        if issued is None:
            return False
        if outcome not in issued.outcomes:
            issued.outcomes.add(outcome)
            self._count(issued.kind, outcome)
        return True

    def _count(self, kind: str, what: str) -> None:
        counts = self._by_kind.setdefault(kind, dict.fromkeys(("predicted", *OUTCOMES), 0))
        counts[what] += 1

    def stats(self) -> dict[str, Any]:
        totals = {what: sum(c[what] for c in self._by_kind.values())
                  for what in ("predicted", *OUTCOMES)}  # fmt: skip
        latencies = list(self._latencies)
        return {
            "requests": self._requests,
            **totals,
            "byKind": {kind: dict(counts) for kind, counts in self._by_kind.items()},
            "p50Ms": percentile(latencies, 0.5),
            "p95Ms": percentile(latencies, 0.95),
        }
