"""A region around the cursor written out again by a trained next-edit model on the team's
server (``nextEdit.teamFormat``: zeta.py, sweep.py), and what of its answer is shown. Pure.

Shown only when all of it holds: the model wrote the region to its end marker; it changed
the region in at most ``MAX_EDITS`` runs of lines, ``MAX_CHANGED_CHARS`` in all; none of the
edits is inside the text the user just typed (never undo the user's edit); every token of
the answer at least ``min_probability`` likely; in a language whose parser is here
(syntax.py), the file still parses.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass

from lsp_infer.next_edit.edits import Prediction, TextEdit, applied
from lsp_infer.next_edit.history import Edit
from lsp_infer.next_edit.predict import smallest_edit
from lsp_infer.next_edit.syntax import Syntax, parses

MAX_EDITS = 4  # a small group, not a rewrite of the region
MAX_CHANGED_CHARS = 400


@dataclass(frozen=True)
class RegionQuestion:
    """The prompt, and where its region is in the text it was made from."""

    prompt: str
    region_start: int  # at a line's start
    region_end: int  # at a line's end (before its newline)
    max_tokens: int  # room for the region written out again
    until: tuple[str, ...]  # the markers that end the answer: the stream is closed at one


def region_prediction(
    text: str,
    question: RegionQuestion,
    region: str,
    probabilities: Sequence[tuple[int, float]],
    min_probability: float,
    latest: Edit,
    syntax: Syntax | None,
) -> Prediction | None:
    """The region as the model wrote it (``region``, read from its answer) as a prediction,
    or None (see the module's docstring)."""
    if not probabilities or min(chance for _, chance in probabilities) < min_probability:
        return None
    old = text[question.region_start : question.region_end]
    if region == old:
        return None
    edits = _line_edits(text, question.region_start, old, region)
    changed = sum(edit.end - edit.start + len(edit.new) for edit in edits)
    if not edits or len(edits) > MAX_EDITS or changed > MAX_CHANGED_CHARS:
        return None
    if any(edit.start < latest.end and latest.start < edit.end for edit in edits):
        return None  # it would take back what the user just typed
    if syntax is not None and not parses(applied(text, edits), syntax):
        return None
    line = text.count("\n", 0, edits[0].start) + 1
    more = f" (and {len(edits) - 1} more)" if len(edits) > 1 else ""
    return Prediction("region", tuple(edits), f"an edit at line {line}{more}")


def _line_edits(text: str, offset: int, old: str, new: str) -> list[TextEdit]:
    """``old`` (at ``offset`` in ``text``) → ``new`` as the smallest edits, one per changed
    run of lines."""
    old_lines, new_lines = old.splitlines(keepends=True), new.splitlines(keepends=True)
    starts = [offset]
    for line in old_lines:
        starts.append(starts[-1] + len(line))
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    edits = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            edit = smallest_edit(text, starts[i1], starts[i2], "".join(new_lines[j1:j2]))
            if edit.start != edit.end or edit.new:
                edits.append(edit)
    return edits


def line_starts_of(lines: Sequence[str]) -> list[int]:
    """Where each of ``text.split("\\n")``'s lines starts in the text."""
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    return starts
