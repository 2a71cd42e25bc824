"""The language server: pygls wiring, settings, and thin handlers.

Handlers resolve a snapshot and call plain code (engine, scheduling); LSP types
stop here and in protocol.py.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import uuid
from collections.abc import Generator, Mapping
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams, JsonRpcInvalidRequest
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, lsp_method

from lsp_infer import __version__
from lsp_infer.backends import BackendUnavailable
from lsp_infer.backends.llama_cpp import LlamaCppBackend
from lsp_infer.commands import REFACTOR_FILE, REFACTOR_FILES, TeamCommands, command_arguments
from lsp_infer.completions import Completions
from lsp_infer.config import ModelSettings, load_settings
from lsp_infer.documents import DocumentNotOpen, DocumentStore
from lsp_infer.engine import CompletionEngine
from lsp_infer.extra_context import OpenDocument, WorkspaceContext
from lsp_infer.positions import PositionError, position_at
from lsp_infer.privacy import NotAllowed, Policy, path_of
from lsp_infer.protocol import (
    DEBUG_DOCUMENT_METHOD,
    SECTION,
    STATS_METHOD,
    STATUS_METHOD,
    completion_list,
    encoding_from,
    inline_completion_list,
    position,
    text_changes,
)
from lsp_infer.scheduling import ModelLane

log = logging.getLogger(__name__)


class _AlreadyAnswered:
    """Stands in for a request that failed to deserialize and was answered with an error."""

    jsonrpc = "2.0"


_ALREADY_ANSWERED = _AlreadyAnswered()


class LspInferProtocol(LanguageServerProtocol):
    """pygls' protocol with two changes.

    * Documents live in our own :class:`DocumentStore` (exact LSP line ends, utf-8/16/32
      positions, never read from disk) instead of pygls' workspace.
    * A request whose params do not deserialize is answered with InvalidParams;
      pygls would log it and leave the client waiting forever.
    """

    _server: LspInferServer

    def structure_message(self, data: dict[str, Any]) -> Any:
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if "id" in data and "method" in data:
                message = f"invalid params for {data.get('method')!r}: {exc.__cause__ or exc}"
                self._send_response(
                    data["id"], error=JsonRpcInvalidParams(message).to_response_error()
                )
                return _ALREADY_ANSWERED
            raise

    def handle_message(self, message: Any) -> None:
        if message is _ALREADY_ANSWERED:
            return
        super().handle_message(message)

    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(
        self, params: types.DidOpenTextDocumentParams
    ) -> Generator[Any, Any, None]:
        doc = params.text_document
        self._server.documents.open(doc.uri, doc.version, doc.text, doc.language_id)
        self._server.context.note(doc.uri, doc.text, 0)
        yield from self._user_handler(types.TEXT_DOCUMENT_DID_OPEN, params)

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(
        self, params: types.DidChangeTextDocumentParams
    ) -> Generator[Any, Any, None]:
        doc = params.text_document
        try:
            snapshot = self._server.documents.change(
                doc.uri, doc.version, text_changes(params.content_changes), self._server.encoding
            )
        except DocumentNotOpen:
            log.warning("didChange for a document that is not open: %s", doc.uri)
        else:
            # Stops the document's generation unless this edit continues it, and any
            # refactor in flight for it (its result would be for an old version).
            self._server.completions.document_changed(doc.uri, snapshot.text)
            self._server.team.document_changed(doc.uri)
            first = params.content_changes[0] if params.content_changes else None
            if isinstance(first, types.TextDocumentContentChangePartial):
                self._server.context.note(doc.uri, snapshot.text, first.range.start.line)
        yield from self._user_handler(types.TEXT_DOCUMENT_DID_CHANGE, params)

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(
        self, params: types.DidCloseTextDocumentParams
    ) -> Generator[Any, Any, None]:
        uri = params.text_document.uri
        self._server.documents.close(uri)
        self._server.completions.document_closed(uri)
        self._server.context.closed(uri)
        yield from self._user_handler(types.TEXT_DOCUMENT_DID_CLOSE, params)

    def _user_handler(self, method: str, params: Any) -> Generator[Any, Any, None]:
        if (handler := self.fm.features.get(method)) is not None:
            yield handler, (params,), None


class LspInferServer(LanguageServer):
    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        super().__init__(
            "lsp-infer",
            __version__,
            protocol_cls=LspInferProtocol,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
        )
        self.env = dict(os.environ if env is None else env)
        self.documents = DocumentStore()
        self.lane = ModelLane()
        self.backend = LlamaCppBackend(self.lane)
        self.context = WorkspaceContext(self._open_documents, self._excluded, self.relative_path)
        self.completions = Completions(CompletionEngine(self.backend), self.lane, self.context)
        self.team = TeamCommands(self)
        self.settings, self._problems = load_settings(None, self.env)
        self._init_options: Any = None
        self._shown_problems: list[str] = []
        self._reported_model_error: str | None = None
        self._model_task: asyncio.Future[None] | None = None
        self._requested_model: ModelSettings | None = None
        self._status: dict[str, str] = {}
        self._stats_task: asyncio.Future[None] | None = None
        self._policy: Policy | None = None
        self._policy_key: tuple[Any, ...] = ()
        self.initialized_event = asyncio.Event()

    @property
    def encoding(self) -> Any:
        return encoding_from(self.workspace.position_encoding)

    # -- settings -------------------------------------------------------------------

    def apply_settings(self, raw: Any) -> None:
        """New settings from the client; reloads the model if its settings changed."""
        settings, problems = load_settings(raw, self.env)
        if problems and problems != self._shown_problems:
            self._shown_problems = problems
            self.show(
                "lsp-infer: some settings were not valid and use their defaults: "
                + "; ".join(problems),
                types.MessageType.Warning,
            )
        self.settings = settings
        logging.getLogger("lsp_infer").setLevel(settings.log_level.upper())
        if settings.model != self._requested_model:
            self._requested_model = settings.model
            self.start_model_load()

    async def pull_settings(self) -> None:
        """Ask the client for the ``lspInfer`` section, if it supports workspace/configuration."""
        workspace_caps = self.client_capabilities.workspace
        if not (workspace_caps and workspace_caps.configuration):
            self.apply_settings(self._init_options)
            return
        try:
            result = await asyncio.wait_for(
                self.workspace_configuration_async(
                    types.ConfigurationParams(items=[types.ConfigurationItem(section=SECTION)])
                ),
                timeout=10,
            )
        except (asyncio.TimeoutError, JsonRpcException) as exc:
            log.warning("workspace/configuration failed (%s); using initializationOptions", exc)
            result = None
        pulled = result[0] if result else None
        # An empty object is a real answer (the user cleared every setting); null is not.
        self.apply_settings(pulled if pulled is not None else self._init_options)

    # -- model ----------------------------------------------------------------------

    def start_model_load(self) -> None:
        self.notify_status("loading", "loading the model")
        progress = _LoadProgress(self)
        loading = self.backend.start_load(self.settings.model, progress.from_lane)
        self._model_task = asyncio.ensure_future(self._watch_model_load(loading, progress))

    async def _watch_model_load(
        self, loading: asyncio.Future[None], progress: _LoadProgress
    ) -> None:
        # No server-to-client requests before the client said `initialized` (LSP spec).
        await self.initialized_event.wait()
        await progress.begin("lsp-infer", "Loading model…")
        await loading
        progress.end(self.backend.state)
        if self.backend.state == "failed":
            self.notify_status("failed", self.backend.error or "the model failed to load")
            self.report_model_error(self.backend.error or "the model failed to load")
        elif self.backend.loaded is not None:
            self.completions.forget_suggestions()
            self.notify_status(
                "ready", f"{self.backend.loaded.name} ({self.backend.loaded.template.name})"
            )

    def notify_status(self, state: str | None = None, message: str = "") -> None:
        """``lspInfer/status``: lets clients show loading / ready / failed. Without arguments,
        repeats the last one (clients install their handlers only after `initialize`)."""
        if state is not None:
            self._status = {"state": state, "message": message}
        if self._status and self.initialized_event.is_set():
            self.protocol.notify(STATUS_METHOD, self._status)

    def report_model_error(self, error: str) -> None:
        """Tell the user once per distinct failure, not once per keystroke."""
        if error != self._reported_model_error:
            self._reported_model_error = error
            self.show(f"lsp-infer: completions are off: {error}", types.MessageType.Error)

    def _open_documents(self) -> list[OpenDocument]:
        return [
            OpenDocument(uri, self.relative_path(uri), snapshot.text)
            for uri in self.documents.uris()
            if (snapshot := self.documents.find(uri)) is not None
        ]

    def _excluded(self, uri: str) -> bool:
        return self.policy().excluded(uri)

    def relative_path(self, uri: str) -> str:
        """A document's path as the model should see it: relative to its workspace folder."""
        try:
            path = path_of(uri)
        except NotAllowed:
            return uri.rsplit("/", 1)[-1] or uri
        for root in self.policy().roots:
            if path == root or root in path.parents:
                return path.relative_to(root).as_posix()
        return path.name

    def policy(self) -> Policy:
        """What may be read and sent, for the current workspace folders and settings."""
        workspace = self.workspace
        roots = [folder.uri for folder in workspace.folders.values()]
        if not roots and workspace.root_uri:
            roots = [workspace.root_uri]
        key = (tuple(roots), tuple(self.settings.exclude))
        if self._policy is None or self._policy_key != key:
            self._policy = Policy.for_workspace(roots, self.settings.exclude)
            self._policy_key = key
        return self._policy

    # -- completion -----------------------------------------------------------------

    async def suggest(
        self, uri: str, at: types.Position, explicit: bool = False
    ) -> tuple[str, types.Position]:
        """The suggestion at a position, and the position it applies to (clamped to the line).
        ``explicit``: the user asked for it (not typing), so the team model may answer."""
        try:
            snapshot = self.documents.get(uri)
            offset = snapshot.offset_at(at.line, at.character, self.encoding)
        except (DocumentNotOpen, PositionError) as exc:
            raise JsonRpcInvalidParams(str(exc)) from None
        where = position(*position_at(snapshot.text, offset, self.encoding, starts=snapshot.starts))
        if not self.settings.completion.enabled or self.policy().excluded(uri):
            return "", where  # off, or an excluded file (secrets never enter a prompt)

        if explicit and (team_text := await self.team.complete(uri, snapshot.text, offset)):
            return team_text, where

        def is_current() -> bool:
            current = self.documents.find(uri)
            return current is not None and current.version == snapshot.version

        try:
            text = await self.completions.suggest(
                uri,
                snapshot.text,
                offset,
                self.settings.completion,
                dataclasses.astuple(self.settings.model),  # same settings, same model
                is_current,
                self.settings.context,
                explicit,
            )
        except BackendUnavailable as exc:
            self.report_model_error(str(exc))
            return "", where
        return text, where

    # -- plumbing -------------------------------------------------------------------

    def start_stats_log(self, every_seconds: float = 60.0) -> None:
        """A stats line in the log every minute the server is being used."""

        async def log_periodically() -> None:
            last = -1
            while True:
                await asyncio.sleep(every_seconds)
                stats = self.completions.stats
                if stats.requests != last:
                    last = stats.requests
                    log.info("stats: %s", stats.log_line())

        self._stats_task = asyncio.ensure_future(log_periodically())

    def show(self, message: str, kind: types.MessageType) -> None:
        log.log(
            logging.ERROR if kind == types.MessageType.Error else logging.WARNING, "%s", message
        )
        self.window_show_message(types.ShowMessageParams(type=kind, message=message))

    def report_server_error(self, error: Exception, source: Any) -> None:
        # pygls would pop up a message for every malformed frame; the log is enough.
        log.error("server error (%s): %s", getattr(source, "__name__", source), error)

    def stop(self) -> None:
        if self._stats_task is not None:
            self._stats_task.cancel()
        self.completions.shutdown()
        self.lane.shutdown()

    async def close_team(self) -> None:
        await self.team.refactorer.aclose()


class _LoadProgress:
    """Work-done progress for a model load, fed from the lane thread."""

    def __init__(self, server: LspInferServer) -> None:
        self.server = server
        self.loop = asyncio.get_running_loop()
        self.token: str | None = None
        self.last_decile = -1

    async def begin(self, title: str, message: str) -> None:
        window = self.server.client_capabilities.window
        if not (window and window.work_done_progress):
            return
        token = f"lsp-infer-{uuid.uuid4()}"
        try:
            await asyncio.wait_for(self.server.work_done_progress.create_async(token), timeout=5)
        except (asyncio.TimeoutError, JsonRpcException):
            return
        self.token = token
        self.server.work_done_progress.begin(
            token, types.WorkDoneProgressBegin(title=title, message=message, percentage=0)
        )

    def from_lane(self, done: int, total: int) -> None:
        percent = done * 100 // max(total, 1)
        if percent // 10 != self.last_decile:
            self.last_decile = percent // 10
            self.loop.call_soon_threadsafe(self._report, percent)

    def _report(self, percent: int) -> None:
        if self.token:
            self.server.work_done_progress.report(
                self.token, types.WorkDoneProgressReport(percentage=percent)
            )

    def end(self, message: str) -> None:
        if self.token:
            self.server.work_done_progress.end(
                self.token, types.WorkDoneProgressEnd(message=message)
            )


def _one(arguments: tuple[Any, ...]) -> Any:
    return arguments[0] if len(arguments) == 1 else None


def create_server(env: Mapping[str, str] | None = None) -> LspInferServer:
    server = LspInferServer(env)

    @server.feature(types.INITIALIZE)
    def initialize(ls: LspInferServer, params: types.InitializeParams) -> None:
        ls._init_options = params.initialization_options
        # Start loading the model now with initializationOptions (initialize itself
        # returns at once); settings pulled in `initialized` reload it only if they differ.
        ls.apply_settings(ls._init_options)

    @server.feature(types.INITIALIZED)
    async def initialized(ls: LspInferServer, params: types.InitializedParams) -> None:
        ls.initialized_event.set()
        ls.notify_status()
        ls.start_stats_log()
        await ls.pull_settings()

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(
        ls: LspInferServer, params: types.DidChangeConfigurationParams
    ) -> None:
        pushed = params.settings
        if isinstance(pushed, Mapping) and SECTION in pushed:
            ls.apply_settings(pushed[SECTION])
        else:
            await ls.pull_settings()

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
    def did_save(ls: LspInferServer, params: types.DidSaveTextDocumentParams) -> None:
        snapshot = ls.documents.find(params.text_document.uri)
        if snapshot is not None:
            ls.context.saved(snapshot.uri, snapshot.text)

    @server.feature(types.TEXT_DOCUMENT_INLINE_COMPLETION, types.InlineCompletionOptions())
    async def inline_completion(
        ls: LspInferServer, params: types.InlineCompletionParams
    ) -> types.InlineCompletionList:
        explicit = params.context.trigger_kind == types.InlineCompletionTriggerKind.Invoked
        text, where = await ls.suggest(params.text_document.uri, params.position, explicit)
        return inline_completion_list(text, where)

    @server.feature(types.TEXT_DOCUMENT_COMPLETION, types.CompletionOptions())
    async def completion(
        ls: LspInferServer, params: types.CompletionParams
    ) -> types.CompletionList:
        context = params.context
        explicit = (
            context is not None and context.trigger_kind == types.CompletionTriggerKind.Invoked
        )
        text, where = await ls.suggest(params.text_document.uri, params.position, explicit)
        return completion_list(text, where)

    @server.feature(DEBUG_DOCUMENT_METHOD)
    def debug_document(ls: LspInferServer, params: Any) -> dict[str, Any]:
        if not ls.settings.debug:
            raise JsonRpcInvalidRequest(f"{DEBUG_DOCUMENT_METHOD} needs the debug setting")
        uri = getattr(params, "uri", None)
        snapshot = ls.documents.find(uri) if isinstance(uri, str) else None
        if snapshot is None:
            raise JsonRpcInvalidParams(f"document is not open: {uri}")
        return {"uri": snapshot.uri, "version": snapshot.version, "text": snapshot.text}

    @server.feature(STATS_METHOD)
    def stats(ls: LspInferServer, params: Any) -> dict[str, Any]:
        return ls.completions.stats.as_json(queue_depth=ls.lane.pending)

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.RefactorRewrite]),
    )
    def code_action(ls: LspInferServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        only = params.context.only
        if only and not any(str(kind).startswith("refactor") for kind in only):
            return []
        return ls.team.code_actions(params.text_document.uri)

    @server.command(REFACTOR_FILE)
    async def refactor_file(ls: LspInferServer, *arguments: Any) -> dict[str, Any]:
        uris, instruction = command_arguments(_one(arguments), batch=False)
        return await ls.team.refactor(uris, instruction)

    @server.command(REFACTOR_FILES)
    async def refactor_files(ls: LspInferServer, *arguments: Any) -> dict[str, Any]:
        uris, instruction = command_arguments(_one(arguments), batch=True)
        return await ls.team.refactor(uris, instruction)

    @server.feature(types.WINDOW_WORK_DONE_PROGRESS_CANCEL)
    def progress_cancel(ls: LspInferServer, params: types.WorkDoneProgressCancelParams) -> None:
        ls.team.progress_cancelled(str(params.token))

    @server.feature(types.SHUTDOWN)
    async def shutdown(ls: LspInferServer, params: Any) -> None:
        ls.stop()
        await ls.close_team()

    return server
