"""Next edits from Sweep's open next-edit models (``nextEdit.teamFormat`` "sweep";
sweep-next-edit 0.5B / 1.5B / v2-7B, Qwen2.5-Coder fine-tunes): the recent edits as
``original:``/``updated:`` blocks and a window of 21 lines around the cursor, before the latest
edit and now, which the model writes out again as it predicts it. Pure: the prompt, and what
to make of the answer (region.py decides what is shown).

**Untested here against Sweep's weights** (they cannot be fetched on this project's machines).
The format is the one Zed's Sweep prompt mode sends to such a model served by Ollama or an
OpenAI-compatible server (``crates/edit_prediction/src/sweep_prompt.rs``: 10 lines above and
10 below the cursor's, the latest 3 edits of at most 40 lines a side, ``<|file_sep|>`` and
``</s>`` ending the answer and never allowed in the prompt's text), which is the layout of
Sweep's model cards (``<|file_sep|>original/``, ``current/``, ``updated/``). Zed's related
files are not sent.

The model's answer ends at ``<|file_sep|>``, a special token of Qwen2.5-Coder's vocabulary: the
request asks the server to keep special tokens in the text (vLLM's ``skip_special_tokens``);
a server that stops there on its own and leaves the token out (llama.cpp's) ends it too.
"""

from __future__ import annotations

from collections.abc import Sequence

from lsp_infer.next_edit.edits import Prediction
from lsp_infer.next_edit.history import Edit
from lsp_infer.next_edit.region import RegionQuestion, line_starts_of, region_prediction
from lsp_infer.next_edit.syntax import Syntax
from lsp_infer.next_edit.zeta import edit_hunk

FILE_SEP = "<|file_sep|>"
END_OF_TEXT = "</s>"
RESERVED = (FILE_SEP, END_OF_TEXT)
LINES_ABOVE = 10
LINES_BELOW = 10
MAX_CHANGE_BLOCKS = 3
MAX_CHANGE_LINES = 40
BYTES_PER_TOKEN = 3  # for the room given to the answer


def sweep_question(
    path: str, text: str, cursor: int, edits: Sequence[Edit]
) -> RegionQuestion | None:
    """The Sweep prompt for ``text`` (the document now, ``edits`` its recent edits, the latest
    last) with the cursor at ``cursor``; None when the text holds one of the model's markers
    (it would read as one)."""
    if any(marker in part for part in (path, text, *(e.old for e in edits)) for marker in RESERVED):
        return None
    lines = text.split("\n")
    row = text.count("\n", 0, cursor)
    first, last = max(0, row - LINES_ABOVE), min(len(lines) - 1, row + LINES_BELOW)
    starts = line_starts_of(lines)
    window_start, window_end = starts[first], starts[last] + len(lines[last])
    current = text[window_start:window_end]
    original = current
    if edits:
        latest = edits[-1]
        before = latest.undone(text)
        original = before[_before(window_start, latest) : _before(window_end, latest)]
    blocks = []
    for edit in edits[-MAX_CHANGE_BLOCKS:]:
        block = _change_block(path, text, edit)
        if block:
            blocks.append(block)
    prompt = "".join([
        *blocks,
        _file_block(f"original/{path}", original),
        _file_block(f"current/{path}", current),
        f"{FILE_SEP}updated/{path}\n",
    ])  # fmt: skip
    max_tokens = min(2048, 2 * len(current.encode()) // BYTES_PER_TOKEN + 64)
    return RegionQuestion(prompt, window_start, window_end, max_tokens, RESERVED)


def _before(offset: int, edit: Edit) -> int:
    """An offset of the text now, in the text before ``edit`` (Zed's
    ``map_current_offset_to_old_snapshot``)."""
    if offset < edit.start:
        return offset
    if offset < edit.end:
        return edit.start + min(offset - edit.start, len(edit.old))
    return offset + len(edit.old) - len(edit.new)


def _file_block(path: str, content: str) -> str:
    return f"{FILE_SEP}{path}\n{content}" + ("" if content.endswith("\n") else "\n")


def _change_block(path: str, text: str, edit: Edit) -> str:
    """One edit as Sweep's ``{path}.diff`` block: the lines of its unified-diff hunk (3 lines
    of context) before and after, each side at most ``MAX_CHANGE_LINES``."""
    hunk = edit_hunk(edit.undone(text), text, edit)
    original: list[str] = []
    updated: list[str] = []
    for line in hunk.split("\n")[1:]:  # the @@ header line left out
        if line.startswith("-"):
            original.append(line[1:])
        elif line.startswith("+"):
            updated.append(line[1:])
        elif line.startswith(" "):
            original.append(line[1:])
            updated.append(line[1:])
    if not original and not updated:
        return ""
    body = f"original:\n{_limited(original)}\nupdated:\n{_limited(updated)}"
    return _file_block(f"{path}.diff", body)


def _limited(lines: list[str]) -> str:
    """At most ``MAX_CHANGE_LINES``: the first half, ``...``, the last ones."""
    if len(lines) <= MAX_CHANGE_LINES:
        return "\n".join(lines)
    head = MAX_CHANGE_LINES // 2
    tail = MAX_CHANGE_LINES - head - 1
    return "\n".join([*lines[:head], "...", *lines[len(lines) - tail :]])


def updated_window(answer: str, current: str, ended: bool = False) -> str | None:
    """The window as the model wrote it out again: its answer up to the first marker (or all
    of it where the server ended it, ``ended``: a server may stop at ``<|file_sep|>`` as an
    end-of-generation token and leave it out of the text), without the newline that ends the
    block where the ``current`` window had none (as the prompt added it); None when neither
    came (cut short)."""
    ends = [answer.find(marker) for marker in RESERVED if marker in answer]
    if not ends and not ended:
        return None
    window = answer[: min(ends)] if ends else answer
    return window[:-1] if window.endswith("\n") and not current.endswith("\n") else window


def sweep_prediction(
    text: str,
    question: RegionQuestion,
    answer: str,
    probabilities: Sequence[tuple[int, float]],
    min_probability: float,
    latest: Edit,
    syntax: Syntax | None,
    ended: bool = False,
) -> Prediction | None:
    """The model's ``answer`` as a prediction, or None (region.py says when). ``ended``: the
    server ended the answer itself (not cut at the token limit)."""
    window = updated_window(answer, text[question.region_start : question.region_end], ended)
    if window is None:
        return None
    return region_prediction(text, question, window, probabilities, min_probability, latest,
                             syntax)  # fmt: skip
