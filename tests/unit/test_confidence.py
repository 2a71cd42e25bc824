"""Confidence from token probabilities (core/confidence.py): which line a token belongs to,
where a suggestion is cut, and that a threshold of 0 changes nothing."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lsp_infer.core.confidence import judge, line_confidences, unsure


def tokens(*pieces: tuple[str, float]) -> tuple[str, tuple[tuple[int, float], ...]]:
    """The text the pieces make, and (end offset, probability) per piece."""
    text, probs = "", []
    for piece, probability in pieces:
        text += piece
        probs.append((len(text), probability))
    return text, tuple(probs)


TWO_LINES = tokens(("x", 0.9), (" =", 0.8), (" 1", 0.6), ("\n", 0.95), ("y", 0.1), (" = 2", 0.9))


def test_a_lines_confidence_is_the_probability_of_the_whole_line() -> None:
    text, probs = TWO_LINES
    (first_start, first_end, first), (second_start, second_end, second) = line_confidences(
        text, probs
    )
    assert (first_start, first_end, second_start, second_end) == (0, 6, 6, 11)
    assert first == pytest.approx(0.9 * 0.8 * 0.6 * 0.95)  # its "\n" too: the line ends there
    assert second == pytest.approx(0.1 * 0.9)


def test_a_token_belongs_to_the_line_it_starts_in() -> None:
    # "\n    " ends the first line and indents the second: it decided that the line ends.
    text, probs = tokens(("if x:", 0.9), ("\n    ", 0.5), ("return", 0.8))
    assert line_confidences(text, probs) == [(0, 6, 0.45), (6, 16, 0.8)]


def test_blank_lines_are_not_judged() -> None:
    text, probs = tokens(("\n", 0.05), ("    return", 0.7))
    assert line_confidences(text, probs) == [(1, 11, 0.7)]


@pytest.mark.parametrize(
    ("threshold", "expected_text"),
    [
        (0.0, "x = 1\ny = 2"),  # off: exactly what the model wrote
        (0.05, "x = 1\ny = 2"),
        (0.3, "x = 1\n"),  # cut before the unsure second line (0.09), at its start
        (0.5, "x = 1\n"),  # the first line (0.41) is unsure too: the scheduler hides it
    ],
)
def test_judge_cuts_before_the_first_later_unsure_line(
    threshold: float, expected_text: str
) -> None:
    text, probs = TWO_LINES
    judged = judge(text, probs, threshold)
    assert judged.text == expected_text
    assert judged.confidence == pytest.approx(0.4104)
    assert unsure(judged.confidence, threshold) == (threshold > 0.4104)


def test_no_probabilities_leave_the_text_alone() -> None:
    judged = judge("a\nb", (), 0.9)
    assert judged.text == "a\nb" and judged.confidence is None
    assert not unsure(None, 0.9)


@given(
    st.lists(st.tuples(st.text(max_size=6), st.floats(0.0, 1.0)), max_size=20),
)
def test_a_threshold_of_0_gives_every_suggestion_exactly_as_decoded(
    pieces: list[tuple[str, float]],
) -> None:
    text, probs = tokens(*pieces)
    judged = judge(text, probs, 0.0)
    assert judged.text == text
    assert not unsure(judged.confidence, 0.0)  # never hidden either
