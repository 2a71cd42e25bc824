"""The cold start's window chosen by structure (core/structure.py, core/window.py): what it
keeps on real shapes of code, half-typed code included, and that no input breaks it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lsp_infer.core.structure import enclosing_headers, select_prefix
from lsp_infer.core.window import fit_window
from lsp_infer.text import split_lines


def words(text: str) -> int:
    """A stand-in tokenizer: a token per word or symbol run, at least one per line."""
    return len(text.split()) + text.count("\n")


def window(text: str, budget: int = 60, **options: int) -> str:
    """The structured prefix at the cursor mark ``█``."""
    offset = text.index("█")
    text = text.replace("█", "")
    return fit_window(
        text, offset, budget, words, suffix_tokens=0, structured=True, **options
    ).prefix


FILLER = "".join(f"    step_{i} = compute(step_{i - 1})\n" for i in range(1, 40))

PYTHON = (
    "import os\nimport re as regex\nfrom math import sqrt\n\nLIMIT = 10\n\n\n"
    "class Shapes:\n"
    "    @staticmethod\n"
    "    def area(width: float,\n"
    "             height: float) -> float:\n"
    '        """The area of a width by height rectangle."""\n'
    f"{FILLER.replace('    ', '        ')}"
    "        █"
)


def test_the_enclosing_signature_docstring_and_decorator_are_kept_far_from_the_cursor() -> None:
    prefix = window(PYTHON)
    assert "class Shapes:\n" in prefix
    assert "    def area(width: float,\n             height: float) -> float:\n" in prefix
    assert '"""The area of a width by height rectangle."""' in prefix
    assert "@staticmethod" in prefix
    assert prefix.endswith("step_39 = compute(step_38)\n        ")  # the nearest lines too
    assert "step_1 =" not in prefix  # the middle is what gives way
    # In document order: the headers before the nearest lines.
    assert prefix.index("def area") < prefix.index("step_39")
    # By distance alone (the whole window's way), the header is lost at this budget.
    offset = PYTHON.index("█")
    nearest = fit_window(PYTHON.replace("█", ""), offset, 60, words, suffix_tokens=0).prefix
    assert "def area" not in nearest


def test_imports_and_module_names_the_nearby_code_uses_are_kept() -> None:
    text = PYTHON.replace("        █", "        limit = regex.compile(LIMIT) + sqrt(█")
    prefix = window(text, budget=120)
    assert "import re as regex\n" in prefix and "from math import sqrt\n" in prefix
    assert "LIMIT = 10\n" in prefix
    assert "import os" not in prefix  # not used near the cursor


def test_a_brace_language_keeps_its_function_line_and_doc_comment() -> None:
    body = "".join(f"  const v{i} = next(v{i - 1});\n" for i in range(1, 40))
    text = (
        "import { next } from './steps';\n\n"
        "/** Sums the steps of a walk. */\n"
        "export function walk(start, steps) {\n"
        f"{body}"
        "  if (v39 > steps) {\n"
        "    █\n  }\n}\n"
    )
    prefix = window(text)
    assert "/** Sums the steps of a walk. */\nexport function walk(start, steps) {\n" in prefix
    assert "  if (v39 > steps) {\n" in prefix
    assert "import { next } from './steps';\n" in prefix  # next() is used nearby


@pytest.mark.parametrize(
    "broken",
    [
        "def f(a, b:\n    x = [1, 2,\n" + FILLER + "    █",  # unclosed brackets
        "class A:\n  def g(self):\n\t\tif x:\n" + FILLER + "\t\t  █",  # tabs and spaces mixed
        '    """an unterminated docstring\n' + FILLER + "    █",
        "}}}\n)))\n" + FILLER + "    █",  # closers with nothing open
        "█",  # nothing at all
        "\n\n\n█",
        "x" * 100_000 + "█",  # one huge line: the cursor's
        "\x00\x01\xff" * 1000 + "\n█\x00",  # binary
    ],
)
def test_half_typed_and_odd_text_gives_a_window_never_an_error(broken: str) -> None:
    offset = broken.index("█")
    text = broken.replace("█", "")
    prefix = fit_window(
        text, offset, 60, words, anchor_lines=8, anchor_slack=15, structured=True
    ).prefix
    assert text[:offset].endswith(prefix.rsplit("\n", 1)[-1])  # ends at the cursor
    assert words(prefix) <= 60 + 15 or len(split_lines(prefix)) == 1


def test_a_huge_cursor_line_falls_back_to_the_nearest_lines_window() -> None:
    text = "def f(a):\n    x = " + "a + " * 100_000
    offset = len(text)
    structured = fit_window(text, offset, 64, words, structured=True)
    assert structured == fit_window(text, offset, 64, words)


def test_the_nearest_lines_stay_put_while_the_user_types_a_few_lines() -> None:
    """Anchored: the window's text above the cursor's own line changes only when the nearest
    lines' start moves to the next multiple of 8, so the KV cache of a cold start's window
    stays valid keystroke after keystroke."""
    starts = []
    text = PYTHON.replace("        █", "")
    for line in range(6):
        text += f"        typed_{line} = {line}\n"
        prefix = fit_window(
            text + "        ",
            len(text) + 8,
            60,
            words,
            anchor_lines=8,
            anchor_slack=15,
            structured=True,
        ).prefix
        starts.append(prefix[: prefix.index("typed_0")])
    assert len(set(starts)) <= 2  # at most one move in six lines


def test_enclosing_headers_innermost_first() -> None:
    lines = split_lines(PYTHON.replace("█", ""))
    headers = enclosing_headers(lines, 8)
    openers = [lines[parts[0][0]].strip() for parts in headers]
    assert openers == ["def area(width: float,", "class Shapes:"]
    assert len(headers[0][0]) == 2  # the signature's continuation line belongs to it


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet=st.sampled_from(list("abc :({[]})\"'#@\n\t    =")), max_size=400),
    st.integers(min_value=0, max_value=400),
    st.integers(min_value=1, max_value=120),
)
def test_any_text_gives_lines_of_the_text_in_order(text: str, at: int, budget: int) -> None:
    offset = min(at, len(text))
    lines = split_lines(text[:offset])
    if not lines or text[:offset].endswith("\n"):
        lines.append("")
    prefix = select_prefix(lines, budget, words, anchor_lines=8, slack=budget // 4)
    # Every line of the prefix is a line of the text, in the text's order, the cursor's last.
    position = 0
    for line in split_lines(prefix):
        found = lines.index(line, position) if line in lines[position:] else -1
        assert found >= 0, (line, lines)
        position = found + 1
    assert prefix.endswith(lines[-1])
