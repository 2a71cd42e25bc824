"""FIM templates and choosing one from a vocabulary."""

from __future__ import annotations

import pytest

from lsp_infer.core.prompts import TEMPLATES, Special, detect_template, prompt_text
from lsp_infer.core.window import fit_window, smaller_budgets, smaller_suffix_tokens


def vocabulary(*tokens: str):
    return lambda text: text in tokens


QWEN = ("<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>", "<|file_sep|>", "<|endoftext|>")
GEMMA = ("<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>", "<|file_separator|>")


@pytest.mark.parametrize(
    ("name", "tokens", "expected"),
    [
        ("Qwen2.5 Coder 0.5B Instruct AWQ", QWEN, "qwen"),
        ("codegemma-2b", GEMMA, "codegemma"),
        ("some model", GEMMA, "codegemma"),  # told apart by the file separator
        ("starcoder2-3b", ("<fim_prefix>", "<fim_suffix>", "<fim_middle>"), "starcoder"),
        ("CodeLlama-7b", ("▁<PRE>", "▁<SUF>", "▁<MID>", "▁<EOT>"), "codellama"),
        (
            "deepseek-coder-1.3b-base",
            ("<｜fim▁begin｜>", "<｜fim▁hole｜>", "<｜fim▁end｜>"),
            "deepseek",
        ),
        ("Codestral-22B", ("[PREFIX]", "[SUFFIX]"), "codestral"),
        ("llama-3-chat", ("<|begin_of_text|>",), None),
    ],
)
def test_detect_template(name: str, tokens: tuple[str, ...], expected: str | None) -> None:
    template = detect_template(name, vocabulary(*tokens))
    assert (template.name if template else None) == expected


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("qwen", "<|fim_prefix|><|fim_suffix|>S<|fim_middle|>P"),  # measured best: SPM variant
        ("starcoder", "<fim_prefix>P<fim_suffix>S<fim_middle>"),
        ("codellama", "▁<PRE>P▁<SUF>S▁<MID>"),
        ("deepseek", "<｜fim▁begin｜>P<｜fim▁hole｜>S<｜fim▁end｜>"),
        ("codestral", "[SUFFIX]S[PREFIX]P"),
    ],
)
def test_build(template: str, expected: str) -> None:
    assert prompt_text(TEMPLATES[template].build("P", "S")) == expected


@pytest.mark.parametrize(
    ("order", "expected"),
    [
        ("psm", "<|fim_prefix|>P<|fim_suffix|>S<|fim_middle|>"),
        ("spm", "<|fim_suffix|>S<|fim_prefix|>P<|fim_middle|>"),
        ("spmv", "<|fim_prefix|><|fim_suffix|>S<|fim_middle|>P"),
    ],
)
def test_orders(order, expected: str) -> None:
    assert prompt_text(TEMPLATES["qwen"].build("P", "S", order)) == expected


def test_no_suffix_budget_means_no_suffix() -> None:
    window = fit_window("a\nb\nc", 2, 100, count_words, suffix_tokens=0)
    assert (window.prefix, window.suffix) == ("a\n", "")


def test_code_text_is_never_a_special_segment() -> None:
    prompt = TEMPLATES["qwen"].build("x = '<|fim_middle|>'", "")
    specials = [p for p in prompt if isinstance(p, Special)]
    assert [s.text for s in specials] == ["<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>"]


def count_words(text: str) -> int:
    return len(text.split()) + text.count("\n")


def test_fit_window_keeps_everything_that_fits() -> None:
    text = "a\nb\nc\nd"
    window = fit_window(text, 3, 100, count_words)
    assert (window.prefix, window.suffix) == ("a\nb", "\nc\nd")


def test_fit_window_drops_far_lines_first() -> None:
    lines = [f"line {i}\n" for i in range(100)]
    text = "".join(lines)
    offset = text.index("line 50")
    window = fit_window(text, offset, 40, count_words, suffix_tokens=10)
    assert window.prefix.endswith("line 49\n") and "line 0\n" not in window.prefix
    assert window.suffix.startswith("line 50\n") and "line 99" not in window.suffix
    assert count_words(window.prefix) + count_words(window.suffix) <= 40


def test_fit_window_cuts_a_huge_cursor_line_on_its_far_side() -> None:
    text = "x" * 100_000
    window = fit_window(text, 50_000, 10, lambda t: len(t) // 4 + 1)
    assert window.prefix and text[:50_000].endswith(window.prefix)
    assert len(window.prefix) < 1000


def test_fit_window_on_a_megabyte_never_tokenizes_it_whole() -> None:
    seen: list[int] = []

    def counting(text: str) -> int:
        seen.append(len(text))
        return len(text) // 4 + 1

    text = "abc = 1\n" * 200_000
    fit_window(text, len(text) // 2, 256, counting)
    assert sum(seen) < 50_000


def _anchored_prefix(typed_lines: int, anchor: int, slack: int) -> tuple[str, int]:
    """The prefix while the cursor is at the start of line ``typed_lines`` (each line 3
    tokens, budget 30: ten lines fit), and the document line it starts on."""
    text = "".join(f"line {i}\n" for i in range(200))
    offset = text.index(f"line {typed_lines}\n")
    window = fit_window(
        text, offset, 30, count_words, suffix_tokens=0, anchor_lines=anchor, anchor_slack=slack
    )
    first = int(window.prefix.split("\n", 1)[0].split()[1])
    return window.prefix, first


@pytest.mark.parametrize(
    ("cursor_line", "anchor", "slack", "first_line"),
    [
        (50, 1, 0, 40),  # unanchored: exactly the ten lines that fit
        (51, 1, 0, 41),  # ... and the start slides with every line typed
        (50, 8, 21, 40),  # 40 is a multiple of 8: the same window
        (51, 8, 21, 40),  # the start stays on line 40, one line over budget ...
        (55, 8, 21, 40),  # ... five lines (15 tokens) over, within the slack ...
        (58, 8, 21, 48),  # ... until line 48 is the first that fits: 8 lines at once
        (59, 8, 21, 48),
        (55, 8, 12, 48),  # five lines are over a 12-token slack: the next multiple instead
        (53, 8, 12, 40),  # three lines (9 tokens) are not
        (51, 8, 0, 48),  # no slack: always the next multiple, never over budget
        (58, 8, 0, 48),
        (59, 8, 0, 56),
        (3, 8, 21, 0),  # everything fits: nothing is dropped
    ],
)
def test_an_anchored_prefix_starts_on_a_multiple_and_moves_in_steps(
    cursor_line: int, anchor: int, slack: int, first_line: int
) -> None:
    prefix, first = _anchored_prefix(cursor_line, anchor, slack)
    assert first == first_line
    assert prefix.endswith(f"line {cursor_line - 1}\n")  # the nearest code is always kept


def test_an_anchored_prefix_keeps_at_least_the_unanchored_lines_within_the_slack() -> None:
    for cursor_line in range(40, 120):
        unanchored, first = _anchored_prefix(cursor_line, 1, 0)
        anchored, anchored_first = _anchored_prefix(cursor_line, 8, 21)
        assert anchored.endswith(unanchored) and anchored_first == first - first % 8
        assert count_words(anchored) - count_words(unanchored) <= 21


def test_anchoring_never_drops_the_cursor_line() -> None:
    text = "".join(f"line {i}\n" for i in range(20)) + "x" * 400
    offset = len(text)  # a long cursor line: it and two short lines fit, from line 18
    window = fit_window(text, offset, 140, lambda t: len(t) // 3 + 1, anchor_lines=8)
    assert window.prefix == "x" * 400  # line 18 is not on a multiple of 8: up to the cursor line
    # With room to go over, the start moves back to line 16 instead.
    window = fit_window(
        text, offset, 140, lambda t: len(t) // 3 + 1, anchor_lines=8, anchor_slack=35
    )
    assert window.prefix == "line 16\nline 17\nline 18\nline 19\n" + "x" * 400
    # Only the end of an over-long cursor line fits: it is kept as it is.
    window = fit_window("a\n" * 9 + "y" * 900, 918, 100, lambda t: len(t) // 3 + 1,
                        anchor_lines=8, anchor_slack=25)  # fmt: skip
    assert set(window.prefix) == {"y"}


@pytest.mark.parametrize(
    ("budget", "minimum", "ladder"),
    [
        (512, 64, [384, 288, 216, 162, 121, 90, 67, 64]),
        (256, 64, [192, 144, 108, 81, 64]),
        (64, 64, []),  # already the smallest: nothing smaller to try
        (40, 64, []),  # a budget set below the minimum is never raised
        (70, 64, [64]),
    ],
)
def test_a_cold_start_tries_windows_of_three_quarters_down_to_the_minimum(
    budget: int, minimum: int, ladder: list[int]
) -> None:
    assert smaller_budgets(budget, minimum) == ladder


@pytest.mark.parametrize(
    ("suffix_tokens", "budget", "full_budget", "expected"),
    [
        (128, 162, 512, 40),  # a cold start's window: a quarter, as the whole window has
        (128, 384, 512, 96),
        (128, 512, 512, 128),  # the whole window: the setting itself
        (0, 162, 512, 0),  # no suffix stays no suffix
        (128, 162, 0, 128),  # no whole window to take a share of
    ],
)
def test_a_smaller_window_keeps_the_suffixs_share(
    suffix_tokens: int, budget: int, full_budget: int, expected: int
) -> None:
    assert smaller_suffix_tokens(suffix_tokens, budget, full_budget) == expected
