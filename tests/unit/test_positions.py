"""Positions ⇄ offsets in utf-8/16/32, and edits applied to documents."""

from __future__ import annotations

import pytest

from lsp_infer.documents import DocumentNotOpen, DocumentStore, TextChange, apply_change
from lsp_infer.positions import (
    PositionError,
    code_units,
    column_to_index,
    line_starts,
    offset_at,
    position_at,
)

EMOJI = "a😀b"  # 😀 is 1 code point, 2 utf-16 units, 4 utf-8 bytes


@pytest.mark.parametrize(
    ("text", "starts"),
    [
        ("", [0]),
        ("abc", [0]),
        ("a\nb", [0, 2]),
        ("a\r\nb", [0, 3]),
        ("a\rb", [0, 2]),
        ("a\n", [0, 2]),
        ("a\x0cb\u2028c", [0]),  # form feed and U+2028 are not LSP line ends
    ],
)
def test_line_starts(text: str, starts: list[int]) -> None:
    assert line_starts(text) == starts


@pytest.mark.parametrize(
    ("line", "column", "encoding", "index"),
    [
        (EMOJI, 1, "utf-16", 1),
        (EMOJI, 3, "utf-16", 2),  # after the emoji
        (EMOJI, 2, "utf-16", 1),  # inside the surrogate pair: rounds down
        (EMOJI, 4, "utf-16", 3),
        (EMOJI, 5, "utf-8", 2),
        (EMOJI, 3, "utf-8", 1),  # inside the emoji's bytes
        (EMOJI, 2, "utf-32", 2),
        (EMOJI, 99, "utf-16", 3),  # past the end clamps to the line length
        ("abc", 0, "utf-16", 0),
        ("", 5, "utf-8", 0),
        ("é", 2, "utf-8", 1),
    ],
)
def test_column_to_index(line: str, column: int, encoding, index: int) -> None:
    assert column_to_index(line, column, encoding) == index


@pytest.mark.parametrize(
    ("text", "line", "character", "encoding", "offset"),
    [
        ("ab\ncd", 1, 1, "utf-16", 4),
        ("ab\r\ncd", 0, 9, "utf-16", 2),  # clamps before the \r\n
        ("ab\r\ncd", 1, 0, "utf-16", 4),
        ("ab\rcd", 1, 2, "utf-16", 5),
        ("x😀\ny", 0, 3, "utf-16", 2),
        ("x😀\ny", 1, 1, "utf-8", 4),
        ("a\n", 1, 0, "utf-16", 2),  # the empty last line exists
    ],
)
def test_offset_at(text: str, line: int, character: int, encoding, offset: int) -> None:
    assert offset_at(text, line, character, encoding) == offset


def test_offset_at_line_past_the_end() -> None:
    with pytest.raises(PositionError, match="past the end"):
        offset_at("a\nb", 2, 0, "utf-16")
    assert offset_at("a\nb", 7, 0, "utf-16", clamp_line=True) == 3


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16", "utf-32"])
@pytest.mark.parametrize("text", ["", "abc", "x😀y\r\nzé\rq\n", "\n\n😀"])
def test_position_round_trip(text: str, encoding) -> None:
    for offset in range(len(text) + 1):
        if 0 < offset < len(text) and text[offset - 1] == "\r" and text[offset] == "\n":
            continue  # between \r and \n is not a position
        line, character = position_at(text, offset, encoding)
        assert offset_at(text, line, character, encoding) == offset


def test_code_units() -> None:
    assert code_units(EMOJI, "utf-16") == 4
    assert code_units(EMOJI, "utf-8") == 6
    assert code_units(EMOJI, "utf-32") == 3


@pytest.mark.parametrize(
    ("text", "change", "encoding", "expected"),
    [
        ("hello", TextChange("J", ((0, 0), (0, 1))), "utf-16", "Jello"),
        ("a😀b", TextChange("", ((0, 1), (0, 3))), "utf-16", "ab"),
        ("a😀b", TextChange("", ((0, 1), (0, 5))), "utf-8", "ab"),
        ("one\ntwo\nthree", TextChange("X", ((0, 2), (2, 1))), "utf-16", "onXhree"),
        ("one\r\ntwo", TextChange("!", ((0, 3), (0, 3))), "utf-16", "one!\r\ntwo"),
        ("abc", TextChange("whole"), "utf-16", "whole"),
        ("abc", TextChange("Z", ((5, 0), (5, 0))), "utf-16", "abcZ"),  # past the end: appends
        ("abc", TextChange("Z", ((0, 2), (0, 1))), "utf-16", "aZc"),  # reversed range
    ],
)
def test_apply_change(text: str, change: TextChange, encoding, expected: str) -> None:
    assert apply_change(text, change, encoding) == expected


def test_document_store() -> None:
    store = DocumentStore()
    store.open("file:///a.py", 1, "x = 1\n", "python")
    snapshot = store.change("file:///a.py", 2, [TextChange("2", ((0, 4), (0, 5)))], "utf-16")
    assert snapshot.text == "x = 2\n" and snapshot.version == 2 and snapshot.language_id == "python"
    store.close("file:///a.py")
    with pytest.raises(DocumentNotOpen, match="not open"):
        store.get("file:///a.py")
    assert store.find("file:///a.py") is None
