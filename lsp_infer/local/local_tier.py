"""The local tier assembled: the model lane, the llama.cpp backend, extra context and the
keystroke scheduler — and the model's loading, with its state and errors told to the editor."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from typing import Any

from lsp_infer.config import CompletionSettings, ModelSettings, Settings
from lsp_infer.core.backend import BackendUnavailable
from lsp_infer.core.engine import CompletionEngine
from lsp_infer.documents import Snapshot
from lsp_infer.editor import Editor, Progress
from lsp_infer.local.completions import Answer, Completions, Tuning
from lsp_infer.local.extra_context import ExtraContext
from lsp_infer.local.lane import ModelLane
from lsp_infer.local.line_model import LocalLineModel
from lsp_infer.local.llama_cpp import LlamaCppBackend
from lsp_infer.session import Session

log = logging.getLogger(__name__)


class LocalTier:
    def __init__(self, session: Session, editor: Editor) -> None:
        self._session = session
        self._editor = editor
        self.lane = ModelLane()
        self.backend = LlamaCppBackend(self.lane)
        self.line_model = LocalLineModel(self.backend)  # next edits' like changes
        self.extra_context = ExtraContext(session, editor)
        self.completions = Completions(
            CompletionEngine(self.backend), self.lane, self.extra_context, self._offer_again
        )
        self.tuning = Tuning(CompletionSettings())
        self._settings = Settings()
        self._requested_model: ModelSettings | None = None
        self._reported_error: str | None = None
        self._loading: asyncio.Future[None] | None = None
        self._logged_requests = -1
        self._warm_when_ready: tuple[Snapshot, int] | None = None
        # Documents seen matching the exclusion rules (the setting, .lspinferignore, the
        # secret-file defaults), and the document last asked for; see note_exclusions.
        self._withheld: frozenset[str] = frozenset()
        self._last_document: str | None = None

    def configure(self, settings: Settings) -> None:
        """New settings; reloads the model if its settings changed."""
        self._settings = settings
        self._tune()
        self.extra_context.use_definitions = settings.context.definitions
        if settings.model != self._requested_model:
            self._requested_model = settings.model
            self._start_load(settings.model)
        self.note_exclusions(self._session.documents.uris())  # the exclude setting may have changed

    def _tune(self) -> None:
        """The tuning for these settings and the model loaded: its profile's values where the
        user set none (core/profiles.py). Before a model is loaded, the settings as they are."""
        settings, loaded = self._settings, self.backend.loaded
        completion = settings.completion
        if loaded is not None:
            completion = loaded.profile.completion(completion, settings.explicit)
        # The model's settings are part of every cache key: the same settings, the same model.
        model_key = (dataclasses.astuple(settings.model), loaded.resolved.path if loaded else None)
        self.tuning = Tuning(completion, model_key, settings.context)

    def note_exclusions(self, uris: list[str]) -> None:
        """Look at whether these documents are excluded now. The rules change while the
        server runs (the setting, a .lspinferignore edited); a document newly excluded loses
        its kept KV states, in RAM and on disk, and never gets one written again. Checked on
        the event loop (the rules read the workspace folders) where the rules may have
        changed for a document with states: opening, closing, switching away, new settings."""
        policy = self._session.policy()
        withheld, newly = set(self._withheld), []
        for uri in uris:
            if not policy.excluded(uri):
                withheld.discard(uri)
            elif uri not in withheld:
                withheld.add(uri)
                newly.append(uri)
        if withheld != self._withheld:
            self._withheld = frozenset(withheld)
            self.backend.withhold(self._withheld)
        for uri in newly:
            self.lane.submit(self.backend.forget, uri).add_done_callback(_retrieve)

    def _switching_to(self, uri: str) -> None:
        """A request in ``uri``: the document asked for before it may have been excluded
        since, and its prompt is about to be kept (and written) as the cache moves on."""
        previous, self._last_document = self._last_document, uri
        if previous is not None and previous != uri:
            self.note_exclusions([previous])

    # -- requests ---------------------------------------------------------------------

    async def suggest(self, snapshot: Snapshot, offset: int, explicit: bool) -> Answer:
        """The suggestion at ``offset`` of ``snapshot``; empty when there is none, the request
        went stale, or the model is unavailable (told to the user once per error)."""
        uri, version = snapshot.uri, snapshot.version
        self._switching_to(uri)
        if self._loading is not None and not self._loading.done():
            # It would wait on the lane behind the load anyway; waiting here shapes it by the
            # loaded model's profile (_tune), the shape (and cache key) every later one has.
            # asyncio.wait: a keystroke cancels this request, never the load's watch.
            await asyncio.wait({self._loading})
        try:
            return await self.completions.answer(
                uri, snapshot.text, offset, self.tuning, explicit=explicit,
                is_current=lambda: self._session.is_current(uri, version),
            )  # fmt: skip
        except BackendUnavailable as exc:
            self._report_model_error(str(exc))
            return Answer("", "unavailable")

    def warm(self, snapshot: Snapshot, offset: int) -> None:
        """The cursor rests at ``offset``: evaluate the prompt there in the background, once
        the model is loaded (before that there is nothing to warm, and no error to tell)."""
        self._switching_to(snapshot.uri)
        if self.backend.state == "ready":
            self.completions.warm(snapshot.uri, snapshot.text, offset, self.tuning)
        else:  # the model is loading (an editor's first file): warm there once it is ready
            self._warm_when_ready = (snapshot, offset)

    def _offer_again(self, uri: str, text: str, offset: int) -> bool:
        """A better suggestion is ready at ``offset`` of ``text``: the editor is told if the
        document is still that text (lspInfer/suggestionReady, for an editor that asked)."""
        snapshot = self._session.documents.find(uri)
        if snapshot is None or snapshot.text != text:
            return False
        return self._editor.suggestion_ready(uri, snapshot.version, text, offset)

    # -- document events ----------------------------------------------------------------

    def opened(self, uri: str, text: str) -> None:
        self.extra_context.note(uri, text, 0)
        self.note_exclusions([uri])  # an excluded file's state from an earlier server goes

    def changed(self, uri: str, text: str, line: int | None) -> None:
        """An edit (``line``: where an incremental one starts). Stops the document's
        generation unless the edit continues it."""
        self.completions.document_changed(uri, text)
        if line is not None:
            self.extra_context.note(uri, text, line)
        else:  # a whole-text change: definitions read from this file are stale
            self.extra_context.definitions.changed(uri)

    def saved(self, uri: str, text: str) -> None:
        self.extra_context.saved(uri, text)

    def closed(self, uri: str) -> None:
        self.completions.document_closed(uri)
        self.extra_context.closed(uri)
        # Its kept KV states go too; on the lane, behind the work already queued. Written to
        # disk first if it holds the cache, unless it is excluded now.
        self.note_exclusions([uri])
        self.lane.submit(self.backend.forget, uri).add_done_callback(_retrieve)

    async def save_states(self, timeout: float = 5.0) -> None:
        """Before shutdown: the work in flight stops, and the documents' evaluated prompts go
        to disk (model.stateDiskMb), for a later server."""
        if self.backend.state != "ready" or self._requested_model is None:
            return
        if not self._requested_model.state_disk_mb:
            return
        self.completions.shutdown()
        try:
            await asyncio.wait_for(self.lane.submit(self.backend.save_states, timeout), timeout)
        except (TimeoutError, asyncio.CancelledError, RuntimeError, OSError) as exc:
            log.warning("the KV states were not all written at shutdown: %r", exc)

    def shutdown(self) -> None:
        self.completions.shutdown()
        self.extra_context.definitions.shutdown()
        self.lane.shutdown()

    # -- stats --------------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        """The keystroke path's counters and percentiles (``lspInfer/stats``)."""
        stats = self.completions.stats.as_json(queue_depth=self.lane.pending)
        loaded = self.backend.loaded
        stats.update(self.backend.stats_json())
        definitions = self.extra_context.definitions
        stats["definitions"] = definitions.stats.as_json(definitions.supported)
        stats["compute"] = {
            "backend": loaded.compute if loaded else None,
            "devices": [d.name for d in loaded.devices] if loaded else [],
            "gpuLayers": min(loaded.gpu_layers, loaded.n_layers) if loaded else 0,
            "layers": loaded.n_layers if loaded else 0,
            # Which weights: the embedded file, its requantized copy (model.requantize), or
            # a custom model.path.
            "modelFile": loaded.resolved.path.name if loaded else None,
        }
        embedded = loaded.resolved.model if loaded and loaded.resolved.embedded else None
        stats["model"] = {
            "name": loaded.name if loaded else None,  # the GGUF's general.name
            "embedded": embedded.name if embedded else None,  # model.name's, or null
            "profile": loaded.profile.name if loaded else None,
            "order": loaded.order if loaded else None,
            "chosenBecause": loaded.chosen_because if loaded else None,
        }
        return stats

    def stats_line(self) -> str | None:
        """A line for the log, or None when nothing was asked since the last one."""
        stats = self.completions.stats
        if stats.requests == self._logged_requests:
            return None
        self._logged_requests = stats.requests
        return stats.log_line()

    # -- the model ----------------------------------------------------------------------

    def _start_load(self, settings: ModelSettings) -> None:
        self._editor.model_status("loading", "loading the model")
        reporter = _LoadReporter(asyncio.get_running_loop())
        loading = self.backend.start_load(settings, reporter.from_lane)
        self._loading = asyncio.ensure_future(self._watch_load(loading, reporter))

    async def _watch_load(self, loading: asyncio.Future[None], reporter: _LoadReporter) -> None:
        reporter.progress = progress = await self._editor.progress("lsp-infer", "Loading model…")
        await loading
        progress.end(self.backend.state)
        if self.backend.state == "failed":
            error = self.backend.error or "the model failed to load"
            self._editor.model_status("failed", error)
            self._report_model_error(error)
        elif (loaded := self.backend.loaded) is not None:
            self._tune()
            self.completions.forget_suggestions()
            self._warm_after_load()
            for warning in self.backend.warnings:  # e.g. GPU layers asked of a CPU-only build
                self._editor.show(f"lsp-infer: {warning}", "warning")
            self._editor.model_status(
                "ready", f"{loaded.name} ({loaded.template.name}, {loaded.compute})"
            )

    def _warm_after_load(self) -> None:
        """The place the cursor rested while the model loaded, if its document has not
        changed since (a newer place or an edit replaces it: the editor warms again)."""
        waiting, self._warm_when_ready = self._warm_when_ready, None
        if waiting is not None:
            snapshot, offset = waiting
            if self._session.is_current(snapshot.uri, snapshot.version):
                self.completions.warm(snapshot.uri, snapshot.text, offset, self.tuning)

    def _report_model_error(self, error: str) -> None:
        """Tell the user once per distinct failure, not once per keystroke."""
        if error != self._reported_error:
            self._reported_error = error
            self._editor.show(f"lsp-infer: completions are off: {error}", "error")


def _retrieve(future: asyncio.Future[None]) -> None:
    if not future.cancelled():
        future.exception()  # the lane logs nothing itself; a failure here is not the user's


class _LoadReporter:
    """A model load's progress, from the lane thread to the editor (once it shows one)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.progress: Progress | None = None
        self.last_decile = -1

    def from_lane(self, done: int, total: int) -> None:
        percent = done * 100 // max(total, 1)
        if percent // 10 != self.last_decile:
            self.last_decile = percent // 10
            self.loop.call_soon_threadsafe(self._report, percent)

    def _report(self, percent: int) -> None:
        if self.progress is not None:
            self.progress.report(percent)
