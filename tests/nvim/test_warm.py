"""lspInfer/warm from the Neovim plugin (lua/lsp_infer/warm.lua) against the in-process stub
server (stub_server.lua records every notification): sent on entering an attached buffer and
when the cursor rests after a move without an edit; debounced, not repeated for the same place,
never for an edit, an unattached buffer or with `warm = false`. Native (0.12) and fallback
(0.11) paths."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .conftest import Editor, nvim_of_version

STUB = Path(__file__).with_name("stub_server.lua")
WARM = "lspInfer/warm"
QUIET = 2.0  # seconds to wait before concluding that nothing (more) was sent

EditorFactory = Callable[..., Editor]

PATHS = [
    pytest.param(None, "native", id="nvim-0.12-native"),
    pytest.param("0.11", "fallback", id="nvim-0.11-fallback"),
]


def start(
    editor_factory: EditorFactory, opts: dict[str, Any], version: str | None = None
) -> Editor:
    binary = nvim_of_version(version)
    editor = editor_factory(binary)
    editor.lua("_G.stub = dofile(...)", str(STUB))
    editor.lua(
        "require('lsp_infer').setup(vim.tbl_extend('force', ..., { cmd = _G.stub.cmd }))", opts
    )
    return editor


def open_file(editor: Editor, path: Path, text: str, attach: bool = True) -> str:
    path.write_text(text)
    editor.edit(path)
    if attach:
        editor.wait_attached(10)
    return path.as_uri()


def warms(editor: Editor) -> list[tuple[str, int, int]]:
    """The lspInfer/warm notifications the stub received: (uri, line, character)."""
    sent = editor.lua(f"return _G.stub.sent('{WARM}')")
    return [
        (w["textDocument"]["uri"], w["position"]["line"], w["position"]["character"]) for w in sent
    ]


def wait_warms(editor: Editor, expected: list[tuple[str, int, int]], what: str) -> None:
    editor.wait(lambda: warms(editor) == expected, 10, f"{what}: {expected} (got {warms(editor)})")


def assert_quiet(editor: Editor, expected: list[tuple[str, int, int]], what: str) -> None:
    time.sleep(QUIET)
    assert warms(editor) == expected, (what, warms(editor))


def cursor(editor: Editor) -> list[int]:
    return list(editor.lua("return vim.api.nvim_win_get_cursor(0)"))


@pytest.mark.parametrize(("version", "path"), PATHS)
def test_warm_on_entering_a_buffer(
    editor_factory: EditorFactory, workspace: Path, version: str | None, path: str
) -> None:
    # A long rest delay: only entering sends here.
    editor = start(editor_factory, {"warm_ms": 60_000}, version)
    assert editor.lua("return require('lsp_infer.config').path()") == path
    a = open_file(editor, workspace / "a.py", "def add(a, b):\n    return a + b\n")
    expected = [(a, 0, 0)]  # a file just opened: warmed when the client attaches
    wait_warms(editor, expected, "the opened file")
    editor.lua("vim.api.nvim_win_set_cursor(0, { 2, 4 })")

    b = open_file(editor, workspace / "b.py", "x = 1\ny = 2\n")
    expected.append((b, 0, 0))
    wait_warms(editor, expected, "the second file")
    editor.lua("vim.api.nvim_win_set_cursor(0, { 2, 2 })")

    editor.command("buffer a.py")  # switching back: its cursor, where it was left
    assert cursor(editor) == [2, 4]
    expected.append((a, 1, 4))
    wait_warms(editor, expected, "switching to the first")
    editor.command("buffer b.py")
    expected.append((b, 1, 2))
    wait_warms(editor, expected, "switching to the second")

    editor.command("vsplit a.py")  # a window on each; entering a window sends its place
    expected.append((a, 1, 4))
    wait_warms(editor, expected, "the split")
    editor.command("wincmd w")
    expected.append((b, 1, 2))
    wait_warms(editor, expected, "the other window")
    editor.command("wincmd w")
    expected.append((a, 1, 4))
    assert_quiet(editor, expected, "one each, nothing from the long rest timer")

    # Clean-up: a wiped buffer and a detached client leave no autocommands behind.
    editor.command("only | bwipeout! b.py")
    assert editor.lua("return vim.fn.exists('#lsp_infer.warm.' .. vim.fn.bufnr('b.py'))") == 0
    editor.lua("for _, c in ipairs(vim.lsp.get_clients()) do c:stop() end")
    editor.wait(
        lambda: editor.lua("return next(require('lsp_infer.warm').states) == nil"),
        10,
        "the detach",
    )
    assert editor.lua("return vim.fn.exists('#lsp_infer.warm.' .. vim.fn.bufnr('a.py'))") == 0
    assert editor.lua_errors() == [], editor.diagnostics()


@pytest.mark.parametrize(("version", "path"), PATHS)
def test_warm_after_the_cursor_rests_debounced(
    editor_factory: EditorFactory, workspace: Path, version: str | None, path: str
) -> None:
    editor = start(editor_factory, {"warm_ms": 500}, version)
    uri = open_file(editor, workspace / "a.py", "x = 1\néé = 2\ny = 3\n")
    expected = [(uri, 0, 0)]
    wait_warms(editor, expected, "the opened file")

    editor.input("jl")  # several quick moves: one warm, for where the cursor stopped
    time.sleep(0.15)
    editor.input("ll")
    assert cursor(editor) == [2, len("éé ".encode())]
    expected.append((uri, 1, 3))  # UTF-16 (the client's encoding), not the byte column 5
    wait_warms(editor, expected, "the rest after the moves")
    assert_quiet(editor, expected, "only one for the quick moves")

    editor.input("lh")  # away and back to the place just sent: not sent again
    assert_quiet(editor, expected, "the same place again")
    editor.input("k")
    expected.append((uri, 0, 3))
    wait_warms(editor, expected, "another move")
    assert editor.lua_errors() == [], editor.diagnostics()


@pytest.mark.parametrize(("version", "path"), PATHS)
def test_no_warm_for_an_edit(
    editor_factory: EditorFactory, workspace: Path, version: str | None, path: str
) -> None:
    editor = start(editor_factory, {"warm_ms": 300}, version)
    editor.lua("_G.stub.answer = function() return {} end")  # no ghost text in the way
    uri = open_file(editor, workspace / "a.py", "x = 1\ny = 2\nz = 3\n")
    expected = [(uri, 0, 0)]
    wait_warms(editor, expected, "the opened file")

    editor.input("x")  # normal mode: CursorMoved comes with the edit
    editor.input("jdd")  # a move, then at once an edit (the move's timer is cancelled)
    assert_quiet(editor, expected, "normal-mode edits")
    editor.input("onew")  # insert mode: typing
    assert_quiet(editor, expected, "typing")
    editor.input("<Left>")  # a move without an edit, still in insert mode
    assert cursor(editor) == [3, 2]
    expected.append((uri, 2, 2))
    wait_warms(editor, expected, "the move after typing")
    assert editor.lua_errors() == [], editor.diagnostics()


def test_warm_off(editor_factory: EditorFactory, workspace: Path) -> None:
    editor = start(editor_factory, {"warm": False, "warm_ms": 200})
    open_file(editor, workspace / "a.py", "x = 1\ny = 2\n")
    open_file(editor, workspace / "b.py", "x = 1\ny = 2\n")
    editor.command("buffer a.py")
    editor.input("jl")
    assert_quiet(editor, [], "warm = false")
    assert editor.lua("return next(require('lsp_infer.warm').states)") is None
    error = editor.lua("return select(2, pcall(require('lsp_infer.config').set, { warm = 'yes' }))")
    assert "warm must be a boolean" in error
    error = editor.lua("return select(2, pcall(require('lsp_infer.config').set, { warm_ms = -1 }))")
    assert "warm_ms must not be negative" in error
    assert editor.lua_errors() == [], editor.diagnostics()


def test_no_warm_in_an_unattached_buffer(editor_factory: EditorFactory, workspace: Path) -> None:
    editor = start(editor_factory, {"warm_ms": 200})
    a = open_file(editor, workspace / "a.py", "x = 1\ny = 2\n")
    expected = [(a, 0, 0)]
    wait_warms(editor, expected, "the opened file")

    open_file(editor, workspace / "notes.txt", "one\ntwo\nthree\n", attach=False)
    assert editor.lua("return #vim.lsp.get_clients({ bufnr = 0 })") == 0
    editor.input("jl")
    editor.command("split")
    editor.command("wincmd w")
    assert_quiet(editor, expected, "a buffer without lsp-infer")
    editor.command("only | buffer a.py")  # the place last sent: not again
    editor.input("j")  # a rest in an attached buffer is
    expected.append((a, 1, 0))
    wait_warms(editor, expected, "the attached buffer")
    assert editor.lua_errors() == [], editor.diagnostics()
