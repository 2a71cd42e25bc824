"""lsprotocol ⇄ domain: changes, results, edits, encodings, command arguments, and this
server's custom method names."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from lsp_infer.documents import TextChange
from lsp_infer.editor import (
    DEFINITION_ABOVE_LINES,
    DEFINITION_TEXT_CHARS,
    Definition,
    EditorRequestFailed,
    Replacement,
    cut_text,
    definition_text_bounds,
)
from lsp_infer.next_edit.edits import Prediction
from lsp_infer.positions import (
    ENCODINGS,
    Encoding,
    PositionError,
    line_starts,
    offset_at,
    position_at,
)
from lsp_infer.team.refactor_batches import RefactorOffer

SECTION = "lspInfer"  # settings section for workspace/configuration
STATS_METHOD = "lspInfer/stats"  # request: counters and latency percentiles
DEBUG_DOCUMENT_METHOD = "lspInfer/debug/document"  # request {uri} → {uri, version, text}
STATUS_METHOD = "lspInfer/status"  # notification: {"state": loading|ready|failed, "message"}
REFACTOR_FILE = "lspInfer.refactorFile"
REFACTOR_FILES = "lspInfer.refactorFiles"
# The suggestion lifecycle (feedback.py). An item's command, run by the editor when the user
# accepts it whole: [{"id": ...}].
ACCEPT_SUGGESTION = "lspInfer.acceptSuggestion"
# Notifications from the editor: {"id"}; partly accepted: {"id", "acceptedLength"}.
DID_SHOW_SUGGESTION = "lspInfer/didShowSuggestion"
DID_PARTIALLY_ACCEPT_SUGGESTION = "lspInfer/didPartiallyAcceptSuggestion"
DID_DISMISS_SUGGESTION = "lspInfer/didDismissSuggestion"
# Notification from the editor: the cursor rests here, {"textDocument": {"uri"}, "position"}.
WARM_METHOD = "lspInfer/warm"
# Request to the editor, only if it announced experimental.lspInfer.definitions: where the
# names at these positions are defined (docs/protocol.md).
DEFINITIONS_METHOD = "lspInfer/definitions"
# Notification to the editor, only if it announced experimental.lspInfer.suggestionReady: the
# whole window's suggestion is ready where a cold start answered (or hid) one; ask again
# there, {"textDocument": {"uri", "version"}, "position"}.
SUGGESTION_READY_METHOD = "lspInfer/suggestionReady"
# Request to the editor, only if it announced experimental.lspInfer.references: where the name
# at a position is used in that document, {"textDocument": {"uri", "version"}, "position"} →
# {"references": [Range]} (docs/protocol.md).
REFERENCES_METHOD = "lspInfer/references"
# Next-edit suggestions (docs/protocol.md): a request {"textDocument": {"uri", "version"},
# "position"} → {"edits": [{"range", "text"}], "id", "kind", "version", "label"}, and what
# became of one, notifications {"id"}.
NEXT_EDIT_METHOD = "lspInfer/nextEdit"
DID_SHOW_NEXT_EDIT = "lspInfer/didShowNextEdit"
DID_ACCEPT_NEXT_EDIT = "lspInfer/didAcceptNextEdit"
DID_REJECT_NEXT_EDIT = "lspInfer/didRejectNextEdit"


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


def accept_command(item_id: str) -> types.Command:
    return types.Command(
        title="Accept suggestion", command=ACCEPT_SUGGESTION, arguments=[{"id": item_id}]
    )


def inline_completion_list(
    items: Sequence[tuple[str, str]], at: types.Position
) -> types.InlineCompletionList:
    """Inline completion items from (text, id) pairs: each carries its id in the command the
    editor runs when the user accepts it."""
    return types.InlineCompletionList(
        items=[
            types.InlineCompletionItem(
                insert_text=text,
                range=types.Range(start=at, end=at),
                command=accept_command(item_id),
            )
            for text, item_id in items
            if text
        ]
    )


def completion_list(items: Sequence[tuple[str, str]], at: types.Position) -> types.CompletionList:
    """The first suggestion as one completion item, for clients without inline completion."""
    text, item_id = items[0] if items else ("", "")
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
        command=accept_command(item_id),
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


def _field(params: Any, name: str) -> Any:
    """A field of a request's or notification's untyped params (pygls hands them over as
    objects with attributes; a command's arguments are plain JSON)."""
    if isinstance(params, dict):
        return params.get(name)
    return getattr(params, name, None)


def suggestion_id(params: Any) -> str | None:
    """The ``id`` of a lifecycle notification's params or of the accept command's one
    argument; None when it has none."""
    value = _field(params, "id")
    return value if isinstance(value, str) and value else None


def accepted_length(params: Any) -> int | None:
    """``acceptedLength`` of a partial accept: characters of the item's text accepted so far
    (Unicode code points), or None when it is missing or not a whole number >= 0."""
    value = _field(params, "acceptedLength")
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def warm_target(params: Any) -> tuple[str, int, int] | None:
    """The uri, line and character of an ``lspInfer/warm`` notification's params; None when
    any is missing or not of its type (a line and character are whole numbers >= 0)."""
    document = _field(params, "textDocument")
    uri = _field(document, "uri") if document is not None else None
    where = _position(_field(params, "position"))
    if not isinstance(uri, str) or not uri or where is None:
        return None
    return uri, *where


def _position(at: Any) -> tuple[int, int] | None:
    """The line and character of a position in untyped params or an answer; None when either
    is missing or not a whole number >= 0."""
    line = _field(at, "line") if at is not None else None
    character = _field(at, "character") if at is not None else None
    for value in (line, character):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            return None
    assert isinstance(line, int) and isinstance(character, int)
    return line, character


def next_edit_target(params: Any) -> tuple[str, int, int, int] | None:
    """The uri, version, line and character of an ``lspInfer/nextEdit`` request's params;
    None when any is missing or not of its type."""
    target = warm_target(params)
    document = _field(params, "textDocument")
    version = _field(document, "version") if document is not None else None
    if target is None or isinstance(version, bool) or not isinstance(version, int):
        return None
    uri, line, character = target
    return uri, version, line, character


def next_edit_result(
    text: str, starts: list[int], version: int, issued: tuple[str, Prediction] | None,
    encoding: Encoding,
) -> dict[str, Any]:  # fmt: skip
    """An ``lspInfer/nextEdit`` answer: the prediction's edits as LSP ranges, or none."""
    if issued is None:
        return {"edits": [], "id": None, "kind": None, "version": version, "label": None}
    item_id, prediction = issued

    def at(offset: int) -> dict[str, int]:
        line, character = position_at(text, offset, encoding, starts=starts)
        return {"line": line, "character": character}

    edits = [{"range": {"start": at(edit.start), "end": at(edit.end)}, "text": edit.new}
             for edit in prediction.edits]  # fmt: skip
    return {"edits": edits, "id": item_id, "kind": prediction.kind, "version": version,
            "label": prediction.label}  # fmt: skip


def announces(experimental: Any, feature: str) -> bool:
    """Whether the client's ``capabilities.experimental`` announces ``feature`` of ours
    (``{"lspInfer": {feature: true}}``: "definitions", "suggestionReady")."""
    if not isinstance(experimental, dict):
        return False
    ours = experimental.get("lspInfer")
    return isinstance(ours, dict) and ours.get(feature) is True


def suggestion_ready_params(uri: str, version: int, line: int, character: int) -> Any:
    return {
        "textDocument": {"uri": uri, "version": version},
        "position": {"line": line, "character": character},
    }


def definitions_params(uri: str, text: str, offsets: Sequence[int], encoding: Encoding) -> Any:
    starts = line_starts(text)
    positions = []
    for offset in offsets:
        line, character = position_at(text, offset, encoding, starts=starts)
        positions.append({"line": line, "character": character})
    return {"textDocument": {"uri": uri}, "positions": positions}


def definitions_result(result: Any, count: int) -> list[Definition | None]:
    """The editor's answer, one entry per position asked (None where it found nothing or an
    entry cannot be read). EditorRequestFailed when the answer as a whole is not one."""
    result = _plain(result)
    if result is None:
        return [None] * count
    entries = result.get("definitions") if isinstance(result, dict) else None
    if not isinstance(entries, list):
        raise EditorRequestFailed(f"not a definitions result: {str(result)[:200]!r}")
    found = [_definition(entry) for entry in entries[:count]]
    return found + [None] * (count - len(found))


def references_params(uri: str, version: int, text: str, offset: int, encoding: Encoding) -> Any:
    line, character = position_at(text, offset, encoding)
    return {"textDocument": {"uri": uri, "version": version},
            "position": {"line": line, "character": character}}  # fmt: skip


def references_result(result: Any, text: str, encoding: Encoding) -> list[tuple[int, int]] | None:
    """The editor's answer as spans of ``text`` (the document it was asked about); a range
    that cannot be read or lies outside the text is left out. None: the editor could not
    tell. EditorRequestFailed when the answer as a whole is not one."""
    result = _plain(result)
    if result is None:
        return None
    ranges = result.get("references") if isinstance(result, dict) else None
    if not isinstance(ranges, list):
        raise EditorRequestFailed(f"not a references result: {str(result)[:200]!r}")
    starts = line_starts(text)
    spans = []
    for entry in ranges:
        ends = [_offset(text, starts, _field(entry, end), encoding) for end in ("start", "end")]
        if ends[0] is not None and ends[1] is not None and ends[0] < ends[1]:
            spans.append((ends[0], ends[1]))
    return spans


def _offset(text: str, starts: list[int], where: Any, encoding: Encoding) -> int | None:
    """The offset of a position in an answer; None if it is not one or lies outside ``text``."""
    position = _position(where)
    if position is None:
        return None
    try:
        return offset_at(text, *position, encoding, starts=starts)
    except PositionError:
        return None


def _plain(value: Any) -> Any:
    """A result as JSON types: pygls hands the result of a method it has no type for as
    named tuples (``Object``)."""
    if hasattr(value, "_asdict"):
        return {key: _plain(item) for key, item in value._asdict().items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def _definition(entry: Any) -> Definition | None:
    if not isinstance(entry, dict):
        return None
    uri, text, where = entry.get("uri"), entry.get("text"), entry.get("range")
    start = where.get("start") if isinstance(where, dict) else None
    line = start.get("line") if isinstance(start, dict) else None
    if not isinstance(uri, str) or not isinstance(text, str) or not isinstance(line, int):
        return None
    if line < 0 or isinstance(line, bool):
        return None
    text = cut_text(text, *definition_text_bounds(line))
    above = entry.get("above")
    above_lines = above[-DEFINITION_TEXT_CHARS:].split("\n")[-DEFINITION_ABOVE_LINES:] if (
        isinstance(above, str) and above) else []  # fmt: skip
    return Definition(uri, line, text, "\n".join(above_lines))
