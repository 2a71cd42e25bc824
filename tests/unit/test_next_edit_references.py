"""Renames from the editor's references (next_edit/references.py): the spans followed through
the edits, the rename carried to the others, every gate; the service's asking and counting;
the answer read at the protocol edge."""

from __future__ import annotations

import asyncio
import re

import pytest

from lsp_infer.documents import Snapshot, Splice
from lsp_infer.editor import EditorRequestFailed
from lsp_infer.lsp.convert import references_params, references_result
from lsp_infer.next_edit.edits import applied
from lsp_infer.next_edit.history import EditHistory
from lsp_infer.next_edit.predict import predict
from lsp_infer.next_edit.references import References, Span, references_in, rename_from_references
from lsp_infer.next_edit.service import NextEdits
from lsp_infer.next_edit.syntax import Syntax

from .test_next_edit import backspaces, keys


def spans_of(text: str, name: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in re.finditer(rf"\b{re.escape(name)}\b", text)]


def typed(history: EditHistory, references: References, text: str, splices: list[Splice]) -> str:
    """``text`` after ``splices``, each recorded in ``history`` and moving ``references``."""
    for splice in splices:
        history.record(text, splice)
        references.splice(splice)
        text = text[: splice.start] + splice.new + text[splice.end :]
    return text


def renamed(text: str, name: str, at: int, new: str, syntax: Syntax | None,
            spans: list[tuple[int, int]] | None = None) -> str | None:  # fmt: skip
    """The document after the rename's next edit: the references of ``name`` (its whole-word
    occurrences, or ``spans``) taken before the edit, then ``name``'s ``at``-th occurrence
    deleted and ``new`` typed key by key; None when nothing is offered."""
    references = references_in(text, name, spans if spans is not None else spans_of(text, name))
    assert references is not None
    history = EditHistory()
    start = spans_of(text, name)[at][0]
    text = typed(
        history, references, text, [*backspaces(start + len(name), len(name)), *keys(start, new)]
    )
    assert history.latest is not None
    prediction = rename_from_references(text, history.latest, references, syntax)
    return None if prediction is None else applied(text, prediction.edits)


ATTRIBUTE = """class Box:
    def __init__(self, w):
        self.wdth = w

    def area(self, h):
        return self.wdth * h
"""


def test_an_attribute_renamed_where_it_is_set_is_renamed_at_its_uses() -> None:
    # The scope rules refuse attributes; the language server knows them.
    assert renamed(ATTRIBUTE, "wdth", 0, "width", "python") == ATTRIBUTE.replace("wdth", "width")


def test_renamed_at_a_use_the_declaration_follows() -> None:
    assert renamed(ATTRIBUTE, "wdth", 1, "width", "python") == ATTRIBUTE.replace("wdth", "width")


def test_only_the_spans_the_language_server_gave_are_renamed() -> None:
    text = "a = 1\ndef f():\n    a = 2\n    return a\n"
    inner = spans_of(text, "a")[1:]  # the function's own `a`, not the module's
    assert renamed(text, "a", 1, "b", "python", inner) == \
        "a = 1\ndef f():\n    b = 2\n    return b\n"  # fmt: skip


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (ATTRIBUTE + "width = 3\n", "the new name is in the document already"),
        ("from m import wdth\nprint(wdth)\n", "an imported name"),
        ("from m import (\n    wdth,\n)\nprint(wdth)\n", "an import over several lines"),
    ],
)
def test_refused(text: str, why: str) -> None:
    assert renamed(text, "wdth", -1, "width", "python") is None, why


def test_a_member_rename_must_leave_no_use_of_the_old_name() -> None:
    # The language server missed the use in another method (it could not tell self's type
    # there): carried to the others only, the class would break. Nothing is offered.
    text = ATTRIBUTE + "    def half(self):\n        return self.wdth / 2\n"
    found = spans_of(text, "wdth")
    assert renamed(text, "wdth", 0, "width", "python", found) == text.replace("wdth", "width")
    assert renamed(text, "wdth", 0, "width", "python", found[:2]) is None
    # The same in a language without a parser here.
    assert renamed(text, "wdth", 0, "width", None, found[:2]) is None


def test_a_member_of_the_old_name_left_refuses_but_a_variable_does_not() -> None:
    # `wdth` the parameter is another name: the attribute's rename is offered beside it.
    text = "class Box:\n    def __init__(self, wdth):\n        self.wdth = wdth\n" \
        "    def area(self):\n        return self.wdth\n"  # fmt: skip
    at = text.index("self.wdth") + 5
    attribute = [(at, at + 4), (text.rindex("wdth"), text.rindex("wdth") + 4)]
    assert renamed(text, "wdth", 1, "width", "python", attribute) == \
        text.replace("self.wdth", "self.width")  # fmt: skip
    # A class-level binding of the old name left (jedi missed `wdth = property(…)`): refused.
    with_property = text + "    wdth = property(area)\n"
    assert renamed(with_property, "wdth", 1, "width", "python", attribute) is None
    js = "class Box {\n  constructor(wdth) { this.wdth = wdth; }\n" \
        "  area() { return this.wdth; }\n}\n"  # fmt: skip
    member = [(m.start(), m.end()) for m in re.finditer(r"(?<=this\.)wdth", js)]
    assert renamed(js, "wdth", 1, "width", "javascript", member) == \
        js.replace("this.wdth", "this.width")  # fmt: skip
    assert renamed(js, "wdth", 1, "width", "javascript", member[:1]) is None


def test_the_scope_rules_come_first_where_they_can_read_the_file() -> None:
    # jedi's references are flow-sensitive (a later `x = f(x)` starts another); the scope
    # rules rename the variable everywhere, as rope and every editor's rename do.
    text = "def f(x):\n    x = sorted(x)\n    return x\n"
    first_only = spans_of(text, "x")[:2]
    references = references_in(text, "x", first_only)
    assert references is not None
    history, now = EditHistory(), text
    now = typed(history, references, now, [*backspaces(7, 1), *keys(6, "xs")])

    prediction = predict(now, history.edits, "python", references)
    assert prediction is not None and not prediction.from_references
    assert applied(now, prediction.edits) == text.replace("x", "xs").replace("sorxsed", "sorted")
    # Without a parser here, the references answer.
    prediction = predict(now, history.edits, None, references)
    assert prediction is not None and prediction.from_references


def test_a_refused_rename_of_a_name_the_language_server_knows_is_not_repeated() -> None:
    # Without a parser here, a line that read the same is the repeat rule's: but the name is
    # one the language server named, and its rename was refused (the new name is taken), so
    # nothing is offered, not that line's change alone.
    c = "int f(int n) {\n  compute(n, 1);\n  compute(n, 1);\n  return m;\n}\n"
    spans = spans_of(c, "n")
    references = references_in(c, "n", spans)
    assert references is not None
    history, now = EditHistory(), c
    at = spans[1][0]
    now = typed(history, references, now, [Splice(at, at + 1, ""), *keys(at, "m")])
    assert predict(now, history.edits, None) is not None  # the repeat rule, alone
    assert predict(now, history.edits, None, references) is None


def test_a_use_changed_meanwhile_refuses_all() -> None:
    references = references_in(ATTRIBUTE, "wdth", spans_of(ATTRIBUTE, "wdth"))
    assert references is not None
    text, history = ATTRIBUTE, EditHistory()
    use = spans_of(ATTRIBUTE, "wdth")[1][0]
    # The use changed to another attribute first, then the declaration renamed.
    text = typed(
        history,
        references,
        text,
        [Splice(use, use + 4, "hght"), *backspaces(spans_of(text, "wdth")[0][1], 4)],
    )
    at = spans_of(ATTRIBUTE, "wdth")[0][0]
    text = typed(history, references, text, keys(at, "width"))
    assert history.latest is not None
    assert rename_from_references(text, history.latest, references, "python") is None


def test_another_name_renamed_is_not_this_ones() -> None:
    references = references_in(ATTRIBUTE, "w", spans_of(ATTRIBUTE, "w"))  # the parameter's
    assert references is not None
    history, text, at = EditHistory(), ATTRIBUTE, ATTRIBUTE.index("wdth")
    text = typed(history, references, text, [Splice(at, at + 4, ""), *keys(at, "width")])
    assert history.latest is not None
    assert rename_from_references(text, history.latest, references, "python") is None


def test_a_language_without_a_parser_here() -> None:
    go = "package shapes\n\nfunc area(wdth int) int {\n\treturn wdth * wdth\n}\n"
    assert renamed(go, "wdth", 0, "width", None) == go.replace("wdth", "width")
    imported = 'import (\n\t"fmt"\n)\n\nfunc f() {\n\tfmt.Println(1)\n\tfmt.Print(2)\n}\n'
    # `fmt` on the import line is the package's name: never renamed from here.
    assert renamed(imported, "fmt", 1, "fmtx", None, spans_of(imported, "fmt")[1:]) == \
        imported.replace("fmt.", "fmtx.")  # fmt: skip
    use_line = "use std::fmt;\nfn f() { fmt::x(); }\n"
    assert renamed(use_line, "fmt", 1, "f2", None) is None


def test_a_c_name_that_is_a_python_keyword_is_a_name() -> None:
    c = "void f(FILE *in) {\n  read(in);\n  close(in);\n}\n"
    assert renamed(c, "in", 0, "source", None) == c.replace("in)", "source)").replace(
        "*in", "*source")  # fmt: skip


def test_javascript_shorthand_keeps_its_key_and_imports_are_refused() -> None:
    js = "function f(wdth) {\n  return {wdth, area: wdth * 2};\n}\n"
    assert renamed(js, "wdth", 0, "width", "javascript") == \
        "function f(width) {\n  return {wdth: width, area: width * 2};\n}\n"  # fmt: skip
    # Typed over at the shorthand: the key or only the variable?
    assert renamed(js, "wdth", 1, "width", "javascript") is None
    ts = "import {wdth} from './m';\nconsole.log(wdth);\n"
    assert renamed(ts, "wdth", 1, "width", "typescript") is None
    # Typed over in the import: another name imported, or this one as another (`wdth as
    # width`, which TypeScript's rename writes)? Nothing offered.
    assert renamed(ts, "wdth", 0, "width", "typescript") is None
    py = "from m import wdth\nprint(wdth)\n"
    assert renamed(py, "wdth", 0, "width", "python") is None
    # A JSDoc type names it too, which no reference does (TypeScript's rename follows it).
    jsdoc = "var Buf = require('b').Buf;\n/** @param {String|Buf} x */\nfunction f(x) {\n" \
        "  return Buf.from(x) + Buf.alloc(1);\n}\n"  # fmt: skip
    code = [(m.start(), m.end()) for m in re.finditer(r"\bBuf\b", jsdoc)]
    code = [span for span in code if not 20 <= span[0] <= 60]  # the variable's: 3 of 5
    assert renamed(jsdoc, "Buf", 0, "Buffer2", "javascript", code) is None


def test_a_span_touched_but_still_the_old_name_is_renamed_too() -> None:
    text = "def f(wdth):\n    return wdth\n"
    references = references_in(text, "wdth", spans_of(text, "wdth"))
    assert references is not None
    history = EditHistory()
    end = spans_of(text, "wdth")[1][1]
    splices = [Splice(end, end, "()"), *backspaces(10, 4), *keys(6, "width")]
    text = typed(history, references, text, splices)
    assert history.latest is not None
    prediction = rename_from_references(text, history.latest, references, "python")
    assert prediction is not None
    assert applied(text, prediction.edits) == "def f(width):\n    return width()\n"


def test_the_answer_keeps_only_spans_that_read_the_name() -> None:
    text = "ab = 1\nab\n"
    kept = references_in(text, "ab", [(0, 2), (7, 9), (3, 5), (7, 9), (-1, 2), (8, 99)])
    assert kept is not None
    assert [(s.start, s.end) for s in kept.spans] == [(0, 2), (7, 9)]
    assert references_in(text, "ab", [(3, 5)]) is None


def test_a_span_moves_and_is_touched_as_the_text_changes() -> None:
    span = Span(10, 14)
    assert span.spliced(Splice(0, 2, "")) == Span(8, 12)
    assert span.spliced(Splice(20, 21, "xx")) == Span(10, 14)
    assert span.spliced(Splice(10, 14, "")) == Span(10, 10, touched=True)
    assert span.spliced(Splice(14, 14, "a")) == Span(10, 15, touched=True)
    references = References("x", [Span(0, 1), Span(5, 6, touched=True)])
    assert references.covers(1) and not references.covers(5)


# -- the service ---------------------------------------------------------------------


class ReferencesEditor:
    """An editor whose lspInfer/references answer is scripted: the whole-word occurrences
    of the name asked about, after ``gate`` is set (so that edits can come meanwhile)."""

    def __init__(self, error: bool = False) -> None:
        self.error = error
        self.gate = asyncio.Event()
        self.asked: list[tuple[str, int, int]] = []

    def references_supported(self) -> bool:
        return True

    async def references(
        self, uri: str, version: int, text: str, offset: int
    ) -> list[tuple[int, int]] | None:
        self.asked.append((uri, version, offset))
        await self.gate.wait()
        if self.error:
            raise EditorRequestFailed("scripted error")
        name = re.match(r"\w+", text[offset:])
        assert name is not None
        return spans_of(text, name.group())


def test_the_service_asks_follows_the_edits_and_renames() -> None:
    async def run() -> None:
        service, editor = NextEdits(), ReferencesEditor()
        uri, text = "file:///box.py", ATTRIBUTE
        at = text.index("wdth")
        service.ask_references(Snapshot(uri, 1, text, "python"), at + 2, editor)  # type: ignore[arg-type]
        service.ask_references(Snapshot(uri, 1, text, "python"), at, editor)  # type: ignore[arg-type]
        await asyncio.sleep(0.01)
        assert len(editor.asked) == 1  # one in flight per document
        # The user types over the name before the answer comes.
        before = text
        for splice in [Splice(at, at + 4, "w"), *keys(at + 1, "idth")]:
            service.changed(uri, before, [splice])
            before = before[: splice.start] + splice.new + before[splice.end :]
        editor.gate.set()
        await asyncio.sleep(0.01)
        issued = await service.predict(Snapshot(uri, 7, before, "python"))
        assert issued is not None
        _id, prediction = issued
        assert prediction.kind == "rename"
        assert applied(before, prediction.edits) == ATTRIBUTE.replace("wdth", "width")
        stats = service.stats()
        assert stats["references"] == {"asked": 1, "answered": 1, "empty": 0, "failed": 0,
                                       "used": 1}  # fmt: skip
        assert stats["byKind"]["referenceRename"]["predicted"] == 1
        # The name at the cursor is another now: asked again.
        service.ask_references(Snapshot(uri, 7, before, "python"), before.rindex("width"), editor)  # type: ignore[arg-type]
        await asyncio.sleep(0.01)
        assert len(editor.asked) == 2

    asyncio.run(run())


def test_a_name_whose_uses_are_known_is_not_asked_again() -> None:
    async def run() -> None:
        service, editor = NextEdits(), ReferencesEditor()
        editor.gate.set()
        snapshot = Snapshot("file:///box.py", 1, ATTRIBUTE, "python")
        service.ask_references(snapshot, ATTRIBUTE.index("wdth"), editor)  # type: ignore[arg-type]
        await asyncio.sleep(0.01)
        service.ask_references(snapshot, ATTRIBUTE.rindex("wdth") + 4, editor)  # type: ignore[arg-type]
        await asyncio.sleep(0.01)
        assert len(editor.asked) == 1
        service.ask_references(snapshot, ATTRIBUTE.index("area"), editor)  # type: ignore[arg-type]
        await asyncio.sleep(0.01)
        assert len(editor.asked) == 2

    asyncio.run(run())


def test_the_service_without_an_answer_falls_back_to_the_scope_rules() -> None:
    async def run() -> None:
        service, editor = NextEdits(), ReferencesEditor(error=True)
        uri, text = "file:///f.py", "def f(wdth):\n    return wdth\n"
        service.ask_references(Snapshot(uri, 1, text, "python"), 7, editor)  # type: ignore[arg-type]
        editor.gate.set()
        await asyncio.sleep(0.01)
        before = text
        for splice in [*backspaces(10, 4), *keys(6, "width")]:
            service.changed(uri, before, [splice])
            before = before[: splice.start] + splice.new + before[splice.end :]
        issued = await service.predict(Snapshot(uri, 9, before, "python"))
        assert issued is not None
        assert applied(before, issued[1].edits) == "def f(width):\n    return width\n"
        stats = service.stats()
        assert stats["references"]["failed"] == 1 and stats["references"]["used"] == 0
        assert stats["byKind"]["rename"]["predicted"] == 1

    asyncio.run(run())


def test_closing_the_document_drops_what_was_asked() -> None:
    async def run() -> None:
        service, editor = NextEdits(), ReferencesEditor()
        uri = "file:///f.py"
        service.ask_references(Snapshot(uri, 1, "x = 1\nx\n", "python"), 0, editor)  # type: ignore[arg-type]
        service.forget(uri)
        editor.gate.set()
        await asyncio.sleep(0.01)
        assert service.stats()["references"]["answered"] == 0
        # Not on a name: nothing asked.
        service.ask_references(Snapshot(uri, 1, "x = 1\n", "python"), 2, editor)  # type: ignore[arg-type]
        await asyncio.sleep(0.01)
        assert len(editor.asked) == 1

    asyncio.run(run())


# -- the protocol edge ---------------------------------------------------------------


def test_the_request_and_its_answer_in_the_negotiated_encoding() -> None:
    text = "é = 1\nx = é\n"
    at = text.rindex("é")
    assert references_params("file:///a.py", 3, text, at, "utf-16") == {
        "textDocument": {"uri": "file:///a.py", "version": 3},
        "position": {"line": 1, "character": 4},
    }
    assert references_params("file:///a.py", 3, text, at, "utf-8")["position"]["character"] == 4
    answer = {"references": [
        {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}},
        {"start": {"line": 1, "character": 4}, "end": {"line": 1, "character": 5}},
        {"start": {"line": 9, "character": 0}, "end": {"line": 9, "character": 1}},  # past the end
        {"start": {"line": True, "character": 0}, "end": {"line": 0, "character": 1}},
        "junk",
    ]}  # fmt: skip
    assert references_result(answer, text, "utf-16") == [(0, 1), (10, 11)]
    assert references_result(None, text, "utf-16") is None
    assert references_result({"references": []}, text, "utf-16") == []
    with pytest.raises(EditorRequestFailed):
        references_result({"refs": 1}, text, "utf-16")
