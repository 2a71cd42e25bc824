"""Definitions of the names near the cursor, from the editor's own language servers.

A 0.5B model knows only what its prompt shows, and the function the user calls usually lives
in a file they never opened. The editor already runs a language server that knows where it is
(pyright or jedi, tsserver, gopls, rust-analyzer, clangd), so the server asks the editor
(``lspInfer/definitions``, docs/protocol.md) for the definitions of the names near the cursor
and in the enclosing signatures, and shows the model each one's signature and docstring (a
class's fields and method signatures) before the rest of the extra context.

When: in the pause after typing, before the extra context is picked again (completions.py),
never on the keystroke path. The pick waits at most ``context.definitionsMs`` for the answer
and goes on without it; a late answer still fills the cache for the next pick. Answers are
cached per document and name, dropped when the target file is edited and after a minute
(files edited outside the editor). Only an editor that announces the request is asked.

The choice of names and the cut of a definition are pure; EditorDefinitions holds the cache,
the stats and the one request to the editor.
"""

from __future__ import annotations

import asyncio
import builtins
import logging
import re
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from cachetools import TTLCache

from lsp_infer.core.structure import body_doc, depth_change, enclosing_headers, indent_width
from lsp_infer.editor import (
    DEFINITION_TEXT_CHARS,
    DEFINITION_TEXT_LINES,
    Definition,
    Editor,
    EditorRequestFailed,
    cut_text,
)
from lsp_infer.stats import percentile

log = logging.getLogger(__name__)

# At most this many names per request: the editor resolves them one by one.
MAX_NAMES = 8
# The names a pick looks up (the nearest first); the requests of later pauses ask for the
# ones not asked yet.
CANDIDATE_NAMES = 24
# Strings and comments around the cursor are found from this far up (characters).
STRINGS_LOOKBACK = 10_000
# Import lines are looked for in the file's first characters.
IMPORTS_CHARS = 20_000
# Names on the cursor's line and this many lines above and below it are asked for.
NEAR_LINES = 3
# An answer is kept this long (seconds): a file edited outside the editor is read again.
TTL_S = 60.0
# The editor's answer is dropped (and the names may be asked again) after this long.
LATE_LIMIT_S = 10.0
# The cut of a definition for the prompt: a signature, its docstring, a class's members.
EXCERPT_LINES = 16
EXCERPT_CHARS = 800
# Of a docstring, its first lines only: the members after it say more.
DOC_LINES = 5

_NAME = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
# Not worth a slot: keywords, and names every reader (and the model) knows.
_COMMON_WORDS = """
    and as assert async await break case class const continue def del elif else enum except
    export extends false finally for from func function global if implements import in
    interface is lambda let match new nil nonlocal none not null or pass private protected pub
    public raise return self static struct super switch this throw true try type typeof
    undefined var void while with yield Array Boolean Error JSON Map Math Number Object Promise
    Set String console document window require module exports
"""
_SKIP = frozenset([*dir(builtins), *_COMMON_WORDS.split()])
_CONTAINER = re.compile(
    r"\s*(?:export\s+)?(?:default\s+)?(?:pub(?:\([^)]*\))?\s+)?(?:abstract\s+|data\s+)?"
    r"(?:class|interface|struct|enum|trait|protocol|record|type\s+\w+\s+struct)\b"
)
# "def name", "class name", "function name", "name = …" at a line's start: defined here.
_DEFINED_HERE = (
    r"^[ \t]*(?:export[ \t]+)?(?:async[ \t]+)?"
    r"(?:def|class|function|func|fn|struct|interface|enum|trait|type|const|let|var)[ \t]+{0}\b"
    r"|^[ \t]*{0}[ \t]*(?::[^=\n]*)?=(?!=)"
    r"|\bfor[ \t]+(?:[\w, \t(]*[ \t,(])?{0}\b[^\n]*[ \t]in\b|\bas[ \t]+{0}\b"
)


def defined_here(name: str, text: str) -> bool:
    """Whether ``text`` defines ``name`` itself (plain text search): its window, or its
    structured cold window, already shows it, so the editor is not asked."""
    return re.search(_DEFINED_HERE.format(re.escape(name)), text, re.MULTILINE) is not None


# Names a file imports by name: Python's "from m import a, b as c" (and "(...)" lists), and
# JavaScript/TypeScript's "import {a, b as c} from" and "import d from".
_IMPORT_LIST = re.compile(
    r"^[ \t]*from[ \t]+[\w.]+[ \t]+import[ \t]+(?:\(([^)]*)\)|([^\n#]+))"
    r"|^[ \t]*import[ \t]+(?:type[ \t]+)?(?:([A-Za-z_$][\w$]*)[ \t]*,?[ \t]*)?"
    r"(?:\{([^}]*)\})?[ \t]*from[ \t]",
    re.MULTILINE,
)


_IMPORT_LINE = re.compile(r"[ \t]*(?:from|import)[ \t]")


def imported_names(text: str) -> list[tuple[str, int]]:
    """``(name, offset)`` of each name the file imports by name, in file order."""
    found: list[tuple[str, int]] = []
    for match in _IMPORT_LIST.finditer(text[:IMPORTS_CHARS]):
        for group in (1, 2, 3, 4):
            listed = match.group(group)
            if listed is None:
                continue
            base = match.start(group)
            for part in _NAME.finditer(listed):
                before = listed[: part.start()].rstrip()
                if before.endswith(("as", ".")) and not before.endswith((",", "{", "(")):
                    continue  # "b as c": c is only the local name; b is the one defined
                if listed[part.end() :].lstrip().startswith("."):
                    continue
                if part.group() not in ("as", "type"):
                    found.append((part.group(), base + part.start()))
    return found


def names_to_ask(text: str, offset: int, limit: int = CANDIDATE_NAMES) -> list[tuple[str, int]]:
    """The names worth resolving, as ``(name, offset of one use)``: those in the code of the
    cursor's line and the NEAR_LINES lines around it, nearest first, then those in the
    signatures of the enclosing definitions (their types), innermost first. Left out: the
    word being typed (unfinished), comments and strings, keywords and builtins, names
    shorter than 3 characters, parameters, names ``text`` defines itself; each name once."""
    line_start = text.rfind("\n", 0, offset) + 1
    start = line_start
    for _ in range(NEAR_LINES):
        start = text.rfind("\n", 0, max(0, start - 1)) + 1
    end = offset
    for _ in range(NEAR_LINES + 1):
        found = text.find("\n", end)
        end = len(text) if found < 0 else found + 1
        if found < 0:
            break
    ranked: dict[str, tuple[tuple[int, int], int]] = {}  # name -> (rank, offset of a use)
    # Strings and comments are told from code from further up: a docstring opened above
    # the near lines must not make its prose look like code.
    lookback = max(0, start - STRINGS_LOOKBACK)
    code = code_only(text[lookback:end])[start - lookback :]
    for match in _NAME.finditer(code):
        at = start + match.start()
        if at <= offset <= start + match.end():
            continue  # the word under the cursor: being typed
        if _IMPORT_LINE.match(code, code.rfind("\n", 0, match.start()) + 1):
            continue  # imported names come below, and a module is no definition to show
        lines_away = text.count("\n", min(at, offset), max(at, offset))
        _consider(ranked, match.group(), at, (lines_away, abs(at - offset)))
    parameters: set[str] = set()
    for depth, (first, last) in enumerate(_enclosing_signatures(text, offset, line_start)):
        signature = code_only(text[first:last])
        parameters.update(_PARAMETER.findall(signature))
        for match in _NAME.finditer(signature):
            rank = (NEAR_LINES + 1 + depth, match.start())
            _consider(ranked, match.group(), first + match.start(), rank)
    imports_rank = NEAR_LINES + 1 + len(ranked)
    for name, at in imported_names(text):
        if name not in ranked:
            # Imported names, nearest use before the cursor first (never used: last).
            use = text.rfind(name, 0, line_start)
            _consider(ranked, name, at, (imports_rank, -use if use >= 0 else 1))
    ordered = sorted(ranked, key=lambda name: ranked[name][0])
    chosen = [n for n in ordered if n not in parameters and not defined_here(n, text)]
    return [(name, ranked[name][1]) for name in chosen[:limit]]


# A parameter's name in a signature: after "(" or "," (and * or **), before ":", "=", ",", ")".
_PARAMETER = re.compile(r"[(,]\s*\**([A-Za-z_$][A-Za-z0-9_$]*)\s*\??\s*(?=[:=,)])")
# Strings and comments, blanked out by code_only (a string left open runs to its line's end).
_NOT_CODE = re.compile(
    r'"""[\s\S]*?(?:"""|$)|' + r"'''[\s\S]*?(?:'''|$)"
    r'|"(?:[^"\\\n]|\\.)*"?' + r"|'(?:[^'\\\n]|\\.)*'?" + r"|`(?:[^`\\]|\\.)*`?"
    r"|#[^\n]*|//[^\n]*|/\*[\s\S]*?(?:\*/|$)"
)


def code_only(text: str) -> str:
    """``text`` with its strings and comments blanked out (same length, lines kept): the
    names in them are words, not code."""
    return _NOT_CODE.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), text)


def _consider(
    ranked: dict[str, tuple[tuple[int, int], int]], name: str, at: int, rank: tuple[int, int]
) -> None:
    if len(name) < 3 or name in _SKIP:
        return
    if name not in ranked or rank < ranked[name][0]:
        ranked[name] = (rank, at)


def _enclosing_signatures(text: str, offset: int, line_start: int) -> list[tuple[int, int]]:
    """The character spans of the enclosing definitions' opening lines, innermost first."""
    window_start = text.rfind("\n", 0, max(0, line_start - 20_000)) + 1
    # The lines above the cursor's line, and an empty one standing for it.
    lines = text[window_start:line_start].split("\n")
    lead = text[line_start:offset]
    line_end = text.find("\n", offset)
    cursor_line = text[line_start : len(text) if line_end < 0 else line_end]
    indent = indent_width(lead) if not lead.strip() else indent_width(cursor_line)
    starts = [window_start]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    spans = []
    for parts in enclosing_headers(lines, indent):
        opening = parts[0]
        spans.append((starts[opening[0]], starts[opening[-1]] + len(lines[opening[-1]])))
    return spans


# A line of a doc comment or a decorator, which sits above a definition in most languages.
_ABOVE = re.compile(r"\s*(?:/\*\*|/\*|\*|//|#|@|--|\"\"\"|''')")
# Of what sits above a definition, this many lines at most (a long doc comment: its start, and
# the line that closes it).
ABOVE_LINES = 8


def doc_above(above: str) -> list[str]:
    """The doc comment and decorators right above a definition: the run of comment or
    decorator lines that ends at the definition (a blank line ends it)."""
    lines = above.split("\n") if above else []
    start = len(lines)
    while start > 0 and lines[start - 1].strip() and _ABOVE.match(lines[start - 1]):
        start -= 1
    block = lines[start:]
    if len(block) > ABOVE_LINES:
        block = block[: ABOVE_LINES - 1] + block[-1:]
    return block


def excerpt(
    text: str,
    above: str = "",
    lines_limit: int = EXCERPT_LINES,
    chars_limit: int = EXCERPT_CHARS,
) -> str:
    """What a prompt needs of a definition whose text starts at its first line: the doc
    comment and decorators right above it (from ``above``: the lines before it), the header
    (over several lines while its brackets stay open), the docstring or comments opening its
    body; then, for a class (interface, struct, enum …), its members' first lines one level
    in (fields, method signatures), else the first lines of its body. Whole lines, at most
    ``lines_limit`` and ``chars_limit``; the definition's end stops it."""
    lines = text.split("\n")[:DEFINITION_TEXT_LINES]
    if not lines or not lines[0].strip():
        return ""
    header_end, depth = 0, depth_change(lines[0])
    while depth > 0 and header_end + 1 < len(lines) and header_end < 8:
        header_end += 1
        depth += depth_change(lines[header_end])
    kept = doc_above(above) + lines[: header_end + 1]
    doc = _doc(lines, header_end + 1)
    kept += [lines[index] for index in doc[:DOC_LINES]]
    if len(doc) > DOC_LINES:  # a long docstring: its start, closed again
        opening = lines[doc[0]]
        quote = next((q for q in ('"""', "'''") if q in opening), "")
        kept.append(" " * indent_width(opening) + quote)
    indent = indent_width(lines[0])
    body = _body(lines, (doc[-1] if doc else header_end) + 1, indent)
    if _CONTAINER.match(lines[0]) and body:
        member_indent = indent_width(lines[body[0]])
        body = [index for index in body if indent_width(lines[index]) <= member_indent]
    kept += [lines[index] for index in body]
    return _whole_lines(kept[:lines_limit], chars_limit)


def _whole_lines(lines: list[str], chars_limit: int) -> str:
    """The first of ``lines`` that fit ``chars_limit``, joined."""
    used = 0
    for count, line in enumerate(lines):
        used += len(line) + 1
        if used > chars_limit + 1:
            return "\n".join(lines[:count])
    return "\n".join(lines)


# A module-level line that defines a name: "class X", "def f", "X = …", "export function f" …
_TOP_LEVEL = re.compile(
    r"(?:export\s+)?(?:default\s+)?(?:async\s+)?"
    r"(?:def|class|function|func|fn|struct|interface|enum|trait|type|const|let|var)\s+(\w+)"
    r"|([A-Za-z_]\w*)\s*(?::[^=\n]*)?=(?!=)"
)


def is_module(definition_line: int, name: str, target_uri: str) -> bool:
    """Whether a definition is a whole module (``errors`` in ``errors.HeaderParseError``):
    its first line, in a file named after it (``errors.py``, ``errors/__init__.py``)."""
    if definition_line != 0:
        return False
    parts = target_uri.rstrip("/").rsplit("/", 2)
    stem = parts[-1].split(".", 1)[0]
    folder = parts[-2] if len(parts) > 1 else ""
    return name in (stem, folder if stem in ("__init__", "index", "mod") else stem)


def module_outline(text: str, used: Iterable[str] = (), chars_limit: int = EXCERPT_CHARS) -> str:
    """What a module offers, from what the editor sent of it: its module-level definitions'
    first lines (class lines, signatures, constants), in order. When they do not all fit, the
    names the file being completed already uses from the module (``used``: ``X`` of
    ``module.X``) are kept first: what a file used once it often uses again."""
    lines = top_level_lines(text).split("\n")
    if sum(len(line) + 1 for line in lines) <= chars_limit + 1:
        return "\n".join(lines)
    wanted = set(used)
    first = [i for i, line in enumerate(lines) if _defined_name(line) in wanted]
    chosen = set(first)
    order = first + [i for i in range(len(lines)) if i not in chosen]
    kept: set[int] = set()
    room = chars_limit + 1
    for index in order:
        if len(lines[index]) + 1 <= room:
            kept.add(index)
            room -= len(lines[index]) + 1
    return "\n".join(line for i, line in enumerate(lines) if i in kept)


def top_level_lines(text: str) -> str:
    """The lines of ``text`` that define a module-level name, joined."""
    return "\n".join(line for line in text.split("\n") if line and _TOP_LEVEL.match(line))


def _defined_name(line: str) -> str:
    match = _TOP_LEVEL.match(line)
    return (match.group(1) or match.group(2) or "") if match else ""


def used_from(module: str, text: str) -> list[str]:
    """The names ``text`` uses from ``module`` as ``module.X``."""
    return re.findall(rf"(?<![\w.]){re.escape(module)}\.([A-Za-z_]\w*)", text)


def _doc(lines: list[str], start: int) -> list[int]:
    """The whole docstring, or run of comment lines, that opens a body at ``start``."""
    if start >= len(lines):
        return []
    first = lines[start].strip()
    quote = next((q for q in ('"""', "'''") if first.lstrip("rbuRBU").startswith(q)), None)
    if quote is None:
        return body_doc(lines, start, len(lines))
    if first.count(quote) >= 2:
        return [start]
    for index in range(start + 1, len(lines)):
        if quote in lines[index]:
            return list(range(start, index + 1))
    return list(range(start, len(lines)))


def _body(lines: list[str], start: int, indent: int) -> list[int]:
    """The non-blank lines of the body that starts at ``start`` (until a line at the
    definition's own indentation: what follows it; a closing bracket there is kept)."""
    body: list[int] = []
    for index in range(start, len(lines)):
        line = lines[index]
        if not line.strip():
            continue
        if indent_width(line) <= indent:
            if line.strip().rstrip(";,") in ("}", "]", ")", "end"):
                body.append(index)
            break
        body.append(index)
    return body


@dataclass
class DefinitionStats:
    """``lspInfer/stats`` → ``definitions``."""

    requests: int = 0  # lspInfer/definitions requests sent
    asked: int = 0  # names asked
    answered: int = 0  # names answered with a definition
    used: int = 0  # definitions put in a pick of the extra context
    timed_out: int = 0  # requests the pick stopped waiting for (context.definitionsMs)
    failed: int = 0  # requests answered with an error, or never (LATE_LIMIT_S)
    times_ms: deque[float] = field(default_factory=lambda: deque(maxlen=256))

    def as_json(self, supported: bool) -> dict[str, Any]:
        times = list(self.times_ms)
        return {
            "supported": supported,
            "requests": self.requests,
            "asked": self.asked,
            "answered": self.answered,
            "used": self.used,
            "timedOut": self.timed_out,
            "failed": self.failed,
            "p50Ms": percentile(times, 0.5),
            "p95Ms": percentile(times, 0.95),
        }


@dataclass(frozen=True)
class DefinitionChunk:
    """A definition to show the model: where it is and its cut text."""

    uri: str
    line: int
    text: str


_UNKNOWN = object()
# "The editor found none" is believed this long (seconds), then the name is asked again.
NONE_TTL_S = 10.0


class DefinitionCache:
    """The editor's answers per (document, name): a Definition, or None (it had none).
    Entries expire after TTL_S; an edit of a target file drops the entries pointing there."""

    def __init__(self, ttl: float = TTL_S, maxsize: int = 2048) -> None:
        # A Definition, or the time.monotonic() when the editor had none.
        self._entries: TTLCache[tuple[str, str], Definition | float] = TTLCache(maxsize, ttl)
        self._by_target: dict[str, set[tuple[str, str]]] = {}

    def get(self, uri: str, name: str) -> Definition | None:
        """The cached definition (None: none cached, or the editor had none)."""
        found = self._entries.get((uri, name))
        return found if isinstance(found, Definition) else None

    def known(self, uri: str, name: str) -> bool:
        """Whether the editor's answer is cached; "none found" only for NONE_TTL_S (a
        language server still loading its project answers nothing at first)."""
        found = self._entries.get((uri, name), _UNKNOWN)
        if isinstance(found, float):
            return time.monotonic() - found < NONE_TTL_S
        return found is not _UNKNOWN

    def put(self, uri: str, name: str, definition: Definition | None) -> None:
        if definition is not None and is_module(definition.line, name, definition.uri):
            # Up to 200,000 characters came for a module; its outline needs only these lines.
            definition = replace(definition, text=top_level_lines(definition.text))
        elif definition is not None and definition.line == 0:
            # Sent as long as a module's (it starts a file); its cut reads the first lines only.
            cut = cut_text(definition.text, DEFINITION_TEXT_LINES, DEFINITION_TEXT_CHARS)
            definition = replace(definition, text=cut)
        self._entries[(uri, name)] = time.monotonic() if definition is None else definition
        if definition is not None:
            self._by_target.setdefault(definition.uri, set()).add((uri, name))

    def target_changed(self, target: str) -> None:
        """``target`` was edited: the definitions read from it are stale."""
        for key in self._by_target.pop(target, set()):
            self._entries.pop(key, None)

    def forget_document(self, uri: str) -> None:
        for key in [key for key in self._entries if key[0] == uri]:
            self._entries.pop(key, None)


class EditorDefinitions:
    """Asks the editor for definitions (in the pause), caches them, hands out the cut ones
    for a pick, and counts."""

    def __init__(self, editor: Editor | None, excluded: Callable[[str], bool]) -> None:
        self._editor = editor
        self._excluded = excluded
        self.cache = DefinitionCache()
        self.stats = DefinitionStats()
        self._pending: set[tuple[str, str]] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._used: dict[str, frozenset[tuple[str, int]]] = {}

    @property
    def supported(self) -> bool:
        return self._editor is not None and self._editor.definitions_supported()

    async def refresh(self, uri: str, text: str, offset: int, budget_ms: int) -> None:
        """Ask the editor for the names near ``offset`` it was not asked for yet; wait for
        the answer at most ``budget_ms`` (the answer fills the cache whenever it comes)."""
        if not self.supported or self._excluded(uri):
            return
        names = [
            (name, at)
            for name, at in names_to_ask(text, offset)
            if not self.cache.known(uri, name) and (uri, name) not in self._pending
        ][:MAX_NAMES]
        if not names:
            return
        self._pending.update((uri, name) for name, _at in names)
        task = asyncio.create_task(self._ask(uri, text, names))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        try:
            await asyncio.wait_for(asyncio.shield(task), budget_ms / 1000)
        except TimeoutError:
            self.stats.timed_out += 1

    async def _ask(self, uri: str, text: str, names: list[tuple[str, int]]) -> None:
        assert self._editor is not None
        self.stats.requests += 1
        self.stats.asked += len(names)
        started = time.perf_counter()
        try:
            answers = await asyncio.wait_for(
                self._editor.definitions(uri, text, [at for _name, at in names]), LATE_LIMIT_S
            )
        except (EditorRequestFailed, TimeoutError) as exc:
            self.stats.failed += 1
            log.info("lspInfer/definitions for %s failed: %s", uri, exc or "no answer")
            return
        finally:
            self._pending.difference_update((uri, name) for name, _at in names)
        self.stats.times_ms.append((time.perf_counter() - started) * 1000)
        for (name, _at), answer in zip(names, answers, strict=False):
            self.cache.put(uri, name, answer)
            self.stats.answered += answer is not None

    def chunks(self, uri: str, text: str, offset: int) -> list[DefinitionChunk]:
        """The cached definitions of the names near ``offset``, nearest first, cut for the
        prompt: none from this document (its window shows it) or from an excluded file."""
        chunks: list[DefinitionChunk] = []
        seen: set[tuple[str, int]] = set()
        for name, _at in names_to_ask(text, offset):
            found = self.cache.get(uri, name)
            if found is None or found.uri == uri:
                continue
            if (found.uri, found.line) in seen or self._excluded(found.uri):
                continue
            seen.add((found.uri, found.line))
            # A module (``errors.`` near the cursor): the names it offers, not its docstring.
            module = is_module(found.line, name, found.uri)
            if module:
                cut = module_outline(found.text, used_from(name, text))
            else:
                cut = excerpt(found.text, found.above)
            if cut:
                chunks.append(DefinitionChunk(found.uri, found.line, cut))
        return chunks

    def note_used(self, uri: str, used: Iterable[tuple[str, int]]) -> None:
        """The pick for ``uri`` holds these definitions: count the ones it did not before."""
        now = frozenset(used)
        self.stats.used += len(now - self._used.get(uri, frozenset()))
        self._used[uri] = now

    def changed(self, uri: str) -> None:
        self.cache.target_changed(uri)

    def closed(self, uri: str) -> None:
        self.cache.forget_document(uri)
        self._used.pop(uri, None)

    def shutdown(self) -> None:
        for task in self._tasks:
            task.cancel()
