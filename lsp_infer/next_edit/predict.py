"""Next edits the recent edits make near certain. Pure: text and edits in, edits out.

A rename: the latest edit turned one identifier into another (``wdth`` → ``width``, however
it was typed) where the text before it names a binding (python_scopes.py for Python,
js_scopes.py for JavaScript and TypeScript); the prediction is the same rename at that
binding's other occurrences (a JavaScript shorthand property keeps its key: ``{wdth}`` →
``{wdth: width}``). Earlier edits that made the same rename
by hand count as done: the binding is looked up in the text before all of them, so the
occurrences the user renamed already are neither offered again nor mistaken for another
variable of the new name.

Never offered: an identifier merely extended as it is typed into new code (there is no other
occurrence of the old name's binding), a new name another binding nearby already has (it
would be captured), a result that does not parse, a rename made at a shorthand property (the
key or the variable meant?), a language without a parser here (syntax.py).
"""

from __future__ import annotations

import itertools

from lsp_infer.next_edit.edits import Prediction, TextEdit, applied, rename_of
from lsp_infer.next_edit.history import Edit
from lsp_infer.next_edit.references import (
    References,
    rename_from_references,
    renames_one_of,
)
from lsp_infer.next_edit.syntax import Syntax, is_code_name, parses, same_binding


def predict(
    text: str, edits: list[Edit], syntax: Syntax | None, references: References | None = None
) -> Prediction | None:
    """The next edit of the document ``text``, given its recent ``edits`` (oldest first, in
    ``text``'s coordinates); None when nothing is near certain. A rename needs the language's
    scopes (``syntax`` None: none can be read) or, where they give none (an attribute, a
    language without a parser here), the editor's ``references`` of the name (references.py);
    a repeated edit is plain text, any language."""
    if not edits:
        return None
    if syntax is not None and (rename := predict_rename(text, edits, syntax)) is not None:
        return rename
    if references is not None:
        if (rename := rename_from_references(text, edits[-1], references, syntax)) is not None:
            return rename
        if renames_one_of(text, edits[-1], references, syntax):
            return None  # a name the language server knows, renamed: its gates' refusal stands
    if syntax is not None and renamed_in_code(text, edits[-1], syntax):
        # A name in the code changed to another: the rename's rules said no (another variable
        # meant, most often), or it is an attribute's, which no scope tells about here.
        return None
    return predict_repeat(text, edits[-1])


def renamed_in_code(text: str, edit: Edit, syntax: Syntax) -> bool:
    """Whether ``edit`` changed a name token of the code (a variable's, an attribute's, a
    keyword's; not a word in a string or a comment) into another: the rename rule's to judge,
    and its refusal stands."""
    rename = rename_of(text, edit, syntax)
    return rename is not None and is_code_name(edit.undone(text), rename.start, syntax)


def predict_rename(text: str, edits: list[Edit], syntax: Syntax) -> Prediction | None:
    latest = edits[-1]
    rename = rename_of(text, latest, syntax)
    if rename is None:
        return None
    # The same rename made by hand before (each at a place of its own): undone too, so that
    # the binding is looked up where every occurrence still has the old name.
    same = sorted((e for e in edits if (r := rename_of(text, e, syntax)) is not None
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
    binding = same_binding(original, at, syntax)
    if binding is None or binding.name != rename.old or rename.new in binding.names_nearby:
        return None
    planned: list[TextEdit] = []
    for occurrence in binding.occurrences:
        moved = _to_now(occurrence.start, occurrence.end, undone)
        if moved is None:
            if occurrence.shorthand:
                return None  # `{wdth}` → `{width}`: the key changed too, or only the variable?
            continue  # one the user renamed already
        if text[moved : moved + len(rename.old)] != rename.old:
            return None  # the text no longer says what the parse saw: never guess
        end = moved + len(rename.old)
        if occurrence.shorthand:  # the key kept: `{wdth}` → `{wdth: width}`, an insertion
            planned.append(TextEdit(end, end, f": {rename.new}"))
        else:
            planned.append(TextEdit(moved, end, rename.new))
    if not planned:
        return None
    if not parses(applied(text, planned), syntax):
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


# -- the same edit on a line like the one just edited -----------------------------------

REPEAT_REACH_LINES = 80  # how far from the edit a line like it is looked for
MIN_REPEAT_CHARS = 8  # a shorter line (`)`, `else:`) is too common to mean the same edit


def line_span(text: str, start: int, end: int) -> tuple[int, int]:
    """The whole lines ``[start, end)`` touches (without the last line's newline)."""
    first = text.rfind("\n", 0, start) + 1
    last = text.find("\n", end)
    return first, len(text) if last < 0 else last


def indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def predict_repeat(text: str, latest: Edit) -> Prediction | None:
    """The latest edit, inside one line, made again on the nearest other line that read as the
    edited one did (indentation aside): after it, or else before it. One at a time: accepted,
    it is the latest edit, and the next request offers the next such line."""
    if "\n" in latest.old or "\n" in latest.new:
        return None  # lines added or joined: new code, not a change to a line like others
    before = latest.undone(text)
    old_start, old_end = line_span(before, latest.start, latest.start + len(latest.old))
    new_start, new_end = line_span(text, latest.start, latest.end)
    old_line, new_line = before[old_start:old_end], text[new_start:new_end]
    key = old_line.strip()
    if key == new_line.strip() or len(key) < MIN_REPEAT_CHARS:
        return None
    lines = text.split("\n")
    edited = text.count("\n", 0, new_start)
    nearby = range(max(0, edited - REPEAT_REACH_LINES),
                   min(len(lines), edited + REPEAT_REACH_LINES + 1))  # fmt: skip
    alike = [i for i in nearby if i != edited and lines[i].strip() == key]
    if not alike:
        return None
    later = [i for i in alike if i > edited]
    target = later[0] if later else alike[-1]
    # The edited line's change, at the same place of the target line (its own indentation).
    indent, old_indent = indent_of(lines[target]), indent_of(old_line)
    replacement = indent + new_line[len(old_indent) :] if new_line.startswith(old_indent) \
        else new_line  # fmt: skip
    start = sum(len(line) + 1 for line in lines[:target])
    edit = smallest_edit(text, start, start + len(lines[target]), replacement)
    return Prediction("repeat", (edit,), f"the same edit at line {target + 1}")


def smallest_edit(text: str, start: int, end: int, new: str) -> TextEdit:
    """``text[start:end]`` → ``new`` cut to the characters that differ."""
    old = text[start:end]
    prefix = 0
    while prefix < min(len(old), len(new)) and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < min(len(old), len(new)) - prefix and old[-1 - suffix] == new[-1 - suffix]:
        suffix += 1
    return TextEdit(start + prefix, end - suffix, new[prefix : len(new) - suffix])
