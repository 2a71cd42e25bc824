"""The choice of names to resolve, the cut of a definition, the cache, the editor's answer
read leniently, and the wait bounded by context.definitionsMs (local/definitions.py)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

import pytest

from lsp_infer.editor import MODULE_TEXT_CHARS, MODULE_TEXT_LINES, Definition, EditorRequestFailed
from lsp_infer.local.definitions import (
    DefinitionCache,
    EditorDefinitions,
    code_only,
    excerpt,
    imported_names,
    is_module,
    module_outline,
    names_to_ask,
    used_from,
)
from lsp_infer.lsp.convert import (
    announces,
    definitions_params,
    definitions_result,
)

PYTHON = """\
from geometry import distance, Point as P
from .shapes import (Circle,
    Square)
import os


def nearest(points: list[Point], origin: Origin) -> Point:
    \"\"\"The point nearest origin (see helpers.rank).\"\"\"
    best = None
    for point in points:
        d = distance(point, origin)  # "fake_name" in a comment
        label = "not_a_name here"
        if best is None or d < best_distance:
            best = point
    return best
"""


def names(text: str, marker: str) -> list[str]:
    offset = text.index(marker)
    return [name for name, _at in names_to_ask(text, offset)]


@pytest.mark.parametrize(
    ("marker", "first", "absent"),
    [
        # Nearest lines first; strings, comments, keywords, builtins and parameters out.
        (
            "best = point",
            ["best_distance", "distance"],
            ["fake_name", "not_a_name", "None", "points", "origin", "label", "best", "point"],
        ),
        # The enclosing signature's types come after the names near the cursor.
        # ("distance" is 4 lines up: an imported name, after them.)
        ("return best", ["best_distance", "Point", "Origin", "distance"], ["nearest"]),
    ],
)
def test_names_to_ask(marker: str, first: list[str], absent: list[str]) -> None:
    chosen = names(PYTHON, marker)
    assert chosen[: len(first)] == first
    assert not set(absent) & set(chosen)
    # The imported names follow (Circle, Square: imported, never used).
    assert {"Circle", "Square"} <= set(chosen)


def test_names_to_ask_skips_the_word_being_typed_and_gives_a_place_of_each_name() -> None:
    text = "from m import helper\n\ndef f():\n    return helper(1) + help"
    chosen = names_to_ask(text, len(text))
    assert [name for name, _ in chosen] == ["helper"]
    at = chosen[0][1]
    assert text[at : at + len("helper")] == "helper"
    assert text[at - 11 : at] == "    return "  # the use nearest the cursor, not the import


def test_names_to_ask_in_typescript() -> None:
    text = (
        "import { distance, type Point } from './geometry';\n\n"
        "export function far(points: Point[], limit: Limit): Point[] {\n"
        "  return points.filter((p) => distance(p, ORIGIN) > "
    )
    chosen = [name for name, _ in names_to_ask(text, len(text))]
    assert set(chosen[:2]) == {"distance", "ORIGIN"}  # (filter: a builtin name)
    assert chosen[2:4] == ["Point", "Limit"]
    assert "points" not in chosen and "limit" not in chosen  # parameters


def test_a_docstring_opened_above_the_near_lines_is_not_code() -> None:
    text = (
        'def f(chunk):\n    """Chunks are words;\n    apart from that\n    preserved.\n'
        '    """\n    x = helper('
    )
    assert [name for name, _ in names_to_ask(text, len(text))] == ["helper"]


def test_imported_names() -> None:
    text = (
        "from .base import (Foo,\n  Bar as Baz)\nimport os\n"
        "import React, { useState, type X as Y } from 'react'\nfrom . import events\n"
    )
    found = imported_names(text)
    assert [name for name, _ in found] == ["Foo", "Bar", "React", "useState", "X", "events"]
    assert all(text[at : at + len(name)] == name for name, at in found)


def test_code_only_blanks_strings_and_comments_keeping_lines() -> None:
    text = 'a = "x y"  # z\nb = `q\nr` // c\n/* d */ e'
    code = code_only(text)
    assert len(code) == len(text) and code.count("\n") == text.count("\n")
    assert code.split() == ["a", "=", "b", "=", "e"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # A function: the signature over two lines, the docstring, the start of the body.
        (
            'def f(a,\n      b):\n    """Add."""\n    return a + b\n\ndef g(): pass',
            'def f(a,\n      b):\n    """Add."""\n    return a + b',
        ),
        # A class: the docstring, then its members' first lines, not their bodies.
        (
            'class C:\n    """A C."""\n    size: int = 3\n\n    def m(self, x):\n'
            "        return x\n\n    def n(self):\n        pass\nclass D: pass",
            'class C:\n    """A C."""\n    size: int = 3\n    def m(self, x):\n    def n(self):',
        ),
        # A long docstring is cut and closed again.
        (
            'def f():\n    """One.\n\n    two\n    three\n    four\n    five\n    six\n    """\n'
            "    return 1",
            'def f():\n    """One.\n\n    two\n    three\n    four\n    """\n    return 1',
        ),
        # TypeScript: an interface whole, with its closing brace.
        (
            "export interface Point {\n  x: number;\n  y: number;\n}\nexport const Z = 1;",
            "export interface Point {\n  x: number;\n  y: number;\n}",
        ),
        ("", ""),
        ("\n\ndef f(): pass", ""),  # the definition's line is blank: nothing to show
    ],
)
def test_excerpt(text: str, expected: str) -> None:
    assert excerpt(text) == expected


@pytest.mark.parametrize(
    ("above", "kept"),
    [
        # A JSDoc comment right above: kept whole; what is above it is not.
        ("const x = 1;\n/**\n * The distance.\n * @param a a point\n */", 4),
        ("@functools.cache\n@staticmethod", 2),  # decorators
        ("// one\n\n// two", 1),  # a blank line ends the block
        ("x = 1", 0),
        ("", 0),
        # A long doc comment: its first lines and the one that closes it.
        ("/**\n" + " * line\n" * 20 + " */", 8),
    ],
)
def test_excerpt_keeps_the_doc_comment_above(above: str, kept: int) -> None:
    cut = excerpt("export function f(a: P): number {\n  return 1;\n}", above)
    lines = cut.split("\n")
    assert lines[kept:] == ["export function f(a: P): number {", "  return 1;", "}"]
    assert lines[:kept] == (above.split("\n")[-kept:] if kept not in (0, 8) else lines[:kept])
    if kept == 8:
        assert lines[0] == "/**" and lines[7] == " */"


def test_a_module_is_shown_as_its_outline() -> None:
    assert is_module(0, "errors", "file:///ws/email/errors.py")
    assert is_module(0, "email", "file:///ws/email/__init__.py")
    assert not is_module(3, "errors", "file:///ws/email/errors.py")  # a definition in it
    assert not is_module(0, "HeaderError", "file:///ws/email/errors.py")
    text = '"""Errors."""\n\nimport os\n\nclass MessageError(Exception):\n    """Base."""\n\n'
    text += "def helper(x):\n    return x\nLIMIT = 3\n"
    assert module_outline(text) == "class MessageError(Exception):\ndef helper(x):\nLIMIT = 3"


LONG_MODULE = "".join(f"class Error{i}(Exception):\n    pass\n\n" for i in range(100))


@pytest.mark.parametrize(
    ("used", "kept"),
    [
        # Nothing used yet: the first definitions that fit, in order.
        ((), ["Error0", "Error1", "Error2"]),
        # The ones the file already uses from the module come first, shown in file order.
        (("Error97", "Error3", "missing"), ["Error0", "Error3", "Error97"]),
    ],
)
def test_a_long_modules_outline_keeps_what_the_file_uses(
    used: tuple[str, ...], kept: list[str]
) -> None:
    """The outline of a module the editor sent whole (a definition on its first line), when
    its definitions do not all fit."""
    outline = module_outline(LONG_MODULE, used, chars_limit=len("class Error00(Exception):\n") * 3)
    assert [line.split("(")[0].removeprefix("class ") for line in outline.split("\n")] == kept


def test_used_from() -> None:
    text = "x = errors.A()\nraise errors.B\nmy_errors.C\nself.errors.D\nerrors .E\n"
    assert used_from("errors", text) == ["A", "B"]


def test_excerpt_is_bounded() -> None:
    huge = "def f():\n" + "".join(f"    x{i} = {'y' * 200}\n" for i in range(10_000))
    cut = excerpt(huge)
    assert len(cut) <= 800 and cut.startswith("def f():\n    x0 = ")
    assert excerpt("x" * 100_000) == ""  # one line over the budget: nothing


def test_cache_drops_what_an_edited_target_said_and_forgets_closed_documents() -> None:
    cache = DefinitionCache()
    cache.put("file:///a.py", "f", Definition("file:///b.py", 3, "def f(): ..."))
    cache.put("file:///a.py", "g", None)  # asked; the editor had nothing
    cache.put("file:///c.py", "f", Definition("file:///b.py", 3, "def f(): ..."))
    assert cache.known("file:///a.py", "g") and cache.get("file:///a.py", "g") is None
    cache.target_changed("file:///b.py")
    assert not cache.known("file:///a.py", "f") and not cache.known("file:///c.py", "f")
    assert cache.known("file:///a.py", "g")
    cache.forget_document("file:///a.py")
    assert not cache.known("file:///a.py", "g")


def test_none_found_is_believed_for_a_while_only(monkeypatch: pytest.MonkeyPatch) -> None:
    # A language server loading its project answers nothing at first: ask again later.
    cache = DefinitionCache()
    cache.put("file:///a.py", "f", None)
    assert cache.known("file:///a.py", "f") and cache.get("file:///a.py", "f") is None
    now = time.monotonic()
    monkeypatch.setattr(time, "monotonic", lambda: now + 11)
    assert not cache.known("file:///a.py", "f")


def test_cache_entries_expire() -> None:
    cache = DefinitionCache(ttl=0.01)
    cache.put("file:///a.py", "f", Definition("file:///b.py", 0, "def f(): ..."))
    assert cache.known("file:///a.py", "f")
    time.sleep(0.02)
    assert not cache.known("file:///a.py", "f")


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        (None, [None, None]),
        ({"definitions": []}, [None, None]),
        (
            {
                "definitions": [
                    {"uri": "file:///b.py", "range": {"start": {"line": 4, "character": 0}},
                     "text": "def f(): ..."},
                    None,
                    "garbage",
                ]
            },
            [Definition("file:///b.py", 4, "def f(): ..."), None],
        ),
        # The lines above it (a doc comment), the last 10 of them.
        (
            {"definitions": [{"uri": "file:///b.ts", "range": {"start": {"line": 40}},
                              "text": "function f() {}", "above": "x\n" * 20 + "/** F. */"}]},
            [Definition("file:///b.ts", 40, "function f() {}", "x\n" * 9 + "/** F. */"), None],
        ),
        # Entries that cannot be read are None, not the whole answer.
        (
            {"definitions": [{"uri": "file:///b.py", "range": {"start": {"line": -1}},
                              "text": "x"}, {"uri": 3, "text": "x"}]},
            [None, None],
        ),
    ],
)  # fmt: skip
def test_definitions_result(result: object, expected: list[Definition | None]) -> None:
    assert definitions_result(result, 2) == expected


def test_definitions_result_as_pygls_hands_it_over() -> None:
    # pygls gives the result of a method it has no type for as named tuples.
    from collections import namedtuple

    Object = namedtuple("Object", ["definitions"])
    Entry = namedtuple("Entry", ["uri", "range", "text"])
    Range = namedtuple("Range", ["start", "end"])
    Position = namedtuple("Position", ["line", "character"])
    where = Range(Position(2, 4), Position(2, 9))
    result = Object([Entry("file:///b.py", where, "def f(): ..."), None])
    assert definitions_result(result, 2) == [Definition("file:///b.py", 2, "def f(): ..."), None]


@pytest.mark.parametrize("result", [[], "x", {"definitions": "x"}, {"other": []}])
def test_definitions_result_that_is_not_one(result: object) -> None:
    with pytest.raises(EditorRequestFailed):
        definitions_result(result, 1)


@pytest.mark.parametrize(
    ("line", "max_lines", "max_chars"),
    [(3, 60, 8000), (0, MODULE_TEXT_LINES, MODULE_TEXT_CHARS)],  # line 0: likely a whole module
)
def test_a_huge_definition_text_is_cut(line: int, max_lines: int, max_chars: int) -> None:
    text = "x = 1\n" * 50_000
    entry = {"uri": "file:///b.py", "range": {"start": {"line": line}}, "text": text}
    (found,) = definitions_result({"definitions": [entry]}, 1)
    assert found is not None and found.text.count("\n") == max_lines - 1
    assert len(found.text) <= max_chars


def test_announcement_and_params() -> None:
    assert announces({"lspInfer": {"definitions": True}}, "definitions")
    for no in (None, {}, {"lspInfer": True}, {"lspInfer": {"definitions": "yes"}}):
        assert not announces(no, "definitions")
    # Each feature on its own: announcing one is not announcing the other.
    assert announces({"lspInfer": {"suggestionReady": True}}, "suggestionReady")
    assert not announces({"lspInfer": {"suggestionReady": True}}, "definitions")
    text = "é = 1\nab(é)\n"
    params = definitions_params("file:///a.py", text, [text.index("ab"), 9], "utf-16")
    assert params["positions"] == [{"line": 1, "character": 0}, {"line": 1, "character": 3}]


class FakeEditor:
    """An editor whose answer to lspInfer/definitions is scripted (delay, error, result)."""

    def __init__(self, delay: float = 0.0, error: bool = False, supported: bool = True):
        self.delay, self.error, self.supported = delay, error, supported
        self.asked: list[list[int]] = []

    def definitions_supported(self) -> bool:
        return self.supported

    async def definitions(
        self, uri: str, text: str, offsets: Sequence[int]
    ) -> list[Definition | None]:
        self.asked.append(list(offsets))
        await asyncio.sleep(self.delay)
        if self.error:
            raise EditorRequestFailed("scripted error")
        return [
            Definition(f"file:///lib/{text[o : o + 8].split('(')[0]}.py", 0,
                       f"def {text[o : o + 8].split('(')[0]}(x):\n    return x")
            for o in offsets
        ]  # fmt: skip


TEXT = "from lib import alpha, beta\n\ndef f(x):\n    return alpha(x) + beta(x)\n"
URI = "file:///ws/main.py"


def make(editor: FakeEditor, excluded: frozenset[str] = frozenset()) -> EditorDefinitions:
    return EditorDefinitions(editor, lambda uri: uri in excluded)  # type: ignore[arg-type]


async def test_answers_fill_the_cache_and_are_asked_once() -> None:
    editor = FakeEditor()
    definitions = make(editor)
    await definitions.refresh(URI, TEXT, len(TEXT) - 1, budget_ms=100)
    chunks = definitions.chunks(URI, TEXT, len(TEXT) - 1)
    assert [c.text.split("(")[0] for c in chunks] == ["def beta", "def alpha"]  # nearest first
    await definitions.refresh(URI, TEXT, len(TEXT) - 1, budget_ms=100)
    assert len(editor.asked) == 1  # cached: not asked again
    stats = definitions.stats.as_json(definitions.supported)
    assert stats["requests"] == 1 and stats["asked"] == 2 and stats["answered"] == 2
    assert stats["p50Ms"] is not None and stats["timedOut"] == stats["failed"] == 0
    definitions.note_used(URI, [("file:///lib/alpha.py", 0)])
    definitions.note_used(URI, [("file:///lib/alpha.py", 0), ("file:///lib/beta.py", 0)])
    assert definitions.stats.used == 2


async def test_a_late_answer_stops_the_wait_but_serves_the_next_pick() -> None:
    editor = FakeEditor(delay=0.3)
    definitions = make(editor)
    loop = asyncio.get_running_loop()
    started = loop.time()
    await definitions.refresh(URI, TEXT, len(TEXT) - 1, budget_ms=50)
    assert loop.time() - started < 0.25  # the wait stopped at the budget
    assert definitions.stats.timed_out == 1
    assert definitions.chunks(URI, TEXT, len(TEXT) - 1) == []
    # Asked again while the answer is on its way: not a second request.
    await definitions.refresh(URI, TEXT, len(TEXT) - 1, budget_ms=50)
    assert len(editor.asked) == 1
    await asyncio.sleep(0.35)
    assert len(definitions.chunks(URI, TEXT, len(TEXT) - 1)) == 2


async def test_errors_unsupported_clients_and_excluded_files() -> None:
    failing = make(FakeEditor(error=True))
    await failing.refresh(URI, TEXT, len(TEXT) - 1, budget_ms=100)
    assert failing.stats.failed == 1 and failing.chunks(URI, TEXT, len(TEXT) - 1) == []
    silent = FakeEditor(supported=False)
    await make(silent).refresh(URI, TEXT, len(TEXT) - 1, budget_ms=100)
    assert silent.asked == []
    # An excluded document asks nothing; a definition in an excluded file is never shown.
    guarded = FakeEditor()
    await make(guarded, frozenset([URI])).refresh(URI, TEXT, len(TEXT) - 1, budget_ms=100)
    assert guarded.asked == []
    hiding = make(FakeEditor(), frozenset(["file:///lib/beta.py"]))
    await hiding.refresh(URI, TEXT, len(TEXT) - 1, budget_ms=100)
    assert [c.uri for c in hiding.chunks(URI, TEXT, len(TEXT) - 1)] == ["file:///lib/alpha.py"]


async def test_an_edit_of_the_target_file_asks_again() -> None:
    editor = FakeEditor()
    definitions = make(editor)
    await definitions.refresh(URI, TEXT, len(TEXT) - 1, budget_ms=100)
    definitions.changed("file:///lib/alpha.py")
    await definitions.refresh(URI, TEXT, len(TEXT) - 1, budget_ms=100)
    assert len(editor.asked) == 2 and len(editor.asked[1]) == 1


def test_a_module_is_cached_as_its_top_level_lines_only() -> None:
    """Up to 200,000 characters come for a module; the cache keeps what its outline needs."""
    cache = DefinitionCache()
    body = "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(2000))
    cache.put("file:///a.py", "errors", Definition("file:///errors.py", 0, body))
    kept = cache.get("file:///a.py", "errors")
    assert isinstance(kept, Definition) and kept.text.split("\n")[-1] == "def f1999(x):"
    assert "return" not in kept.text and len(kept.text) < len(body) / 2
    assert module_outline(kept.text, ["f1999"]).startswith("def f0(x):")
    assert "def f1999(x):" in module_outline(kept.text, ["f1999"])
    # A definition that starts a file but is not a module: kept to what its cut reads.
    cache.put("file:///a.py", "f0", Definition("file:///errors.py", 0, body))
    first = cache.get("file:///a.py", "f0")
    assert isinstance(first, Definition) and first.text == "\n".join(body.split("\n")[:60])
    # A definition elsewhere is kept as it came.
    cache.put("file:///a.py", "f3", Definition("file:///errors.py", 9, "def f3(x):\n    return x"))
    assert cache.get("file:///a.py", "f3") == Definition(
        "file:///errors.py", 9, "def f3(x):\n    return x"
    )
