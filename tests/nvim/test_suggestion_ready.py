"""lspInfer/suggestionReady in the Neovim plugin (lua/lsp_infer/ready.lua): after a cold start
the server says where the whole window's suggestion is ready, and the plugin asks again there
(an Automatic request) if the user is still at it, so the suggestion appears with no keystroke.

First against the in-process stub server (stub_server.lua sends the notification and records
the requests): the capability, every reason to ignore one, and the request it makes. Then the
real `lsp-infer serve` with the model, cold on a 160-line file: the hidden cold answer, then the
ghost text with no further typing; and nothing asked when the cursor left before the notice.
Native (0.12) and fallback (0.11, and 0.12 forced) paths."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .conftest import Editor, nvim_of_version
from .test_client_side import start

READY = "lspInfer/suggestionReady"
INLINE = "textDocument/inlineCompletion"
NATIVE_NS = "nvim.lsp.inline_completion"
FALLBACK_NS = "lsp_infer.ghost"
# A two-byte character before the cursor: the position is in UTF-16 (the client's encoding),
# one less than Neovim's byte column.
TYPED = "idef add(a, b):<CR>ñ = 0; return "
LINE = "    ñ = 0; return "
CHARACTER = len(LINE.encode("utf-16-le")) // 2

EditorFactory = Callable[..., Editor]

PATHS = [
    pytest.param(None, {}, "native", id="nvim-0.12-native"),
    pytest.param(None, {"fallback": True}, "fallback", id="nvim-0.12-fallback-forced"),
    pytest.param("0.11", {}, "fallback", id="nvim-0.11-fallback-auto"),
]


def namespace(path: str) -> str:
    return NATIVE_NS if path == "native" else FALLBACK_NS


# -- against the stub --------------------------------------------------------------------------

# The stub answers nothing (a hidden cold guess) until `_G.ready` is set, then its usual item
# (a Lua expression for test_client_side.start's `answer`).
COLD_ANSWER = (
    "(function(answer) return function(params, line) "
    "return _G.ready and answer(params, line) or {} end end)(_G.stub.answer)"
)

# The version the server last heard for the document (didOpen / didChange).
HEARD_VERSION = """
local version
for _, message in ipairs(_G.stub.notifications) do
  if message[1] == 'textDocument/didOpen' or message[1] == 'textDocument/didChange' then
    version = message[2].textDocument.version
  end
end
return version
"""

ANNOUNCED = """
for _, request in ipairs(_G.stub.requests) do
  if request[1] == 'initialize' then
    return vim.tbl_get(request[2], 'capabilities', 'experimental', 'lspInfer') or vim.NIL
  end
end
"""


def start_stub(
    editor_factory: EditorFactory, workspace: Path, opts: dict[str, Any], version: str | None
) -> Editor:
    return start(editor_factory, workspace, opts, nvim_of_version(version), answer=COLD_ANSWER)


def inline_requests(editor: Editor) -> list[dict[str, Any]]:
    return list(editor.lua(f"return _G.stub.sent('{INLINE}')"))


def settle(editor: Editor) -> int:
    """Wait until no inline completion request came for 0.8 s (the runtime's 200 ms pause, the
    fallback's debounce); how many there were."""
    count, since = len(inline_requests(editor)), time.monotonic()
    while time.monotonic() - since < 0.8:
        time.sleep(0.1)
        now = len(inline_requests(editor))
        if now != count:
            count, since = now, time.monotonic()
    return count


def notify(editor: Editor, params: Any) -> None:
    """The stub sends lspInfer/suggestionReady (handled at once: in-process, no scheduling)."""
    editor.lua(f"_G.stub.dispatchers.notification('{READY}', ...)", params)


def ready_params(uri: str, version: int, line: int, character: int) -> dict[str, Any]:
    return {
        "textDocument": {"uri": uri, "version": version},
        "position": {"line": line, "character": character},
    }


@pytest.mark.parametrize(("version", "opts", "path"), PATHS)
def test_asked_again_only_where_the_user_still_is(
    editor_factory: EditorFactory,
    workspace: Path,
    version: str | None,
    opts: dict[str, Any],
    path: str,
) -> None:
    editor = start_stub(editor_factory, workspace, opts, version)
    assert editor.lua("return require('lsp_infer.config').path()") == path
    ns = namespace(path)
    assert editor.lua(ANNOUNCED) == {
        "definitions": True,
        "references": True,
        "suggestionReady": True,
    }

    editor.input(TYPED)  # the cold answers: empty
    editor.wait(lambda: str(editor.nvim.current.line) == LINE, 5, "the typed line")
    asked = settle(editor)
    assert asked >= 1 and editor.ghost(ns) is None
    editor.lua("_G.ready = true")  # the whole window's suggestion, from now on

    uri = (workspace / "add.py").as_uri()
    heard = editor.lua(HEARD_VERSION)
    assert isinstance(heard, int) and heard > 0
    here = ready_params(uri, heard, 1, CHARACTER)
    ignored: list[Any] = [
        "junk",
        {},
        {"textDocument": {"uri": uri}},
        {"textDocument": {"uri": uri, "version": heard}, "position": {"line": 1}},
        ready_params(uri, heard, -1, CHARACTER),
        ready_params(uri, heard, 1, CHARACTER + 0.5),  # type: ignore[arg-type]
        {**here, "position": {"line": 1, "character": str(CHARACTER)}},
        {**here, "textDocument": {"uri": 7, "version": heard}},
        ready_params((workspace / "other.py").as_uri(), heard, 1, CHARACTER),  # another file
        ready_params(uri, heard - 1, 1, CHARACTER),  # typed since
        ready_params(uri, heard, 1, CHARACTER - 1),  # the cursor moved
        ready_params(uri, heard, 1, len(LINE.encode())),  # the byte column: not UTF-16
        ready_params(uri, heard, 0, CHARACTER),
    ]
    for params in ignored:
        notify(editor, params)
        assert len(inline_requests(editor)) == asked, json.dumps(params)

    editor.command("LspInferToggle off")  # suggestions off: not asked either
    notify(editor, here)
    assert len(inline_requests(editor)) == asked
    editor.command("LspInferToggle on")
    assert editor.lua("return vim.api.nvim_get_mode().mode") == "i"
    assert editor.ghost(ns) is None

    notify(editor, here)  # the user is still there: asked again, as typing would
    requests = inline_requests(editor)
    assert len(requests) == asked + 1
    assert requests[-1]["context"] == {"triggerKind": 2}
    assert requests[-1]["position"] == {"line": 1, "character": CHARACTER}
    ghost = editor.wait_ghost(ns, "a + b", 10)
    assert ghost["row"] == 1
    assert str(editor.nvim.current.line) == LINE  # nothing typed

    editor.input("<Esc>")  # normal mode: not asked, even at the cursor's place
    editor.wait(lambda: editor.ghost(ns) is None, 5, "InsertLeave to clear")
    position = editor.lua("return vim.lsp.util.make_position_params(0, 'utf-16').position")
    settle(editor)
    count = len(inline_requests(editor))
    notify(editor, ready_params(uri, editor.lua(HEARD_VERSION), **position))
    assert len(inline_requests(editor)) == count
    assert editor.ghost(ns) is None
    assert editor.lua_errors() == [], editor.diagnostics()


@pytest.mark.parametrize(
    ("version", "opts", "announced"),
    [
        pytest.param(
            "0.11",
            {"fallback": False},
            {"definitions": True, "references": True},
            id="nvim-0.11-none",
        ),
        pytest.param(
            None,
            {"definitions": False},
            {"references": True, "suggestionReady": True},
            id="nvim-0.12",
        ),
    ],
)
def test_announced_where_suggestions_are_shown(
    editor_factory: EditorFactory,
    workspace: Path,
    version: str | None,
    opts: dict[str, Any],
    announced: dict[str, Any],
) -> None:
    """Not announced where the plugin shows no suggestions (0.11 with `fallback = false`);
    announced whatever the `definitions` option."""
    editor = start_stub(editor_factory, workspace, opts, version)
    assert editor.lua(ANNOUNCED) == announced
    # The runtime's own capabilities are kept beside ours.
    assert editor.lua(
        "return vim.lsp.get_clients({ name = 'lsp_infer' })[1].capabilities.textDocument ~= nil"
    )


# -- the real server and model -------------------------------------------------------------

# A cold start held to the strictest threshold (its guess hidden), the whole window's suggestion
# to none (anything the model writes is shown); no precompute, no extra context.
COLD_SETTINGS = {
    "completion": {
        "coldStartMs": 300,
        "coldStartConfidence": 1.0,
        "minConfidence": 0,
        "precompute": False,
    },
    "context": {"enabled": False},
}

# Records what the plugin is told and what it asks: the suggestionReady notifications (with
# whether it asked again) and the inline completion requests sent (their params).
RECORD = """
_G.__ready, _G.__inline = {}, {}
local ready = require('lsp_infer.ready')
local on_ready = ready.on_ready
ready.on_ready = function(params, client_id)
  local asked = on_ready(params, client_id)
  table.insert(_G.__ready, { params = params, asked = asked })
  return asked
end
local client = vim.lsp.get_clients({ name = 'lsp_infer', bufnr = 0 })[1]
local request = client.rpc.request
client.rpc.request = function(method, params, ...)
  if method == 'textDocument/inlineCompletion' then
    table.insert(_G.__inline, params)
  end
  return request(method, params, ...)
end
"""

PATHS_MODEL = [
    pytest.param(None, "native", id="nvim-0.12-native"),
    pytest.param("0.11", "fallback", id="nvim-0.11-fallback-auto"),
]


def cold_file(workspace: Path) -> tuple[Path, list[str]]:
    """The first 160 lines of the stdlib's difflib.py and an empty line to type on: a file the
    server has not seen. Its lines as Neovim has them."""
    lines = Path(json.__file__).parent.parent.joinpath("difflib.py").read_text().split("\n")
    text = "\n".join(lines[:160]) + "\n\n"
    path = workspace / "cold.py"
    path.write_text(text)
    return path, text.split("\n")[:-1]


def start_cold(
    editor_factory: EditorFactory, workspace: Path, version: str | None
) -> tuple[Editor, Path, list[str]]:
    """A real server with COLD_SETTINGS on the cold file, model ready, recording. No
    lspInfer/warm: the server must not evaluate the end of the file before the request."""
    editor = editor_factory(nvim_of_version(version))
    editor.setup({"settings": COLD_SETTINGS, "warm": False})
    path, lines = cold_file(workspace)
    editor.edit(path)
    editor.wait_ready()
    editor.lua(RECORD)
    return editor, path, lines


def stats(editor: Editor) -> dict[str, Any]:
    return editor.wait(editor.stats, 30, "lspInfer/stats")


def cold_answer(editor: Editor, ns: str) -> dict[str, Any]:
    """Insert mode on the last (empty) line: the automatic request's cold answer, hidden."""
    editor.input("Gi")
    answered = editor.wait(
        lambda: (s := editor.stats()) and s["answered"] >= 1 and s, 120, "the cold answer"
    )
    assert editor.ghost(ns) is None, "the cold start's guess is hidden"
    assert answered["hidden"] == 1 and answered["suggested"] == 0, answered
    assert answered["reducedWindows"] == 1, answered
    return answered


@pytest.mark.model
@pytest.mark.parametrize(("version", "path"), PATHS_MODEL)
def test_the_whole_windows_suggestion_appears_without_a_keystroke(
    editor_factory: EditorFactory, workspace: Path, version: str | None, path: str
) -> None:
    editor, file, lines = start_cold(editor_factory, workspace, version)
    ns = namespace(path)
    last = len(lines) - 1
    cold_answer(editor, ns)

    ghost = editor.wait_ghost(ns, timeout=120)  # no key pressed since
    assert ghost["row"] == last and ghost["text"].strip(), ghost
    assert editor.lines() == lines
    assert editor.lua("return vim.api.nvim_get_mode().mode") == "i"
    (ready,) = editor.lua("return _G.__ready")
    assert ready["asked"] is True, ready
    assert ready["params"]["textDocument"]["uri"] == file.as_uri()
    assert ready["params"]["position"] == {"line": last, "character": 0}
    sent = editor.lua("return _G.__inline")
    assert len(sent) >= 2 and all(s["context"] == {"triggerKind": 2} for s in sent), sent
    assert sent[-1]["position"] == {"line": last, "character": 0}
    after = stats(editor)
    assert after["offeredAgain"] == 1 and after["suggested"] >= 1, after
    assert after["cacheHits"] >= 1, after  # answered from the whole window's result
    assert editor.lua_errors() == [], editor.diagnostics()


@pytest.mark.model
@pytest.mark.parametrize(("version", "path"), PATHS_MODEL)
def test_nothing_asked_once_the_cursor_left(
    editor_factory: EditorFactory, workspace: Path, version: str | None, path: str
) -> None:
    """The cursor moved before the notification (normal mode, no request, so the server still
    sends it): the plugin does not ask, and no ghost text appears at the old place."""
    editor, file, lines = start_cold(editor_factory, workspace, version)
    ns = namespace(path)
    cold_answer(editor, ns)
    editor.input("<Esc>k")
    editor.wait(lambda: editor.lua("return _G.__ready")[:1], 120, "the notification")
    (ready,) = editor.lua("return _G.__ready")
    assert ready["asked"] is False, ready
    assert ready["params"]["textDocument"]["uri"] == file.as_uri()
    assert ready["params"]["position"] == {"line": len(lines) - 1, "character": 0}
    time.sleep(1.0)
    assert len(editor.lua("return _G.__inline")) == 1  # the cold request only
    assert editor.ghost(ns) is None
    assert stats(editor)["offeredAgain"] == 1
    assert editor.lines() == lines
    assert editor.lua_errors() == [], editor.diagnostics()
