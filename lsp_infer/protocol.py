"""lsprotocol ⇄ domain types, position encodings, and this server's custom method names."""

from __future__ import annotations

from collections.abc import Sequence

from lsprotocol import types

from lsp_infer.documents import TextChange
from lsp_infer.positions import ENCODINGS, Encoding

SECTION = "lspInfer"  # settings section for workspace/configuration
STATS_METHOD = "lspInfer/stats"  # request: counters and latency percentiles
DEBUG_DOCUMENT_METHOD = "lspInfer/debug/document"  # request {uri} → {uri, version, text}
STATUS_METHOD = "lspInfer/status"  # notification: {"state": loading|ready|failed, "message"}


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
