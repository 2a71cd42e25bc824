"""The editor facade over LSP (implements editor.Editor): messages, the model status, asking
the user, work-done progress and applying edits, for tiers that must not know pygls."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Sequence

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.progress import Progress as ProgressTracker

from lsp_infer.editor import (
    Definition,
    EditNotApplied,
    EditorRequestFailed,
    Level,
    ModelState,
    NoProgress,
    Progress,
    Replacement,
)
from lsp_infer.lsp.convert import (
    DEFINITIONS_METHOD,
    REFERENCES_METHOD,
    STATUS_METHOD,
    SUGGESTION_READY_METHOD,
    announces,
    definitions_params,
    definitions_result,
    references_params,
    references_result,
    suggestion_ready_params,
    workspace_edit,
)
from lsp_infer.positions import position_at
from lsp_infer.session import Session

log = logging.getLogger(__name__)

_MESSAGE_TYPES = {
    "error": types.MessageType.Error,
    "warning": types.MessageType.Warning,
    "info": types.MessageType.Info,
}


class LspEditor:
    def __init__(self, server: LanguageServer, session: Session) -> None:
        self._server = server
        self._session = session
        # Server-to-client requests wait for `initialized` (LSP spec).
        self.initialized = asyncio.Event()
        self._status: dict[str, str] = {}
        self._cancel_events: dict[str, asyncio.Event] = {}

    def client_initialized(self) -> None:
        """The client said `initialized`: requests may go out, and the model status is
        repeated (clients install their notification handlers only after `initialize`)."""
        self.initialized.set()
        self._send_status()

    def show(self, message: str, level: Level) -> None:
        log.log(logging.ERROR if level == "error" else logging.WARNING, "%s", message)
        self._server.window_show_message(
            types.ShowMessageParams(type=_MESSAGE_TYPES[level], message=message)
        )

    def model_status(self, state: ModelState, message: str) -> None:
        self._status = {"state": state, "message": message}
        self._send_status()

    def _send_status(self) -> None:
        if self._status and self.initialized.is_set():
            self._server.protocol.notify(STATUS_METHOD, self._status)

    async def ask(self, message: str, choices: Sequence[str]) -> str | None:
        try:
            choice = await self._server.window_show_message_request_async(
                types.ShowMessageRequestParams(
                    type=types.MessageType.Info,
                    message=message,
                    actions=[types.MessageActionItem(title=title) for title in choices],
                )
            )
        except JsonRpcException:
            return None
        return choice.title if choice else None

    async def progress(self, title: str, message: str, *, cancellable: bool = False) -> Progress:
        await self.initialized.wait()
        window = self._server.client_capabilities.window
        if not (window and window.work_done_progress):
            return NoProgress()
        token = f"lsp-infer-{uuid.uuid4()}"
        tracker = self._server.work_done_progress
        try:
            await asyncio.wait_for(tracker.create_async(token), timeout=5)
        except (asyncio.TimeoutError, JsonRpcException):
            return NoProgress()
        tracker.begin(
            token,
            types.WorkDoneProgressBegin(
                title=title, message=message, cancellable=cancellable or None, percentage=0
            ),
        )
        cancelled = self._cancel_events[token] = asyncio.Event()
        return _LspProgress(tracker, token, cancelled, self._cancel_events)

    def progress_cancelled(self, token: str) -> None:
        """window/workDoneProgress/cancel: the user pressed cancel."""
        if (event := self._cancel_events.get(token)) is not None:
            event.set()

    def _announces(self, feature: str) -> bool:
        capabilities = self._server.client_capabilities
        return self.initialized.is_set() and announces(
            capabilities.experimental if capabilities else None, feature
        )

    def definitions_supported(self) -> bool:
        return self._announces("definitions")

    def references_supported(self) -> bool:
        return self._announces("references")

    async def references(
        self, uri: str, version: int, text: str, offset: int
    ) -> list[tuple[int, int]] | None:
        params = references_params(uri, version, text, offset, self._session.encoding)
        try:
            result = await self._server.protocol.send_request_async(REFERENCES_METHOD, params)
        except Exception as exc:  # an error answer, a closed transport: no references
            raise EditorRequestFailed(f"the editor answered an error ({exc})") from None
        return references_result(result, text, self._session.encoding)

    def suggestion_ready(self, uri: str, version: int, text: str, offset: int) -> bool:
        if not self._announces("suggestionReady"):
            return False
        line, character = position_at(text, offset, self._session.encoding)
        params = suggestion_ready_params(uri, version, line, character)
        self._server.protocol.notify(SUGGESTION_READY_METHOD, params)
        return True

    async def definitions(
        self, uri: str, text: str, offsets: Sequence[int]
    ) -> list[Definition | None]:
        params = definitions_params(uri, text, offsets, self._session.encoding)
        try:
            result = await self._server.protocol.send_request_async(DEFINITIONS_METHOD, params)
        except Exception as exc:  # an error answer, a closed transport: the pick goes on
            raise EditorRequestFailed(f"the editor answered an error ({exc})") from None
        return definitions_result(result, len(offsets))

    async def apply_edit(
        self,
        uri: str,
        version: int | None,
        text: str,
        edits: Sequence[Replacement],
        label: str,
    ) -> None:
        edit = workspace_edit(uri, version, text, edits, self._session.encoding)
        try:
            result = await self._server.workspace_apply_edit_async(
                types.ApplyWorkspaceEditParams(edit=edit, label=label)
            )
        except JsonRpcException as exc:
            raise EditNotApplied(f"the editor did not apply the edit ({exc})") from None
        if not result.applied:
            reason = result.failure_reason or "no reason given"
            raise EditNotApplied(f"the editor refused the edit ({reason})")


class _LspProgress:
    """One work-done progress, by its token."""

    def __init__(
        self,
        tracker: ProgressTracker,
        token: str,
        cancelled: asyncio.Event,
        registry: dict[str, asyncio.Event],
    ) -> None:
        self._tracker = tracker
        self._token = token
        self.cancelled = cancelled
        self._registry = registry

    def report(self, percentage: int, message: str | None = None) -> None:
        self._tracker.report(
            self._token, types.WorkDoneProgressReport(message=message, percentage=percentage)
        )

    def end(self, message: str) -> None:
        self._tracker.end(self._token, types.WorkDoneProgressEnd(message=message))
        self._registry.pop(self._token, None)
        self._tracker.tokens.pop(self._token, None)
