"""Next-edit suggestions in the Neovim plugin (lua/lsp_infer/next_edit.lua) against the real
`lsp-infer serve`: a parameter renamed on its `def` line, as a user does it (`ciw`), is offered
at its use in the body after the pause, drawn with extmarks (the old name struck through, the
new one inline after it), applied with <Tab> in normal mode, dismissed with <Esc>, and taken
away by an edit elsewhere; what became of it is counted in lspInfer/stats' `nextEdit`. And a
like change the local model writes (kind `analogy`), drawn and applied the same way.

The rename is deterministic (no model), but the server loads the model first and shares two
cores with it: every wait is tens of seconds, on a condition."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .conftest import Editor, nvim_of_version
from .test_references import SHAPES, SHAPES_LINES, start_jedi
from .test_references import jedi as jedi  # the fixture

pytestmark = pytest.mark.model

NS = "lsp_infer.next_edit"
SOURCE = (
    "def area(wdth, height):\n"
    "    return wdth * height\n"
    "\n"
    "\n"
    "def double(wdth):\n"
    "    return wdth * 2\n"
)
RENAMED_BODY = "    return width * height"
OTHER_FUNCTION = ["def double(wdth):", "    return wdth * 2"]
WAIT = 60  # seconds, for anything the server answers

EditorFactory = Callable[..., Editor]

# The marks of the namespace in the current buffer: struck-through ranges and inline texts.
MARKS = """
local ns = vim.api.nvim_create_namespace(...)
local out = { deleted = {}, inserted = {}, hints = {} }
for _, m in ipairs(vim.api.nvim_buf_get_extmarks(0, ns, 0, -1, { details = true })) do
  local row, col, d = m[2], m[3], m[4]
  if d.hl_group then
    local text = vim.api.nvim_buf_get_text(0, row, col, d.end_row, d.end_col, {})
    table.insert(out.deleted, { row = row, col = col, end_row = d.end_row, end_col = d.end_col,
      text = table.concat(text, "\\n"), hl = d.hl_group })
  end
  if d.virt_text then
    local parts = {}
    for _, chunk in ipairs(d.virt_text) do table.insert(parts, chunk[1]) end
    local list = d.virt_text_pos == "inline" and out.inserted or out.hints
    table.insert(list, { row = row, col = col, text = table.concat(parts), hl = d.virt_text[1][2],
      pos = d.virt_text_pos })
  end
end
return out
"""


# The lines of the floating window (:LspInferStats), if one is open.
FLOAT_LINES = """
for _, win in ipairs(vim.api.nvim_list_wins()) do
  if vim.api.nvim_win_get_config(win).relative ~= '' then
    return vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(win), 0, -1, false)
  end
end
"""


def marks(editor: Editor) -> dict[str, list[dict[str, Any]]]:
    return editor.lua(MARKS, NS)


def has_marks(editor: Editor) -> bool:
    found = marks(editor)
    return bool(found["deleted"] or found["inserted"] or found["hints"])


def next_edit_stats(editor: Editor) -> dict[str, Any]:
    stats = editor.wait(editor.stats, WAIT, "lspInfer/stats")
    return stats.get("nextEdit") or {}


def wait_counted(editor: Editor, key: str, value: int) -> dict[str, Any]:
    return editor.wait(
        lambda: (n := next_edit_stats(editor)).get(key) == value and n,
        WAIT,
        f"nextEdit.{key} == {value}",
    )


VERSIONS = [
    pytest.param(None, id="nvim-0.12"),
    pytest.param("0.11", id="nvim-0.11"),
]


def start(
    editor_factory: EditorFactory,
    workspace: Path,
    version: str | None = None,
    name: str = "shapes.py",
    source: str = SOURCE,
    column: int = 9,
) -> Editor:
    """The real server on ``source`` (SOURCE), model ready, cursor on the first line's
    ``column`` (the first `wdth`), normal mode."""
    editor = editor_factory(nvim_of_version(version))
    editor.setup({})
    path = workspace / name
    path.write_text(source)
    editor.edit(path)
    editor.wait_ready()
    editor.lua(f"vim.api.nvim_win_set_cursor(0, {{ 1, {column} }})")  # def area(|wdth, …
    return editor


def rename_and_wait(editor: Editor) -> dict[str, list[dict[str, Any]]]:
    """Rename the first `wdth` as a user does; the suggestion drawn after the pause."""
    editor.input("ciwwidth<Esc>")
    editor.wait(lambda: editor.lines()[0] == "def area(width, height):", 10, "the rename on line 1")
    drawn = editor.wait(lambda: (m := marks(editor))["inserted"] and m, WAIT, "the next edit")
    assert drawn["deleted"] == [
        {"row": 1, "col": 11, "end_row": 1, "end_col": 15, "text": "wdth",
         "hl": "LspInferNextEditDelete"}
    ], drawn  # fmt: skip
    assert drawn["inserted"] == [
        {"row": 1, "col": 15, "text": "width", "hl": "LspInferNextEditInsert", "pos": "inline"}
    ], drawn
    assert drawn["hints"] == [], drawn  # the edit is on screen: no hint
    assert editor.lua("return require('lsp_infer').next_edit_visible()") is True
    assert editor.lua("return vim.api.nvim_get_hl(0, { name = 'LspInferNextEditDelete' })")[
        "strikethrough"
    ]
    shown = wait_counted(editor, "shown", 1)
    assert shown["predicted"] == 1, shown
    return drawn


@pytest.mark.parametrize("version", VERSIONS)
def test_the_rename_is_offered_at_its_use_and_applied_with_tab(
    editor_factory: EditorFactory, workspace: Path, version: str | None
) -> None:
    editor = start(editor_factory, workspace, version)
    rename_and_wait(editor)
    assert editor.lines()[1] == "    return wdth * height"  # drawn, not applied
    assert editor.lua("return vim.api.nvim_get_mode().mode") == "n"

    editor.input("<Tab>")  # the cursor is on line 1, the edit on line 2: go there
    editor.wait(
        lambda: editor.lua("return vim.api.nvim_win_get_cursor(0)") == [2, 11],
        10,
        "the cursor at the edit",
    )
    assert editor.lines()[1] == "    return wdth * height"
    assert has_marks(editor)

    editor.input("<Tab>")  # on it: apply
    editor.wait(lambda: editor.lines()[1] == RENAMED_BODY, 10, "the edit applied")
    assert editor.lines() == ["def area(width, height):", RENAMED_BODY, "", "", *OTHER_FUNCTION]
    assert not has_marks(editor)
    counted = wait_counted(editor, "accepted", 1)
    assert counted["rejected"] == 0 and counted["shown"] == 1, counted
    assert counted["byKind"]["rename"]["accepted"] == 1, counted

    editor.input("u")  # one undo step takes the whole group back, and only it
    editor.wait(lambda: editor.lines()[1] == "    return wdth * height", 10, "the undo")
    assert editor.lines()[0] == "def area(width, height):"

    editor.command("LspInferStats")  # the counters in the stats window
    text = "\n".join(editor.wait(lambda: editor.lua(FLOAT_LINES), WAIT, "the stats window"))
    assert "Next edits" in text and "1 accepted" in text, text
    assert "100 % (1/1)" in text, text
    assert editor.lua_errors() == [], editor.diagnostics()


TS_SOURCE = (
    "export function area(wdth: number, height: number) {\n"
    "  const box = { wdth, height };\n"
    "  return wdth * height + box.height;\n"
    "}\n"
)


def test_a_typescript_rename_keeps_the_shorthand_key(
    editor_factory: EditorFactory, workspace: Path
) -> None:
    editor = start(editor_factory, workspace, name="shapes.ts", source=TS_SOURCE, column=21)
    assert editor.lua("return vim.bo.filetype") == "typescript"
    editor.input("ciwwidth<Esc>")  # on area(|wdth
    drawn = editor.wait(lambda: (m := marks(editor))["inserted"] and m, WAIT, "the next edit")
    # The shorthand's key stays, the variable is inserted after it; the use is replaced.
    assert [(m["row"], m["col"], m["text"]) for m in drawn["inserted"]] == [
        (1, 20, ": width"), (2, 13, "width")
    ], drawn  # fmt: skip
    assert [(m["row"], m["col"], m["text"]) for m in drawn["deleted"]] == [(2, 9, "wdth")]
    editor.input("<Tab>")  # to the first edit
    editor.input("<Tab>")  # apply the group
    editor.wait(lambda: editor.lines()[2].startswith("  return width"), 10, "the edits applied")
    assert editor.lines()[:3] == [
        "export function area(width: number, height: number) {",
        "  const box = { wdth: width, height };",
        "  return width * height + box.height;",
    ]
    assert wait_counted(editor, "accepted", 1)["byKind"]["rename"]["accepted"] == 1
    assert editor.lua_errors() == [], editor.diagnostics()


def test_an_attribute_rename_from_the_other_language_servers_references(
    editor_factory: EditorFactory, workspace: Path, jedi: Path
) -> None:
    """The whole chain: the cursor rests on `self.wdth`, the plugin tells the server
    (lspInfer/warm), the server asks where it is used (lspInfer/references), the plugin asks
    jedi-language-server; after `ciw` the rename is drawn at the attribute's other uses (the
    scope rules refuse attributes) and applied with Tab, Tab."""
    line, column = 2, SHAPES_LINES[2].index("wdth", 10)  # `self.wdth = wdth`: the attribute
    editor = start(editor_factory, workspace, source=SHAPES, column=column)
    start_jedi(editor, jedi, workspace)
    editor.lua(f"vim.api.nvim_win_set_cursor(0, {{ {line + 1}, {column} }})")
    editor.input("l")  # a cursor move the plugin sees: after warm_ms it tells the server
    editor.wait(
        lambda: (next_edit_stats(editor).get("references") or {}).get("answered") == 1,
        WAIT,
        "the server to have the references",
    )
    editor.input("ciwwidth<Esc>")
    drawn = editor.wait(lambda: (m := marks(editor))["inserted"] and m, WAIT, "the next edit")
    uses = [(n, len(text[: m.start()].encode())) for n, text in enumerate(SHAPES_LINES)
            for m in re.finditer(r"(?<=self\.)wdth", text) if n != line]  # fmt: skip
    assert [(m["row"], m["col"]) for m in drawn["deleted"]] == uses, drawn  # byte columns
    editor.input("<Tab>")  # to the first edit
    editor.input("<Tab>")  # apply the group
    expected = SHAPES.replace("self.wdth", "self.width").splitlines()
    editor.wait(lambda: editor.lines() == expected, 10, "the edits applied")
    counted = wait_counted(editor, "accepted", 1)
    assert counted["byKind"]["referenceRename"]["accepted"] == 1, counted
    assert counted["references"]["used"] == 1, counted
    assert editor.lua_errors() == [], editor.diagnostics()


def test_esc_dismisses_it_and_it_is_counted_rejected(
    editor_factory: EditorFactory, workspace: Path
) -> None:
    editor = start(editor_factory, workspace)
    rename_and_wait(editor)

    editor.input("<Esc>")
    editor.wait(lambda: not has_marks(editor), 10, "the marks to go")
    counted = wait_counted(editor, "rejected", 1)
    assert counted["accepted"] == 0, counted
    editor.input("j0<Tab>")  # nothing shown: <Tab> is <C-i> again, nothing applied
    assert editor.lines()[1] == "    return wdth * height"
    assert editor.lines()[4:] == OTHER_FUNCTION
    assert next_edit_stats(editor)["accepted"] == 0
    assert editor.lua_errors() == [], editor.diagnostics()


def test_an_edit_elsewhere_takes_it_away_and_nothing_is_applied(
    editor_factory: EditorFactory, workspace: Path
) -> None:
    editor = start(editor_factory, workspace)
    rename_and_wait(editor)
    asked = next_edit_stats(editor)["requests"]

    editor.input("GA  # twice<Esc>")  # an edit on the last line
    editor.wait(lambda: editor.lines()[5].endswith("# twice"), 10, "the edit elsewhere")
    editor.wait(lambda: not has_marks(editor), 10, "the marks to go")
    counted = wait_counted(editor, "rejected", 1)
    # Asked again after that edit's pause: nothing to offer now (the latest edit is a comment).
    editor.wait(
        lambda: next_edit_stats(editor)["requests"] > asked, WAIT, "the request after the edit"
    )
    assert not has_marks(editor)
    assert editor.lua("return require('lsp_infer').next_edit_visible()") is False
    editor.input("<Tab>")
    assert editor.lines()[1] == "    return wdth * height"
    assert editor.lines()[4] == OTHER_FUNCTION[0]
    final = next_edit_stats(editor)
    assert final["accepted"] == 0 and final["shown"] == 1, (counted, final)
    assert editor.lua_errors() == [], editor.diagnostics()


def test_shown_while_still_in_insert_mode_it_stays_when_leaving_it(
    editor_factory: EditorFactory, workspace: Path
) -> None:
    """A user who pauses after typing the new name sees the suggestion before <Esc>; leaving
    insert mode changes nothing, so it stays for <Tab>."""
    editor = start(editor_factory, workspace)
    editor.input("ciwwidth")
    editor.wait(lambda: (m := marks(editor))["inserted"] and m, WAIT, "the next edit")
    assert editor.lua("return vim.api.nvim_get_mode().mode") == "i"
    editor.input("<Esc>")
    editor.wait(lambda: editor.lua("return vim.api.nvim_get_mode().mode") == "n", 10, "normal mode")
    assert marks(editor)["inserted"], "leaving insert mode is not an edit"
    editor.input("<Tab>")
    editor.wait(lambda: editor.lua("return vim.api.nvim_win_get_cursor(0)")[0] == 2, 10, "go")
    editor.input("<Tab>")
    editor.wait(lambda: editor.lines()[1] == RENAMED_BODY, 10, "the edit applied")
    assert editor.lines()[4:] == OTHER_FUNCTION
    counted = wait_counted(editor, "accepted", 1)
    assert counted["rejected"] == 0, counted
    assert editor.lua_errors() == [], editor.diagnostics()


HASHES = [
    "import hashlib",
    "",
    "",
    "def md5(x):",
    "    return hashlib.md5(x).hexdigest()",
    "",
    "",
    "def sha256(x):",
    "    return hashlib.sha256(x).hexdigest()",
]
FIX = ", usedforsecurity=False"


def test_the_models_like_change_is_drawn_and_applied(
    editor_factory: EditorFactory, workspace: Path
) -> None:
    """No rule applies (the two lines are alike, not equal): the local model writes the same
    change on sha256's line, and it is drawn and applied as any next edit."""
    editor = editor_factory(nvim_of_version(None))
    editor.setup({})
    path = workspace / "hashes.py"
    path.write_text("\n".join(HASHES) + "\n")
    editor.edit(path)
    editor.wait_ready()
    editor.lua("vim.api.nvim_win_set_cursor(0, { 5, 23 })")  # on md5's x
    editor.input(f"a{FIX}<Esc>")
    editor.wait(lambda: FIX in editor.lines()[4], 10, "the edit on line 5")
    drawn = editor.wait(lambda: (m := marks(editor))["inserted"] and m, WAIT, "the like change")
    assert drawn["inserted"] == [
        {"row": 8, "col": 27, "text": FIX, "hl": "LspInferNextEditInsert", "pos": "inline"}
    ], drawn
    assert drawn["deleted"] == [], drawn
    editor.input("<Tab>")
    editor.wait(lambda: editor.lua("return vim.api.nvim_win_get_cursor(0)")[0] == 9, 10, "go")
    editor.input("<Tab>")
    editor.wait(
        lambda: editor.lines()[8] == f"    return hashlib.sha256(x{FIX}).hexdigest()",
        10,
        "the like change applied",
    )
    counted = wait_counted(editor, "accepted", 1)
    assert counted["byKind"]["analogy"]["accepted"] == 1, counted
    assert editor.lua_errors() == [], editor.diagnostics()
