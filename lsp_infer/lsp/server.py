"""The language server: pygls wiring, the settings flow, and thin handlers.

The server is the composition root: it owns the session (documents, policy, encoding), the
editor facade, and the two tiers — the local keystroke path and the team tier — and routes
each request to one of them. Handlers resolve a snapshot and call plain code; LSP types stop
here, in protocol.py, convert.py and lsp_editor.py.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Awaitable, Mapping
from typing import Any, TypeVar

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams, JsonRpcInvalidRequest
from pygls.lsp.server import LanguageServer

from lsp_infer import __version__
from lsp_infer.config import load_settings
from lsp_infer.core.cancel import CancelReason
from lsp_infer.documents import DocumentNotOpen, Snapshot, Splice
from lsp_infer.feedback import Feedback
from lsp_infer.local.completions import Answer
from lsp_infer.local.local_tier import LocalTier
from lsp_infer.lsp.convert import (
    ACCEPT_SUGGESTION,
    DEBUG_DOCUMENT_METHOD,
    DID_ACCEPT_NEXT_EDIT,
    DID_DISMISS_SUGGESTION,
    DID_PARTIALLY_ACCEPT_SUGGESTION,
    DID_REJECT_NEXT_EDIT,
    DID_SHOW_NEXT_EDIT,
    DID_SHOW_SUGGESTION,
    NEXT_EDIT_METHOD,
    REFACTOR_FILE,
    REFACTOR_FILES,
    SECTION,
    STATS_METHOD,
    WARM_METHOD,
    accepted_length,
    code_action,
    completion_list,
    encoding_from,
    inline_completion_list,
    next_edit_result,
    next_edit_target,
    position,
    refactor_arguments,
    suggestion_id,
    warm_target,
)
from lsp_infer.lsp.lsp_editor import LspEditor
from lsp_infer.lsp.protocol import LspInferProtocol
from lsp_infer.next_edit.service import ModelAsk, NextEdits
from lsp_infer.positions import PositionError, position_at
from lsp_infer.session import Session
from lsp_infer.team.errors import TeamError
from lsp_infer.team.next_edit_model import TEAM_MIN_PROBABILITY, TeamNextEditModel
from lsp_infer.team.team_tier import TeamTier

log = logging.getLogger(__name__)

T = TypeVar("T")


class LspInferServer(LanguageServer):
    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        super().__init__(
            "lsp-infer",
            __version__,
            protocol_cls=LspInferProtocol,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
        )
        self.env = dict(os.environ if env is None else env)
        self.session = Session(self._workspace_roots)
        self.editor = LspEditor(self, self.session)
        self.local = LocalTier(self.session, self.editor)
        self.team = TeamTier(self.session, self.editor)
        # What became of the suggestions (shown, accepted, …), as the editor reports it.
        self.feedback = Feedback()
        self.next_edits = NextEdits()  # the edit histories and next-edit predictions
        self.settings, _problems = load_settings(None, self.env)
        self._init_options: Any = None
        self._shown_problems: list[str] = []
        self._stats_task: asyncio.Future[None] | None = None
        self._commands: dict[Any, asyncio.Task[Any]] = {}  # running commands by request id

    def _workspace_roots(self) -> list[str]:
        workspace = self.workspace
        roots = [folder.uri for folder in workspace.folders.values()]
        return roots if roots or not workspace.root_uri else [workspace.root_uri]

    # -- settings -------------------------------------------------------------------

    def apply_settings(self, raw: Any) -> None:
        """New settings from the client; the tiers take what they need (the model reloads if
        its settings changed)."""
        settings, problems = load_settings(raw, self.env)
        if problems and problems != self._shown_problems:
            self._shown_problems = problems
            self.editor.show(
                "lsp-infer: some settings were not valid and use their defaults: "
                + "; ".join(problems),
                "warning",
            )
        self.settings = settings
        logging.getLogger("lsp_infer").setLevel(settings.log_level.upper())
        self.session.exclude = tuple(settings.exclude)
        self.team.configure(settings.team)
        self.local.configure(settings)

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

    # -- documents (from LspInferProtocol) ---------------------------------------------

    def document_opened(self, uri: str, text: str) -> None:
        self.local.opened(uri, text)

    def document_changed(self, uri: str, text: str, line: int | None) -> None:
        # Stops the document's generation unless this edit continues it, and any refactor or
        # team completion in flight for it (its result would be for an old version).
        self.local.changed(uri, text, line)
        self.team.document_changed(uri)
        self.next_edits.stop(uri, CancelReason.DOCUMENT_CHANGED)

    def document_edited(self, uri: str, before: str, splices: list[Splice]) -> None:
        # The edit history next edits are predicted from: never an excluded file's.
        if self._records_edits(uri):
            self.next_edits.changed(uri, before, splices)
        else:
            self.next_edits.forget(uri)

    def document_closed(self, uri: str) -> None:
        self.local.closed(uri)
        self.feedback.forget(uri)
        self.next_edits.forget(uri)

    # -- completion -----------------------------------------------------------------

    async def suggest(
        self, uri: str, at: types.Position, explicit: bool = False
    ) -> tuple[list[tuple[str, str]], types.Position]:
        """The suggestions at a position as (text, id) pairs, and the position they apply to
        (clamped to the line). The ids are the suggestion lifecycle's (feedback.py)."""
        encoding = self.session.encoding
        try:
            snapshot = self.session.documents.get(uri)
            offset = snapshot.offset_at(at.line, at.character, encoding)
        except (DocumentNotOpen, PositionError) as exc:
            raise JsonRpcInvalidParams(str(exc)) from None
        where = position(*position_at(snapshot.text, offset, encoding, starts=snapshot.starts))
        if not self._completes(uri):
            return [], where
        # The keystroke path wins the model: a next edit it is working on stops.
        self.next_edits.stop(None, CancelReason.SUPERSEDED)
        answer = await self._answer(snapshot, offset, explicit)
        if answer.hidden:
            self.feedback.hidden(answer.confidence)
        texts = [t for t in (answer.text, *answer.choices) if t]
        ids = self.feedback.issue(
            uri, offset, texts, snapshot.text, source=answer.source,
            with_extra=answer.with_extra, confidence=answer.confidence if answer.text else None,
        )  # fmt: skip
        return list(zip(texts, ids, strict=True)), where

    def warm(self, params: Any) -> None:
        """``lspInfer/warm``: the cursor rests at a place; the local tier evaluates its prompt
        in the background. A notification gets no answer: what cannot be used is logged."""
        target = warm_target(params)
        if target is None:
            log.debug("%s with malformed params: %r", WARM_METHOD, params)
            return
        uri, line, character = target
        snapshot = self.session.documents.find(uri)
        if snapshot is None:
            log.debug("%s: document is not open: %s", WARM_METHOD, uri)
            return
        try:
            offset = snapshot.offset_at(line, character, self.session.encoding)
        except PositionError as exc:
            log.debug("%s: %s", WARM_METHOD, exc)
            return
        if self.settings.completion.warm and self._completes(uri):
            self.local.warm(snapshot, offset)
        # Where the name under the cursor is used, asked before the user edits it: once a
        # declaration is renamed, its old uses resolve to nothing (next_edit/references.py).
        if self._records_edits(uri) and self.editor.references_supported():
            self.next_edits.ask_references(snapshot, offset, self.editor)

    def _records_edits(self, uri: str) -> bool:
        """Next edits are on, and the file is not excluded (its edits are never recorded)."""
        return self.settings.next_edit.enabled and not self.session.policy().excluded(uri)

    def _completes(self, uri: str) -> bool:
        """Completions are on, and the file is not excluded (secrets never enter a prompt)."""
        return self.settings.completion.enabled and not self.session.policy().excluded(uri)

    async def _answer(self, snapshot: Snapshot, offset: int, explicit: bool) -> Answer:
        """Routing: an explicitly invoked request may go to the team model (team.completions,
        with the local model as the fallback); everything typed stays local."""
        if explicit:
            settings = self.settings
            team_text = await self.team.completions.suggest(
                snapshot, offset, settings.team, settings.completion
            )
            if team_text is not None:  # "": the document moved on meanwhile
                return Answer(team_text, "team")
        return await self.local.suggest(snapshot, offset, explicit)

    # -- the suggestion lifecycle (what the editor reports) --------------------------------

    def suggestion_event(self, method: str, params: Any) -> None:
        """A lifecycle notification; one with a malformed or unknown id is only logged."""
        item_id, now = suggestion_id(params), time.time()
        if item_id is None:
            log.debug("%s without an id: %r", method, params)
            return
        if method == DID_SHOW_SUGGESTION:
            known = self.feedback.shown(item_id, now)
        elif method == DID_DISMISS_SUGGESTION:
            known = self.feedback.dismissed(item_id, now)
        else:
            length = accepted_length(params)
            if length is None:
                log.debug("%s without a valid acceptedLength: %r", method, params)
                return
            known = self.feedback.partly_accepted(item_id, length, now)
        if not known:
            log.debug("%s: unknown suggestion %s (forgotten, or from before a restart)",
                      method, item_id)  # fmt: skip

    # -- commands ---------------------------------------------------------------------

    async def run_command(self, work: Awaitable[T]) -> T:
        """Run a command's work so that ``$/cancelRequest`` reaches it: pygls answers a
        cancelled command with RequestCancelled but leaves its coroutine running."""
        msg_id = self.protocol.msg_id
        task = asyncio.current_task()
        if msg_id is not None and task is not None:
            self._commands[msg_id] = task
        try:
            return await work
        finally:
            self._commands.pop(msg_id, None)

    def request_cancelled(self, msg_id: Any) -> None:
        """``$/cancelRequest`` (from the protocol): cancel the command's work, if running."""
        if (task := self._commands.pop(msg_id, None)) is not None:
            task.cancel()

    # -- plumbing -------------------------------------------------------------------

    def start_stats_log(self, every_seconds: float = 60.0) -> None:
        """A stats line in the log every minute the server is being used."""

        async def log_periodically() -> None:
            while True:
                await asyncio.sleep(every_seconds)
                local, team = self.local.stats_line(), self.team.stats_line()
                if local is not None or team is not None:
                    log.info("stats: %s", "; ".join(x for x in (local, team) if x is not None))

        self._stats_task = asyncio.ensure_future(log_periodically())

    def report_server_error(self, error: Exception, source: Any) -> None:
        # pygls would pop up a message for every malformed frame; the log is enough.
        log.error("server error (%s): %s", getattr(source, "__name__", source), error)

    def stop(self) -> None:
        if self._stats_task is not None:
            self._stats_task.cancel()
        self.local.shutdown()

    async def close_team(self) -> None:
        await self.team.aclose()


def _one(arguments: tuple[Any, ...]) -> Any:
    return arguments[0] if len(arguments) == 1 else None


def create_server(env: Mapping[str, str] | None = None) -> LspInferServer:
    server = LspInferServer(env)
    _register_lifecycle(server)
    _register_completions(server)
    _register_suggestion_events(server)
    _register_team(server)
    _register_next_edits(server)
    return server


def _register_lifecycle(server: LspInferServer) -> None:
    @server.feature(types.INITIALIZE)
    def initialize(ls: LspInferServer, params: types.InitializeParams) -> None:
        ls.session.encoding = encoding_from(ls.workspace.position_encoding)
        ls._init_options = params.initialization_options
        # Start loading the model now with initializationOptions (initialize itself
        # returns at once); settings pulled in `initialized` reload it only if they differ.
        ls.apply_settings(ls._init_options)

    @server.feature(types.INITIALIZED)
    async def initialized(ls: LspInferServer, params: types.InitializedParams) -> None:
        ls.editor.client_initialized()
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
        snapshot = ls.session.documents.find(params.text_document.uri)
        if snapshot is not None:
            ls.local.saved(snapshot.uri, snapshot.text)

    @server.feature(types.WINDOW_WORK_DONE_PROGRESS_CANCEL)
    def progress_cancel(ls: LspInferServer, params: types.WorkDoneProgressCancelParams) -> None:
        ls.editor.progress_cancelled(str(params.token))

    @server.feature(types.SHUTDOWN)
    async def shutdown(ls: LspInferServer, params: Any) -> None:
        await ls.local.save_states()
        ls.stop()
        await ls.close_team()


def _register_completions(server: LspInferServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_INLINE_COMPLETION, types.InlineCompletionOptions())
    async def inline_completion(
        ls: LspInferServer, params: types.InlineCompletionParams
    ) -> types.InlineCompletionList:
        explicit = params.context.trigger_kind == types.InlineCompletionTriggerKind.Invoked
        items, where = await ls.suggest(params.text_document.uri, params.position, explicit)
        return inline_completion_list(items, where)

    @server.feature(types.TEXT_DOCUMENT_COMPLETION, types.CompletionOptions())
    async def completion(
        ls: LspInferServer, params: types.CompletionParams
    ) -> types.CompletionList:
        # Trigger kind Invoked (1) is also sent for typing an identifier: no sign that the
        # user asked, so these are never explicit (and never go to the team).
        items, where = await ls.suggest(params.text_document.uri, params.position)
        return completion_list(items, where)

    @server.feature(WARM_METHOD)
    def warm(ls: LspInferServer, params: Any) -> None:
        ls.warm(params)

    @server.feature(DEBUG_DOCUMENT_METHOD)
    def debug_document(ls: LspInferServer, params: Any) -> dict[str, Any]:
        if not ls.settings.debug:
            raise JsonRpcInvalidRequest(f"{DEBUG_DOCUMENT_METHOD} needs the debug setting")
        uri = getattr(params, "uri", None)
        snapshot = ls.session.documents.find(uri) if isinstance(uri, str) else None
        if snapshot is None:
            raise JsonRpcInvalidParams(f"document is not open: {uri}")
        return {"uri": snapshot.uri, "version": snapshot.version, "text": snapshot.text}

    @server.feature(STATS_METHOD)
    def stats(ls: LspInferServer, params: Any) -> dict[str, Any]:
        stats = ls.local.stats()
        stats["suggestions"] = ls.feedback.as_json()
        stats["team"] = ls.team.stats()
        stats["nextEdit"] = ls.next_edits.stats()
        return stats


def _register_suggestion_events(server: LspInferServer) -> None:
    """What became of the suggestions, as the editor reports it (all kept in memory here)."""

    @server.command(ACCEPT_SUGGESTION)
    def accept_suggestion(ls: LspInferServer, *arguments: Any) -> None:
        item_id = suggestion_id(_one(arguments))
        if item_id is None:
            raise JsonRpcInvalidParams(f'{ACCEPT_SUGGESTION} expects one argument {{"id": ...}}')
        if not ls.feedback.accepted(item_id, time.time()):
            log.debug("%s: unknown suggestion %s", ACCEPT_SUGGESTION, item_id)

    @server.feature(DID_SHOW_SUGGESTION)
    def did_show(ls: LspInferServer, params: Any) -> None:
        ls.suggestion_event(DID_SHOW_SUGGESTION, params)

    @server.feature(DID_PARTIALLY_ACCEPT_SUGGESTION)
    def did_partially_accept(ls: LspInferServer, params: Any) -> None:
        ls.suggestion_event(DID_PARTIALLY_ACCEPT_SUGGESTION, params)

    @server.feature(DID_DISMISS_SUGGESTION)
    def did_dismiss(ls: LspInferServer, params: Any) -> None:
        ls.suggestion_event(DID_DISMISS_SUGGESTION, params)


def _register_team(server: LspInferServer) -> None:
    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.RefactorRewrite]),
    )
    def code_actions(ls: LspInferServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        only = params.context.only
        if only and not any(str(kind).startswith("refactor") for kind in only):
            return []
        return [code_action(ls.team.commands.offer(params.text_document.uri))]

    @server.command(REFACTOR_FILE)
    async def refactor_file(ls: LspInferServer, *arguments: Any) -> dict[str, Any]:
        uris, instruction = refactor_arguments(_one(arguments), batch=False)
        return await ls.run_command(ls.team.commands.refactor(uris, instruction))

    @server.command(REFACTOR_FILES)
    async def refactor_files(ls: LspInferServer, *arguments: Any) -> dict[str, Any]:
        uris, instruction = refactor_arguments(_one(arguments), batch=True)
        return await ls.run_command(ls.team.commands.refactor(uris, instruction))


def _register_next_edits(server: LspInferServer) -> None:
    @server.feature(NEXT_EDIT_METHOD)
    async def next_edit(ls: LspInferServer, params: Any) -> dict[str, Any]:
        return await answer_next_edit(ls, params)

    @server.feature(DID_SHOW_NEXT_EDIT)
    def did_show(ls: LspInferServer, params: Any) -> None:
        next_edit_outcome(ls, "shown", params)

    @server.feature(DID_ACCEPT_NEXT_EDIT)
    def did_accept(ls: LspInferServer, params: Any) -> None:
        next_edit_outcome(ls, "accepted", params)

    @server.feature(DID_REJECT_NEXT_EDIT)
    def did_reject(ls: LspInferServer, params: Any) -> None:
        next_edit_outcome(ls, "rejected", params)


async def answer_next_edit(ls: LspInferServer, params: Any) -> dict[str, Any]:
    """``lspInfer/nextEdit``: the edit the recent edits make near certain, or the like change
    the local model is sure of, in the document at the version asked; none for another
    version (the user typed on, before or while the model worked), an excluded file, or with
    ``nextEdit.enabled`` off."""
    target = next_edit_target(params)
    if target is None:
        raise JsonRpcInvalidParams(
            f"{NEXT_EDIT_METHOD} expects {{textDocument: {{uri, version}}, position}}"
        )
    uri, version, line, character = target
    encoding = ls.session.encoding
    try:
        snapshot = ls.session.documents.get(uri)
        cursor = snapshot.offset_at(line, character, encoding)  # outside it: an error
    except (DocumentNotOpen, PositionError) as exc:
        raise JsonRpcInvalidParams(str(exc)) from None
    issued = None
    if snapshot.version == version and ls._records_edits(uri):
        ask = next_edit_model(ls, snapshot.uri)
        issued = await ls.next_edits.predict(snapshot, ask, cursor)
        if not ls.session.is_current(uri, version):
            issued = None  # typed on while the model worked: its edit is for an old text
    return next_edit_result(snapshot.text, snapshot.starts, version, issued, encoding)


def next_edit_model(ls: LspInferServer, uri: str) -> ModelAsk | None:
    """How to ask a model for a like change in ``uri``: the team's when nextEdit.team is
    on and the file may go to the team, the local model as its fallback or alone; None:
    off, or no model to ask."""
    settings = ls.settings
    local = _local_line_ask(ls)
    if not (settings.next_edit.model and settings.next_edit.team and settings.team.urls()):
        return local
    if not ls.session.policy().allowed(uri):
        return local  # excluded or outside the workspace: never sent
    try:
        client = ls.team.clients.get(settings.team)
    except TeamError:
        return local
    threshold = settings.next_edit.min_probability or TEAM_MIN_PROBABILITY
    seconds = settings.team.completion_timeout_ms / 1000
    team = TeamNextEditModel(client, affinity=uri)
    team_format = settings.next_edit.team_format
    region = team if team_format in ("zeta", "sweep") else None
    return ModelAsk(team, threshold, seconds, tier="team", fallback=local, region=region,
                    region_format=team_format)  # fmt: skip


def _local_line_ask(ls: LspInferServer) -> ModelAsk | None:
    """The local model, or None: off, no model loaded, or a model without a measured
    threshold (and none set)."""
    loaded = ls.local.backend.loaded
    if loaded is None or ls.local.backend.state != "ready":
        return None
    threshold = loaded.profile.next_edit_threshold(ls.settings.next_edit)
    return None if threshold is None else ModelAsk(ls.local.line_model, threshold)


def next_edit_outcome(ls: LspInferServer, outcome: str, params: Any) -> None:
    """What became of a next edit (shown, accepted, rejected); an unknown id is logged."""
    item_id = suggestion_id(params)
    if item_id is None or not ls.next_edits.outcome(item_id, outcome):
        log.debug("next edit %s: unknown or missing id: %r", outcome, params)
