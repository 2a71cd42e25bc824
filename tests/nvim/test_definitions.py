"""lspInfer/definitions, the plugin's side (lua/lsp_infer/definitions.lua): the server asks
where names are defined, the plugin asks the buffer's other language servers and answers with
the first location and the target's text.

These run against the in-process stub lsp-infer (stub_server.lua, utf-16) and an in-process
definition server (definition_server.lua, utf-8), in a real headless Neovim: the position
conversion, the text cut, the answer's shape, the time bound and the capability. The request
is made the way Neovim's rpc.lua makes it (the handler inside `vim.schedule(coroutine.wrap())`),
and also outside a coroutine. The end-to-end tests with the real server and
jedi-language-server are in test_definitions_e2e.py."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .conftest import Editor, nvim_of_version

STUB = Path(__file__).with_name("stub_server.lua")
DEFINITION_SERVER = Path(__file__).with_name("definition_server.lua")

EditorFactory = Callable[..., Editor]

GEOMETRY = '''"""Géométrie: distances."""

TITLE = "Géométrie"


def distance(a, b):
    """Euclidean distance between the points a and b."""
    return ((a[0] - b[0]) ** 2 + (a[1] - b[1]) ** 2) ** 0.5
'''
MAIN = """from geometry import distance, TITLE

résumé = distance((0, 0), (3, 4))
print(résumé, TITLE, undefined_name, broken)
"""

# The definition server's answers by the word it is asked about (it reads the line itself).
ANSWERS = """function(params)
  local bufnr = vim.uri_to_bufnr(params.textDocument.uri)
  local line = vim.api.nvim_buf_get_lines(bufnr, params.position.line,
    params.position.line + 1, false)[1] or ''
  local word = line:sub(params.position.character + 1):match('^[%w_\\128-\\255]+') or ''
  local geo = _G.geometry_uri
  if word == 'distance' then
    return { { targetUri = geo,
      targetRange = { start = { line = 5, character = 0 }, ['end'] = { line = 7, character = 0 } },
      targetSelectionRange = { start = { line = 5, character = 4 },
        ['end'] = { line = 5, character = 12 } } } }, 30
  elseif word == 'TITLE' then  -- one Location, not a list; its end after two 2-byte letters
    return { uri = geo, range = { start = { line = 2, character = 8 },
      ['end'] = { line = 2, character = 21 } } }, 10
  elseif word == 'undefined_name' then return {}, 10
  elseif word == 'broken' then return 'error', 10
  elseif word == 'print' then return { { uri = 5 } }, 10
  elseif word == 'never' then return nil, nil
  end
  return 'nonsense', 10
end"""

# Ask lspInfer/definitions as the server would: through the client's server_request dispatcher,
# inside `vim.schedule(coroutine.wrap(...))` as rpc.lua does (or a plain scheduled call).
ASK = """
local params, in_coroutine = ...
_G.answer = nil
local asked = vim.uv.hrtime()
local function ask()
  local result, err = _G.stub.dispatchers.server_request('lspInfer/definitions', params)
  _G.answer = { result = result, err = err, ms = (vim.uv.hrtime() - asked) / 1e6 }
end
vim.schedule(in_coroutine and coroutine.wrap(ask) or ask)
"""


def start(
    editor_factory: EditorFactory,
    workspace: Path,
    opts: dict[str, Any],
    version: str | None = None,
    second_server: bool = True,
) -> Editor:
    """The stub lsp-infer with `opts` on main.py (geometry.py beside it, not opened), and the
    definition server as a second client of that buffer."""
    binary = nvim_of_version(version)
    (workspace / "geometry.py").write_text(GEOMETRY)
    main = workspace / "main.py"
    main.write_text(MAIN)
    editor = editor_factory(binary)
    editor.lua("_G.stub = dofile(...)", str(STUB))
    editor.lua("_G.defs = dofile(...)", str(DEFINITION_SERVER))
    editor.lua(f"_G.defs.answer = {ANSWERS}")
    editor.lua("_G.geometry_uri = vim.uri_from_fname(...)", str(workspace / "geometry.py"))
    editor.lua(
        "require('lsp_infer').setup(vim.tbl_extend('force', ..., { cmd = _G.stub.cmd }))", opts
    )
    editor.edit(main)
    editor.wait_attached(10)
    if second_server:
        editor.lua("_G.defs.start(0, ...)", str(workspace))
        editor.wait(
            lambda: editor.lua("return #vim.lsp.get_clients({ name = 'definitions', bufnr = 0 })"),
            10,
            "the definition server to attach",
        )
    return editor


def ask(editor: Editor, positions: list[Any], in_coroutine: bool = True) -> None:
    params = {"textDocument": {"uri": editor.lua("return vim.uri_from_bufnr(0)")}}
    editor.lua(ASK, {**params, "positions": positions}, in_coroutine)


def answer(editor: Editor, timeout: float = 10) -> dict[str, Any]:
    result: dict[str, Any] = editor.wait(
        lambda: editor.lua("return _G.answer"), timeout, "the lspInfer/definitions answer"
    )
    return result


def definitions(editor: Editor, positions: list[Any], in_coroutine: bool = True) -> list[Any]:
    ask(editor, positions, in_coroutine)
    result = answer(editor)
    assert result.get("err") is None, result
    return list(result["result"]["definitions"])


def position(line: int, character: int) -> dict[str, int]:
    return {"line": line, "character": character}


def asked(editor: Editor) -> list[tuple[int, int]]:
    """The positions the definition server was asked, in its (utf-8) encoding."""
    requests = editor.lua("return _G.defs.requests")
    return [(r["position"]["line"], r["position"]["character"]) for r in requests]


def geometry_lines(start: int) -> str:
    return "\n".join(GEOMETRY.splitlines()[start:])


def geometry_above(start: int) -> str:
    """The lines an answer sends from above a definition (its doc comment, decorators)."""
    return "\n".join(GEOMETRY.splitlines()[max(0, start - 10) : start])


# -- pure functions, in Neovim's Lua -----------------------------------------------------------

CONVERSIONS = [
    # line, character, from, to, expected
    ("résumé = distance", 9, "utf-16", "utf-8", 11),
    ("résumé = distance", 11, "utf-8", "utf-16", 9),
    ("résumé = distance", 11, "utf-8", "utf-32", 9),
    ("a😀b = 1", 3, "utf-16", "utf-8", 5),  # after the emoji: 2 UTF-16 units, 4 bytes
    ("a😀b = 1", 5, "utf-8", "utf-16", 3),
    ("a😀b = 1", 2, "utf-32", "utf-16", 3),
    ("a😀b = 1", 3, "utf-16", "utf-32", 2),
    ("x = 1", 40, "utf-16", "utf-8", 5),  # past the end: the line's end
    ("", 3, "utf-16", "utf-16", 0),
    ("plain", 3, "utf-16", "utf-8", 3),
]


@pytest.mark.parametrize("version", [None, "0.11"], ids=["nvim-0.12", "nvim-0.11"])
def test_conversion_cut_and_reading(
    editor_factory: EditorFactory, workspace: Path, tmp_path: Path, version: str | None
) -> None:
    editor = start(editor_factory, workspace, {}, version, second_server=False)
    for line, character, source, target, expected in CONVERSIONS:
        got = editor.lua(
            "return require('lsp_infer.definitions').convert(...)",
            line,
            character,
            source,
            target,
        )
        assert got == expected, (line, character, source, target, got)

    # The cut: 60 lines, then 8000 characters (code points, not bytes).
    cut = "return require('lsp_infer.definitions').cut(...)"
    assert editor.lua(cut, [f"line {i}" for i in range(100)]) == "\n".join(
        f"line {i}" for i in range(60)
    )
    assert editor.lua(cut, ["é" * 9000]) == "é" * 8000
    assert editor.lua(cut, ["ab", "é" * 7995, "cd"]) == "ab\n" + "é" * 7995 + "\nc"
    # A definition on a file's first line (a module imported whole) is sent up to 5000 lines
    # and 200,000 characters, the others up to 60 and 8000.
    bounds = "return { require('lsp_infer.definitions').bounds(...) }"
    assert editor.lua(bounds, 0) == [5000, 200_000] and editor.lua(bounds, 1) == [60, 8000]
    assert editor.lua(cut, ["x = 1"] * 6000, 5000, 200_000) == "\n".join(["x = 1"] * 5000)

    # A file from disk: only the lines asked for; CRLF endings dropped; a line past the end is
    # nothing; so is a missing file or a folder.
    big = tmp_path / "big.py"
    big.write_bytes(b"".join(b"x%d = %d\r\n" % (i, i) for i in range(50_000)))
    read = "return require('lsp_infer.definitions').read_file(...)"
    assert editor.lua(read, str(big), 40_000, 3) == [
        "x40000 = 40000",
        "x40001 = 40001",
        "x40002 = 40002",
    ]
    assert editor.lua(read, str(big), 49_999, 60) == ["x49999 = 49999"]
    assert editor.lua(read, str(big), 50_000, 60) is None
    whole = editor.lua(read, str(big), 0, 5000, 200_000)  # a module's text, read far enough
    assert len(whole) == 5000 and whole[-1] == "x4999 = 4999"
    assert editor.lua(read, str(tmp_path / "missing.py"), 0, 60) is None
    assert editor.lua(read, str(tmp_path), 0, 60) is None
    one_line = tmp_path / "one_line.py"
    one_line.write_text("y = 1")  # no newline at the end
    assert editor.lua(read, str(one_line), 0, 60) == ["y = 1"]

    # The first location of each kind of result; nothing from garbage.
    first = """
      local uri, range = require('lsp_infer.definitions').first_location(...)
      return uri and { uri, range.start.line, range.start.character } or vim.NIL
    """
    at = {"start": position(4, 2), "end": position(4, 6)}
    link = {
        "targetUri": "file:///t.py",
        "targetRange": {"start": position(3, 0), "end": position(9, 0)},
        "targetSelectionRange": at,
    }
    assert editor.lua(first, {"uri": "file:///l.py", "range": at}) == ["file:///l.py", 4, 2]
    assert editor.lua(first, [{"uri": "file:///l.py", "range": at}]) == ["file:///l.py", 4, 2]
    assert editor.lua(first, [link]) == ["file:///t.py", 4, 2]
    no_selection = {k: v for k, v in link.items() if k != "targetSelectionRange"}
    assert editor.lua(first, [no_selection]) == ["file:///t.py", 3, 0]
    garbage_results: list[Any] = [
        [],
        "x",
        5,
        [{"uri": 5}],
        [{"uri": "file:///x", "range": {}}],
        [[]],
    ]
    for garbage in garbage_results:
        assert editor.lua(first, garbage) is None, garbage
    assert editor.lua_errors() == [], editor.diagnostics()


# -- the request, answered ---------------------------------------------------------------------

POSITIONS = [
    position(2, 9),  # distance (after "résumé = ": 9 UTF-16 units, 11 bytes)
    position(0, 31),  # TITLE in the import
    position(3, 21),  # undefined_name: an empty answer
    position(3, 37),  # broken: an error
    position(3, 0),  # print: a location without a usable uri
    position(3, 6),  # résumé: not a definition result at all
    position(50, 0),  # past the end of the buffer: not asked
    {"line": "x"},  # not a position: not asked
]


@pytest.mark.parametrize(
    ("version", "in_coroutine"),
    [
        pytest.param(None, True, id="nvim-0.12-coroutine"),
        pytest.param(None, False, id="nvim-0.12-no-coroutine"),
        pytest.param("0.11", True, id="nvim-0.11-coroutine"),
    ],
)
def test_definitions_from_the_other_server(
    editor_factory: EditorFactory, workspace: Path, version: str | None, in_coroutine: bool
) -> None:
    editor = start(editor_factory, workspace, {}, version)
    geometry = str(workspace / "geometry.py")
    geometry_uri = (workspace / "geometry.py").as_uri()
    assert (
        editor.lua("return vim.lsp.get_clients({ name = 'lsp_infer' })[1].offset_encoding")
        == "utf-16"
    )
    assert (
        editor.lua("return vim.lsp.get_clients({ name = 'definitions' })[1].offset_encoding")
        == "utf-8"
    )

    found = definitions(editor, POSITIONS, in_coroutine)
    assert asked(editor) == [(2, 11), (0, 31), (3, 23), (3, 39), (3, 0), (3, 6)]
    assert found[0] == {
        "uri": geometry_uri,
        "range": {"start": position(5, 4), "end": position(5, 12)},
        "text": geometry_lines(5),
        "above": geometry_above(5),
    }, found[0]
    # A Location (not a list); its end converted to UTF-16 ("Géométrie": 9 units, 11 bytes).
    assert found[1] == {
        "uri": geometry_uri,
        "range": {"start": position(2, 8), "end": position(2, 19)},
        "text": geometry_lines(2),
        "above": geometry_above(2),
    }, found[1]
    assert found[2:] == [None] * 6, found
    # Read from disk: no buffer was made for geometry.py.
    assert editor.lua("return vim.fn.bufexists(...)", geometry) == 0

    # With geometry.py loaded (and edited, unsaved), its text comes from the buffer.
    edited = '    """The distance (edited)."""'
    editor.lua(
        """
        local path, line = ...
        local bufnr = vim.fn.bufadd(path)
        vim.fn.bufload(bufnr)
        vim.api.nvim_buf_set_lines(bufnr, 6, 7, false, { line })
        """,
        geometry,
        edited,
    )
    again = definitions(editor, POSITIONS[:1], in_coroutine)
    assert again[0]["text"].splitlines()[1] == edited, again
    assert editor.lua_errors() == [], editor.diagnostics()


def test_time_bound_cancels_and_never_blocks(
    editor_factory: EditorFactory, workspace: Path
) -> None:
    editor = start(editor_factory, workspace, {"definitions_timeout_ms": 600})
    # "never" is never answered: the answer comes after the bound with what is in by then.
    editor.lua("vim.api.nvim_buf_set_lines(0, 4, 4, false, { 'never(TITLE)' })")
    both = [position(4, 0), position(4, 6)]
    before = time.monotonic()
    ask(editor, both)
    # The handler yields: keys typed meanwhile are handled before the answer is in (a handler
    # waiting in vim.wait would leave them queued until it returned).
    editor.input("Go# typed<Esc>")
    editor.wait(lambda: editor.lines()[-1] == "# typed", 5, "the typed line")
    assert time.monotonic() - before < 0.5
    assert editor.lua("return _G.answer") is None
    result = answer(editor)
    assert 550 <= result["ms"] < 3000, result
    found = result["result"]["definitions"]
    assert found[0] is None and found[1]["range"]["start"] == position(2, 8), found
    assert len(editor.lua("return _G.defs.cancelled")) == 1  # the unanswered one

    # Outside a coroutine (vim.wait): the same answer, the same bound.
    ask(editor, both, in_coroutine=False)
    result = answer(editor)
    assert 550 <= result["ms"] < 3000, result
    assert result["result"]["definitions"][0] is None, result

    # The other server goes away while it is asked: nulls after the bound, no error.
    ask(editor, both[:1])
    editor.lua("vim.lsp.get_clients({ name = 'definitions' })[1]:stop()")
    assert answer(editor)["result"]["definitions"] == [None]
    editor.wait(
        lambda: editor.lua("return #vim.lsp.get_clients({ name = 'definitions' }) == 0"),
        10,
        "the definition server to stop",
    )

    # No other server now: nulls at once. A document lsp-infer does not have: nulls.
    assert definitions(editor, both) == [None, None]
    assert answer(editor)["ms"] < 500
    editor.lua(ASK, {"textDocument": {"uri": "file:///nowhere.py"}, "positions": both}, True)
    assert answer(editor)["result"]["definitions"] == [None, None]
    assert editor.lua_errors() == [], editor.diagnostics()


# -- the capability and the option -----------------------------------------------------------

CAPABILITY = """
local client = vim.lsp.get_clients({ name = 'lsp_infer' })[1]
return { vim.tbl_get(client.capabilities, 'experimental', 'lspInfer', 'definitions') or false,
         vim.tbl_get(client.capabilities, 'textDocument', 'definition') ~= nil }
"""
INITIALIZE = """
for _, request in ipairs(_G.stub.requests) do
  if request[1] == 'initialize' then
    return vim.tbl_get(request[2], 'capabilities', 'experimental', 'lspInfer', 'definitions')
      or false
  end
end
"""


@pytest.mark.parametrize("version", [None, "0.11"], ids=["nvim-0.12", "nvim-0.11"])
def test_announced_only_with_the_option(
    editor_factory: EditorFactory, workspace: Path, version: str | None
) -> None:
    on = start(editor_factory, workspace, {}, version)
    # Announced in initialize, beside the runtime's own capabilities (kept).
    assert on.lua(CAPABILITY) == [True, True]
    assert on.lua(INITIALIZE) is True

    off = start(editor_factory, workspace, {"definitions": False}, version)
    assert off.lua(CAPABILITY) == [False, True]
    assert off.lua(INITIALIZE) is False
    # Asked anyway: an empty answer, and the other server is not asked.
    assert definitions(off, POSITIONS[:2]) == []
    assert asked(off) == []
    assert on.lua_errors() == [] and off.lua_errors() == [], off.diagnostics()


# -- :LspInferStats --------------------------------------------------------------------------

STATS: dict[str, Any] = {
    "requests": 3,
    "latencyMs": {"p50": 180.4, "p95": 1234.5},
    "suggestions": {"shown": 1, "accepted": 1},
}
DEFINITIONS: dict[str, Any] = {
    "supported": True, "requests": 4, "asked": 12, "answered": 9, "used": 4,
    "timedOut": 1, "failed": 0, "p50Ms": 40.2, "p95Ms": 1500,
}  # fmt: skip


def stats_window(editor: Editor) -> str:
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
    editor.input("q")
    editor.wait(
        lambda: editor.lua("return vim.api.nvim_win_get_config(0).relative == ''"),
        5,
        "the stats window to close",
    )
    return "\n".join(lines)


def test_stats_show_the_definitions(editor_factory: EditorFactory, workspace: Path) -> None:
    editor = start(editor_factory, workspace, {}, second_server=False)
    editor.lua("_G.stub.stats = ...", {**STATS, "definitions": DEFINITIONS})
    text = stats_window(editor)
    for expected in (
        "Latency p50 / p95           180 ms / 1.2 s",  # the labels' column as before
        "Definitions answered        9 of 12 asked (4 requests), 4 used",
        "Definitions p50 / p95       40 ms / 1.5 s, 1 timed out, 0 failed",
        "definitions.timedOut",
    ):
        assert expected in text, text

    editor.lua("_G.stub.stats = ...", {**STATS, "definitions": {**DEFINITIONS, "p50Ms": None}})
    assert "Definitions p50 / p95       – / 1.5 s" in stats_window(editor)

    editor.lua(
        "_G.stub.stats = ...",
        {**STATS, "definitions": {"supported": False, "requests": 0, "p50Ms": None}},
    )
    text = stats_window(editor)
    assert "Definitions                 not asked (the editor does not offer them)" in text, text

    editor.lua("_G.stub.stats = ...", STATS)  # an older server: no line, no error
    text = stats_window(editor)
    assert "Definitions" not in text and "Latency p50 / p95" in text, text

    editor.lua("_G.stub.stats = ...", {**STATS, "definitions": DEFINITIONS})
    editor.command("checkhealth lsp_infer")
    assert "Definitions answered: 9 of 12 asked (4 requests), 4 used" in editor.text()
    assert editor.lua_errors() == [], editor.diagnostics()
