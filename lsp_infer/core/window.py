"""The window: the text around the cursor that goes into a prompt, under a token budget (pure)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from lsp_infer.core import structure
from lsp_infer.text import MAX_CHARS_PER_TOKEN, split_lines


@dataclass(frozen=True)
class Window:
    """The text before and after the cursor that the model will see."""

    prefix: str
    suffix: str


@dataclass(frozen=True)
class CursorLine:
    """The cursor's surroundings, as postprocessing needs them."""

    before: str  # text on the cursor line before the cursor
    after: str  # text on the cursor line after the cursor
    following: str  # the text after the cursor line (a bounded slice)


def cursor_line(text: str, offset: int, following_chars: int = 2000) -> CursorLine:
    line_start = text.rfind("\n", 0, offset) + 1
    line_end = text.find("\n", offset)
    if line_end < 0:
        line_end = len(text)
    before = text[line_start:offset].replace("\r", "")
    after = text[offset:line_end].rstrip("\r")
    following = text[line_end + 1 : line_end + 1 + following_chars] if line_end < len(text) else ""
    return CursorLine(before=before, after=after, following=following.replace("\r", ""))


def fit_window(
    text: str,
    offset: int,
    budget_tokens: int,
    count_tokens: Callable[[str], int],
    *,
    suffix_tokens: int | None = None,
    anchor_lines: int = 1,
    anchor_slack: int = 0,
    structured: bool = False,
) -> Window:
    """The largest window of whole lines around ``offset`` that fits the budget; with
    ``structured``, one whose prefix is chosen by structure instead (``_fit_structured``).

    The suffix gets up to ``suffix_tokens`` (default: a quarter of the budget); what it does
    not use goes to the prefix. Lines are taken outward from the cursor, so the nearest code is
    always kept. The cursor line's own text is always included, cut from its far
    side if it alone is over budget.

    ``anchor_lines`` > 1 makes the prefix start only on a document line whose number is a
    multiple of it. Without it the start slides by a line whenever the prefix outgrows the
    budget — every line or so while typing — and the whole prefix must be evaluated again;
    anchored, it moves once per ``anchor_lines`` lines. The start is the multiple at or
    before the first line that fits, when the up to ``anchor_lines - 1`` lines this adds fit
    in ``anchor_slack`` more tokens (so the prompt never has less context than unanchored);
    otherwise the next multiple, for fewer lines (see bench/HISTORY.md, "Quality").
    """
    budget_tokens = max(1, budget_tokens)
    suffix, suffix_used = _fit_suffix(text, offset, budget_tokens, suffix_tokens, count_tokens)
    line_start = text.rfind("\n", 0, offset) + 1
    if structured and offset - line_start <= budget_tokens * MAX_CHARS_PER_TOKEN:
        prefix = _fit_structured(text, offset, budget_tokens - suffix_used, count_tokens,
                                 anchor_lines, anchor_slack, suffix)  # fmt: skip
        return Window(prefix=prefix, suffix=suffix)
    # Pre-cut so that a 1 MB document never gets tokenized whole; a line cut in
    # half by the pre-cut is dropped (unless it is the cursor line).
    prefix_lines = _lines_before(text, offset, budget_tokens * MAX_CHARS_PER_TOKEN)
    prefix, _ = _take_lines(prefix_lines, budget_tokens - suffix_used, count_tokens, forward=False)
    if anchor_lines > 1 and prefix:
        prefix = _anchor(text, offset, prefix, prefix_lines, anchor_lines, anchor_slack,
                         count_tokens)  # fmt: skip
    return Window(prefix=prefix, suffix=suffix)


def _fit_structured(
    text: str,
    offset: int,
    budget: int,
    count_tokens: Callable[[str], int],
    anchor_lines: int,
    anchor_slack: int,
    suffix: str,
) -> str:
    """A prefix of ``budget`` tokens chosen by structure (core/structure.py): the enclosing
    definitions' headers and the names the nearby code uses, besides the nearest lines. Only
    for a cursor line within the budget (a longer one has nothing to add to it)."""
    lookback = max(0, offset - structure.LOOKBACK_CHARS)
    lines = _lines_before(text, offset, offset - lookback)
    line_start = text.rfind("\n", 0, offset) + 1
    if not text[line_start:offset]:
        lines.append("")  # the cursor's line is empty: it is still the last line
    first_line = text.count("\n", 0, line_start) - (len(lines) - 1)
    head = None
    if first_line > 0:  # the file's start (its imports) is out of the look-back
        head = split_lines(text[: min(structure.HEAD_CHARS, lookback)])[:-1]
    return structure.select_prefix(
        lines, budget, count_tokens, first_line=first_line, anchor_lines=anchor_lines,
        slack=anchor_slack, suffix=suffix, head=head, max_chars=budget * MAX_CHARS_PER_TOKEN,
    )  # fmt: skip


def _lines_before(text: str, offset: int, max_chars: int) -> list[str]:
    """The lines before ``offset`` within ``max_chars`` (the last one: the cursor's line up to
    the cursor, when there is any of it); a line cut in half by the limit is dropped."""
    start = max(0, offset - max_chars)
    lines = split_lines(text[start:offset])
    if start > 0 and text[start - 1] != "\n" and len(lines) > 1:
        lines = lines[1:]
    return lines


def _fit_suffix(
    text: str,
    offset: int,
    budget_tokens: int,
    suffix_tokens: int | None,
    count_tokens: Callable[[str], int],
) -> tuple[str, int]:
    """The suffix: whole lines after the cursor within up to ``suffix_tokens`` (default: a
    quarter of the budget; never more than half); returns (text, tokens used)."""
    suffix_end = min(len(text), offset + budget_tokens * MAX_CHARS_PER_TOKEN)
    suffix_lines = split_lines(text[offset:suffix_end])
    if suffix_end < len(text) and len(suffix_lines) > 1 and not suffix_lines[-1].endswith("\n"):
        suffix_lines = suffix_lines[:-1]
    suffix_budget = min(
        budget_tokens // 2, budget_tokens // 4 if suffix_tokens is None else suffix_tokens
    )
    return _take_lines(suffix_lines, suffix_budget, count_tokens, forward=True)


def _anchor(
    text: str,
    offset: int,
    prefix: str,
    prefix_lines: list[str],
    anchor_lines: int,
    slack: int,
    count_tokens: Callable[[str], int],
) -> str:
    """``prefix`` moved to start on a line number that is a multiple of ``anchor_lines``."""
    start = offset - len(prefix)
    if start > 0 and text[start - 1] != "\n":
        return prefix  # only the end of an over-long cursor line fits: nothing to anchor
    first_line = text.count("\n", 0, start)
    back = first_line % anchor_lines  # lines down to the multiple at or before first_line
    if not back:
        return prefix
    kept = split_lines(prefix)
    earlier = prefix_lines[: len(prefix_lines) - len(kept)]
    if len(earlier) >= back and count_tokens("".join(earlier[-back:])) <= slack:
        return "".join(earlier[-back:]) + prefix
    # Too long to add: start at the next multiple instead (never dropping the cursor line).
    return "".join(kept[min(anchor_lines - back, len(kept) - 1) :])


def _take_lines(
    lines: list[str], budget: int, count_tokens: Callable[[str], int], *, forward: bool
) -> tuple[str, int]:
    """Whole lines from the cursor outward while they fit; returns (text, tokens used)."""
    if not lines or budget <= 0:
        return "", 0
    ordered = lines if forward else lines[::-1]
    taken: list[str] = []
    used = 0
    for index, line in enumerate(ordered):
        cost = count_tokens(line)
        if used + cost > budget:
            if index == 0:
                # The cursor line alone is over budget: keep the part nearest the cursor.
                keep = max(1, budget * MAX_CHARS_PER_TOKEN // 4)
                part = line[:keep] if forward else line[-keep:]
                return part, min(budget, count_tokens(part))
            break
        taken.append(line)
        used += cost
    if not forward:
        taken.reverse()
    return "".join(taken), used


# A cold start's window is never cut below this many tokens.
MIN_COLD_BUDGET = 64


def smaller_suffix_tokens(suffix_tokens: int, budget: int, full_budget: int) -> int:
    """The most of a smaller window (a cold start's) that goes to the suffix: the whole
    window's share of it, not its count. With the count (128 of 512), the 162-token window a
    cold start gets here went half to the suffix, and its suggestions matched 2.7 points less
    often locally than with the share (40 tokens) and scored 6.7 points lower in edit
    similarity (bench/HISTORY.md, "Cold start")."""
    if full_budget <= 0 or budget >= full_budget:
        return suffix_tokens
    return suffix_tokens * budget // full_budget


def smaller_budgets(budget: int, minimum: int = MIN_COLD_BUDGET) -> list[int]:
    """The windows a cold start may try after ``budget``, largest first: each 3/4 of the one
    before, down to ``minimum``. A fixed ladder, not a size computed from the measured speed,
    so the same cache gives the same window keystroke after keystroke (and it stays cached);
    steps of 3/4 rather than halves, so the window lands closer to what the time allows
    (quality falls fast below 256 tokens: bench/HISTORY.md, "Cold start")."""
    ladder: list[int] = []
    while budget > minimum:
        budget = max(minimum, budget * 3 // 4)
        ladder.append(budget)
    return ladder
