"""pygls' protocol with two changes.

* Documents live in the session's own :class:`DocumentStore` (exact LSP line ends,
  utf-8/16/32 positions, never read from disk) instead of pygls' workspace; their events go
  to the tiers.
* A request whose params do not deserialize is answered with InvalidParams; pygls would log
  it and leave the client waiting forever.
* ``$/cancelRequest`` also reaches a running command: pygls answers it RequestCancelled but
  leaves the command's coroutine running (commands run behind a generator), so the listener
  is told and cancels it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator
from concurrent.futures import Future
from typing import Any, Protocol, cast

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.protocol import LanguageServerProtocol, lsp_method

from lsp_infer.documents import DocumentNotOpen, Splice
from lsp_infer.lsp.convert import first_changed_line, text_changes
from lsp_infer.session import Session

log = logging.getLogger(__name__)


class _AlreadyAnswered:
    """Stands in for a request that failed to deserialize and was answered with an error."""

    jsonrpc = "2.0"


_ALREADY_ANSWERED = _AlreadyAnswered()


class DocumentListener(Protocol):
    """What the protocol tells of document events (the server, which tells the tiers)."""

    session: Session

    def document_opened(self, uri: str, text: str) -> None: ...

    def document_changed(self, uri: str, text: str, line: int | None) -> None: ...

    def document_edited(self, uri: str, before: str, splices: list[Splice]) -> None: ...

    def document_closed(self, uri: str) -> None: ...

    def request_cancelled(self, msg_id: Any) -> None: ...


class LspInferProtocol(LanguageServerProtocol):
    @property
    def _listener(self) -> DocumentListener:
        return cast(DocumentListener, self._server)

    def _execute_handler(
        self,
        msg_id: str | int,
        handler: Callable[..., Any],
        callback: Callable[[Future[Any]], None],
        args: tuple[Any, ...] | None = None,
        kwargs: dict[str, Any] | None = None,
    ) -> None:
        """pygls 2.1 files the future of every handler that does not finish at once under
        ``_request_futures`` (by the request id, or a fresh uuid for a notification), and
        only answering a request takes it out again: a notification's future (with its lock
        and uuid) stayed for good — one per keystroke, tens of megabytes in an hour's
        typing (RELIABILITY.md). A notification's now leaves when it is done."""
        if callback == self._check_handler_result:  # how pygls runs a notification's handler
            futures = self._request_futures
            report = callback

            def forget(future: Future[Any]) -> None:
                futures.pop(msg_id, None)
                report(future)

            callback = forget
        super()._execute_handler(msg_id, handler, callback, args, kwargs)

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

    def _handle_cancel_notification(self, msg_id: Any) -> None:
        super()._handle_cancel_notification(msg_id)
        self._listener.request_cancelled(msg_id)

    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(
        self, params: types.DidOpenTextDocumentParams
    ) -> Generator[Any, Any, None]:
        doc = params.text_document
        self._listener.session.documents.open(doc.uri, doc.version, doc.text, doc.language_id)
        self._listener.document_opened(doc.uri, doc.text)
        yield from self._user_handler(types.TEXT_DOCUMENT_DID_OPEN, params)

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(
        self, params: types.DidChangeTextDocumentParams
    ) -> Generator[Any, Any, None]:
        doc, session = params.text_document, self._listener.session
        try:
            before = session.documents.get(doc.uri).text
            snapshot, splices = session.documents.change_with_splices(
                doc.uri, doc.version, text_changes(params.content_changes), session.encoding
            )
        except DocumentNotOpen:
            log.warning("didChange for a document that is not open: %s", doc.uri)
        else:
            self._listener.document_edited(doc.uri, before, splices)
            line = first_changed_line(params.content_changes)
            self._listener.document_changed(doc.uri, snapshot.text, line)
        yield from self._user_handler(types.TEXT_DOCUMENT_DID_CHANGE, params)

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(
        self, params: types.DidCloseTextDocumentParams
    ) -> Generator[Any, Any, None]:
        uri = params.text_document.uri
        self._listener.session.documents.close(uri)
        self._listener.document_closed(uri)
        yield from self._user_handler(types.TEXT_DOCUMENT_DID_CLOSE, params)

    def _user_handler(self, method: str, params: Any) -> Generator[Any, Any, None]:
        if (handler := self.fm.features.get(method)) is not None:
            yield handler, (params,), None
