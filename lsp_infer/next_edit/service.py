"""Next-edit suggestions as the server offers them: the edit histories, the predictions
issued (by id, for the shown / accepted / rejected notifications) and their counters. No LSP
types: the handler converts positions and ranges at the protocol edge."""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Protocol

from cachetools import LRUCache

from lsp_infer.core.backend import BackendUnavailable, Decoded
from lsp_infer.core.cancel import Cancelled, CancelReason, CancelToken
from lsp_infer.documents import Snapshot, Splice
from lsp_infer.next_edit.analogy import analogy_for, analogy_prediction, analogy_prompt
from lsp_infer.next_edit.history import Edit, EditHistories
from lsp_infer.next_edit.predict import Prediction, is_python, predict, renamed_in_code
from lsp_infer.stats import percentile

log = logging.getLogger(__name__)

ISSUED_KEPT = 256  # predictions remembered for their notifications
OUTCOMES = ("shown", "accepted", "rejected")


class LineModel(Protocol):
    """A model that continues a plain prompt to the end of its line, with each token's
    probability: the local backend (local/line_model.py) or the team's server
    (team/next_edit_model.py). BackendUnavailable when it cannot answer."""

    async def continue_line(self, prompt: str, seconds: float, cancel: CancelToken) -> Decoded: ...


@dataclass(frozen=True)
class ModelAsk:
    """How the model is asked for a like change (next_edit/analogy.py): shown only when every
    token of its line is at least ``min_probability`` likely (the model profile's, measured);
    the answer is given up after ``seconds``. ``tier``: "local" or "team"; ``fallback``: asked
    instead when this model is unavailable (the team's server down: the local model)."""

    model: LineModel
    min_probability: float
    seconds: float = 2.0
    tier: str = "local"
    fallback: ModelAsk | None = None


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
        # The model's work for a document, stopped by its next edit or by a completion request.
        self._asking: dict[str, CancelToken] = {}
        self._model = {"asked": 0, "team": 0, "stopped": 0, "unsure": 0, "unavailable": 0}
        self._model_latencies: deque[float] = deque(maxlen=500)

    # -- the document's edits -----------------------------------------------------------

    def changed(self, uri: str, before: str, splices: list[Splice]) -> None:
        """A didChange of a document whose edits may be recorded (not an excluded file's)."""
        self.histories.record(uri, before, splices)

    def forget(self, uri: str) -> None:
        """Closed, or excluded now: its edits go."""
        self.histories.forget(uri)
        self.stop(uri, CancelReason.DOCUMENT_CLOSED)

    def stop(self, uri: str | None, reason: CancelReason) -> None:
        """Stop the model's work for ``uri`` (None: for every document): the user typed on,
        or a completion wants the model (the keystroke wins)."""
        for asked_for, token in list(self._asking.items()):
            if uri is None or asked_for == uri:
                token.cancel(reason)

    # -- predictions --------------------------------------------------------------------

    async def predict(
        self, snapshot: Snapshot, ask: ModelAsk | None = None
    ) -> tuple[str, Prediction] | None:
        """The next edit for this version of the document, with the id it is issued under:
        what the edits make near certain, else (with ``ask``) a like change the model is sure
        of."""
        started = time.perf_counter()
        self._requests += 1
        history = self.histories.get(snapshot.uri)
        prediction = None
        python = is_python(snapshot.uri, snapshot.language_id)
        if history is not None:
            prediction = predict(snapshot.text, history.edits, python)
        self._latencies.append((time.perf_counter() - started) * 1000)
        latest = history.latest if history is not None else None
        # A name in code changed to another is the rename rule's: where it refused (another
        # variable meant, most often), the model must not carry the change to a line like it.
        if (
            prediction is None
            and ask is not None
            and latest is not None
            and not (python and renamed_in_code(snapshot.text, latest))
        ):
            prediction = await self._ask_model(snapshot, latest, python, ask)
        if prediction is None:
            return None
        item_id = f"ne-{next(self._ids)}"
        self._issued[item_id] = _Issued(prediction.kind, set())
        self._count(prediction.kind, "predicted")
        return item_id, prediction

    async def _ask_model(
        self, snapshot: Snapshot, latest: Edit, python: bool, ask: ModelAsk
    ) -> Prediction | None:
        analogy = analogy_for(snapshot.text, latest)
        if analogy is None:
            return None
        uri = snapshot.uri
        self.stop(uri, CancelReason.SUPERSEDED)
        token = self._asking[uri] = CancelToken()
        started = time.perf_counter()
        prompt = analogy_prompt(uri.rsplit("/", 1)[-1].split("?", 1)[0], analogy)
        try:
            while True:
                self._model["asked"] += 1
                self._model["team"] += ask.tier == "team"
                try:
                    decoded = await ask.model.continue_line(prompt, ask.seconds, token)
                    break
                except BackendUnavailable as exc:
                    self._model["unavailable"] += 1
                    log.info("next edit: the %s model is unavailable (%s)", ask.tier, exc)
                    if ask.fallback is None:
                        return None
                    ask = ask.fallback
        except Cancelled:
            self._model["stopped"] += 1
            return None
        except asyncio.CancelledError:  # the client cancelled the request: the model stops too
            token.cancel(CancelReason.CLIENT)
            self._model["stopped"] += 1
            raise
        finally:
            if self._asking.get(uri) is token:
                del self._asking[uri]
        self._model_latencies.append((time.perf_counter() - started) * 1000)
        answer = decoded.text + ("\n" if decoded.stop_reason == "end" else "")
        prediction = analogy_prediction(
            snapshot.text, analogy, answer, decoded.probs, ask.min_probability, python
        )
        if prediction is None:
            self._model["unsure"] += 1
        return prediction

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
            # Asked of a model (of them, of the team's), stopped by a keystroke, answered but
            # not shown (unchanged, unsure, or not parsing), a model that could not answer
            # (the team's server down or too slow); the time of those answered.
            "model": {
                **self._model,
                "p50Ms": percentile(list(self._model_latencies), 0.5),
                "p95Ms": percentile(list(self._model_latencies), 0.95),
            },
        }
