"""lspInfer/definitions end to end: a real headless Neovim with the plugin, a real second
language server (jedi-language-server) on the same buffer, and lsp-infer asking.

- test_asked_over_stdio: a stand-in for lsp-infer over stdio (definitions_asker.py) sends the
  request, so the answer goes through Neovim's own RPC path (rpc.lua runs the handler in a
  coroutine) and jedi's real answer; no model.
- the model tests: the real `lsp-infer serve` asks in the pause after typing; its
  lspInfer/stats and :LspInferStats show what the editor answered, and with the plugin's
  `definitions = false` it is never asked.

geometry.py (the definition's file) is never opened: its text comes from disk.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .conftest import VENV_BIN, Editor, find_nvim_011

ASKER = Path(__file__).with_name("definitions_asker.py")
JEDI = VENV_BIN / "jedi-language-server"

EditorFactory = Callable[..., Editor]

GEOMETRY = '''"""Points in the plane."""

import math


def distance(a, b):
    """The Euclidean distance between the points a and b."""
    return math.hypot(a[0] - b[0], a[1] - b[1])
'''
MAIN = """from geometry import distance

a = (0, 0)
b = (3, 4)
print(distance(a, b))
"""
DISTANCE_LINE = 5  # of geometry.py: `def distance(a, b):`


@pytest.fixture
def jedi() -> Path:
    if not JEDI.exists():
        pytest.skip("jedi-language-server is not installed (pip install -e '.[test]')")
    return JEDI


def write_files(workspace: Path) -> Path:
    (workspace / "geometry.py").write_text(GEOMETRY)
    main = workspace / "main.py"
    main.write_text(MAIN)
    return main


def start_jedi(editor: Editor, jedi: Path, workspace: Path) -> None:
    """jedi-language-server as a second client of the current buffer, warmed up: its first
    definition (jedi's imports and parse, seconds on a busy machine) is asked here, so that
    the plugin's time bound is not spent on it."""
    editor.lua(
        """
        local cmd, root = ...
        vim.lsp.start({ name = 'jedi', cmd = { cmd }, root_dir = root }, { bufnr = 0 })
        """,
        str(jedi),
        str(workspace),
    )
    editor.wait(
        lambda: editor.lua(
            "local c = vim.lsp.get_clients({ name = 'jedi', bufnr = 0 })[1] "
            "return c ~= nil and c.initialized == true"
        ),
        60,
        "jedi-language-server to start",
    )
    warmed = editor.lua(
        """
        local answers = vim.lsp.buf_request_sync(0, 'textDocument/definition', {
          textDocument = { uri = vim.uri_from_bufnr(0) },
          position = { line = 4, character = 8 },
        }, 60000)
        for _, answer in pairs(answers or {}) do
          if answer.result and next(answer.result) then return true end
        end
        return false
        """
    )
    assert warmed, editor.diagnostics()


def records(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("version", [None, "0.11"], ids=["nvim-0.12", "nvim-0.11"])
def test_asked_over_stdio(
    editor_factory: EditorFactory,
    workspace: Path,
    tmp_path: Path,
    jedi: Path,
    version: str | None,
) -> None:
    binary = None
    if version:
        binary = find_nvim_011()
        if binary is None:
            pytest.skip("no Neovim 0.11 (set LSP_INFER_TEST_NVIM_011)")
    main = write_files(workspace)
    record = tmp_path / "asker.jsonl"
    editor = editor_factory(binary)
    editor.setup({"cmd": [sys.executable, str(ASKER), str(record)]})
    editor.edit(main)
    editor.wait_attached(30)
    # Our experimental features, as sent over the wire (suggestionReady: ready.lua;
    # references: test_references.py).
    announced = {"lspInfer": {"definitions": True, "references": True, "suggestionReady": True}}
    assert records(record)[0] == {"initialize": announced}
    start_jedi(editor, jedi, workspace)

    positions = [
        {"line": 4, "character": 8},  # print(distance(a, b)): the call
        {"line": 0, "character": 21},  # the import
        {"line": 2, "character": 4},  # `=`: not a name
    ]
    editor.lua(
        "vim.lsp.get_clients({ name = 'lsp_infer' })[1]:notify('test/ask', ...)",
        {
            "method": "lspInfer/definitions",
            "params": {"textDocument": {"uri": main.as_uri()}, "positions": positions},
        },
    )
    answers = editor.wait(
        lambda: [r for r in records(record) if "answer" in r], 30, "the editor's answer"
    )
    answer = answers[0]
    assert answer["error"] is None, answer
    found = answer["answer"]["definitions"]
    assert len(found) == 3, found
    geometry = (workspace / "geometry.py").as_uri()
    lines = GEOMETRY.splitlines()
    for entry in found[:2]:
        assert entry["uri"] == geometry, found
        assert entry["range"]["start"] == {"line": DISTANCE_LINE, "character": 4}, entry
        assert entry["text"] == "\n".join(lines[DISTANCE_LINE:]), entry
    assert found[2] is None, found
    assert answer["ms"] < 1500, answer  # within the plugin's bound (1000 ms) and the trip back
    assert editor.lua("return vim.fn.bufexists(...)", str(workspace / "geometry.py")) == 0
    assert editor.lua_errors() == [], editor.diagnostics()


# -- the real server ---------------------------------------------------------------------------

SETTINGS = {"context": {"idleMs": 300}}  # a short pause: the server asks sooner


def typed_and_paused(editor: Editor) -> None:
    """Type a line that uses `distance` below its call, then pause."""
    editor.input("Gofar = dist")
    editor.wait(lambda: editor.lines()[-1] == "far = dist", 10, "the typed text")


def definitions_stats(editor: Editor) -> dict[str, Any]:
    stats = editor.stats()
    assert stats is not None, editor.diagnostics()
    assert "definitions" in stats, stats
    result: dict[str, Any] = stats["definitions"]
    return result


@pytest.mark.model
def test_the_server_asks_and_the_editor_answers(
    editor_factory: EditorFactory, workspace: Path, jedi: Path
) -> None:
    main = write_files(workspace)
    editor = editor_factory()
    editor.setup({"settings": SETTINGS})
    editor.edit(main)
    editor.wait_ready()
    start_jedi(editor, jedi, workspace)
    assert definitions_stats(editor)["supported"] is True

    typed_and_paused(editor)

    def answered() -> dict[str, Any] | None:
        counts = definitions_stats(editor)
        return counts if counts["requests"] >= 1 and counts["answered"] >= 1 else None

    counts = editor.wait(answered, 120, "a definitions request answered")
    assert counts["asked"] >= counts["answered"] >= 1, counts
    assert editor.lua("return vim.fn.bufexists(...)", str(workspace / "geometry.py")) == 0

    editor.command("LspInferStats")
    text = editor.wait(
        lambda: "\n".join(
            editor.lua(
                """
                for _, win in ipairs(vim.api.nvim_list_wins()) do
                  if vim.api.nvim_win_get_config(win).relative ~= '' then
                    return vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(win), 0, -1, false)
                  end
                end
                return {}
                """
            )
        ),
        10,
        "the stats window",
    )
    assert "Definitions answered" in text and "Definitions p50 / p95" in text, text
    assert editor.lua_errors() == [], editor.diagnostics()


@pytest.mark.model
def test_never_asked_with_the_option_off(
    editor_factory: EditorFactory, workspace: Path, jedi: Path
) -> None:
    main = write_files(workspace)
    editor = editor_factory()
    editor.setup({"settings": SETTINGS, "definitions": False})
    editor.edit(main)
    editor.wait_ready()
    start_jedi(editor, jedi, workspace)

    typed_and_paused(editor)
    # As long as the test above needs to see a request, and then some.
    editor.wait(lambda: (editor.stats() or {}).get("requests", 0) >= 1, 60, "a completion request")
    time.sleep(5)
    counts = definitions_stats(editor)
    assert counts["supported"] is False, counts
    assert counts["requests"] == 0 and counts["asked"] == 0, counts
    editor.command("LspInferStats")
    assert editor.lua_errors() == [], editor.diagnostics()
