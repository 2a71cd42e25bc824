"""Context from the rest of the workspace: recent chunks, other open files, referenced symbols.

A 0.5B model next to the cursor knows only what is in its prompt. This module keeps what the
user has been working on — a ring of chunks from recently edited, opened, saved and visited
regions (near-duplicates evicted), the other open documents, and the definitions of names used
near the cursor (found by plain text search) — and picks what fits a token budget.

The pick is *pinned* per document while the user types (the extra context comes first in the
prompt, so a stable pick keeps the model's KV cache valid across keystrokes); it is refreshed
when the user pauses, and the refreshed prompt is evaluated then (prefetch), so extra context
adds no keystroke latency. Pure: no model, no LSP; the caller supplies the exclusion check.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

CHUNK_LINES = 64
RING_SIZE = 16
# Chunks whose lines are mostly the same as a kept chunk's are not kept twice.
NEAR_DUPLICATE = 0.8
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{3,}")
_KEYWORDS = frozenset(
    [
        "self",
        "None",
        "True",
        "False",
        "return",
        "import",
        "from",
        "class",
        "def",
        "with",
        "while",
        "elif",
        "else",
        "async",
        "await",
        "lambda",
        "yield",
        "pass",
        "break",
        "continue",
        "raise",
        "assert",
        "global",
        "nonlocal",
        "print",
        "const",
        "function",
        "let",
        "var",
        "this",
        "null",
        "true",
        "false",
    ]
)


@dataclass(frozen=True)
class Chunk:
    uri: str
    path: str  # shown to the model (workspace-relative when possible)
    start_line: int
    text: str

    @property
    def lines(self) -> frozenset[str]:
        return frozenset(line.strip() for line in self.text.split("\n") if line.strip())


def _similarity(a: Chunk, b: Chunk) -> float:
    left, right = a.lines, b.lines
    if not left or not right:
        return 0.0
    return len(left & right) / min(len(left), len(right))


class ChunkRing:
    """The most recent chunks, newest last, without near-duplicates."""

    def __init__(self, size: int = RING_SIZE) -> None:
        self.size = size
        self._chunks: list[Chunk] = []

    def add(self, chunk: Chunk) -> None:
        if not chunk.text.strip():
            return
        self._chunks = [c for c in self._chunks if _similarity(c, chunk) < NEAR_DUPLICATE]
        self._chunks.append(chunk)
        del self._chunks[: -self.size]

    def forget(self, uri: str) -> None:
        self._chunks = [c for c in self._chunks if c.uri != uri]

    def __iter__(self) -> Iterator[Chunk]:
        return iter(list(self._chunks))

    def __len__(self) -> int:
        return len(self._chunks)


def chunk_around(uri: str, path: str, text: str, line: int, lines: int = CHUNK_LINES) -> Chunk:
    """The ``lines``-line chunk of ``text`` centred on ``line`` (aligned to half a chunk, so
    nearby cursor positions give the same chunk)."""
    all_lines = text.split("\n")
    half = max(1, lines // 2)
    start = max(0, min((line // half) * half - half // 2, len(all_lines) - lines))
    start = max(0, start)
    return Chunk(uri, path, start, "\n".join(all_lines[start : start + lines]))


def identifiers_near(text: str, offset: int, window: int = 1500) -> list[str]:
    """Names used just before the cursor, most recent first (keywords dropped)."""
    seen: OrderedDict[str, None] = OrderedDict()
    for match in reversed(list(_IDENTIFIER.finditer(text[max(0, offset - window) : offset]))):
        name = match.group()
        if name not in _KEYWORDS and name not in seen:
            seen[name] = None
    return list(seen)


# A definition: "def name", "class name", "function name", "const name", "struct name" …,
# else an assignment at the start of a line ("name = …", "name: int = …").
_DECLARED = (
    r"^[ \t]*(?:export[ \t]+)?(?:async[ \t]+)?"
    r"(?:def|class|function|func|fn|struct|interface|enum|trait|type|const|let|var)[ \t]+{name}\b"
)
_ASSIGNED = r"^[ \t]*{name}[ \t]*(?::[^=\n]*)?=(?!=)"


def find_definition(name: str, text: str) -> int | None:
    """The line where ``name`` is defined in ``text``, by plain text search (no parser)."""
    for template in (_DECLARED, _ASSIGNED):
        match = re.search(template.format(name=re.escape(name)), text, re.MULTILINE)
        if match:
            return text.count("\n", 0, match.start())
    return None


def definition_chunk(uri: str, path: str, text: str, line: int, lines: int = 12) -> Chunk:
    """A definition's first ``lines`` lines (its signature and the start of its body)."""
    all_lines = text.split("\n")
    return Chunk(uri, path, line, "\n".join(all_lines[line : line + lines]))


_IMPORT_FROM = re.compile(
    r"^[ \t]*from[ \t]+[\w.]+[ \t]+import[ \t]+(?:\(([^)]*)\)|([^\n(]+))", re.MULTILINE
)


def imported_names(text: str) -> list[str]:
    """Names the file imports with ``from … import a, b`` (Python), in order."""
    names: list[str] = []
    for match in _IMPORT_FROM.finditer(text):
        listed = match.group(1) if match.group(1) is not None else match.group(2)
        for part in listed.replace("\n", " ").split(","):
            name = part.strip().split(" as ")[0].strip()
            if len(name) >= 4 and name not in names:
                names.append(name)
    return names


@dataclass(frozen=True)
class OpenDocument:
    uri: str
    path: str
    text: str


def select(
    current_uri: str,
    current_text: str,
    offset: int,
    ring: Iterable[Chunk],
    open_documents: Iterable[OpenDocument],
    budget_chars: int,
    excluded: Callable[[str], bool],
) -> tuple[Chunk, ...]:
    """The extra chunks for a prompt, most useful last (nearest the code), within budget.

    Priority: definitions of names used near the cursor (from other documents), then the
    ring's recent chunks (other documents first), then the heads of other open documents.
    Nothing from an excluded document; nothing from the current document (its own window is
    already in the prompt).
    """
    documents = [d for d in open_documents if d.uri != current_uri and not excluded(d.uri)]
    candidates: list[Chunk] = []
    for name in identifiers_near(current_text, offset)[:24]:
        if find_definition(name, current_text) is not None:
            continue  # defined right here: the window (or the model) has it
        for document in documents:
            line = find_definition(name, document.text)
            if line is not None:
                candidates.append(
                    chunk_around(document.uri, document.path, document.text, line + 8, 24)
                )
                break
    candidates += [c for c in reversed(list(ring)) if c.uri != current_uri and not excluded(c.uri)]
    candidates += [chunk_around(d.uri, d.path, d.text, 0, 32) for d in documents]
    chosen: list[Chunk] = []
    used = 0
    for chunk in candidates:
        if any(_similarity(kept, chunk) >= NEAR_DUPLICATE for kept in chosen):
            continue
        cost = len(chunk.text) + len(chunk.path) + 2
        if used + cost > budget_chars:
            continue
        chosen.append(chunk)
        used += cost
    # The most useful chunk goes last, next to the file being completed.
    return tuple(reversed(chosen))


class WorkspaceContext:
    """The server's source of extra context: the chunk ring fed by document events, and the
    open documents. Implements completions.ContextSource."""

    def __init__(
        self,
        open_documents: Callable[[], Iterable[OpenDocument]],
        excluded: Callable[[str], bool],
        relative_path: Callable[[str], str],
    ) -> None:
        self.ring = ChunkRing()
        self._last_region: dict[str, int] = {}
        self._open_documents = open_documents
        self._excluded = excluded
        self._relative_path = relative_path

    def note(self, uri: str, text: str, line: int) -> None:
        """A region the user opened, edited, saved or visited. Cheap to call per keystroke:
        the chunk is only cut when the edits move to another region of the file."""
        region = line // (CHUNK_LINES // 2)
        if self._last_region.get(uri) == region or self._excluded(uri):
            return
        self._last_region[uri] = region
        self.ring.add(chunk_around(uri, self._relative_path(uri), text, line))

    def closed(self, uri: str) -> None:
        """The document closed: its chunks stay in the ring (recently seen code is still worth
        showing the model), only the per-document bookkeeping goes."""
        self._last_region.pop(uri, None)

    def saved(self, uri: str, text: str) -> None:
        """A save: the region last edited is worth keeping as it is now."""
        region = self._last_region.get(uri)
        if region is not None and not self._excluded(uri):
            line = region * (CHUNK_LINES // 2)
            self.ring.add(chunk_around(uri, self._relative_path(uri), text, line))

    def pick(
        self, uri: str, text: str, offset: int, budget_tokens: int
    ) -> tuple[tuple[str, str], ...]:
        chunks = select(
            uri, text, offset, self.ring, self._open_documents(), budget_tokens * 4, self._excluded
        )
        return tuple((chunk.path, chunk.text) for chunk in chunks)

    def path(self, uri: str) -> str:
        return self._relative_path(uri)
