"""lsprotocol ⇄ domain: changes, results, edits, encodings, command arguments, and this
server's custom method names."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from lsp_infer.documents import TextChange
from lsp_infer.editor import Replacement
from lsp_infer.positions import ENCODINGS, Encoding, line_starts, position_at
from lsp_infer.team.commands import RefactorOffer

SECTION = "lspInfer"  # settings section for workspace/configuration
STATS_METHOD = "lspInfer/stats"  # request: counters and latency percentiles
DEBUG_DOCUMENT_METHOD = "lspInfer/debug/document"  # request {uri} → {uri, version, text}
STATUS_METHOD = "lspInfer/status"  # notification: {"state": loading|ready|failed, "message"}
REFACTOR_FILE = "lspInfer.refactorFile"
REFACTOR_FILES = "lspInfer.refactorFiles"


def encoding_from(kind: str | types.PositionEncodingKind | None) -> Encoding:
    value = kind.value if isinstance(kind, types.PositionEncodingKind) else kind
    for encoding in ENCODINGS:
        if value == encoding:
            return encoding
    return "utf-16"


def text_changes(
    changes: Sequence[types.TextDocumentContentChangeEvent],
) -> list[TextChange]:
    result = []
    for change in changes:
        if isinstance(change, types.TextDocumentContentChangePartial):
            start, end = change.range.start, change.range.end
            result.append(
                TextChange(
                    text=change.text,
                    range=((start.line, start.character), (end.line, end.character)),
                )
            )
        else:
            result.append(TextChange(text=change.text))
    return result


def first_changed_line(changes: Sequence[types.TextDocumentContentChangeEvent]) -> int | None:
    """The line an incremental change starts on (None for a whole-text replacement)."""
    first = changes[0] if changes else None
    if isinstance(first, types.TextDocumentContentChangePartial):
        return first.range.start.line
    return None


def position(line: int, character: int) -> types.Position:
    return types.Position(line=line, character=character)


def inline_completion_list(text: str, at: types.Position) -> types.InlineCompletionList:
    if not text:
        return types.InlineCompletionList(items=[])
    return types.InlineCompletionList(
        items=[types.InlineCompletionItem(insert_text=text, range=types.Range(start=at, end=at))]
    )


def completion_list(text: str, at: types.Position) -> types.CompletionList:
    """The suggestion as one completion item, for clients without inline completion."""
    if not text:
        return types.CompletionList(is_incomplete=True, items=[])
    first_line = text.strip().splitlines()[0] if text.strip() else text
    label = first_line if len(first_line) <= 60 else first_line[:57] + "…"
    item = types.CompletionItem(
        label=label,
        kind=types.CompletionItemKind.Snippet,
        detail="lsp-infer",
        documentation=text,
        insert_text_format=types.InsertTextFormat.PlainText,
        text_edit=types.TextEdit(range=types.Range(start=at, end=at), new_text=text),
        filter_text=text,
        sort_text="0",
        preselect=True,
    )
    # Incomplete: the client asks again as the user types, instead of filtering this one.
    return types.CompletionList(is_incomplete=True, items=[item])


def workspace_edit(
    uri: str, version: int | None, text: str, edits: Sequence[Replacement], encoding: Encoding
) -> types.WorkspaceEdit:
    """``edits`` (offsets into ``text``) as an edit of exactly that document version."""
    starts = line_starts(text)

    def at(offset: int) -> types.Position:
        return position(*position_at(text, offset, encoding, starts=starts))

    text_edits = [
        types.TextEdit(range=types.Range(start=at(e.start), end=at(e.end)), new_text=e.new_text)
        for e in edits
    ]
    document = types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version)
    return types.WorkspaceEdit(
        document_changes=[types.TextDocumentEdit(text_document=document, edits=text_edits)]
    )


def code_action(offer: RefactorOffer) -> types.CodeAction:
    action = types.CodeAction(
        title=offer.title,
        kind=types.CodeActionKind.RefactorRewrite,
        command=types.Command(
            title=offer.title, command=REFACTOR_FILE, arguments=[offer.arguments]
        ),
    )
    if offer.disabled is not None:
        action.disabled = types.CodeActionDisabled(reason=offer.disabled)
    return action


def refactor_arguments(arguments: Any, *, batch: bool) -> tuple[list[str], str | None]:
    """The (uris, instruction) of a refactor command's one argument, or InvalidParams."""
    if not isinstance(arguments, dict):
        raise JsonRpcInvalidParams(
            f'expected one argument {{"{"uris" if batch else "uri"}": ..., "instruction": ...}}'
        )
    instruction = arguments.get("instruction")
    if instruction is not None and not isinstance(instruction, str):
        raise JsonRpcInvalidParams("instruction must be a string")
    if batch:
        uris = arguments.get("uris")
        if not isinstance(uris, list) or not uris or not all(isinstance(u, str) for u in uris):
            raise JsonRpcInvalidParams("uris must be a non-empty list of strings")
        return list(dict.fromkeys(uris)), instruction
    uri = arguments.get("uri")
    if not isinstance(uri, str):
        raise JsonRpcInvalidParams("uri must be a string")
    return [uri], instruction
