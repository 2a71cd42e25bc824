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

The rewritten region is read between exactly one start and one end marker; what of it is
shown, region.py decides.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence

from lsp_infer.next_edit.edits import Prediction
from lsp_infer.next_edit.history import Edit
from lsp_infer.next_edit.region import RegionQuestion, line_starts_of, region_prediction
from lsp_infer.next_edit.syntax import Syntax

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

ZetaQuestion = RegionQuestion  # until: the region's end marker


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
        diff = edit_hunk(edit.undone(text), text, edit)
        if not diff:
            continue
        event = f'User edited "{path}":\n```diff\n{diff}\n```'
        if _tokens(event) > budget:
            break
        budget -= _tokens(event)
        written.insert(0, event)
    return "\n\n".join(written)


def edit_hunk(before: str, after: str, edit: Edit) -> str:
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


def zeta_question(path: str, text: str, cursor: int, edits: Sequence[Edit]) -> RegionQuestion:
    """The Zeta prompt for ``text`` (the document now) with the cursor at ``cursor``."""
    lines = text.split("\n")
    row = text.count("\n", 0, cursor)
    first, last = _expand(lines, row, row, REWRITE_TOKENS)
    above, below = _expand(lines, first, last, CONTEXT_TOKENS)
    starts = line_starts_of(lines)
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
    max_tokens = min(2048, 2 * _tokens(excerpt) + 64)
    return RegionQuestion(prompt, region_start, region_end, max_tokens, (REGION_END,))


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
    question: RegionQuestion,
    answer: str,
    probabilities: Sequence[tuple[int, float]],
    min_probability: float,
    latest: Edit,
    syntax: Syntax | None,
    ended: bool = False,
) -> Prediction | None:
    """The model's ``answer`` as a prediction, or None (region.py says when). Whether the
    server ended it (``ended``) does not matter: the region's end marker must be there."""
    del ended
    region = rewritten_region(answer)
    if region is None:
        return None
    return region_prediction(text, question, region, probabilities, min_probability, latest,
                             syntax)  # fmt: skip
