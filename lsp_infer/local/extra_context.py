"""Context from the rest of the workspace: recent chunks, other open files, referenced symbols.

A 0.5B model next to the cursor knows only what is in its prompt. This module keeps what the
user has been working on — a ring of chunks from recently edited, opened, saved and visited
regions (near-duplicates evicted), the other open documents — and picks what fits a token
budget, most specific first: for ``module.name`` near the cursor, that definition in the open
``module`` and the module's outline (its top-level names); outlines of the open modules the
file imports; definitions of other names used near the cursor (all by plain text search);
the ring; the heads of other open documents. Whatever does not fit whole is cut around the
line it is about.

The pick is *pinned* per document while the user types (the extra context comes first in the
prompt, so a stable pick keeps the model's KV cache valid across keystrokes); it is made or
refreshed when the user pauses, and the new prompt is evaluated then (prefetch); the new pick
is used only once that evaluation is done, so typing never starts or waits for that work
(completions.py; bench/HISTORY.md). No model, no LSP; all pure but ExtraContext, which reads
the session.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from lsp_infer.config import ExtraContextSettings
from lsp_infer.editor import Editor
from lsp_infer.local.definitions import DefinitionChunk, EditorDefinitions
from lsp_infer.session import Session
from lsp_infer.text import TYPICAL_CHARS_PER_TOKEN

CHUNK_LINES = 64
RING_SIZE = 16
# A chunk cut down to fit the budget must still say something: fewer characters than this
# (about four lines of code) and it is left out.
MIN_CHUNK_CHARS = 160
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
    focus: int = 0  # the line (index into text) the chunk is about; cuts keep it

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
    """The ``lines``-line chunk of ``text`` around ``line`` (aligned to half a chunk, so
    nearby cursor positions give the same chunk); its focus is the middle of its region."""
    all_lines = text.split("\n")
    half = max(1, lines // 2)
    region = (line // half) * half
    start = max(0, min(region - half // 2, len(all_lines) - lines))
    focus = min(max(0, region + half // 2 - start), max(0, len(all_lines) - 1 - start))
    return Chunk(uri, path, start, "\n".join(all_lines[start : start + lines]), focus)


def trimmed(chunk: Chunk, max_chars: int) -> Chunk | None:
    """``chunk`` cut to whole lines around its focus that fit ``max_chars`` (None when not
    even the focus line does). Lines are added after and before the focus in turn, so a
    definition keeps its body and a visited region its middle."""
    if len(chunk.text) <= max_chars:
        return chunk
    lines = chunk.text.split("\n")
    first = last = min(chunk.focus, len(lines) - 1)
    used = len(lines[first])
    if used > max_chars:
        return None
    grew = True
    while grew:
        grew = False
        for candidate in (last + 1, first - 1):
            if 0 <= candidate < len(lines) and used + len(lines[candidate]) + 1 <= max_chars:
                used += len(lines[candidate]) + 1
                first, last = min(first, candidate), max(last, candidate)
                grew = True
    text = "\n".join(lines[first : last + 1])
    return Chunk(chunk.uri, chunk.path, chunk.start_line + first, text, chunk.focus - first)


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
    """A definition's signature and the start of its body (and two lines above it, for
    decorators and comments); its focus is the definition's line."""
    all_lines = text.split("\n")
    start = max(0, line - 2)
    return Chunk(uri, path, start, "\n".join(all_lines[start : line + lines - 2]), line - start)


_QUALIFIED = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\.([A-Za-z_]\w*)")


def qualified_near(
    text: str, offset: int, before: int = 1500, after: int = 500
) -> list[tuple[str, str]]:
    """``(module, name)`` for each ``module.name`` written around the cursor, nearest first."""
    start = max(0, offset - before)
    found: dict[tuple[str, str], int] = {}
    for match in _QUALIFIED.finditer(text, start, min(len(text), offset + after)):
        distance = abs(match.start() - offset)
        pair = (match.group(1), match.group(2))
        found[pair] = min(distance, found.get(pair, distance))
    return sorted(found, key=found.__getitem__)


def module_name(path: str) -> str:
    """The name code uses for the module at ``path``: ``pkg/errors.py`` → ``errors``, and a
    package's ``pkg/__init__.py`` → ``pkg``."""
    parts = path.replace("\\", "/").rstrip("/").split("/")
    stem = parts[-1].rsplit(".", 1)[0]
    return parts[-2] if stem in ("__init__", "index", "mod") and len(parts) > 1 else stem


_OUTLINE = re.compile(
    r"^(?:export[ \t]+)?(?:async[ \t]+)?"
    r"(?:def|class|function|func|fn|struct|interface|enum|trait|type|const|let|var)[ \t]+\w"
    r"|^[A-Za-z_]\w*[ \t]*(?::[^=\n]*)?=(?!=)"
)


def outline_chunk(document: OpenDocument, whole_below: int = 0) -> Chunk:
    """What a module offers: its top-level definitions' first lines (signatures, class lines,
    constants), in order — many names in few characters. A module shorter than
    ``whole_below`` characters is shown whole instead (its comments and values help too)."""
    if len(document.text) < whole_below:
        return Chunk(document.uri, document.path, 0, document.text)
    lines = [line for line in document.text.split("\n") if _OUTLINE.match(line)]
    return Chunk(document.uri, document.path, 0, "\n".join(lines))


_IMPORT_FROM = re.compile(
    r"^[ \t]*from[ \t]+[\w.]+[ \t]+import[ \t]+(?:\(([^)]*)\)|([^\n(]+))", re.MULTILINE
)


def imported_names(text: str) -> list[str]:
    """Names the file imports with ``from … import a, b`` (Python), in order."""
    names: list[str] = []
    for match in _IMPORT_FROM.finditer(text):
        listed = match.group(1) if match.group(1) is not None else match.group(2)
        for name in _listed(listed):
            if len(name) >= 4 and name not in names:
                names.append(name)
    return names


def _listed(names: str) -> list[str]:
    """``"a, b as c,\n d"`` → ``["a", "b", "d"]``: the names of an import list."""
    return [part.strip().split(" as ")[0].strip() for part in names.replace("\n", " ").split(",")]


_IMPORT_MODULES = re.compile(
    r"^[ \t]*(?:from[ \t]+\.*([\w.]*)[ \t]+import[ \t]+(?:\(([^)]*)\)|([^\n(#]+))"
    r"|import[ \t]+([^\n#]+))",
    re.MULTILINE,
)


def imported_modules(text: str) -> list[str]:
    """Modules the file imports (Python), by the name ``module_name`` gives them, in order:
    ``from .errors import X`` → errors; ``from . import events, locks`` → events, locks (they
    may be modules); ``import email.utils`` → utils."""
    modules: list[str] = []
    for match in _IMPORT_MODULES.finditer(text):
        source, listed = match.group(1), match.group(2) or match.group(3)
        if listed is not None:
            names = [source.rsplit(".", 1)[-1]] if source else []
            if not source or match.group(0).lstrip().startswith("from ."):
                names += _listed(listed)
        else:
            names = [name.rsplit(".", 1)[-1] for name in _listed(match.group(4))]
        modules += [name for name in names if name and name not in modules]
    return modules


@dataclass(frozen=True)
class OpenDocument:
    uri: str
    path: str
    text: str


def _head(document: OpenDocument, lines: int = 32) -> Chunk:
    """The start of a document: its imports, constants and first definitions."""
    head = "\n".join(document.text.split("\n")[:lines])
    return Chunk(document.uri, document.path, 0, head)


def select(
    current_uri: str,
    current_text: str,
    offset: int,
    ring: Iterable[Chunk],
    open_documents: Iterable[OpenDocument],
    budget_chars: int,
    excluded: Callable[[str], bool],
    definitions: Iterable[Chunk] = (),
) -> tuple[Chunk, ...]:
    """The extra chunks for a prompt, most useful last (nearest the code), within budget.

    Priority: the definitions the editor's language servers found for the names near the
    cursor (``definitions``, nearest first: local/definitions.py); for ``module.name`` near
    the cursor, its definition in that module; the outlines of those modules, then of the
    modules the file imports; definitions of other names used near the cursor; the ring's
    recent chunks; the heads of other documents. Nothing from an excluded document; nothing
    from the current document (its own window is already in the prompt).
    """
    documents = [d for d in open_documents if d.uri != current_uri and not excluded(d.uri)]
    candidates = [c for c in definitions if c.uri != current_uri and not excluded(c.uri)]
    candidates += _module_chunks(current_text, offset, documents, budget_chars)
    candidates += _definitions_near(current_text, offset, documents)
    candidates += [c for c in reversed(list(ring)) if c.uri != current_uri and not excluded(c.uri)]
    candidates += [_head(d) for d in documents]
    return _fit(candidates, budget_chars)


def _module_chunks(
    text: str, offset: int, documents: list[OpenDocument], budget_chars: int
) -> list[Chunk]:
    """For ``module.name`` near the cursor, that definition in the open ``module``; then the
    outlines of those modules and of the other open modules the file imports."""
    by_module = {module_name(d.path): d for d in reversed(documents)}  # the first one wins
    chunks: list[Chunk] = []
    referenced: list[OpenDocument] = []
    for module, name in qualified_near(text, offset)[:24]:
        document = by_module.get(module)
        if document is None:
            continue
        if document not in referenced:
            referenced.append(document)
        line = find_definition(name, document.text)
        if line is not None:
            chunks.append(definition_chunk(document.uri, document.path, document.text, line))
    for module in imported_modules(text):
        document = by_module.get(module)
        if document is not None and document not in referenced:
            referenced.append(document)
    return chunks + [outline_chunk(d, whole_below=budget_chars // 2) for d in referenced]


def _definitions_near(text: str, offset: int, documents: list[OpenDocument]) -> list[Chunk]:
    """Definitions, in other open documents, of the names used just before the cursor."""
    chunks: list[Chunk] = []
    for name in identifiers_near(text, offset)[:24]:
        if find_definition(name, text) is not None:
            continue  # defined right here: the window (or the model) has it
        for document in documents:
            line = find_definition(name, document.text)
            if line is not None:
                chunks.append(definition_chunk(document.uri, document.path, document.text, line))
                break
    return chunks


def _fit(candidates: list[Chunk], budget_chars: int) -> tuple[Chunk, ...]:
    """The candidates that fit the budget, in priority order, near-duplicates left out; what
    does not fit whole is cut to what does, around its focus. Most useful last."""
    chosen: list[Chunk] = []
    used = 0
    for candidate in candidates:
        overhead = len(candidate.path) + 2
        chunk = trimmed(candidate, budget_chars - used - overhead)
        if chunk is None or (chunk is not candidate and len(chunk.text) < MIN_CHUNK_CHARS):
            continue
        if any(_similarity(kept, chunk) >= NEAR_DUPLICATE for kept in chosen):
            continue
        chosen.append(chunk)
        used += len(chunk.text) + overhead
    # The most useful chunk goes last, next to the file being completed.
    return tuple(reversed(chosen))


class ExtraContext:
    """The server's source of extra context: the chunk ring fed by document events, and the
    session's open documents. Implements completions.ExtraContextSource."""

    def __init__(self, session: Session, editor: Editor | None = None) -> None:
        self.ring = ChunkRing()
        self._last_region: dict[str, int] = {}
        self._session = session
        self.definitions = EditorDefinitions(editor, self._excluded)
        self.use_definitions = True  # context.definitions

    def _excluded(self, uri: str) -> bool:
        return self._session.policy().excluded(uri)

    def _open_documents(self) -> list[OpenDocument]:
        return [
            OpenDocument(snapshot.uri, self.path(snapshot.uri), snapshot.text)
            for snapshot in self._session.documents.snapshots()
        ]

    def note(self, uri: str, text: str, line: int) -> None:
        """A region the user opened, edited, saved or visited. Cheap to call per keystroke:
        the chunk is only cut when the edits move to another region of the file."""
        self.definitions.changed(uri)
        region = line // (CHUNK_LINES // 2)
        if self._last_region.get(uri) == region or self._excluded(uri):
            return
        self._last_region[uri] = region
        self.ring.add(chunk_around(uri, self.path(uri), text, line))

    def closed(self, uri: str) -> None:
        """The document closed: its chunks stay in the ring (recently seen code is still worth
        showing the model), only the per-document bookkeeping goes."""
        self._last_region.pop(uri, None)
        self.definitions.closed(uri)

    def saved(self, uri: str, text: str) -> None:
        """A save: the region last edited is worth keeping as it is now."""
        self.definitions.changed(uri)
        region = self._last_region.get(uri)
        if region is not None and not self._excluded(uri):
            line = region * (CHUNK_LINES // 2)
            self.ring.add(chunk_around(uri, self.path(uri), text, line))

    def pick(
        self, uri: str, text: str, offset: int, budget_tokens: int
    ) -> tuple[tuple[str, str], ...]:
        budget_chars = budget_tokens * TYPICAL_CHARS_PER_TOKEN
        documents = self._open_documents()
        found = self.definitions.chunks(uri, text, offset) if self.use_definitions else []
        definitions = [self._definition_chunk(c) for c in found]
        chunks = select(uri, text, offset, self.ring, documents, budget_chars, self._excluded,
                        definitions)  # fmt: skip
        places = {(c.uri, c.start_line) for c in definitions}
        used = [(c.uri, c.start_line) for c in chunks if (c.uri, c.start_line) in places]
        self.definitions.note_used(uri, used)
        return tuple((chunk.path, chunk.text) for chunk in chunks)

    def _definition_chunk(self, found: DefinitionChunk) -> Chunk:
        return Chunk(found.uri, self.path(found.uri), found.line, found.text)

    async def prepare(
        self, uri: str, text: str, offset: int, settings: ExtraContextSettings
    ) -> None:
        """Before a pick in a pause: ask the editor for the definitions near ``offset``
        (at most ``settings.definitions_ms``; a late answer serves the next pick)."""
        if settings.definitions and settings.definitions_ms > 0:
            await self.definitions.refresh(uri, text, offset, settings.definitions_ms)

    def path(self, uri: str) -> str:
        return self._session.relative_path(uri)
