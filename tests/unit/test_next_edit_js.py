"""Renames carried to a JavaScript or TypeScript binding's other uses (next_edit/js_scopes.py
through predict): the language's scopes, its shorthand properties, JSDoc's ``@param``, and
every refusal."""

from __future__ import annotations

import asyncio

import pytest

from lsp_infer.documents import Snapshot, Splice
from lsp_infer.next_edit.edits import applied
from lsp_infer.next_edit.history import EditHistory
from lsp_infer.next_edit.js_scopes import is_code_name, parses, same_binding
from lsp_infer.next_edit.predict import predict
from lsp_infer.next_edit.service import NextEdits
from lsp_infer.next_edit.syntax import Syntax


def renamed(source: str, marker: str, new: str, syntax: Syntax) -> str | None:
    """The text after the user renames, key by key, the last identifier of ``marker`` (at
    ``marker``'s first place in ``source``) to ``new`` and accepts the prediction; None if
    nothing is offered."""
    at = source.index(marker)
    end = at + len(marker)
    while not (source[end - 1].isalnum() or source[end - 1] in "_$"):
        end -= 1
    start = end
    while start > at and (source[start - 1].isalnum() or source[start - 1] in "_$"):
        start -= 1
    history, text = EditHistory(), source
    for i in range(end - start, 0, -1):  # backspaced from its end
        text = _typed(history, text, Splice(start + i - 1, start + i, ""))
    for i, char in enumerate(new):
        text = _typed(history, text, Splice(start + i, start + i, char))
    prediction = predict(text, history.edits, syntax)
    if prediction is None:
        return None
    assert prediction.kind == "rename"
    return applied(text, prediction.edits)


def _typed(history: EditHistory, text: str, splice: Splice) -> str:
    history.record(text, splice)
    return text[: splice.start] + splice.new + text[splice.end :]


AREA = """function area(wdth: number, height: number): number {
  return wdth * height;
}

function double(wdth: number) {
  return wdth * 2;
}
"""


@pytest.mark.parametrize(
    ("source", "marker", "new", "expected", "syntax"),
    [
        # A parameter: its function's uses, not another function's parameter of the name.
        (AREA, "area(wdth", "width", AREA.replace("wdth", "width", 2), "typescript"),
        # Renamed at a use: the declaration and the other uses.
        (AREA, "return wdth", "width", AREA.replace("wdth", "width", 2), "typescript"),
        # `var` is the whole function's, wherever it is declared (hoisted).
        (
            "function f() {\n  total = 1;\n  var total;\n  return total;\n}\n",
            "var total",
            "sum",
            "function f() {\n  sum = 1;\n  var sum;\n  return sum;\n}\n",
            "javascript",
        ),
        # `let` is its block's: the inner one is another variable.
        (
            "let x = 1;\n{\n  let x = 2;\n  use(x);\n}\nuse(x);\n",
            "x",
            "y",
            "let y = 1;\n{\n  let x = 2;\n  use(x);\n}\nuse(y);\n",
            "javascript",
        ),
        # A shorthand property keeps its key; so does a destructured one.
        (
            "function make(wdth) {\n  return { wdth, height: 1 };\n}\n",
            "make(wdth",
            "width",
            "function make(width) {\n  return { wdth: width, height: 1 };\n}\n",
            "javascript",
        ),
        (
            "const { wdth } = box;\nuse(wdth);\n",
            "use(wdth",
            "width",
            "const { wdth: width } = box;\nuse(width);\n",
            "typescript",
        ),
        # An arrow function's bare parameter; a catch's; a loop's `const`.
        (
            "const f = wdth => wdth * 2;\n",
            "wdth",
            "width",
            "const f = width => width * 2;\n",
            "javascript",
        ),
        (
            "try { run(); } catch (err) { log(err); }\n",
            "err",
            "error",
            "try { run(); } catch (error) { log(error); }\n",
            "javascript",
        ),
        (
            "for (const item of items) {\n  use(item);\n}\nuse(item);\n",
            "item",
            "entry",
            "for (const entry of items) {\n  use(entry);\n}\nuse(item);\n",
            "typescript",
        ),
        # A named function expression's name is its own.
        (
            "const f = function fact(n) { return n ? n * fact(n - 1) : 1; };\n",
            "fact",
            "fac",
            "const f = function fac(n) { return n ? n * fac(n - 1) : 1; };\n",
            "javascript",
        ),
        # JSDoc's @param names the parameter: renamed with it, as TypeScript's rename does.
        (
            "/**\n * @param {number} wdth the width\n * @param {Object} opts\n * @param "
            "{string} opts.unit\n */\nfunction f(wdth, opts) {\n  return wdth + opts.unit;\n}\n",
            "f(wdth",
            "width",
            "/**\n * @param {number} width the width\n * @param {Object} opts\n * @param "
            "{string} opts.unit\n */\nfunction f(width, opts) {\n  return width + opts.unit;\n}\n",
            "javascript",
        ),
        (
            "/** @param {{a: number}} [wdth=1] */\napp.f = function (wdth) { return wdth; };\n",
            "(wdth",
            "width",
            "/** @param {{a: number}} [width=1] */\napp.f = function (width) { return width; };\n",
            "javascript",
        ),
        # TSX: a destructured prop, its use in an element; `<div>` is no variable.
        (
            "function C({ div }: P) {\n  return <div>{div}</div>;\n}\n",
            "{div}",
            "box",
            "function C({ div: box }: P) {\n  return <div>{box}</div>;\n}\n",
            "tsx",
        ),
        # Characters of more than one byte before the name: offsets are the text's.
        (
            'const s = "é€😀";\nlet wdth = 1;\nuse(wdth, s);\n',
            "let wdth",
            "width",
            'const s = "é€😀";\nlet width = 1;\nuse(width, s);\n',
            "typescript",
        ),
    ],
)
def test_a_rename_is_carried_to_the_same_binding(
    source: str, marker: str, new: str, expected: str, syntax: Syntax
) -> None:
    assert renamed(source, marker, new, syntax) == expected


@pytest.mark.parametrize(
    ("source", "marker", "new", "syntax"),
    [
        # Renamed at a shorthand: the key meant, or only the variable? Not guessed.
        ("const { wdth } = box;\nuse(wdth);\n", "{ wdth", "width", "typescript"),
        # Imported or exported by name: renaming changes what is imported or exported.
        ('import { wdth } from "./m";\nuse(wdth);\n', "use(wdth", "width", "typescript"),
        ("const wdth = 1;\nexport { wdth };\nuse(wdth);\n", "const wdth", "width", "javascript"),
        ('import * as m from "./m";\nm.f();\nuse(m);\n', "use(m", "mod", "typescript"),
        # A class in TypeScript is a type too: which one a name means takes the checker.
        (
            "class Point {}\nconst p: Point = new Point();\nuse(Point);\n",
            "new Point",
            "Spot",
            "typescript",
        ),
        # An enum, a namespace: types as well as values.
        ("enum Color { Red }\nuse(Color.Red, Color);\n", "use(Color", "Hue", "typescript"),
        # A constructor's parameter property is `this.wdth` as well.
        (
            "class A {\n  constructor(private wdth: number) {\n    use(wdth);\n  }\n}\n",
            "use(wdth",
            "width",
            "typescript",
        ),
        # The new name is another variable that is visible there, or a global.
        (
            "const width = 2;\nfunction f(wdth) {\n  return wdth + width;\n}\n",
            "f(wdth",
            "width",
            "javascript",
        ),
        ("function f(i) {\n  return i + 1;\n}\n", "f(i", "process", "javascript"),
        (
            "function f(i) {\n  return i + 1;\n}\nmodule.exports = f;\n",
            "f(i",
            "module",
            "javascript",
        ),
        # A global is no binding of this file; `with` resolves names at run time.
        ("use(wdth);\nuse(wdth);\n", "use(wdth", "width", "javascript"),
        (
            "function f(o, wdth) {\n  with (o) { use(wdth); }\n  return wdth;\n}\n",
            "f(o, wdth",
            "width",
            "javascript",
        ),
        # A JSDoc type names it (TypeScript renames it there too; not followed here).
        (
            "var Buffer = load();\n/** @param {String|Buffer} body */\nf(Buffer);\n",
            "var Buffer",
            "Buf",
            "javascript",
        ),
        (
            "function f(cb) {\n  /** {@link cb} */\n  return cb();\n}\n",
            "f(cb",
            "done",
            "javascript",
        ),
        # A file too large to walk on the event loop (a bundle).
        (
            "function f(wdth) {\n  return wdth;\n}\n" + "// padding\n" * 10_000,
            "f(wdth",
            "width",
            "javascript",
        ),
        # A reserved word is no name.
        ("function f(wdth) {\n  return wdth;\n}\n", "f(wdth", "class", "javascript"),
        # A file the grammar cannot read (the user is mid-way elsewhere).
        ("function f(wdth) {\n  return wdth;\n}\nlet = ;\n", "f(wdth", "width", "javascript"),
    ],
)
def test_no_rename_is_offered_where_it_could_be_wrong(
    source: str, marker: str, new: str, syntax: Syntax
) -> None:
    assert renamed(source, marker, new, syntax) is None


def test_renames_made_by_hand_count_as_done() -> None:
    source = "function f(wdth) {\n  use(wdth);\n  use(wdth);\n  return wdth;\n}\n"
    history, text = EditHistory(), source
    for at in (source.index("wdth"), source.index("use(wdth") + 4):
        at += len(text) - len(source)
        text = _typed(history, text, Splice(at, at + 4, "width"))
    prediction = predict(text, history.edits, "javascript")
    assert prediction is not None and prediction.label == "rename wdth → width (2 more)"
    assert applied(text, prediction.edits) == source.replace("wdth", "width")


def test_a_use_changed_to_another_variable_offers_no_repeat_either() -> None:
    # Without the scopes, the repeat rule would offer `f(b, 1)` on the next line.
    source = "let a = 1, b = 2;\nf(a, 1);\nf(a, 1);\n"
    at = source.index("f(a") + 2
    history = EditHistory()
    text = _typed(history, source, Splice(at, at + 1, "b"))
    assert predict(text, history.edits, "javascript") is None
    assert predict(text, history.edits, None) is not None


@pytest.mark.parametrize(
    ("source", "needle", "code"),
    [
        ("f(set);", "set", True),
        ("obj.set = 1;", "set", True),  # a member is code, though no variable
        ("let t: Set = x;", "Set", True),
        ("// set it\nf();", "set", False),
        ('f("set");', "set", False),
        ("f(`a set`);", "set", False),
    ],
)
def test_what_is_a_name_of_the_code(source: str, needle: str, code: bool) -> None:
    at = source.index(needle)
    assert all(is_code_name(source, offset, "typescript") == code
               for offset in (at, at + 1, at + len(needle)))  # fmt: skip


def test_the_grammar_tells_what_parses() -> None:
    assert parses("const x = 1;\n", "javascript")
    assert parses("const x: number = 1;\n", "typescript")
    assert not parses("const x: number = 1;\n", "javascript")
    assert not parses("const x = ;\n", "typescript")
    assert parses("const e = <div>{x}</div>;\n", "tsx")


def test_a_binding_lists_its_occurrences_in_order() -> None:
    source = "function f(a) {\n  const g = () => a;\n  return {a, g};\n}\n"
    binding = same_binding(source, source.index("a)"), "javascript")
    assert binding is not None and binding.name == "a"
    assert [(o.start, o.shorthand) for o in binding.occurrences] == [
        (source.index("a)"), False),
        (source.index("a;"), False),
        (source.index("a, g"), True),
    ]
    assert {"g", "f"} <= binding.names_nearby


@pytest.mark.parametrize(
    ("uri", "language_id"),
    [
        ("file:///area.ts", "typescript"),
        ("file:///area.js", "javascript"),
        ("file:///area.jsx", "javascriptreact"),
        ("file:///area.tsx", "typescriptreact"),
        ("file:///area.mjs", ""),  # no language id: the suffix says
    ],
)
def test_the_service_reads_the_documents_language(uri: str, language_id: str) -> None:
    source = "function area(wdth) {\n  return wdth * 2;\n}\n"
    service = NextEdits()
    service.changed(uri, source, [Splice(14, 18, "width")])
    text = source.replace("wdth", "width", 1)
    issued = asyncio.run(service.predict(Snapshot(uri, 2, text, language_id)))
    assert issued is not None and issued[1].kind == "rename"
    assert applied(text, issued[1].edits) == source.replace("wdth", "width")
