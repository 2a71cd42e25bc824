"""Next edits the recent edits make near certain. Pure: text and edits in, edits out.

A rename: the latest edit turned one identifier into another (``wdth`` → ``width``, however
it was typed) where the text before it names a binding (python_scopes.py); the prediction is
the same rename at that binding's other occurrences. Earlier edits that made the same rename
by hand count as done: the binding is looked up in the text before all of them, so the
occurrences the user renamed already are neither offered again nor mistaken for another
variable of the new name.

Never offered: an identifier merely extended as it is typed into new code (there is no other
occurrence of the old name's binding), a new name another binding nearby already has (it
would be captured), a result that does not parse, a language without a parser here.
"""

from __future__ import annotations

import itertools
import keyword
from dataclasses import dataclass

from lsp_infer.next_edit.history import Edit
from lsp_infer.next_edit.python_scopes import parses, same_binding

PYTHON_LANGUAGE_IDS = frozenset({"python"})
PYTHON_SUFFIXES = (".py", ".pyi", ".pyw")


@dataclass(frozen=True)
class TextEdit:
    """Replace ``text[start:end]`` of the document now with ``new``."""

    start: int
    end: int
    new: str


@dataclass(frozen=True)
class Prediction:
    kind: str  # what made it: "rename"
    edits: tuple[TextEdit, ...]  # sorted, never overlapping
    label: str


def is_python(uri: str, language_id: str) -> bool:
    if language_id:
        return language_id in PYTHON_LANGUAGE_IDS
    return uri.split("?", 1)[0].endswith(PYTHON_SUFFIXES)


def predict(text: str, edits: list[Edit], python: bool) -> Prediction | None:
    """The next edit of the document ``text``, given its recent ``edits`` (oldest first, in
    ``text``'s coordinates); None when nothing is near certain."""
    if not edits or not python:
        return None
    return predict_rename(text, edits)


def _is_name_char(char: str) -> bool:
    return char.isalnum() or char == "_"


def _word(text: str, start: int, end: int) -> tuple[int, int]:
    """``[start, end)`` grown to the identifier characters on either side."""
    while start > 0 and _is_name_char(text[start - 1]):
        start -= 1
    while end < len(text) and _is_name_char(text[end]):
        end += 1
    return start, end


def _is_name(word: str) -> bool:
    return word.isidentifier() and not keyword.iskeyword(word)


@dataclass(frozen=True)
class _Rename:
    start: int  # in the text before the edit (the same in the text now: nothing left of it moved)
    old: str
    new: str


def rename_of(text: str, edit: Edit) -> _Rename | None:
    """The rename ``edit`` made inside one identifier, if that is what it did."""
    if not all(_is_name_char(c) for c in edit.old + edit.new):
        return None
    before = edit.undone(text)
    old_start, old_end = _word(before, edit.start, edit.start + len(edit.old))
    new_start, new_end = _word(text, edit.start, edit.end)
    old, new = before[old_start:old_end], text[new_start:new_end]
    if old_start != new_start or old == new or not (_is_name(old) and _is_name(new)):
        return None
    return _Rename(old_start, old, new)


def predict_rename(text: str, edits: list[Edit]) -> Prediction | None:
    latest = edits[-1]
    rename = rename_of(text, latest)
    if rename is None:
        return None
    # The same rename made by hand before (each at a place of its own): undone too, so that
    # the binding is looked up where every occurrence still has the old name.
    same = sorted((e for e in edits if (r := rename_of(text, e)) is not None
                   and (r.old, r.new) == (rename.old, rename.new)),
                  key=lambda e: e.start)  # fmt: skip
    if any(a.end > b.start for a, b in itertools.pairwise(same)):
        return None  # overlapping edits: no single text before them
    original, shift, undone = text, 0, []  # undone: (start, end) in the original text
    for edit in same:
        start = edit.start - shift
        original = original[:start] + edit.old + original[start + len(edit.new) :]
        undone.append((start, start + len(edit.old), len(edit.new) - len(edit.old)))
        shift += len(edit.new) - len(edit.old)
    at = rename.start + _shift_back(rename.start, same)
    binding = same_binding(original, at)
    if binding is None or binding.name != rename.old or rename.new in binding.names_nearby:
        return None
    planned: list[TextEdit] = []
    for occurrence in binding.occurrences:
        moved = _to_now(occurrence.start, occurrence.end, undone)
        if moved is None:
            continue  # one the user renamed already
        if text[moved : moved + len(rename.old)] != rename.old:
            return None  # the text no longer says what the parse saw: never guess
        planned.append(TextEdit(moved, moved + len(rename.old), rename.new))
    if not planned:
        return None
    result = text
    for planned_edit in reversed(planned):
        result = result[: planned_edit.start] + planned_edit.new + result[planned_edit.end :]
    if not parses(result):
        return None
    more = f"{len(planned)} more" if len(planned) > 1 else "1 more"
    return Prediction("rename", tuple(planned), f"rename {rename.old} → {rename.new} ({more})")


def _shift_back(position: int, edits: list[Edit]) -> int:
    """How far ``position`` of the text now moves back when ``edits`` left of it are undone."""
    return -sum(len(e.new) - len(e.old) for e in edits if e.end <= position)


def _to_now(start: int, end: int, undone: list[tuple[int, int, int]]) -> int | None:
    """An original span's start in the text now; None if it is one of the undone edits."""
    delta = 0
    for undone_start, undone_end, growth in undone:
        if start <= undone_end and end >= undone_start:  # touching: the same identifier
            return None
        if undone_end <= start:
            delta += growth
    return start + delta
