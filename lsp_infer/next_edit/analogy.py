"""Next edits the model predicts: the change just made to one line, made by analogy to a line
like it nearby. Pure: what to ask the model, and what to make of its answer.

The deterministic rules (predict.py) repeat an edit only on a line that read exactly as the
edited one did. Code is full of lines that are alike without being equal: ``md5(x)`` and
``sha256(x)`` beside it, ``"README.rst"`` and ``"HISTORY.rst"``, ``400 <= value`` and
``500 <= value``. For those the local model is shown the edit as a unified diff and the like
line as the start of the next hunk; it writes the line's ``+`` side. An untrained rewrite of a
whole region was right 0 times in 30 (issue 43); one line by analogy, gated by the model's own
confidence, is what the measurements support (bench/next_edit.py ``--model``).

Shown only when the model changed the line, every token of its answer was at least
``min_probability`` likely, and (in a language whose parser is here: syntax.py) the file
still parses.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass

from lsp_infer.next_edit.edits import Prediction, applied
from lsp_infer.next_edit.history import Edit
from lsp_infer.next_edit.predict import indent_of, line_span, smallest_edit
from lsp_infer.next_edit.syntax import Syntax, parses

REACH_LINES = 40  # how far from the edit a line like it is looked for
MIN_LIKENESS = 0.6  # difflib's ratio between the edited line (before the edit) and a like one
MIN_LINE_CHARS = 8  # shorter lines are too common to be alike by more than chance
MAX_LINE_CHARS = 200  # longer ones cost the model more than a pause allows


@dataclass(frozen=True)
class Analogy:
    """What the model is asked: ``old_line`` became ``new_line``; what does ``target_line``
    (line ``target`` of the text now, 0-based) become?"""

    old_line: str
    new_line: str
    target: int
    target_line: str


def analogy_for(text: str, latest: Edit) -> Analogy | None:
    """The question to ask after ``latest`` (inside one line of ``text``, the document now),
    or None when there is no line like the edited one nearby, or the edit is new code typed
    at the end of a line (nothing to make by analogy)."""
    if "\n" in latest.old or "\n" in latest.new:
        return None
    before = latest.undone(text)
    old_start, old_end = line_span(before, latest.start, latest.start + len(latest.old))
    new_start, new_end = line_span(text, latest.start, latest.end)
    old_line, new_line = before[old_start:old_end], text[new_start:new_end]
    if not latest.old and latest.end == new_end:
        return None  # typed at the end of the line: new code, most likely
    key = old_line.strip()
    if key == new_line.strip() or not MIN_LINE_CHARS <= len(key) <= MAX_LINE_CHARS:
        return None
    if len(new_line.strip()) > MAX_LINE_CHARS:
        return None  # a long paste: the prompt would outgrow what a pause allows
    lines = text.split("\n")
    edited = text.count("\n", 0, new_start)
    best: tuple[tuple[float, float], int] | None = None
    for index in range(max(0, edited - REACH_LINES), min(len(lines), edited + REACH_LINES + 1)):
        other = lines[index].strip()
        if index == edited or other == key or not MIN_LINE_CHARS <= len(other) <= MAX_LINE_CHARS:
            continue
        likeness = difflib.SequenceMatcher(None, key, other, autojunk=False).ratio()
        # The likest line; of equally like ones the nearest, after the edit before before it.
        rank = (likeness, -abs(index - edited) + (0.5 if index > edited else 0.0))
        if likeness >= MIN_LIKENESS and (best is None or rank > best[0]):
            best = (rank, index)
    if best is None:
        return None
    return Analogy(old_line, new_line, best[1], lines[best[1]])


def analogy_prompt(path: str, analogy: Analogy) -> str:
    """The edit as a unified diff, then the like line as the next hunk's removed line: the
    model writes the added one. (A chat-style instruction was tried beside it: see
    bench/HISTORY.md.)"""
    return (
        f"--- a/{path}\n+++ b/{path}\n@@ @@\n-{analogy.old_line}\n+{analogy.new_line}\n"
        f"@@ @@\n-{analogy.target_line}\n+"
    )


def analogy_prediction(
    text: str,
    analogy: Analogy,
    answer: str,
    probabilities: Sequence[tuple[int, float]],
    min_probability: float,
    syntax: Syntax | None,
) -> Prediction | None:
    """The model's ``answer`` (the line's new text, up to its newline; ``probabilities``: each
    token's end in it and its probability) as a prediction, or None: no whole line,
    unsure (line_confidence below ``min_probability``), unchanged, or breaking the parse."""
    sureness = line_confidence(answer, probabilities)
    if sureness is None or sureness < min_probability:
        return None  # cut short (never half a line), or unsure
    answer = answer[: answer.index("\n")].rstrip()
    target_line = analogy.target_line
    replacement = indent_of(target_line) + answer.strip()
    if not answer.strip() or replacement == target_line.rstrip():
        return None
    lines = text.split("\n")
    start = sum(len(line) + 1 for line in lines[: analogy.target])
    edit = smallest_edit(text, start, start + len(target_line), replacement)
    if syntax is not None and not parses(applied(text, (edit,)), syntax):
        return None
    return Prediction("analogy", (edit,), f"a like change at line {analogy.target + 1}")


def line_confidence(answer: str, probabilities: Sequence[tuple[int, float]]) -> float | None:
    """The least probability among the tokens that make the answer's first line and the one
    that ends it (how sure the model was that the line is all there is counts too); None
    when the answer has no whole line."""
    line_end = answer.find("\n")
    if line_end < 0:
        return None
    starts = [0, *(end for end, _ in probabilities)]
    chances = [chance for start, (_, chance) in zip(starts, probabilities, strict=False)
               if start <= line_end]  # fmt: skip
    return min(chances) if chances else None
