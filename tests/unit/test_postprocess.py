"""Postprocessing rules, as a table: (text around the cursor, raw model output) → suggestion."""

from __future__ import annotations

import pytest

from lsp_infer.core.backend import Generation
from lsp_infer.core.engine import finish
from lsp_infer.core.postprocess import complete_lines, postprocess, starts_at_typed_space
from lsp_infer.core.window import cursor_line
from lsp_infer.local.decoder import align_to_typed_space, still_owed
from lsp_infer.local.vocabulary import keeps_to_space

CURSOR = "█"


def check(document: str, raw: str, expected: str, max_lines: int = 8) -> None:
    """``document`` marks the cursor with █."""
    offset = document.index(CURSOR)
    text = document.replace(CURSOR, "")
    result = postprocess(raw, cursor_line(text, offset), max_lines)
    assert result.text == expected


CASES = [
    # (name, document, raw, expected)
    ("single line", "def add(a, b):\n    return █\n", "a + b", "a + b"),
    ("trailing whitespace trimmed", "x = █", "1   \n\n\n", "1"),
    ("whitespace only is nothing", "x = █", "  \n \n", ""),
    ("mid-line keeps one line", "print(█)\n", "a, b)\nprint(c)", "a, b"),
    ("mid-line keeps balanced call", "print(█)\n", "foo(x)", "foo(x)"),
    ("mid-line drops repeated closer", "print(█)\n", "foo(x))", "foo(x)"),
    ("mid-line drops repeated tail", "items = [█]\n", "1, 2, 3]", "1, 2, 3"),
    (
        "scope: stop at dedent",
        "def f(x):\n    y = x█\n",
        " + 1\n    return y\n\ndef g():\n    pass",
        " + 1\n    return y",
    ),
    (
        "scope: block opener keeps its body only",
        "def f(x):█\n",
        "\n    return x * 2\n\ndef g():\n    return 1",
        "\n    return x * 2",
    ),
    (
        "scope: closing bracket belongs to the block",
        "config = {█\n",
        '\n    "a": 1,\n}\nprint(config)',
        '\n    "a": 1,\n}',
    ),
    (
        "blank cursor line in a class: the next method, not what follows the class",
        "class A:\n    def f(self):\n        return 1\n\n    █\n",
        "def g(self):\n        return 2\n\nx = A()",
        "def g(self):\n        return 2",
    ),
    (
        "empty cursor line: scope from the first code line",
        "def f(x):\n█",
        "\n    y = x\n    return y\nprint(1)",
        "\n    y = x\n    return y",
    ),
    (
        "stop before repeating the next line",
        "def f(x):\n    a = 1\n    █\n    return a\n",
        "b = 2\n    return a\n",
        "b = 2",
    ),
    ("whole suggestion repeats what follows", "def f():\n█\n    return 1\n", "    return 1", ""),
    ("max lines", "x = [█\n", "\n    1,\n    2,\n    3,\n]", "\n    1,\n    2,", 3),
    ("CRLF output normalised", "x = █", "1\r\n", "1"),
    ("NUL removed", "x = █", "1\x00", "1"),
]


@pytest.mark.parametrize(
    ("document", "raw", "expected", "max_lines"),
    [(c[1], c[2], c[3], c[4] if len(c) > 4 else 8) for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_postprocess(document: str, raw: str, expected: str, max_lines: int) -> None:
    check(document, raw, expected, max_lines)


def test_truncated_flag_lets_generation_stop_early() -> None:
    text = "def f(x):\n    y = x"
    line = cursor_line(text, len(text))
    assert not postprocess(" + 1\n    return y", line, 8).truncated
    assert postprocess(" + 1\n    return y\ndef", line, 8).truncated
    mid = cursor_line("print()", 6)
    assert postprocess("x)\n", mid, 1).truncated


def test_complete_lines() -> None:
    assert complete_lines("a\nb\nc") == "a\nb\n"
    assert complete_lines("abc") == ""


@pytest.mark.parametrize(
    ("raw", "reason", "expected"),
    [
        ("a + b", "end", "a + b"),
        ("first\n    sec", "deadline", "first"),  # cut short: whole lines only
        ("half", "deadline", ""),
        ("a_long_first_li", "line_cut", "a_long_first_li"),  # the first line took too long
        ("x\n    y = 1\n    z", "max_tokens", "x\n    y = 1"),
        ("long_single_line", "max_tokens", "long_single_line"),
    ],
)
def test_finish_keeps_whole_lines_when_cut_short(raw: str, reason, expected: str) -> None:
    text = "def f():\n    return "
    line = cursor_line(text, len(text))
    assert finish(raw, Generation(text=raw, stop_reason=reason), line, 8) == expected


@pytest.mark.parametrize(
    ("raw", "typed", "expected"),
    [
        (" a + b", " ", "a + b"),  # "return " + model's " a": the space is not doubled
        ('    """doc', "    ", '"""doc'),  # the model indents like the user did
        ('"""doc', "    ", '"""doc'),  # the model did not indent: keep the user's indentation
        ("        more", "    ", "    more"),  # the model wants deeper: the extra stays
        ("  ", "    ", ""),  # partial: nothing to show yet
        ("\tx", "    ", "x"),  # tab vs spaces: keep what the user typed
        ("x", "", "x"),
        ("\n    y", " ", "\n    y"),  # the line ends here: nothing to drop
    ],
)
def test_align_to_typed_space(raw: str, typed: str, expected: str) -> None:
    assert align_to_typed_space(raw, typed) == expected


@pytest.mark.parametrize(
    ("raw", "kept"),
    [("first\n    sec", "first\n"), ("half", ""), ("\n\n", "\n\n"), ("a\nb\n", "a\nb\n")],
)
def test_complete_lines_keeps_whole_lines(raw: str, kept: str) -> None:
    # The decoding deadline waits until this has code in it (the first line is finished).
    assert complete_lines(raw) == kept


@pytest.mark.parametrize(
    ("before", "exact"),
    [
        ("def f():\n    x = 1\n    return ", True),  # after code: one space, not two
        ("if a:\n        b = 1\n    ", True),  # a dedent: not the block above
        ("for x in y:\n    if x:\n        f(x)\n    ", True),
        ("def f():\n    ", True),  # the editor indented the body: no deeper
        ("    def f():\n    ", False),  # not indented after a block opener: the model's call
        ("    if x:\n\n    ", False),  # blank lines in between: the same
        ("    call(\n    ", False),
        ("    if x:\n        ", True),  # deeper than the opener: the editor indented
        ("    ", True),  # the first line of the file
    ],
)
def test_starts_at_typed_space(before: str, exact: bool) -> None:
    assert starts_at_typed_space(before) is exact


@pytest.mark.parametrize(
    ("piece", "owed", "keeps"),
    [
        (b"   ", b"    ", True),  # a start of the indentation
        (b"    ", b"    ", True),  # all of it (code must come next)
        (b"     ", b"    ", False),  # deeper
        (b" if", b" ", True),  # the last space with the word, as the tokenizer splits it
        (b" if", b"  ", False),  # code before the indentation is done
        (b"if", b"", True),
        (b" if", b"", False),  # one space too many
        (b"\n", b"", False),  # a line end instead of code
        (b"\n", b"    ", False),
        (b"\t", b"    ", False),  # a tab where the user typed spaces
        (b"", b"    ", False),  # a control token's empty text
    ],
)
def test_keeps_to_space(piece: bytes, owed: bytes, keeps: bool) -> None:
    assert keeps_to_space(piece, owed) is keeps


@pytest.mark.parametrize(
    ("owed", "piece", "left"),
    [(b"    ", b"   ", b" "), (b" ", b" ", b""), (b" ", b" if", None), (b"", b"x", None)],
)
def test_still_owed(owed: bytes, piece: bytes, left: bytes | None) -> None:
    assert still_owed(owed, piece) == left
