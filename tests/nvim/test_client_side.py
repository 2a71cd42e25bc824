"""The plugin's client side against an in-process stub server (stub_server.lua): fast and
deterministic checks of cancellation, stale answers, candidates, partial accepts, status
handling and a guard for the runtime's inline completion. No model, a second or two each."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .conftest import Editor, nvim_of_version

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
    binary = nvim_of_version(version)
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


# -- the suggestion lifecycle and choices ----------------------------------------------------


def events(editor: Editor) -> list[list[Any]]:
    """What the plugin told the stub about suggestions: ["Show" | "PartiallyAccept" | "Dismiss"
    | "accept", id(, acceptedLength)], in order."""
    return list(stub(editor, "lifecycle()"))


def wait_events(editor: Editor, expected: list[list[Any]], what: str) -> None:
    editor.wait(lambda: events(editor) == expected, 5, f"{what}: {expected} (got {events(editor)})")


def test_native_lifecycle_shown_partly_accepted_accepted_dismissed(
    editor_factory: EditorFactory, workspace: Path
) -> None:
    editor = start(editor_factory, workspace, {})
    assert editor.lua("return require('lsp_infer.config').path()") == "native"
    editor.input(TYPED)
    editor.wait_ghost(NATIVE_NS, "a + b", 10)
    shown = [["Show", "s1:1:11"]]
    wait_events(editor, shown, "shown when the runtime draws it")

    editor.input("<M-Right>")  # a word of it: "a", 1 character of the item
    editor.wait(lambda: line(editor) == "    return a", 5, "the first word")
    partly = [*shown, ["PartiallyAccept", "s1:1:11", 1]]
    wait_events(editor, partly, "partly accepted")
    editor.wait_ghost(NATIVE_NS, "+ b", 10)  # the runtime asks again: the rest, a new item
    rest = [*partly, ["Show", "s1:1:12"]]
    wait_events(editor, rest, "its rest shown")

    editor.input("<Tab>")  # get(): the runtime inserts it and runs its command via the client
    editor.wait(lambda: line(editor) == "    return a + b", 5, "the accepted rest")
    accepted = [*rest, ["accept", "s1:1:12"]]
    wait_events(editor, accepted, "accepted through the item's command")
    assert stub(editor, "sent('workspace/executeCommand')")[-1] == {
        "command": "lspInfer.acceptSuggestion",
        "arguments": [{"id": "s1:1:12"}],
    }

    editor.input("<CR>return ")  # Python's indent rules put it at the start of the line
    editor.wait_ghost(NATIVE_NS, "a + b", 10)
    again = [*accepted, ["Show", "s1:2:7"]]
    wait_events(editor, again, "a new one shown")
    editor.input("<C-]>")
    editor.wait(lambda: editor.ghost(NATIVE_NS) is None, 5, "dismiss")
    wait_events(editor, [*again, ["Dismiss", "s1:2:7"]], "dismissed")
    assert editor.lua_errors() == [], editor.diagnostics()


def test_native_choices_ask_the_server_then_cycle(
    editor_factory: EditorFactory, workspace: Path
) -> None:
    editor = start(editor_factory, workspace, {})
    editor.input(TYPED)
    editor.wait_ghost(NATIVE_NS, "a + b", 10)
    requests = stub(editor, "count('textDocument/inlineCompletion')")

    editor.input("<M-]>")  # one suggestion on screen: ask for the choices (Invoked)
    assert editor.wait_ghost(NATIVE_NS, "b + a", 10)["text"] == "b + a (2/3)"
    sent = stub(editor, "sent('textDocument/inlineCompletion')")
    assert len(sent) == requests + 1 and sent[-1]["context"] == {"triggerKind": 1}
    editor.input("<M-]>")  # three on screen: cycled here, no request
    assert editor.wait_ghost(NATIVE_NS, "(3/3)", 5)["text"] == "a (3/3)"
    editor.input("<M-[>")
    assert editor.wait_ghost(NATIVE_NS, "(2/3)", 5)["text"] == "b + a (2/3)"
    assert stub(editor, "count('textDocument/inlineCompletion')") == requests + 1
    editor.input("<Tab>")
    editor.wait(lambda: line(editor) == "    return b + a", 5, "the second choice accepted")
    wait_events(
        editor,
        [
            ["Show", "s1:1:11"],
            *(["Show", "s2:1:11"], ["Dismiss", "s1:1:11"]),  # cycling past a choice
            *(["Show", "s3:1:11"], ["Dismiss", "s2:1:11"]),
            *(["Show", "s2:1:11"], ["Dismiss", "s3:1:11"]),  # back: shown again
            ["accept", "s2:1:11"],
        ],
        "the choices shown, passed by and accepted",
    )
    assert editor.lua_errors() == [], editor.diagnostics()


@pytest.mark.parametrize(("version", "opts"), FALLBACK_BINARIES)
def test_fallback_lifecycle_and_choices(
    editor_factory: EditorFactory, workspace: Path, version: str | None, opts: dict[str, Any]
) -> None:
    binary = nvim_of_version(version)
    editor = start(editor_factory, workspace, {**opts, "debounce_ms": 50}, binary=binary)
    assert editor.lua("return require('lsp_infer.config').path()") == "fallback"
    editor.input(TYPED)
    editor.wait_ghost(FALLBACK_NS, "a + b", 10)
    editor.input("<M-Right>")
    editor.wait(lambda: line(editor) == "    return a", 5, "the first word")
    editor.wait(lambda: len(events(editor)) >= 3, 10, "the rest's answer")
    editor.input("<C-]>")
    editor.wait(lambda: editor.ghost(FALLBACK_NS) is None, 5, "dismiss")
    wait_events(
        editor,
        [
            ["Show", "s1:1:11"],
            ["PartiallyAccept", "s1:1:11", 1],
            ["Show", "s1:1:12"],  # the server's rest; the partly accepted one is not dismissed
            ["Dismiss", "s1:1:12"],
        ],
        "shown, partly accepted, its rest dismissed",
    )

    editor.input("<CR>return ")  # a new line: one suggestion, then the choices
    editor.wait_ghost(FALLBACK_NS, "a + b", 10)
    editor.input("<M-]>")
    assert editor.wait_ghost(FALLBACK_NS, "b + a", 10)["text"] == "b + a (2/3)"
    assert stub(editor, "sent('textDocument/inlineCompletion')")[-1]["context"] == {
        "triggerKind": 1
    }
    editor.input("<M-[>")
    assert editor.wait_ghost(FALLBACK_NS, "(1/3)", 5)["text"] == "a + b (1/3)"
    editor.input("<M-[>")
    assert editor.wait_ghost(FALLBACK_NS, "(3/3)", 5)["text"] == "a (3/3)"
    editor.input("<Tab>")
    editor.wait(lambda: line(editor) == "return a", 5, "the third choice accepted")
    assert events(editor)[4:] == [
        ["Show", "s1:2:7"],
        *(["Show", "s2:2:7"], ["Dismiss", "s1:2:7"]),
        *(["Show", "s1:2:7"], ["Dismiss", "s2:2:7"]),
        *(["Show", "s3:2:7"], ["Dismiss", "s1:2:7"]),
        ["accept", "s3:2:7"],
    ], events(editor)
    assert editor.lua_errors() == [], editor.diagnostics()


STATS = {
    "requests": 40,
    "latencyMs": {"p50": 180.4, "p95": 1234.5},
    "latencyByMinute": {
        "bucketSeconds": 60,
        "points": [
            {"t": 120, "count": 2, "p50": 100, "p95": 400},
            {"t": 60, "count": 3, "p50": 200, "p95": 900},
        ],
    },
    "suggestions": {
        "shown": 10, "accepted": 4, "partlyAccepted": 1, "dismissed": 5, "hidden": 3,
        "acceptanceRate": 0.4,
        "charactersAccepted": 77, "shownToAcceptedMs": {"p50": 900, "p95": 4000},
        "byLength": {"1-15": {"shown": 6, "accepted": 3}, "101+": {"shown": 4, "accepted": 1}},
        "byExtraContext": {
            "without": {"shown": 8, "accepted": 2}, "with": {"shown": 2, "accepted": 2},
        },
        "byConfidence": {  # out of order: the plugin puts the server's order back
            "unknown": {"shown": 1, "accepted": 0, "acceptanceRate": 0.0, "hidden": 0},
            "0.8-1": {"shown": 3, "accepted": 2, "acceptanceRate": 0.667, "hidden": 0},
            "0-0.2": {"shown": 0, "accepted": 0, "acceptanceRate": None, "hidden": 2},
            "0.2-0.4": {"shown": 1, "accepted": 0, "acceptanceRate": 0.0, "hidden": 1},
            "0.4-0.6": {"shown": 2, "accepted": 1, "acceptanceRate": 0.5, "hidden": 0},
            "0.6-0.8": {"shown": 3, "accepted": 1, "acceptanceRate": 0.333, "hidden": 0},
        },
    },
}  # fmt: skip


def test_stats_figures_in_the_window_and_checkhealth(
    editor_factory: EditorFactory, workspace: Path
) -> None:
    editor = start(editor_factory, workspace, {})
    editor.lua("_G.stub.stats = ...", STATS)
    editor.lua("os.date = function(_, t) return 'T' .. t end")  # clock-free labels
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
        5,
        "the stats window",
    )
    text = "\n".join(lines)
    for expected in (
        "Latency p50 / p95           180 ms / 1.2 s",
        "Acceptance rate             40 %",
        "Shown → accepted p50 / p95  900 ms / 4.0 s",
        "p95 █▄  T60–T180",  # p95 per minute, oldest first: 900 ms then 400 ms
        "T60  p50  200 ms  p95  900 ms  3 answered",
        "all                    ████████░░░░░░░░░░░░  40 % (4/10)",
        "1-15                   ██████████░░░░░░░░░░  50 % (3/6)",
        "with extra context     ████████████████████  100 % (2/2)",
        "without extra context  █████░░░░░░░░░░░░░░░  25 % (2/8)",
        "Hidden (model unsure)       3",
        "by confidence (first line)",
        "confidence 0-0.2       ░░░░░░░░░░░░░░░░░░░░  – (0/0)           2 hidden",
        "confidence 0.2-0.4     ░░░░░░░░░░░░░░░░░░░░  0 % (0/1)         1 hidden",
        "confidence 0.8-1       █████████████░░░░░░░  67 % (2/3)        0 hidden",
        "confidence unknown     ░░░░░░░░░░░░░░░░░░░░  0 % (0/1)         0 hidden",
        "suggestions.byConfidence.0-0.2.hidden",
        "suggestions.charactersAccepted",
    ):
        assert expected in text, text
    assert text.index("1-15") < text.index("101+") and text.index("with extra") < text.index(
        "without extra"
    )
    bands = ["0-0.2", "0.2-0.4", "0.4-0.6", "0.6-0.8", "0.8-1", "unknown"]
    places = [text.index("confidence " + band) for band in bands]
    assert places == sorted(places), text  # the server's order, not the dict's
    editor.input("q")
    editor.command("checkhealth lsp_infer")
    report = editor.text()
    assert "Suggestions shown: 10; Accepted: 4" in report, report
    assert "Dismissed: 5; Hidden (model unsure): 3" in report, report
    assert "40 % (4/10)" in report, report
    assert editor.lua_errors() == [], editor.diagnostics()
