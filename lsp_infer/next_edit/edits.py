"""What every next-edit rule works with: an edit to the document now, a prediction (a group of
them), and the latest edit read as a rename inside one identifier. Pure."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lsp_infer.next_edit.history import Edit
from lsp_infer.next_edit.syntax import Syntax, is_name, is_name_char


@dataclass(frozen=True)
class TextEdit:
    """Replace ``text[start:end]`` of the document now with ``new``."""

    start: int
    end: int
    new: str


def applied(text: str, edits: Sequence[TextEdit]) -> str:
    """``text`` with ``edits`` (sorted, never overlapping) made."""
    parts, at = [], 0
    for edit in edits:
        parts += [text[at : edit.start], edit.new]
        at = edit.end
    return "".join([*parts, text[at:]])


@dataclass(frozen=True)
class Prediction:
    kind: str  # what made it: "rename", "repeat"
    edits: tuple[TextEdit, ...]  # sorted, never overlapping
    label: str
    from_references: bool = False  # a rename from the editor's references (counted apart)


def word_around(text: str, start: int, end: int, syntax: Syntax | None) -> tuple[int, int]:
    """``[start, end)`` grown to the identifier characters on either side."""
    while start > 0 and is_name_char(text[start - 1], syntax):
        start -= 1
    while end < len(text) and is_name_char(text[end], syntax):
        end += 1
    return start, end


@dataclass(frozen=True)
class Rename:
    start: int  # in the text before the edit (the same in the text now: nothing left of it moved)
    old: str
    new: str


def rename_of(text: str, edit: Edit, syntax: Syntax | None) -> Rename | None:
    """The rename ``edit`` made inside one identifier, if that is what it did."""
    if not all(is_name_char(c, syntax) for c in edit.old + edit.new):
        return None
    before = edit.undone(text)
    old_start, old_end = word_around(before, edit.start, edit.start + len(edit.old), syntax)
    new_start, new_end = word_around(text, edit.start, edit.end, syntax)
    old, new = before[old_start:old_end], text[new_start:new_end]
    if old_start != new_start or old == new or not (is_name(old, syntax) and is_name(new, syntax)):
        return None
    return Rename(old_start, old, new)
