"""A small window chosen by structure, not only by distance (pure).

A cold start's window (a few hundred tokens, sometimes fewer than 200) cut by distance alone
keeps the lines nearest the cursor and loses the signature and docstring that say what the
function is for: on holes whose answer depends on them it scored 25-40 points below the whole
window (bench/HISTORY.md, "Cold start"). Within the same budget this window keeps, in order:

1. the cursor's line and the lines just above it (a share of the budget: ``near_share``);
2. the headers of the enclosing blocks, innermost first: the opening line with its
   continuation lines (a signature over several lines), the decorators and comment lines
   just above it, and the docstring or comment block that opens its body;
3. the imports and module-level definitions whose names the nearby code uses (one line
   each, up to ``names_share`` of the budget);
4. then more lines nearest the cursor, with what is left.

The selected lines are emitted in document order: the model sees the file with some lines
left out, as a reader skimming it would. Structure comes from indentation and brackets, so
it works on half-typed code in any language that indents its blocks; nothing is parsed, and
nothing here can fail on a file a grammar would refuse. Bounds: it looks at most
``LOOKBACK_CHARS`` back, judges no line longer than ``LONG_LINE`` characters to be a header,
and tokenizes only the lines it considers taking.
"""

from __future__ import annotations

import re
from collections.abc import Callable

# How far back (characters) the headers and names are looked for.
LOOKBACK_CHARS = 60_000
# The file's first characters, where imports live, are looked at for names too.
HEAD_CHARS = 8_000
# A longer line is never a header or a name's definition (minified code, data).
LONG_LINE = 400
# A header's continuation (a signature over several lines), or its docstring, is cut after
# this many lines.
HEADER_LINES = 8
DOC_LINES = 8

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Module-level lines that bring a name into the file.
_IMPORT = re.compile(r"(import|from|#include|#import|use|using|require|package)\b")
_DEFINITION = re.compile(
    r"(?:(?:export|pub|public|static|async|const|final|let|var|val|def|class|func|fn|function|"
    r"struct|enum|interface|type|trait|impl|module)\s+)+\**([A-Za-z_][A-Za-z0-9_]*)"
    r"|([A-Za-z_][A-Za-z0-9_]*)\s*(?::[^=]*)?=[^=]"
)
_COMMENT = ("#", "//", "/*", "*", "--", ";;")
_DOCSTRING = ('"""', "'''", 'r"""', "r'''", 'b"""', 'u"""')
_OPENING = "(["
_CLOSING = ")]"


def indent_width(line: str) -> int:
    """Columns of leading whitespace (a tab as 4)."""
    expanded = line.expandtabs(4)
    return len(expanded) - len(expanded.lstrip(" "))


def _blank(line: str) -> bool:
    return not line.strip()


def depth_change(line: str) -> int:
    """Brackets opened minus closed on a line (strings and comments not told apart: this
    only decides how far a header's continuation goes, and it is capped)."""
    return sum(line.count(c) for c in _OPENING) - sum(line.count(c) for c in _CLOSING)


def enclosing_headers(lines: list[str], cursor_indent: int) -> list[list[list[int]]]:
    """For the text ``lines`` (the cursor's line last), each enclosing block's header,
    innermost block first, as parts in the order they are worth keeping: the opening line
    with its continuation (a signature over several lines), then each line of the
    docstring or comments opening its body, then the decorators and comments just above it."""
    headers: list[list[list[int]]] = []
    level = cursor_indent
    for index in range(len(lines) - 2, -1, -1):
        if level == 0:
            break
        line = lines[index]
        if _blank(line) or len(line) > LONG_LINE:
            continue
        indent = indent_width(line)
        if indent >= level or not line.strip().strip(")]};,"):
            continue  # inside the cursor's block, or only closes brackets
        level = indent
        headers.append(_header_parts(lines, index, len(lines) - 1))
    return headers


def _header_parts(lines: list[str], opener: int, limit: int) -> list[list[int]]:
    """The parts of the header that opens at ``opener`` (no line at or past ``limit``)."""
    end, depth = opener, depth_change(lines[opener])
    while depth > 0 and end + 1 < limit and end - opener < HEADER_LINES:
        end += 1
        depth += depth_change(lines[end])
    parts = [list(range(opener, end + 1))]
    parts.extend([index] for index in body_doc(lines, end + 1, limit))
    indent, above = indent_width(lines[opener]), opener - 1
    while above >= 0 and opener - above <= HEADER_LINES and not _blank(lines[above]):
        stripped = lines[above].lstrip()
        if indent_width(lines[above]) != indent or not stripped.startswith(("@", *_COMMENT)):
            break
        parts.append([above])
        above -= 1
    return parts


def body_doc(lines: list[str], start: int, limit: int) -> list[int]:
    """The docstring, or the run of comment lines, that opens a block's body at ``start``."""
    if start >= limit:
        return []
    first = lines[start].strip()
    quote = next((q[-3:] for q in _DOCSTRING if first.startswith(q)), None)
    doc: list[int] = []
    if quote is not None:
        rest = first[first.index(quote) + 3 :]
        index = start
        while index < limit and len(doc) < DOC_LINES:
            doc.append(index)
            if (index == start and quote in rest) or (index > start and quote in lines[index]):
                break
            index += 1
        return doc
    index = start
    while index < limit and len(doc) < DOC_LINES and lines[index].lstrip().startswith(_COMMENT):
        doc.append(index)
        index += 1
    return doc


def used_names(text: str) -> set[str]:
    return set(_IDENTIFIER.findall(text))


def defining_lines(lines: list[str], names: set[str], skip: set[int]) -> list[int]:
    """Module-level lines (no indentation) that import or define one of ``names``: the
    imports first (in file order), then other definitions, nearest the cursor first."""
    imports: list[int] = []
    definitions: list[int] = []
    for index, line in enumerate(lines):
        if index in skip or _blank(line) or line[0] in " \t" or len(line) > LONG_LINE:
            continue
        if _IMPORT.match(line):
            if names & used_names(line):
                imports.append(index)
            continue
        match = _DEFINITION.match(line)
        name = match and (match.group(1) or match.group(2))
        if name and name in names:
            definitions.append(index)
    return imports + definitions[::-1]


class _Selection:
    """Lines chosen so far, with their token counts, under a running total."""

    def __init__(self, lines: list[str], count_tokens: Callable[[str], int], chars: int):
        self.lines = lines
        self.count_tokens = count_tokens
        self.chars = chars  # a line longer than this cannot fit: never tokenized
        self.chosen: dict[int, int] = {}
        self.used = 0

    def take(self, index: int, limit: int) -> bool:
        if index in self.chosen:
            return True
        line = self.lines[index]
        if len(line) > self.chars:
            return False
        cost = self.count_tokens(line)
        if self.used + cost > limit:
            return False
        self.chosen[index] = cost
        self.used += cost
        return True

    def take_all(self, indexes: list[int], limit: int) -> bool:
        """All of ``indexes`` or none."""
        before = dict(self.chosen), self.used
        if all(self.take(index, limit) for index in indexes):
            return True
        self.chosen, self.used = before
        return False

    def drop(self, indexes: range) -> None:
        for index in indexes:
            self.used -= self.chosen.pop(index, 0)

    def text(self, gap: str | None = None) -> str:
        """The chosen lines in order; with ``gap``, a line of it (indented as the line after
        it) where lines were left out."""
        parts: list[str] = []
        previous = None
        for index in sorted(self.chosen):
            line = self.lines[index]
            if gap is not None and previous is not None and index > previous + 1:
                parts.append(line[: len(line) - len(line.lstrip())] + gap + "\n")
            parts.append(line)
            previous = index
        return "".join(parts)


def select_prefix(
    lines: list[str],
    budget: int,
    count_tokens: Callable[[str], int],
    *,
    first_line: int = 0,
    anchor_lines: int = 1,
    slack: int = 0,
    suffix: str = "",
    head: list[str] | None = None,
    near_share: float = 0.4,
    docs_share: float = 0.25,
    names_share: float = 0.15,
    max_chars: int = LOOKBACK_CHARS,
    gap: str | None = None,
) -> str:
    """The prefix: lines of ``lines`` (the text before the cursor, whole lines but the last,
    which is the cursor's line up to the cursor; the first is document line ``first_line``)
    chosen by structure within ``budget`` tokens, in document order. ``head``: the file's
    first lines, when ``lines`` does not start there (imports): those used come first.

    The lines nearest the cursor start on a document line that is a multiple of
    ``anchor_lines`` (so the window does not slide, and its KV cache stays valid, while the
    user types a few lines); the last group of lines may run ``slack`` tokens over budget,
    as core.window's anchored window does."""
    if not lines:
        return ""
    cursor = len(lines) - 1
    chosen = _Selection(lines, count_tokens, max_chars)
    if not chosen.take(cursor, budget):
        chosen.chosen[cursor] = budget  # over budget alone: the caller cuts it
        chosen.used = budget
    near = _near_lines(chosen, cursor, int(budget * near_share), first_line, anchor_lines, slack)
    _take_headers(chosen, budget, int(budget * docs_share))
    names = used_names("".join(lines[near : cursor + 1]) + suffix)
    imported = _take_names(chosen, near, names, chosen.used + int(budget * names_share), head)
    # The rest: more lines above the nearest ones, a group of anchor_lines at a time.
    while near > 0:
        group = list(range(max(0, (first_line + near - 1) // anchor_lines * anchor_lines
                               - first_line), near))  # fmt: skip
        if chosen.take_all(group, budget):
            near = group[0]
            continue
        chosen.take_all(group, budget + slack)
        break
    return "".join(imported) + chosen.text(gap)


def _take_headers(chosen: _Selection, budget: int, docs_tokens: int) -> None:
    """The enclosing blocks' opening lines within ``budget``, then their docstrings and
    decorators, innermost first, within ``docs_tokens`` more."""
    lines = chosen.lines
    cursor_line = lines[-1]
    level = indent_width(cursor_line) if cursor_line.strip() else _empty_line_level(lines)
    headers = enclosing_headers(lines, level)
    for parts in headers:
        chosen.take_all(parts[0], budget)
    docs_limit = chosen.used + docs_tokens
    for parts in headers:
        for part in parts[1:]:
            if not chosen.take_all(part, docs_limit):
                break


def _take_names(
    chosen: _Selection, near: int, names: set[str], limit: int, head: list[str] | None
) -> list[str]:
    """The module-level lines above line ``near`` that import or define one of ``names``,
    within ``limit`` tokens in all; the ones from ``head`` (outside ``chosen.lines``) are
    returned, to go first."""
    imported: list[str] = []
    for line in head or ():
        if line[:1] not in ("", " ", "\t") and _IMPORT.match(line) and names & used_names(line):
            cost = chosen.count_tokens(line)
            if chosen.used + cost > limit:
                break
            imported.append(line)
            chosen.used += cost
    for index in defining_lines(chosen.lines[:near], names, set(chosen.chosen)):
        if not chosen.take(index, limit):
            break
    return imported


def _near_lines(
    chosen: _Selection, cursor: int, limit: int, first_line: int, anchor_lines: int, slack: int
) -> int:
    """Take the lines just above the cursor within ``limit`` tokens, starting on an anchored
    line: the one at or before the first that fits when the lines this adds fit in ``slack``
    more tokens, else the next one. The index of the first line taken (``cursor`` when
    none)."""
    near = cursor
    while near > 0 and chosen.take(near - 1, max(limit, chosen.used)):
        near -= 1
    if anchor_lines > 1 and near < cursor and (first_line + near) % anchor_lines:
        before = max(0, (first_line + near) // anchor_lines * anchor_lines - first_line)
        if chosen.take_all(list(range(before, near)), chosen.used + slack):
            return before
        after = min(cursor, before + anchor_lines)
        chosen.drop(range(near, after))
        near = after
    return near


def _empty_line_level(lines: list[str]) -> int:
    """The indentation the cursor's line has when it is only whitespace (or empty): its own,
    or that of the nearest line above with code, one deeper where that opens a block."""
    cursor_line = lines[-1]
    if cursor_line:
        return len(cursor_line.expandtabs(4))
    for line in reversed(lines[:-1]):
        if line.strip():
            opens = line.rstrip().endswith((":", "{", "(", "[", "=>"))
            return indent_width(line) + (1 if opens else 0)
    return 0
