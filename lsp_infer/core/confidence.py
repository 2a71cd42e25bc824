"""How sure the model was of what it wrote, line by line, from its token probabilities (pure).

The backend records, for each token it decodes, where the token ends in the output and the
probability the model gave it (a softmax of the logits it computes anyway: no extra model
work). A line's confidence is the probability the model gave the whole line: the product of
the probabilities of the tokens starting in it. Measured against the lowest token's and the
geometric mean's (JetBrains' mean log-probability) on 60 standard-library holes, the product
separated right first lines from wrong ones best (bench/HISTORY.md, "Confidence"): a line is
wrong when any of its tokens is, and a long line of fairly sure tokens is less sure than a
short one.

With ``completion.minConfidence`` above 0:
- a suggestion is cut before its first later line below it, at the line's start;
- one whose first line (the first with code) is below it is unsure: the keystroke path
  hides it from typing (an empty answer: the editor shows nothing rather than something the
  model itself doubts), and shows it to a user who invoked a suggestion.
A typing request's suggestion from a cold start's smaller window is held to the larger of
``minConfidence`` and ``completion.coldStartConfidence`` (local/completions.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

# (end offset in the output text, probability) for each decoded token, in order.
TokenProbs = Sequence[tuple[int, float]]


@dataclass(frozen=True)
class Judged:
    """An output after the confidence rules: its text (cut before the first later line
    below the threshold), and the first line's confidence (None when there is no line with
    code, or no probabilities)."""

    text: str
    confidence: float | None


def unsure(confidence: float | None, threshold: float) -> bool:
    """Whether a suggestion whose first line has ``confidence`` is hidden from typing."""
    return confidence is not None and confidence < threshold


def line_confidences(text: str, probs: TokenProbs) -> list[tuple[int, int, float | None]]:
    """(start, end, confidence) of each line of ``text`` with code in it; a line's end
    includes its "\\n". A token belongs to the line it starts in (a token that starts with the
    line's "\\n" decided to end it); a line with no token of its own has no confidence."""
    product: dict[int, float] = {}
    line_starts = [0] + [i + 1 for i, char in enumerate(text) if char == "\n"]
    start = 0
    line = 0
    for end, probability in probs:
        while line + 1 < len(line_starts) and line_starts[line + 1] <= start:
            line += 1
        product[line] = probability * product.get(line, 1.0)
        start = max(start, end)
    result = []
    for index, line_start in enumerate(line_starts):
        line_end = line_starts[index + 1] if index + 1 < len(line_starts) else len(text)
        if text[line_start:line_end].strip():
            result.append((line_start, line_end, product.get(index)))
    return result


def judge(text: str, probs: TokenProbs, threshold: float) -> Judged:
    """``text`` cut under the threshold (see the module doc). A threshold of 0, or no
    probabilities (a backend that has none), leaves the text as it is."""
    lines = line_confidences(text, probs) if probs else []
    first = lines[0][2] if lines else None
    if threshold > 0:
        for start, _end, confidence in lines[1:]:
            if unsure(confidence, threshold):
                return Judged(text[:start], first)
    return Judged(text, first)
