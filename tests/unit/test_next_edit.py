"""Next edits, the pure parts: the edit history's coalescing, Python's scopes, the rename
prediction, and the service's counters."""

from __future__ import annotations

import asyncio

import pytest

from lsp_infer.documents import Snapshot, Splice, TextChange, splice_of
from lsp_infer.next_edit.history import Edit, EditHistories, EditHistory
from lsp_infer.next_edit.predict import predict
from lsp_infer.next_edit.python_scopes import same_binding
from lsp_infer.next_edit.service import NextEdits
from lsp_infer.next_edit.syntax import Syntax, syntax_of


def typed(history: EditHistory, text: str, *splices: Splice) -> str:
    for splice in splices:
        history.record(text, splice)
        text = text[: splice.start] + splice.new + text[splice.end :]
    return text


def keys(at: int, word: str) -> list[Splice]:
    """``word`` typed one character at a time from ``at``."""
    return [Splice(at + i, at + i, char) for i, char in enumerate(word)]


def backspaces(end: int, count: int) -> list[Splice]:
    return [Splice(end - i - 1, end - i, "") for i in range(count)]


# -- the history ---------------------------------------------------------------------


def test_a_word_typed_over_a_selection_is_one_edit() -> None:
    history = EditHistory()
    text = typed(history, "x = wdth\n", Splice(4, 8, "w"), *keys(5, "idth"))
    assert text == "x = width\n"
    assert history.edits == [Edit(4, "wdth", "width")]


def test_deleting_back_and_typing_again_is_one_edit() -> None:
    history = EditHistory()
    text = typed(history, "x = wdth\n", *backspaces(8, 4), *keys(4, "width"))
    assert text == "x = width\n"
    assert history.edits == [Edit(4, "wdth", "width")]


def test_an_edit_elsewhere_starts_a_new_one_and_moves_the_older() -> None:
    history = EditHistory()
    text = typed(history, "a = 1\nb = 2\n", *keys(11, "0"), *keys(0, "xx"))
    assert text == "xxa = 1\nb = 20\n"
    # The first edit moved right by the two characters typed before it.
    assert history.edits == [Edit(13, "", "0"), Edit(0, "", "xx")]
    for edit in history.edits:
        assert text[edit.start : edit.end] == edit.new


def test_an_edit_over_an_older_one_drops_it() -> None:
    history = EditHistory()
    text = typed(history, "abcdef\n", Splice(1, 2, "X"), Splice(4, 5, "Y"), Splice(0, 3, ""))
    # X's edit was deleted with its surroundings; Y's moved left by three.
    assert text == "dYf\n"
    assert history.edits == [Edit(1, "e", "Y"), Edit(0, "aXc", "")]


def test_typed_then_deleted_again_leaves_no_edit() -> None:
    history = EditHistory()
    typed(history, "x\n", *keys(1, "ab"), *backspaces(3, 2))
    assert history.edits == []


def test_the_history_is_bounded_and_forgotten_on_close() -> None:
    histories = EditHistories()
    text = "\n" * 100
    for line in range(40):  # edits on lines far apart: 40 separate edits
        histories.record("file:///a.py", text, [Splice(line * 2, line * 2, "x")])
        text = text[: line * 2] + "x" + text[line * 2 :]
    history = histories.get("file:///a.py")
    assert history is not None and len(history.edits) == 16
    histories.forget("file:///a.py")
    assert histories.get("file:///a.py") is None


def test_a_whole_text_change_is_reduced_to_what_changed() -> None:
    splice = splice_of("def f(wdth):\n", TextChange("def f(width):\n"), "utf-16")
    assert splice == Splice(7, 7, "i")


# -- Python's scopes -------------------------------------------------------------------

TWO_FUNCTIONS = "def area(wdth, height):\n    return wdth * height\n\n\ndef double(wdth):\n    return wdth * 2\n"  # noqa: E501


def names_at(source: str, needle: str, nth: int = 0) -> list[str]:
    offset = -1
    for _ in range(nth + 1):
        offset = source.index(needle, offset + 1)
    binding = same_binding(source, offset)
    if binding is None:
        return []
    return [f"{source.count(chr(10), 0, o.start) + 1}:{o.name}" for o in binding.occurrences]


@pytest.mark.parametrize(
    ("source", "needle", "nth", "expected"),
    [
        # A parameter: its uses in its own function only.
        (TWO_FUNCTIONS, "wdth", 0, ["1:wdth", "2:wdth"]),
        (TWO_FUNCTIONS, "wdth", 3, ["5:wdth", "6:wdth"]),
        # A module-level name, read in a function that does not bind it.
        (
            "LIMIT = 3\n\ndef f():\n    return LIMIT\n\ndef g(LIMIT):\n    return LIMIT\n",
            "LIMIT",
            0,
            ["1:LIMIT", "4:LIMIT"],
        ),
        # A closure's variable, seen from the nested function.
        (
            "def f():\n    n = 1\n    def g():\n        return n\n    return g\n",
            "n =",
            0,
            ["2:n", "4:n"],
        ),
        # Class bodies are not seen from their methods.
        (
            "x = 1\nclass C:\n    x = 2\n    def m(self):\n        return x\n",
            "x = 1",
            0,
            ["1:x", "5:x"],
        ),
        # A comprehension's target is its own; its first iterable is the enclosing scope's.
        ("def f(items, i):\n    return [i for i in items] + [i]\n", "i)", 0, ["1:i", "2:i"]),
        (
            "def f(items, i):\n    return [i for i in items] + [i]\n",
            "items",
            0,
            ["1:items", "2:items"],
        ),
        # A function's own name, and its calls.
        ("def helper():\n    pass\n\nhelper()\n", "helper", 0, ["1:helper", "4:helper"]),
        # A class's name reached as an attribute or passed as a keyword: it is a member too,
        # and which object `.name` is of takes types.
        ("class C:\n    xs = []\n    def m(self):\n        return self.xs\n", "xs", 0, []),
        ("class P:\n    x: int = 0\n\nP(x=1)\n", "x:", 0, []),
        # Neither: the class body's own uses.
        ("class C:\n    xs = []\n    n = len(xs)\n", "xs", 0, ["2:xs", "3:xs"]),
        # Not followed: a global statement, an import, an except's name, a builtin.
        ("n = 0\ndef bump():\n    global n\n    n += 1\n", "n = 0", 0, []),
        ("import os\nos.getcwd()\n", "os.", 0, []),
        ("try:\n    pass\nexcept E as err:\n    print(err)\n", "err)", 0, []),
        ("print(len([]))\n", "len", 0, []),
        # Does not parse: nothing.
        ("def f(a:\n    return a\n", "a", 0, []),
    ],
)
def test_same_binding(source: str, needle: str, nth: int, expected: list[str]) -> None:
    assert names_at(source, needle, nth) == expected


# -- the rename prediction -----------------------------------------------------------


def renamed(source: str, old_at: int, old: str, new: str, *, by_keys: bool = True) -> str:
    """The next edit offered after renaming ``old`` at ``old_at`` to ``new``, applied; the
    text after the user's edit when none is offered."""
    history = EditHistory()
    end = old_at + len(old)
    if by_keys:  # as a user does: delete the old name, type the new one
        text = typed(history, source, *backspaces(end, len(old)), *keys(old_at, new))
    else:
        text = typed(history, source, Splice(old_at, end, new))
    prediction = predict(text, history.edits, syntax="python")
    if prediction is None:
        return text
    for edit in reversed(prediction.edits):
        assert text[edit.start : edit.end] == old
        text = text[: edit.start] + edit.new + text[edit.end :]
    return text


def test_a_renamed_parameter_is_renamed_in_its_function_only() -> None:
    after = renamed(TWO_FUNCTIONS, 9, "wdth", "width")
    assert after == TWO_FUNCTIONS.replace("wdth", "width", 2)


def test_a_rename_at_a_use_is_carried_to_the_definition_and_other_uses() -> None:
    source = "def f(count):\n    total = count + 1\n    return count\n"
    at = source.index("count +")
    assert renamed(source, at, "count", "n") == source.replace("count", "n")


def test_occurrences_renamed_by_hand_already_are_not_offered_again() -> None:
    source = "def f(count):\n    a = count\n    b = count\n    return count\n"
    history = EditHistory()
    first, second = source.index("count"), source.index("count\n")
    text = typed(history, source, Splice(first, first + 5, "n"))
    text = typed(history, text, Splice(second - 4, second + 1, "n"))
    assert text == "def f(n):\n    a = n\n    b = count\n    return count\n"
    prediction = predict(text, history.edits, syntax="python")
    assert prediction is not None and prediction.kind == "rename"
    assert [text[e.start : e.end] for e in prediction.edits] == ["count", "count"]
    assert prediction.label == "rename count → n (2 more)"


@pytest.mark.parametrize(
    ("source", "needle", "old", "new"),
    [
        # The new name is another variable in the same scope: a different variable meant.
        ("def f(a, b):\n    return a + b\n", "a, b", "a", "b"),
        # It would be captured by a nested function's own variable of that name.
        (
            "def f(a):\n    def g():\n        b = 1\n        return a + b\n    return g\n",
            "a)",
            "a",
            "b",
        ),
        # Only one occurrence: nothing else to rename.
        ("def f():\n    x = 1\n", "x", "x", "y"),
        # A keyword is not a name.
        ("def f(a):\n    return a\n", "a)", "a", "if"),
        # A name of the enclosing function: the user means that one, not a rename.
        ("def f(xs, y):\n    return [x + 1 for x in xs]\n", "x +", "x", "y"),
        # A parameter passed by keyword somewhere: the call would need renaming too.
        ("def f(size):\n    return size\n\nf(size=3)\n", "size)", "size", "n"),
        # A module-level name that is also a builtin: before its assignment, the builtin.
        (
            "try:\n    complex\nexcept NameError:\n    complex = float\nx = complex\n",
            "complex = f",
            "complex",
            "number",
        ),
    ],
)
def test_no_rename_is_offered(source: str, needle: str, old: str, new: str) -> None:
    at = source.index(needle)
    assert renamed(source, at, old, new) == source[:at] + new + source[at + len(old) :]


def test_typing_new_code_offers_nothing() -> None:
    history = EditHistory()
    text = typed(history, "x = 1\n", *keys(6, "y = x + 1\n"))
    assert predict(text, history.edits, syntax="python") is None


def test_a_name_extended_as_it_is_typed_offers_nothing() -> None:
    # `tot` typed, then later `al` after it: no other occurrence of a `tot` binding.
    history = EditHistory()
    text = typed(history, "x = 1\n", *keys(6, "tot = 1\n"))
    text = typed(history, text, *keys(0, "# \n"), *keys(12, "al"))
    assert text == "# \nx = 1\ntotal = 1\n"
    assert predict(text, history.edits, syntax="python") is None


def test_a_rename_needs_a_language_whose_scopes_are_read() -> None:
    history = EditHistory()
    text = typed(history, TWO_FUNCTIONS, Splice(9, 13, "width"))
    assert predict(text, history.edits, syntax=None) is None
    assert predict(text, history.edits, syntax="python") is not None


@pytest.mark.parametrize(
    ("uri", "language_id", "syntax"),
    [
        ("file:///a.py", "", "python"),
        ("file:///a", "python", "python"),
        ("file:///a.py", "javascript", "javascript"),  # the editor's language id wins
        ("file:///a.js", "", "javascript"),
        ("file:///a.mjs", "", "javascript"),
        ("file:///a.jsx", "javascriptreact", "javascript"),
        ("file:///a.ts", "", "typescript"),
        ("file:///a.tsx", "typescriptreact", "tsx"),
        ("file:///a.tsx?x=1", "", "tsx"),
        ("file:///a.go", "go", None),
        ("file:///a.rs", "", None),
        ("file:///dir.ts/Makefile", "", None),
    ],
)
def test_the_syntax_of_a_document(uri: str, language_id: str, syntax: Syntax | None) -> None:
    assert syntax_of(uri, language_id) == syntax


# -- the service ---------------------------------------------------------------------


def test_the_service_issues_ids_and_counts_each_outcome_once() -> None:
    service = NextEdits()
    uri = "file:///a.py"
    service.changed(uri, TWO_FUNCTIONS, [Splice(9, 13, "width")])
    text = TWO_FUNCTIONS.replace("wdth", "width", 1)
    issued = asyncio.run(service.predict(Snapshot(uri, 2, text, "python")))
    assert issued is not None
    item_id, prediction = issued
    assert prediction.kind == "rename" and len(prediction.edits) == 1
    assert service.outcome(item_id, "shown") and service.outcome(item_id, "shown")
    assert service.outcome(item_id, "accepted")
    assert not service.outcome("ne-unknown", "accepted")
    assert asyncio.run(service.predict(Snapshot("file:///b.py", 1, "x = 1\n", "python"))) is None
    stats = service.stats()
    assert stats["requests"] == 2 and stats["predicted"] == 1
    assert stats["shown"] == 1 and stats["accepted"] == 1 and stats["rejected"] == 0
    assert stats["byKind"] == {"rename": {"predicted": 1, "shown": 1, "accepted": 1,
                                          "rejected": 0}}  # fmt: skip
    service.forget(uri)
    assert asyncio.run(service.predict(Snapshot(uri, 2, text, "python"))) is None


# -- the repeated edit ---------------------------------------------------------------

DECORATED = (
    "@pytest.mark.asyncio\n"
    "async def test_a():\n"
    "    pass\n"
    "\n"
    "@pytest.mark.asyncio\n"
    "async def test_b():\n"
    "    pass\n"
)


def repeated(
    source: str, at: int, old: str, new: str, syntax: Syntax | None = "python"
) -> str | None:
    """The text after the user's edit and the offered repeat applied; None if none offered."""
    history = EditHistory()
    text = typed(history, source, Splice(at, at + len(old), new))
    prediction = predict(text, history.edits, syntax=syntax)
    if prediction is None:
        return None
    assert prediction.kind == "repeat" and len(prediction.edits) == 1
    edit = prediction.edits[0]
    return text[: edit.start] + edit.new + text[edit.end :]


def test_the_same_edit_is_offered_on_the_next_line_like_it() -> None:
    at = DECORATED.index("asyncio")
    after = repeated(DECORATED, at, "asyncio", 'usefixtures("env")')
    assert after == DECORATED.replace("asyncio", 'usefixtures("env")')


def test_a_repeat_keeps_the_other_lines_indentation_and_works_in_any_language() -> None:
    source = "function f() {\n  call(a, 1);\n}\n    call(a, 1);\n"
    at = source.index("1)")
    after = repeated(source, at, "1", "1, true", syntax=None)
    assert after == "function f() {\n  call(a, 1, true);\n}\n    call(a, 1, true);\n"


def test_one_repeat_at_a_time_the_nearest_after_the_edit() -> None:
    source = "x = f(1)\n" * 4
    history = EditHistory()
    text = typed(history, source, Splice(source.index("1", 9), source.index("1", 9) + 1, "2"))
    prediction = predict(text, history.edits, syntax=None)
    assert prediction is not None and prediction.label == "the same edit at line 3"


@pytest.mark.parametrize(
    ("source", "needle", "old", "new"),
    [
        ("    )\n    )\n", ")", ")", "),"),  # a line too short to mean the same edit
        ("value = 1\nother = 1\n", "1", "1", "2"),  # no other line reads the same
        # Lines added: new code, not a change to a line like others.
        ("x = f(1)\nx = f(1)\n", "x", "x", "y = 0\nx"),
    ],
)
def test_no_repeat_is_offered(source: str, needle: str, old: str, new: str) -> None:
    assert repeated(source, source.index(needle), old, new, syntax=None) is None
