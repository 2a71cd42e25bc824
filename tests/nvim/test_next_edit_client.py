"""Next-edit suggestions, the plugin's side (lua/lsp_infer/next_edit.lua), against the
in-process stub server (stub_server.lua answers lspInfer/nextEdit with what a test sets):
the hint and the jump when the edit is off screen, one undo step for a group, cancellation of
the request in flight, answers for another version or malformed ones dropped, what rejects a
suggestion, keys that fall through when nothing is shown, and the options. No model: a second
or two each. The real server's side: test_next_edit.py."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .conftest import Editor, nvim_of_version
from .test_next_edit import FLOAT_LINES, MARKS, NS, VERSIONS

STUB = Path(__file__).with_name("stub_server.lua")
QUIET = 1.0  # seconds to wait before concluding that nothing (more) happened
SHOW, ACCEPT, REJECT = (
    "lspInfer/didShowNextEdit",
    "lspInfer/didAcceptNextEdit",
    "lspInfer/didRejectNextEdit",
)

# A function whose parameter is used 50 lines further down: off screen (24-line window).
LINES = ["def f(wdth):", *["    x = 1"] * 48, "    y = wdth * 2", "    return wdth"]
USES = [(49, 8), (50, 11)]  # 0-based (line, character) of the `wdth` uses

EditorFactory = Callable[..., Editor]

# The stub offers `_G.offer` (a list of edits), each answer with a new id ("ne-1", …), for the
# version asked; `_G.answered` counts its answers.
OFFER = """
_G.answered = 0
_G.stub.next_edit = function(params)
  _G.answered = _G.answered + 1
  local version = params.textDocument.version
  if not _G.offer then
    return { edits = {}, id = vim.NIL, kind = vim.NIL, version = version, label = vim.NIL }
  end
  return { edits = _G.offer, id = "ne-" .. _G.answered, kind = "rename", version = version,
    label = "rename wdth → width (1 more)" }
end
"""


def start(
    editor_factory: EditorFactory,
    workspace: Path,
    opts: dict[str, Any] | None = None,
    version: str | None = None,
) -> Editor:
    editor = editor_factory(nvim_of_version(version))
    editor.lua("_G.stub = dofile(...)", str(STUB))
    editor.lua(OFFER)
    options = {"next_edit": {"debounce_ms": 50}, **(opts or {})}
    editor.lua(
        "require('lsp_infer').setup(vim.tbl_extend('force', ..., { cmd = _G.stub.cmd }))", options
    )
    path = workspace / "f.py"
    path.write_text("\n".join(LINES) + "\n")
    editor.edit(path)
    editor.wait_attached(10)
    return editor


def offer(editor: Editor, uses: list[tuple[int, int]] = USES, text: str = "width") -> None:
    edits = [
        {
            "range": {
                "start": {"line": line, "character": character},
                "end": {"line": line, "character": character + len("wdth")},
            },
            "text": text,
        }
        for line, character in uses
    ]
    editor.lua("_G.offer = ...", edits)


def marks(editor: Editor) -> dict[str, list[dict[str, Any]]]:
    return editor.lua(MARKS, NS)


def shown(editor: Editor) -> dict[str, list[dict[str, Any]]]:
    return editor.wait(lambda: (m := marks(editor))["inserted"] and m, 10, "the next edit")


def nothing_shown(editor: Editor) -> bool:
    m = marks(editor)
    return not (m["deleted"] or m["inserted"] or m["hints"])


def told(editor: Editor) -> list[tuple[str, str]]:
    """The outcome notifications the stub received, in order: (method, id)."""
    out = []
    for method, params in editor.lua("return _G.stub.notifications"):
        if method in (SHOW, ACCEPT, REJECT):
            out.append((method, params["id"]))
    return out


def asked(editor: Editor) -> list[dict[str, Any]]:
    return list(editor.lua("return _G.stub.sent('lspInfer/nextEdit')"))


def cursor(editor: Editor) -> list[int]:
    return list(editor.lua("return vim.api.nvim_win_get_cursor(0)"))


def rename_first(editor: Editor) -> None:
    """`wdth` → `width` on line 1, as a user does it (normal mode afterwards)."""
    editor.lua("vim.api.nvim_win_set_cursor(0, { 1, 6 })")
    editor.input("ciwwidth<Esc>")
    editor.wait(lambda: editor.lines()[0] == "def f(width):", 5, "the rename")


@pytest.mark.parametrize("version", VERSIONS)
def test_off_screen_a_hint_then_tab_goes_there_and_tab_applies_the_group(
    editor_factory: EditorFactory, workspace: Path, version: str | None
) -> None:
    editor = start(editor_factory, workspace, version=version)
    offer(editor)
    rename_first(editor)
    drawn = shown(editor)
    request = asked(editor)[-1]
    assert request["textDocument"]["version"] == editor.lua(
        "return vim.lsp.util.buf_versions[vim.api.nvim_get_current_buf()]"
    )
    assert request["position"] == {"line": 0, "character": 10}  # the cursor after <Esc>
    assert [(d["row"], d["col"], d["text"]) for d in drawn["deleted"]] == [
        (49, 8, "wdth"),
        (50, 11, "wdth"),
    ]
    assert [(i["row"], i["col"], i["text"]) for i in drawn["inserted"]] == [
        (49, 12, "width"),
        (50, 15, "width"),
    ]
    (hint,) = drawn["hints"]  # at the cursor's line: what, where, which key
    assert (hint["row"], hint["pos"], hint["hl"]) == (0, "eol", "LspInferNextEditHint"), hint
    assert hint["text"] == "  rename wdth → width (1 more) · line 50 · <Tab>", hint
    assert told(editor) == [(SHOW, "ne-1")]

    editor.input("<Tab>")
    editor.wait(lambda: cursor(editor) == [50, 8], 5, "the cursor at the first edit")
    editor.wait(lambda: marks(editor)["hints"] == [], 5, "the hint to go (the edit on screen)")
    assert editor.lines() == ["def f(width):", *LINES[1:]]  # nothing applied yet
    editor.input("<Tab>")
    editor.wait(lambda: editor.lines()[49] == "    y = width * 2", 5, "the group applied")
    assert editor.lines()[50] == "    return width"
    assert nothing_shown(editor)
    assert told(editor) == [(SHOW, "ne-1"), (ACCEPT, "ne-1")]

    editor.input("u")  # the whole group, one undo step
    editor.wait(lambda: editor.lines()[49] == "    y = wdth * 2", 5, "the undo")
    assert editor.lines()[50] == "    return wdth" and editor.lines()[0] == "def f(width):"
    editor.input("<C-o>")  # the jump went into the jumplist
    editor.wait(lambda: cursor(editor)[0] == 1, 5, "back where it was")
    assert editor.lua_errors() == [], editor.diagnostics()


@pytest.mark.parametrize(
    "honoured", [pytest.param(True, id="cancelled"), pytest.param(False, id="answered-late")]
)
def test_the_request_in_flight_is_cancelled_by_the_next_edit(
    editor_factory: EditorFactory, workspace: Path, honoured: bool
) -> None:
    """Cancelled; and when the server answers it anyway, the answer (for the version before
    the edit) is dropped."""
    editor = start(editor_factory, workspace)
    offer(editor)
    editor.lua("_G.stub.next_edit_delay_ms = 1500; _G.stub.honour_cancel = ...", honoured)
    editor.input("Ax<Esc>")
    editor.wait(lambda: len(asked(editor)) == 1, 5, "the first request")
    editor.input("x")  # another edit while it is answered
    cancelled = editor.wait(lambda: editor.lua("return _G.stub.cancelled"), 5, "$/cancelRequest")
    assert len(cancelled) == 1
    shown(editor)
    first, second = (r["textDocument"]["version"] for r in asked(editor))
    assert first < second
    assert told(editor) == [(SHOW, "ne-2")]  # the first answer (ne-1) never drawn
    assert editor.lua_errors() == [], editor.diagnostics()


STALE_AND_MALFORMED = [
    pytest.param("{ edits = OFFER, id = 'ne-x', kind = 'rename', version = V - 1 }", id="older"),
    pytest.param("{ edits = OFFER, id = 'ne-x', version = V + 1 }", id="newer"),
    pytest.param("{ edits = OFFER, id = vim.NIL, version = V }", id="no-id"),
    pytest.param("{ edits = {}, id = 'ne-x', version = V }", id="no-edits"),
    pytest.param("{ edits = { { text = 'w' } }, id = 'ne-x', version = V }", id="no-range"),
    pytest.param(
        "{ edits = { { range = OFFER[1].range, text = 3 } }, id = 'ne-x', version = V }",
        id="text-not-a-string",
    ),
    pytest.param("'junk'", id="junk"),
    pytest.param("vim.NIL", id="null"),
]


@pytest.mark.parametrize("answer", STALE_AND_MALFORMED)
def test_an_answer_for_another_version_or_malformed_is_dropped(
    editor_factory: EditorFactory, workspace: Path, answer: str
) -> None:
    editor = start(editor_factory, workspace)
    offer(editor)
    editor.lua(
        "_G.stub.next_edit = function(params) _G.answered = _G.answered + 1; "
        f"local OFFER, V = _G.offer, params.textDocument.version; return {answer} end"
    )
    rename_first(editor)
    editor.wait(lambda: editor.lua("return _G.answered") >= 1, 5, "the answer")
    time.sleep(QUIET)
    assert nothing_shown(editor)
    assert told(editor) == []
    editor.input("<Tab>")  # nothing shown: nothing applied
    time.sleep(QUIET)
    assert editor.lines() == ["def f(width):", *LINES[1:]]
    assert editor.lua_errors() == [], editor.diagnostics()


def shows(editor: Editor) -> list[str]:
    """The ids reported shown, in order."""
    return [item for method, item in told(editor) if method == SHOW]


def next_shown(editor: Editor) -> str:
    """Wait for one more suggestion to be reported shown; its id."""
    count = len(shows(editor))
    return editor.wait(lambda: shows(editor)[count:], 5, "a new suggestion")[0]


REQUEST_AGAIN = """
local ne = require('lsp_infer.next_edit')
ne.request(ne.states[vim.api.nvim_get_current_buf()])
"""


def test_what_rejects_it(editor_factory: EditorFactory, workspace: Path) -> None:
    """<Esc>, an edit, leaving the buffer, a newer suggestion, a change behind its back."""
    editor = start(editor_factory, workspace)
    editor.lua("_G.stub.answer = function() return {} end")  # no ghost text in the way
    editor.lua("vim.keymap.set('n', '<Esc>', '<cmd>let g:esc = get(g:, \"esc\", 0) + 1<cr>')")
    offer(editor, [(50, 11)])
    rename_first(editor)
    first = next_shown(editor)
    editor.input("<Esc>")  # shown: it dismisses, and is not passed on
    editor.wait(lambda: nothing_shown(editor), 5, "<Esc> to dismiss")
    assert told(editor) == [(SHOW, first), (REJECT, first)]
    assert editor.lua("return vim.g.esc") is None
    editor.input("<Esc>")  # nothing shown: the user's own <Esc>
    editor.wait(lambda: editor.lua("return vim.g.esc") == 1, 5, "the user's <Esc>")

    editor.input("A,<Esc>")  # an edit: the next suggestion after the pause
    second = next_shown(editor)
    editor.input("0x")  # an edit while it is shown
    editor.wait(lambda: (REJECT, second) in told(editor), 5, "the edit to reject it")
    third = next_shown(editor)  # after that edit's pause
    editor.command("enew")  # leaving the buffer
    editor.wait(lambda: (REJECT, third) in told(editor), 5, "leaving to reject it")
    editor.command("buffer #")
    assert nothing_shown(editor)

    editor.lua(REQUEST_AGAIN)  # a newer suggestion for the same version replaces it
    fourth = next_shown(editor)
    editor.lua(REQUEST_AGAIN)
    fifth = next_shown(editor)
    editor.wait(lambda: (REJECT, fourth) in told(editor), 5, "the newer one to reject it")
    assert editor.lua("return require('lsp_infer.next_edit').shown().id") == fifth
    assert len(marks(editor)["inserted"]) == 1  # drawn once

    # Changed behind its back (no TextChanged before the key's action): not applied.
    editor.lua("_G.offer = nil")
    before = editor.lines()
    editor.lua(
        "vim.api.nvim_buf_set_lines(0, 1, 2, false, { '    x = 2' }); "
        "require('lsp_infer').next_edit_accept()"
    )
    editor.wait(lambda: (REJECT, fifth) in told(editor), 5, "the stale suggestion rejected")
    assert nothing_shown(editor)
    assert editor.lines() == [before[0], "    x = 2", *before[2:]]
    assert not any(method == ACCEPT for method, _ in told(editor))
    assert editor.lua_errors() == [], editor.diagnostics()


def test_keys_fall_through_when_nothing_is_shown(
    editor_factory: EditorFactory, workspace: Path
) -> None:
    editor = start(editor_factory, workspace)
    editor.lua("vim.keymap.set('n', '<Tab>', '<cmd>let g:tab = get(g:, \"tab\", 0) + 1<cr>')")
    assert editor.lua("return vim.fn.maparg('<Tab>', 'n', false, true).buffer") == 1
    editor.input("<Tab>")  # nothing shown: the user's global <Tab>
    editor.wait(lambda: editor.lua("return vim.g.tab") == 1, 5, "the user's <Tab>")
    assert editor.lua("return require('lsp_infer').next_edit_accept()") is False
    assert editor.lua("return require('lsp_infer').next_edit_dismiss()") is False

    editor.lua("_G.stub.answer = function() return {} end")  # no ghost text to accept
    offer(editor, [(50, 11)])
    rename_first(editor)
    shown(editor)
    editor.input("O<Tab>x<Esc>")  # insert mode: <Tab> is not the next edit's
    editor.wait(lambda: editor.lines()[0].endswith("x"), 5, "the typed line")
    assert editor.lines()[0].strip() == "x" and editor.lines()[0] != "x"  # indented
    assert editor.lines()[51] == "    return wdth"
    assert editor.lua("return vim.g.tab") == 1
    assert editor.lua_errors() == [], editor.diagnostics()


def test_options_off(editor_factory: EditorFactory, workspace: Path) -> None:
    editor = start(editor_factory, workspace, {"next_edit": {"enabled": False}})
    # The server is told not to keep edit histories for nothing.
    assert editor.lua(
        "return vim.lsp.get_clients({ name = 'lsp_infer' })[1].config.init_options.nextEdit"
    ) == {"enabled": False}
    assert editor.lua("return vim.fn.maparg('<Tab>', 'n')") == ""
    offer(editor)
    rename_first(editor)
    time.sleep(QUIET)
    assert asked(editor) == [] and nothing_shown(editor)
    assert editor.lua_errors() == [], editor.diagnostics()


@pytest.mark.parametrize(
    "opts",
    [
        pytest.param({"next_edit": {"keymaps": False, "debounce_ms": 50}}, id="next-edit-keys-off"),
        pytest.param({"keymaps": False}, id="all-keys-off"),
    ],
)
def test_keys_off_the_functions_still_work(
    editor_factory: EditorFactory, workspace: Path, opts: dict[str, Any]
) -> None:
    editor = start(editor_factory, workspace, opts)
    assert editor.lua("return vim.fn.maparg('<Tab>', 'n')") == ""
    assert editor.lua("return vim.fn.maparg('<Esc>', 'n')") == ""
    offer(editor, [(50, 11)])
    rename_first(editor)
    drawn = shown(editor)
    assert drawn["hints"][0]["text"].endswith("line 51"), drawn  # no key to name
    editor.command("LspInferNextEdit")
    editor.wait(lambda: cursor(editor) == [51, 11], 5, "the jump")
    editor.command("LspInferNextEdit accept")
    editor.wait(lambda: editor.lines()[50] == "    return width", 5, "the edit applied")
    assert told(editor) == [(SHOW, "ne-1"), (ACCEPT, "ne-1")]
    assert editor.lua_errors() == [], editor.diagnostics()


def test_not_asked_when_the_server_has_next_edits_off(
    editor_factory: EditorFactory, workspace: Path
) -> None:
    editor = start(editor_factory, workspace, {"settings": {"nextEdit": {"enabled": False}}})
    offer(editor)
    rename_first(editor)
    time.sleep(QUIET)
    assert asked(editor) == []
    assert editor.lua_errors() == [], editor.diagnostics()


def test_stats_show_the_next_edit_counters_the_server_has(
    editor_factory: EditorFactory, workspace: Path
) -> None:
    """In :LspInferStats and :checkhealth; a counter the server does not report reads "–"."""
    editor = start(editor_factory, workspace)
    stats = {
        "requests": 3,
        "nextEdit": {
            "requests": 9, "shown": 4, "accepted": 3,
            "byKind": {"rename": {"predicted": 4, "shown": 4, "accepted": 3}},
        },
    }  # fmt: skip
    editor.lua("_G.stub.stats = ...", stats)
    editor.command("LspInferStats")
    text = "\n".join(editor.wait(lambda: editor.lua(FLOAT_LINES), 5, "the stats window"))
    for expected in (
        "Next edits                  9 asked, – predicted, 4 shown, 3 accepted, – rejected",
        "Next-edit acceptance        75 % (3/4)",
        "  rename                    4 predicted, 4 shown, 3 accepted, – rejected",
        "nextEdit.byKind.rename.accepted",
    ):
        assert expected in text, text
    assert "Next edits p50" not in text  # not reported
    editor.input("q")
    editor.command("checkhealth lsp_infer")
    report = editor.text()
    assert "Next edits: 9 asked, – predicted, 4 shown, 3 accepted, – rejected" in report, report

    editor.lua("_G.stub.stats = { requests = 3 }")  # a server without next edits: no lines
    editor.command("bwipeout")
    editor.command("LspInferStats")
    text = "\n".join(editor.wait(lambda: editor.lua(FLOAT_LINES), 5, "the stats window"))
    assert "Next" not in text, text
    assert editor.lua_errors() == [], editor.diagnostics()
