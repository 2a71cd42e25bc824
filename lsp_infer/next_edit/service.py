"""Next-edit suggestions as the server offers them: the edit histories, the predictions
issued (by id, for the shown / accepted / rejected notifications) and their counters. No LSP
types: the handler converts positions and ranges at the protocol edge."""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections import deque
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from cachetools import LRUCache

from lsp_infer.core.backend import BackendUnavailable, Decoded
from lsp_infer.core.cancel import Cancelled, CancelReason, CancelToken
from lsp_infer.documents import Snapshot, Splice
from lsp_infer.editor import Editor, EditorRequestFailed
from lsp_infer.next_edit.analogy import analogy_for, analogy_prediction, analogy_prompt
from lsp_infer.next_edit.edits import Prediction, word_around
from lsp_infer.next_edit.history import Edit, EditHistories
from lsp_infer.next_edit.predict import predict, renamed_in_code
from lsp_infer.next_edit.references import References, references_in
from lsp_infer.next_edit.sweep import sweep_prediction, sweep_question
from lsp_infer.next_edit.syntax import Syntax, is_name, syntax_of
from lsp_infer.next_edit.zeta import zeta_prediction, zeta_question
from lsp_infer.stats import percentile

log = logging.getLogger(__name__)

ISSUED_KEPT = 256  # predictions remembered for their notifications
REFERENCES_WAIT_S = 5.0  # an lspInfer/references answer later than this is given up
OUTCOMES = ("shown", "accepted", "rejected")


class LineModel(Protocol):
    """A model that continues a plain prompt to the end of its line, with each token's
    probability: the local backend (local/line_model.py) or the team's server
    (team/next_edit_model.py). BackendUnavailable when it cannot answer."""

    async def continue_line(self, prompt: str, seconds: float, cancel: CancelToken) -> Decoded: ...


class RegionModel(Protocol):
    """A trained next-edit model that writes a region out again with its edits
    (next_edit/zeta.py, sweep.py): the team's server (team/next_edit_model.py). ``prompt``
    continued until one of ``until`` has been written; BackendUnavailable when it cannot
    answer."""

    async def rewrite(
        self,
        prompt: str,
        until: Sequence[str],
        max_tokens: int,
        seconds: float,
        cancel: CancelToken,
    ) -> Decoded: ...


# nextEdit.teamFormat's region formats: how the question is put, and how the answer is read.
REGION_FORMATS = {
    "zeta": (zeta_question, zeta_prediction),
    "sweep": (sweep_question, sweep_prediction),
}


@dataclass(frozen=True)
class ModelAsk:
    """How the model is asked for a like change (next_edit/analogy.py): shown only when every
    token of its line is at least ``min_probability`` likely (the model profile's, measured);
    the answer is given up after ``seconds``. ``tier``: "local" or "team"; ``fallback``: asked
    instead when this model is unavailable (the team's server down: the local model).
    ``region``: a trained next-edit model asked instead to rewrite the region around the
    cursor (``nextEdit.teamFormat`` "zeta"), under the same threshold."""

    model: LineModel
    min_probability: float
    seconds: float = 2.0
    tier: str = "local"
    fallback: ModelAsk | None = None
    region: RegionModel | None = None
    region_format: str = "zeta"  # nextEdit.teamFormat: "zeta" or "sweep"


@dataclass(frozen=True)
class _Question:
    """What a model is asked about: the document, its recent edits (the latest last), where
    the cursor is."""

    snapshot: Snapshot
    edits: list[Edit]
    latest: Edit
    cursor: int
    syntax: Syntax | None


@dataclass
class _AskedReferences:
    """An lspInfer/references request in flight: the name asked about, the text it was asked
    on, and the splices made since (its answer's spans are moved by them)."""

    name: str
    offset: int
    snapshot: Snapshot
    splices: list[Splice]


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
        # Where the editor's language server says a name is used (lspInfer/references): the
        # latest answer per document, and the request in flight.
        self._references: dict[str, References] = {}
        self._asking_references: dict[str, _AskedReferences] = {}
        self._reference_tasks: set[asyncio.Task[None]] = set()
        self._reference_counts = dict.fromkeys(("asked", "answered", "empty", "failed", "used"), 0)

    # -- the document's edits -----------------------------------------------------------

    def changed(self, uri: str, before: str, splices: list[Splice]) -> None:
        """A didChange of a document whose edits may be recorded (not an excluded file's)."""
        self.histories.record(uri, before, splices)
        if (asked := self._asking_references.get(uri)) is not None:
            asked.splices.extend(splices)
        if (references := self._references.get(uri)) is not None:
            for splice in splices:
                references.splice(splice)

    def forget(self, uri: str) -> None:
        """Closed, or excluded now: its edits go."""
        self.histories.forget(uri)
        self._references.pop(uri, None)
        self._asking_references.pop(uri, None)
        self.stop(uri, CancelReason.DOCUMENT_CLOSED)

    def stop(self, uri: str | None, reason: CancelReason) -> None:
        """Stop the model's work for ``uri`` (None: for every document): the user typed on,
        or a completion wants the model (the keystroke wins)."""
        for asked_for, token in list(self._asking.items()):
            if uri is None or asked_for == uri:
                token.cancel(reason)

    # -- predictions --------------------------------------------------------------------

    async def predict(
        self, snapshot: Snapshot, ask: ModelAsk | None = None, cursor: int | None = None
    ) -> tuple[str, Prediction] | None:
        """The next edit for this version of the document, with the id it is issued under:
        what the edits make near certain, else (with ``ask``) a like change the model is sure
        of. ``cursor``: where the user is (a region model rewrites around it; by default the
        latest edit's end)."""
        started = time.perf_counter()
        self._requests += 1
        history = self.histories.get(snapshot.uri)
        prediction = None
        syntax = syntax_of(snapshot.uri, snapshot.language_id)
        if history is not None:
            references = self._references.get(snapshot.uri)
            prediction = predict(snapshot.text, history.edits, syntax, references)
        self._latencies.append((time.perf_counter() - started) * 1000)
        latest = history.latest if history is not None else None
        # A name in code changed to another is the rename rule's: where it refused (another
        # variable meant, most often), the model must not carry the change to a line like it.
        if (
            prediction is None
            and ask is not None
            and latest is not None
            and not (syntax is not None and renamed_in_code(snapshot.text, latest, syntax))
        ):
            assert history is not None
            where = latest.end if cursor is None else cursor
            question = _Question(snapshot, history.edits, latest, where, syntax)
            prediction = await self._ask_model(question, ask)
        if prediction is None:
            return None
        item_id = f"ne-{next(self._ids)}"
        # Counted apart, so that the renames from references are measured on their own.
        kind = "referenceRename" if prediction.from_references else prediction.kind
        self._issued[item_id] = _Issued(kind, set())
        self._count(kind, "predicted")
        self._reference_counts["used"] += prediction.from_references
        return item_id, prediction

    # -- where the editor's language server says a name is used --------------------------

    def ask_references(self, snapshot: Snapshot, offset: int, editor: Editor) -> None:
        """The cursor rests at ``offset``: if it is on a name whose uses are not known yet,
        ask the editor where it is used (in the background; lspInfer/references). Only for a
        document whose edits may be recorded (the caller checks)."""
        syntax = syntax_of(snapshot.uri, snapshot.language_id)
        start, end = word_around(snapshot.text, offset, offset, syntax)
        name = snapshot.text[start:end]
        uri = snapshot.uri
        if not is_name(name, syntax) or uri in self._asking_references:
            return
        known = self._references.get(uri)
        if known is not None and known.name == name and known.covers(start):
            return
        asked = self._asking_references[uri] = _AskedReferences(name, start, snapshot, [])
        self._reference_counts["asked"] += 1
        task = asyncio.create_task(self._ask_references(asked, editor))
        self._reference_tasks.add(task)
        task.add_done_callback(self._reference_tasks.discard)

    async def _ask_references(self, asked: _AskedReferences, editor: Editor) -> None:
        snapshot = asked.snapshot
        try:
            spans = await asyncio.wait_for(
                editor.references(snapshot.uri, snapshot.version, snapshot.text, asked.offset),
                REFERENCES_WAIT_S,
            )
        except (EditorRequestFailed, TimeoutError) as exc:
            spans = None
            self._reference_counts["failed"] += 1
            log.info("lspInfer/references for %s failed: %s", snapshot.uri, exc or "no answer")
        if self._asking_references.get(snapshot.uri) is not asked:
            return  # closed meanwhile
        del self._asking_references[snapshot.uri]
        references = references_in(snapshot.text, asked.name, spans or [])
        if references is None:
            self._reference_counts["empty"] += spans is not None
            return
        self._reference_counts["answered"] += 1
        for splice in asked.splices:
            references.splice(splice)
        self._references[snapshot.uri] = references

    async def _ask_model(self, question: _Question, ask: ModelAsk | None) -> Prediction | None:
        """The first model of ``ask`` and its fallbacks that can answer, asked under one
        cancel token for the document (its next edit, or a completion, stops it)."""
        uri = question.snapshot.uri
        self.stop(uri, CancelReason.SUPERSEDED)
        token = self._asking[uri] = CancelToken()
        try:
            while ask is not None:
                try:
                    return await self._ask_one(question, ask, token)
                except BackendUnavailable as exc:
                    self._model["unavailable"] += 1
                    log.info("next edit: the %s model is unavailable (%s)", ask.tier, exc)
                    ask = ask.fallback
            return None
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

    async def _ask_one(
        self, question: _Question, ask: ModelAsk, token: CancelToken
    ) -> Prediction | None:
        snapshot, latest, syntax = question.snapshot, question.latest, question.syntax
        name = snapshot.uri.rsplit("/", 1)[-1].split("?", 1)[0]
        if ask.region is not None:
            build, judge = REGION_FORMATS[ask.region_format]
            region = build(name, snapshot.text, question.cursor, question.edits)
            if region is None:
                return None  # the text holds the model's own markers
            decoded, seconds = await self._timed(ask, ask.region.rewrite(
                region.prompt, region.until, region.max_tokens, ask.seconds, token))  # fmt: skip
            prediction = judge(snapshot.text, region, decoded.text, decoded.probs,
                               ask.min_probability, latest, syntax,
                               ended=decoded.stop_reason == "end")  # fmt: skip
        else:
            analogy = analogy_for(snapshot.text, latest)
            if analogy is None:
                return None
            prompt = analogy_prompt(name, analogy)
            decoded, seconds = await self._timed(
                ask, ask.model.continue_line(prompt, ask.seconds, token)
            )
            answer = decoded.text + ("\n" if decoded.stop_reason == "end" else "")
            prediction = analogy_prediction(
                snapshot.text, analogy, answer, decoded.probs, ask.min_probability, syntax
            )
        self._model_latencies.append(seconds * 1000)
        if prediction is None:
            self._model["unsure"] += 1
        return prediction

    async def _timed(self, ask: ModelAsk, asking: Awaitable[Decoded]) -> tuple[Decoded, float]:
        """The model's answer (counted as asked) and the seconds it took."""
        self._model["asked"] += 1
        self._model["team"] += ask.tier == "team"
        started = time.perf_counter()
        return await asking, time.perf_counter() - started

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
            # lspInfer/references: asked when the cursor rested on a name, answered with its
            # uses, answered with none, failed (an error, or no answer in 5 s), and the
            # renames made from them.
            "references": dict(self._reference_counts),
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
