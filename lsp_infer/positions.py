"""LSP positions ⇄ string offsets, for utf-8, utf-16 and utf-32 code units (pure).

Written here rather than taken from pygls because pygls' codec splits lines with
``str.splitlines`` (which also breaks on form feeds, U+2028, … that LSP does not
count as line ends) and clamps a past-the-end character to one before the end of
the last line. LSP line ends are exactly ``\\n``, ``\\r\\n`` and ``\\r``.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from typing import Literal

Encoding = Literal["utf-8", "utf-16", "utf-32"]
ENCODINGS: tuple[Encoding, ...] = ("utf-8", "utf-16", "utf-32")

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


class PositionError(ValueError):
    """A position that does not exist in the document (line past the end)."""


def line_starts(text: str) -> list[int]:
    """Offsets where each line begins. A text always has at least one line."""
    return [0, *(m.end() for m in _LINE_BREAK.finditer(text))]


def _unit_len(char: str, encoding: Encoding) -> int:
    code = ord(char)
    if encoding == "utf-16":
        return 2 if code > 0xFFFF else 1
    if encoding == "utf-8":
        return 1 if code < 0x80 else 2 if code < 0x800 else 3 if code < 0x10000 else 4
    return 1


def code_units(text: str, encoding: Encoding) -> int:
    """Length of ``text`` in the encoding's code units."""
    if encoding == "utf-32" or text.isascii():
        return len(text)
    if encoding == "utf-16":
        return len(text) + sum(1 for c in text if ord(c) > 0xFFFF)
    return len(text.encode("utf-8", "surrogatepass"))


def column_to_index(line: str, column: int, encoding: Encoding) -> int:
    """Index into ``line`` (without its line end) for a column in code units.

    A column past the end clamps to the line's length (as the LSP spec asks); a
    column inside a multi-unit character (half a surrogate pair) rounds down to
    the start of that character.
    """
    if column <= 0:
        return 0
    if encoding == "utf-32" or line.isascii():
        return min(column, len(line))
    units = 0
    for index, char in enumerate(line):
        units += _unit_len(char, encoding)
        if units > column:
            return index
        if units == column:
            return index + 1
    return len(line)


def line_end(text: str, starts: list[int], line: int) -> int:
    """Offset of the end of ``line``'s content, before its line break."""
    if line + 1 < len(starts):
        end = starts[line + 1]
        if text[end - 1] == "\n":
            end -= 1
            if end > starts[line] and text[end - 1] == "\r":
                end -= 1
        else:  # a lone "\r"
            end -= 1
        return end
    return len(text)


def offset_at(
    text: str,
    line: int,
    character: int,
    encoding: Encoding,
    *,
    starts: list[int] | None = None,
    clamp_line: bool = False,
) -> int:
    """String offset of an LSP position.

    A line past the end raises :class:`PositionError`, unless ``clamp_line``
    (used for edits, where some clients address "one past the last line") maps it
    to the end of the text.
    """
    starts = starts if starts is not None else line_starts(text)
    if line < 0 or character < 0:
        raise PositionError(f"negative position ({line}:{character})")
    if line >= len(starts):
        if clamp_line:
            return len(text)
        raise PositionError(f"line {line} is past the end of the document ({len(starts)} lines)")
    start = starts[line]
    content = text[start : line_end(text, starts, line)]
    return start + column_to_index(content, character, encoding)


def position_at(
    text: str, offset: int, encoding: Encoding, *, starts: list[int] | None = None
) -> tuple[int, int]:
    """LSP (line, character) of a string offset (clamped to the text)."""
    starts = starts if starts is not None else line_starts(text)
    offset = max(0, min(offset, len(text)))
    line = bisect_right(starts, offset) - 1
    return line, code_units(text[starts[line] : offset], encoding)
