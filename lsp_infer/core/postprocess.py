"""Turning raw model output into a suggestion worth showing (pure).

Rules, in order:
1. Mid-line (there is code after the cursor on its line): one line only, and a
   tail that repeats the rest of the line is dropped when that balances brackets.
2. Indentation scope: stop at the first line that leaves the cursor's block.
3. Stop before a line that repeats the next line already in the document.
4. At most ``max_lines`` lines; trailing whitespace trimmed.
A suggestion that ends up empty, or only repeats what follows, is no suggestion.
"""

from __future__ import annotations

from dataclasses import dataclass

from lsp_infer.core.structure import indent_width
from lsp_infer.core.window import CursorLine

_OPENERS = {"(": ")", "[": "]", "{": "}"}
_CLOSERS = {v: k for k, v in _OPENERS.items()}
# A cursor line ending with one of these opens a block whose body is indented.
_BLOCK_OPENERS = (":", "{", "(", "[", "=>", "->", " do", " then")


@dataclass(frozen=True)
class Processed:
    text: str
    # True when a rule cut off a complete line (generation can stop early then).
    truncated: bool


def _imbalance(text: str) -> int:
    """How many brackets are unmatched (ignores brackets inside quotes, roughly)."""
    stack: list[str] = []
    unmatched = 0
    quote: str | None = None
    for char in text:
        if quote:
            if char == quote:
                quote = None
            continue
        if char in "\"'`":
            quote = char
        elif char in _OPENERS:
            stack.append(char)
        elif char in _CLOSERS:
            if stack and stack[-1] == _CLOSERS[char]:
                stack.pop()
            else:
                unmatched += 1
    return unmatched + len(stack)


def _trim_line_suffix_overlap(suggestion: str, line: CursorLine) -> str:
    rest = line.after.strip()
    if not rest:
        return suggestion
    # The model often writes the rest of the line itself ("a, b)" before ")").
    for cut in range(len(rest), 0, -1):
        tail = rest[:cut]
        if suggestion.rstrip().endswith(tail):
            candidate = suggestion.rstrip()[: -len(tail)]
            before = _imbalance(line.before + suggestion + line.after)
            after = _imbalance(line.before + candidate + line.after)
            if after < before:
                return candidate
    return suggestion


def _opens_block(line_text: str) -> bool:
    code = line_text.rstrip()
    return code.endswith(_BLOCK_OPENERS)


def starts_at_typed_space(before: str) -> bool:
    """Whether a suggestion must start exactly where the whitespace typed at the cursor ends
    (``before``: the text before the cursor): its first line at the indentation the user's
    line has, not a deeper one, after "return " one space, not two. Models continue the block
    above a line the user dedented ("else:" body, then the line after the if/else), and write
    the line there: mis-indented in the editor. The exception: an indentation no deeper than
    the line above with code where that line opens a block, which an editor that does not
    indent left to the model."""
    line_start = before.rfind("\n") + 1
    if before[line_start:].strip():  # typed after code on the line ("return ")
        return True
    end = line_start - 1
    while end > 0:
        start = before.rfind("\n", 0, end) + 1
        above = before[start:end]
        if above.strip():
            deeper = indent_width(before[line_start:]) > indent_width(above)
            return deeper or not _opens_block(above)
        end = start - 1
    return True


def _next_code_line(following: str) -> str | None:
    for candidate in following.split("\n"):
        if candidate.strip():
            return candidate
    return None


def postprocess(raw: str, line: CursorLine, max_lines: int) -> Processed:
    text = raw.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    if not text.strip():
        return Processed("", truncated=False)

    if line.after.strip():
        first, newline, _ = text.partition("\n")
        first = _trim_line_suffix_overlap(first.rstrip(), line)
        return Processed(first if first.strip() else "", truncated=bool(newline))

    lines = text.split("\n")
    kept, truncated = _scope_lines(lines, line)

    following = _next_code_line(line.following)
    if following is not None:
        for index, candidate in enumerate(kept):
            whole = (line.before + candidate) if index == 0 else candidate
            if whole.strip() == following.strip():
                kept, truncated = kept[:index], True
                break

    if len(kept) > max_lines:
        kept, truncated = kept[:max_lines], True

    kept = [k.rstrip() for k in kept]
    while kept and not kept[-1].strip():
        kept.pop()
    result = "\n".join(kept)
    if not result.strip():
        return Processed("", truncated=truncated)
    if line.following.strip() and line.following.lstrip().startswith(result.strip()):
        # The whole suggestion is text that is already there.
        return Processed("", truncated=truncated)
    return Processed(result, truncated=truncated)


def _scope_lines(lines: list[str], line: CursorLine) -> tuple[list[str], bool]:
    """Lines up to (not including) the first that leaves the cursor's block."""
    first_full = line.before + lines[0]
    if first_full.strip():
        scope = indent_width(first_full)
        opens_block = _opens_block(first_full)
    else:
        # Cursor on a blank line: the scope is set by the first line that has code.
        scope, opens_block = -1, False
    for index in range(1, len(lines)):
        current = lines[index]
        if not current.strip():
            continue
        if scope < 0:
            scope = indent_width(current)
            opens_block = _opens_block(current)
            continue
        indent = indent_width(current)
        if opens_block:
            if indent <= scope:
                # A closing bracket at the block's own level ends it and belongs to it.
                if indent == scope and current.strip()[0] in ")]}":
                    return lines[: index + 1], index + 1 < len(lines)
                return lines[:index], True
        elif indent < scope:
            return lines[:index], True
    return lines, False


def complete_lines(raw: str) -> str:
    """The part of a partial generation made of complete lines (for deadlines)."""
    cut = raw.rfind("\n")
    return raw[: cut + 1] if cut >= 0 else ""
