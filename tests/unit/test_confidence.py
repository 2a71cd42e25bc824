"""Confidence from token probabilities (core/confidence.py): which line a token belongs to,
where a suggestion is cut, and that a threshold of 0 changes nothing."""

from __future__ import annotations

import pytest

from lsp_infer.core.confidence import judge, line_confidences, unsure


def tokens(*pieces: tuple[str, float]) -> tuple[str, tuple[tuple[int, float], ...]]:
    """The text the pieces make, and (end offset, probability) per piece."""
    text, probs = "", []
    for piece, probability in pieces:
        text += piece
        probs.append((len(text), probability))
    return text, tuple(probs)


TWO_LINES = tokens(("x", 0.9), (" =", 0.8), (" 1", 0.6), ("\n", 0.95), ("y", 0.1), (" = 2", 0.9))


def test_a_lines_confidence_is_its_least_likely_token() -> None:
    text, probs = TWO_LINES
    assert line_confidences(text, probs) == [(0, 6, 0.6), (6, 11, 0.1)]


def test_a_token_belongs_to_the_line_it_starts_in() -> None:
    # "\n    " ends the first line and indents the second: it decided that the line ends.
    text, probs = tokens(("if x:", 0.9), ("\n    ", 0.2), ("return", 0.9))
    assert line_confidences(text, probs) == [(0, 6, 0.2), (6, 16, 0.9)]


def test_blank_lines_are_not_judged() -> None:
    text, probs = tokens(("\n", 0.05), ("    return", 0.7))
    assert line_confidences(text, probs) == [(1, 11, 0.7)]


@pytest.mark.parametrize(
    ("threshold", "expected_text"),
    [
        (0.0, "x = 1\ny = 2"),  # off: exactly what the model wrote
        (0.05, "x = 1\ny = 2"),
        (0.3, "x = 1\n"),  # cut before the unsure second line, at its start
        (0.7, "x = 1\n"),  # the first line is unsure too: the scheduler hides it
    ],
)
def test_judge_cuts_before_the_first_later_unsure_line(
    threshold: float, expected_text: str
) -> None:
    text, probs = TWO_LINES
    judged = judge(text, probs, threshold)
    assert judged.text == expected_text
    assert judged.confidence == 0.6
    assert unsure(judged.confidence, threshold) == (threshold > 0.6)


def test_no_probabilities_leave_the_text_alone() -> None:
    judged = judge("a\nb", (), 0.9)
    assert judged.text == "a\nb" and judged.confidence is None
    assert not unsure(None, 0.9)
