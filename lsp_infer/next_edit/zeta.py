"""Next edits from a trained next-edit model in Zed's Zeta format (``nextEdit.teamFormat``
"zeta"): the recent edits as diffs and an editable region around the cursor, which the model
writes out again with the edits it predicts. Pure: the prompt, and what to make of the answer.

A team can serve such a model (Zed's Zeta, a Qwen2.5-Coder-7B fine-tune) on its vLLM server;
an untrained model asked this way rewrote the region rightly 0 times in 30 (issue 43), so the
format is for trained weights only. **Untested here against those weights** (they cannot be
fetched on this project's machines): the format follows Zed's zeta crate (v1:
``crates/zeta/src/zeta.rs`` and ``input_excerpt.rs``; the instruction as vLLM's next-edit
benchmark sends it, ``NextEditPredictionDataset``). One difference: Zed grows the editable
region to the enclosing syntax node that fits; here it grows a line at a time, as Zed does
where no node fits.

What is shown, and only when all of it holds: the rewritten region parsed between exactly one
start and one end marker; at most ``MAX_EDITS`` edits of at most ``MAX_CHANGED_CHARS`` in
all; none of them inside the text the user just typed (never undo the user's edit); every
token of the answer at least ``min_probability`` likely; in a language whose parser is here
(syntax.py), the file still parses.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from lsp_infer.next_edit.history import Edit
from lsp_infer.next_edit.predict import Prediction, TextEdit, applied, smallest_edit
from lsp_infer.next_edit.syntax import Syntax, parses

CURSOR = "<|user_cursor_is_here|>"
START_OF_FILE = "<|start_of_file|>"
REGION_START = "<|editable_region_start|>"
REGION_END = "<|editable_region_end|>"

# Zed's budgets (zeta.rs), in its estimate of tokens: bytes / 3.
BYTES_PER_TOKEN = 3
REWRITE_TOKENS = 350  # the editable region
CONTEXT_TOKENS = 150  # the lines around it, shown but not editable
EVENT_TOKENS = 500  # the recent edits, newest first until they no longer fit

INSTRUCTION = (
    "You are a code completion assistant and your task is to analyze user edits and then "
    "rewrite an excerpt that the user provides, suggesting the appropriate edits within the "
    "excerpt, taking into account the cursor location."
)

MAX_EDITS = 4  # a small group, not a rewrite of the region
MAX_CHANGED_CHARS = 400


@dataclass(frozen=True)
class ZetaQuestion:
    """The prompt, and where its editable region is in the text it was made from."""

    prompt: str
    region_start: int  # at a line's start
    region_end: int  # at a line's end (before its newline)
    max_tokens: int  # room for the excerpt written out again


def _tokens(text: str) -> int:
    return len(text.encode()) // BYTES_PER_TOKEN


def _expand(lines: list[str], first: int, last: int, budget: int) -> tuple[int, int]:
    """Zed's ``expand_range``: a line above, then a line below, while the budget lasts."""
    while True:
        expanded = False
        if budget > 0 and first > 0:
            first -= 1
            budget = max(0, budget - _tokens(lines[first]))
            expanded = True
        if budget > 0 and last < len(lines) - 1:
            last += 1
            budget = max(0, budget - _tokens(lines[last]))
            expanded = True
        if not expanded:
            return first, last


def _events(path: str, text: str, edits: Sequence[Edit]) -> str:
    """The recent edits as Zed writes them, oldest first, as many of the newest as fit."""
    written: list[str] = []
    budget = EVENT_TOKENS
    for edit in reversed(edits):
        diff = _hunk(edit.undone(text), text, edit)
        if not diff:
            continue
        event = f'User edited "{path}":\n```diff\n{diff}\n```'
        if _tokens(event) > budget:
            break
        budget -= _tokens(event)
        written.insert(0, event)
    return "\n\n".join(written)


def _hunk(before: str, after: str, edit: Edit) -> str:
    """``edit`` as one unified-diff hunk with 3 lines of context (a window of the file
    diffed, not all of it: a long file costs no more), without the file header lines."""
    lo = max(0, before.count("\n", 0, edit.start) - 3)
    old_hi = before.count("\n", 0, edit.start + len(edit.old)) + 4
    new_hi = after.count("\n", 0, edit.end) + 4
    old_lines = before.splitlines(keepends=True)[lo:old_hi]
    new_lines = after.splitlines(keepends=True)[lo:new_hi]
    lines = list(difflib.unified_diff(old_lines, new_lines, n=3))[2:]
    if not lines:
        return ""
    lines[0] = _HUNK_HEADER.sub(
        lambda m: f"@@ -{int(m[1]) + lo}{m[2] or ''} +{int(m[3]) + lo}{m[4] or ''} @@", lines[0]
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines).rstrip("\n")


_HUNK_HEADER = re.compile(r"^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@")


def zeta_question(path: str, text: str, cursor: int, edits: Sequence[Edit]) -> ZetaQuestion:
    """The Zeta prompt for ``text`` (the document now) with the cursor at ``cursor``."""
    lines = text.split("\n")
    row = text.count("\n", 0, cursor)
    first, last = _expand(lines, row, row, REWRITE_TOKENS)
    above, below = _expand(lines, first, last, CONTEXT_TOKENS)
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    region_start, region_end = starts[first], starts[last] + len(lines[last])
    context_start, context_end = starts[above], starts[below] + len(lines[below])
    excerpt = (
        f"```{path}\n"
        + (f"{START_OF_FILE}\n" if context_start == 0 else "")
        + text[context_start:region_start]
        + f"{REGION_START}\n"
        + text[region_start:cursor]
        + CURSOR
        + text[cursor:region_end]
        + f"\n{REGION_END}"
        + text[region_end:context_end]
        + "\n```"
    )
    prompt = (
        f"### Instruction:\n{INSTRUCTION}\n\n### User Edits:\n\n{_events(path, text, edits)}"
        f"\n\n### User Excerpt:\n\n{excerpt}\n\n### Response:\n\n"
    )
    return ZetaQuestion(prompt, region_start, region_end, min(2048, 2 * _tokens(excerpt) + 64))


def rewritten_region(answer: str) -> str | None:
    """The region as the model wrote it out again (Zed's ``parse_edits``), or None: not
    exactly one start and one end marker, or the end before the start."""
    content = answer.replace(CURSOR, "")
    if content.count(REGION_START) != 1 or content.count(REGION_END) != 1:
        return None
    after = content[content.index(REGION_START) :]
    newline = after.find("\n")
    if newline < 0:
        return None
    after = after[newline + 1 :]
    end = after.rfind(f"\n{REGION_END}")
    if end < 0:
        return None if not after.startswith(REGION_END) else ""
    return after[:end]


def zeta_prediction(
    text: str,
    question: ZetaQuestion,
    answer: str,
    probabilities: Sequence[tuple[int, float]],
    min_probability: float,
    latest: Edit,
    syntax: Syntax | None,
) -> Prediction | None:
    """The model's ``answer`` as a prediction, or None (see the module's docstring)."""
    region = rewritten_region(answer)
    if region is None or not probabilities:
        return None
    if min(chance for _, chance in probabilities) < min_probability:
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
