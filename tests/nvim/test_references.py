"""lspInfer/references, the plugin's side (lua/lsp_infer/references.lua): the server asks where
the name at a position is used in that document; the plugin asks the buffer's other language
servers (textDocument/references, the declaration included) and answers with the ranges in that
document, merged and deduplicated, in lsp-infer's position encoding, or null.

A real headless Neovim with the plugin, a stand-in for lsp-infer over stdio that only asks
(definitions_asker.py: the request goes through Neovim's own RPC path, rpc.lua running the
handler in a coroutine) and a real second language server, jedi-language-server, on the same
buffer; no model.

jedi-language-server (0.47) counts columns in code points whatever encoding it negotiates, so
it is started with `general.positionEncodings = {"utf-32"}`: the encoding it really speaks.
lsp-infer's encoding (the asker's `--encoding`) is utf-16, utf-8 or utf-32 around it, on a line
with "é" (2 bytes, 1 UTF-16 unit) and "😀" (4 bytes, 2 units) before the name.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .conftest import VENV_BIN, Editor, find_nvim_011

ASKER = Path(__file__).with_name("definitions_asker.py")
DEFINITION_SERVER = Path(__file__).with_name("definition_server.lua")
JEDI = VENV_BIN / "jedi-language-server"
METHOD = "lspInfer/references"

EditorFactory = Callable[..., Editor]

SHAPES = """class Box:
    def __init__(self, wdth):
        self.wdth = wdth

    def area(self, height):
        return self.wdth * height

    def grow(self, by):
        total = self.wdth + by
        self.wdth = total
        return total

    def describe(self):
        return {"é😀": self.wdth, "ü": self.wdth}
"""
# Uses Box's attribute too: jedi lists it, the plugin leaves it out (another document).
OTHER = """from shapes import Box

BOX = Box(2)
print(BOX.wdth)
"""
SHAPES_LINES = SHAPES.splitlines()
AREA_LINE = 5  # `return self.wdth * height`
GROW_LINE = 8  # `total = self.wdth + by`
DESCRIBE_LINE = 13  # the non-ASCII line


@pytest.fixture
def jedi() -> Path:
    if not JEDI.exists():
        pytest.skip("jedi-language-server is not installed (pip install -e '.[test]')")
    return JEDI


# -- positions ---------------------------------------------------------------------------------


def units(text: str, encoding: str) -> int:
    """The length of `text` in an LSP position encoding."""
    if encoding == "utf-8":
        return len(text.encode("utf-8"))
    if encoding == "utf-16":
        return len(text.encode("utf-16-le")) // 2
    return len(text)


def position(line: int, column: int, encoding: str) -> dict[str, int]:
    """Line `line` of shapes.py at code point `column`, in `encoding`."""
    return {"line": line, "character": units(SHAPES_LINES[line][:column], encoding)}


def occurrences(pattern: str, lines: range, encoding: str) -> list[dict[str, Any]]:
    """The ranges of `pattern`'s group 1 in those lines of shapes.py, in `encoding`, in
    document order."""
    out = []
    for line in lines:
        for match in re.finditer(pattern, SHAPES_LINES[line]):
            out.append(
                {
                    "start": position(line, match.start(1), encoding),
                    "end": position(line, match.end(1), encoding),
                }
            )
    return out


def wdth_ranges(encoding: str) -> list[dict[str, Any]]:
    """Every `self.wdth` (the attribute; not the parameter `wdth`), its assignment in
    `__init__` (the declaration) first."""
    return occurrences(r"self\.(wdth)\b", range(len(SHAPES_LINES)), encoding)


def total_ranges(encoding: str) -> list[dict[str, Any]]:
    """The local `total` of `grow`: its assignment and two uses."""
    return occurrences(r"\b(total)\b", range(GROW_LINE, GROW_LINE + 3), encoding)


def column_of(line: int, pattern: str, nth: int = 0) -> int:
    """The code point column of the `nth` match of `pattern`'s group 1 on `line` (+1: inside
    the name, not at its start)."""
    return list(re.finditer(pattern, SHAPES_LINES[line]))[nth].start(1) + 1


# -- the editor --------------------------------------------------------------------------------


def records(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


class Session:
    """A Neovim with the asker as lsp-infer on shapes.py (other.py beside it, not opened)."""

    def __init__(
        self,
        editor_factory: EditorFactory,
        workspace: Path,
        record: Path,
        encoding: str = "utf-16",
        opts: dict[str, Any] | None = None,
        binary: str | None = None,
    ) -> None:
        (workspace / "shapes.py").write_text(SHAPES)
        (workspace / "other.py").write_text(OTHER)
        self.workspace = workspace
        self.record = record
        self.encoding = encoding
        self.uri = (workspace / "shapes.py").as_uri()
        self.editor = editor_factory(binary)
        cmd = [sys.executable, str(ASKER), str(record), "--encoding", encoding]
        self.editor.setup({**(opts or {}), "cmd": cmd})
        self.editor.edit(workspace / "shapes.py")
        self.editor.wait_attached(30)
        assert self.client_encoding("lsp_infer") == encoding

    def client_encoding(self, name: str) -> str:
        return str(
            self.editor.lua(
                "return vim.lsp.get_clients({ name = ..., bufnr = 0 })[1].offset_encoding", name
            )
        )

    def start_jedi(self, jedi: Path) -> None:
        """jedi-language-server as a second client of the buffer (see start_jedi)."""
        self.jedi_warm = start_jedi(self.editor, jedi, self.workspace)

    def jedi_references(self, at: dict[str, int]) -> list[dict[str, Any]]:
        return jedi_references(self.editor, at)

    def version(self) -> int:
        """The document version Neovim last sent lsp-infer (didOpen, didChange)."""
        sent = [r["version"] for r in records(self.record) if r.get("uri") == self.uri]
        assert sent, records(self.record)
        return int(sent[-1])

    def ask(
        self,
        at: dict[str, Any],
        version: int | None = None,
        uri: str | None = None,
        timeout: float = 30,
    ) -> dict[str, Any]:
        """Send lspInfer/references through the asker; its record of the editor's answer."""
        before = len([r for r in records(self.record) if "answer" in r])
        params = {
            "textDocument": {
                "uri": uri or self.uri,
                "version": self.version() if version is None else version,
            },
            "position": at,
        }
        self.editor.lua(
            "vim.lsp.get_clients({ name = 'lsp_infer' })[1]:notify('test/ask', ...)",
            {"method": METHOD, "params": params},
        )
        answers = self.editor.wait(
            lambda: [r for r in records(self.record) if "answer" in r][before:],
            timeout,
            "the editor's answer",
        )
        answer: dict[str, Any] = answers[0]
        assert answer["method"] == METHOD and answer["error"] is None, answer
        return answer

    def references(self, at: dict[str, int], version: int | None = None) -> Any:
        return self.ask(at, version)["answer"]


def start_jedi(editor: Editor, jedi: Path, workspace: Path) -> list[dict[str, Any]]:
    """jedi-language-server as a second client of the current buffer (utf-32, see the top),
    warmed up with one references request of its own at Box.area's `self.wdth` (jedi's imports
    and first parse: seconds on a busy machine), so that the plugin's time bound is not spent
    on them; that answer."""
    editor.lua(
        """
        local cmd, root = ...
        vim.lsp.start({ name = 'jedi', cmd = { cmd }, root_dir = root,
          capabilities = { general = { positionEncodings = { 'utf-32' } } } }, { bufnr = 0 })
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
    encoding = editor.lua(
        "return vim.lsp.get_clients({ name = 'jedi', bufnr = 0 })[1].offset_encoding"
    )
    assert encoding == "utf-32"
    warm = jedi_references(
        editor, position(AREA_LINE, column_of(AREA_LINE, r"self\.(wdth)"), "utf-32")
    )
    assert warm, editor.diagnostics()
    return warm


def jedi_references(editor: Editor, at: dict[str, int]) -> list[dict[str, Any]]:
    """jedi's own textDocument/references answer at `at` (utf-32)."""
    answer = editor.lua(
        """
        local client = vim.lsp.get_clients({ name = 'jedi', bufnr = 0 })[1]
        local response = client:request_sync('textDocument/references', {
          textDocument = { uri = vim.uri_from_bufnr(0) }, position = ...,
          context = { includeDeclaration = true } }, 60000, 0)
        return response and response.result or {}
        """,
        at,
    )
    return list(answer)


def session(
    editor_factory: EditorFactory, workspace: Path, tmp_path: Path, **kwargs: Any
) -> Session:
    return Session(editor_factory, workspace, tmp_path / "asker.jsonl", **kwargs)


# -- the answers -------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [None, "0.11"], ids=["nvim-0.12", "nvim-0.11"])
def test_an_attribute_and_a_local(
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
    s = session(editor_factory, workspace, tmp_path, binary=binary)
    s.start_jedi(jedi)
    # jedi lists other.py's use too, and the declaration: the plugin keeps the latter only.
    other = (workspace / "other.py").as_uri()
    assert any(location["uri"] == other for location in s.jedi_warm), s.jedi_warm
    assert s.version() == 0  # didOpen

    # `self.wdth` in area(): the attribute everywhere in the file (six), its declaration in
    # __init__ included; not the parameter `wdth`, not other.py's.
    at = position(AREA_LINE, column_of(AREA_LINE, r"self\.(wdth)"), "utf-16")
    answer = s.ask(at)
    assert answer["answer"] == {"references": wdth_ranges("utf-16")}, answer
    assert len(answer["answer"]["references"]) == 6
    assert answer["ms"] < 3000, answer  # within the plugin's bound and the trip back

    # The local `total` in grow(), asked at its last use.
    at = position(GROW_LINE + 2, column_of(GROW_LINE + 2, r"\b(total)\b"), "utf-16")
    assert s.references(at) == {"references": total_ranges("utf-16")}
    assert len(total_ranges("utf-16")) == 3

    # Where there is no name (`=`): jedi has nothing, an empty list.
    at = position(GROW_LINE, SHAPES_LINES[GROW_LINE].index("="), "utf-16")
    assert s.references(at) == {"references": []}
    assert s.editor.lua_errors() == [], s.editor.diagnostics()


@pytest.mark.parametrize("encoding", ["utf-16", "utf-8", "utf-32"])
def test_encodings_on_a_non_ascii_line(
    editor_factory: EditorFactory,
    workspace: Path,
    tmp_path: Path,
    jedi: Path,
    encoding: str,
) -> None:
    """lsp-infer's encoding around jedi's utf-32: the position asked is converted to jedi's
    (else jedi would be asked past the name, or at the one before it), the ranges back."""
    s = session(editor_factory, workspace, tmp_path, encoding=encoding)
    s.start_jedi(jedi)
    line = SHAPES_LINES[DESCRIBE_LINE]
    # The premise: the name's column differs between the encodings on this line.
    column = column_of(DESCRIBE_LINE, r"self\.(wdth)", nth=1)
    assert len({units(line[:column], e) for e in ("utf-8", "utf-16", "utf-32")}) == 3

    expected = {"references": wdth_ranges(encoding)}
    for nth in (0, 1):  # both uses on the line
        at = position(DESCRIBE_LINE, column_of(DESCRIBE_LINE, r"self\.(wdth)", nth), encoding)
        assert s.references(at) == expected
    # The two on the non-ASCII line, in this encoding.
    described = [r for r in expected["references"] if r["start"]["line"] == DESCRIBE_LINE]
    assert [r["start"]["character"] for r in described] == [
        units(line[: m.start(1)], encoding) for m in re.finditer(r"self\.(wdth)", line)
    ]
    assert s.editor.lua_errors() == [], s.editor.diagnostics()


# The handler called as rpc.lua calls it (in a coroutine), and the line changed in the same tick,
# after it has asked jedi and yielded, before jedi's answer is read: the ranges are still the
# asked version's, converted with that version's text.
EDITED_WHILE_ASKED = """
local params = ...
local client = vim.lsp.get_clients({ name = 'lsp_infer', bufnr = 0 })[1]
_G.edited_answer = nil
coroutine.wrap(function()
  local answer = require('lsp_infer.references').handler(nil, params, { client_id = client.id })
  _G.edited_answer = { answer = answer }
end)()
local waiting = _G.edited_answer == nil
vim.api.nvim_buf_set_lines(0, 13, 14, false,
  { '        return {"ü": self.wdth, "é😀": self.wdth}' })
return waiting
"""


def test_edited_before_the_servers_answer(
    editor_factory: EditorFactory, workspace: Path, tmp_path: Path, jedi: Path
) -> None:
    s = session(editor_factory, workspace, tmp_path, encoding="utf-16")
    s.start_jedi(jedi)
    at = position(AREA_LINE, column_of(AREA_LINE, r"self\.(wdth)"), "utf-16")
    params = {"textDocument": {"uri": s.uri, "version": s.version()}, "position": at}
    assert s.editor.lua(EDITED_WHILE_ASKED, params) is True  # it yielded: the edit came after
    answer = s.editor.wait(lambda: s.editor.lua("return _G.edited_answer"), 10, "the answer")
    assert answer["answer"] == {"references": wdth_ranges("utf-16")}, answer
    assert s.editor.lua_errors() == [], s.editor.diagnostics()


# -- null --------------------------------------------------------------------------------------


def test_a_stale_version_is_null(
    editor_factory: EditorFactory, workspace: Path, tmp_path: Path, jedi: Path
) -> None:
    s = session(editor_factory, workspace, tmp_path)
    s.start_jedi(jedi)
    at = position(AREA_LINE, column_of(AREA_LINE, r"self\.(wdth)"), "utf-16")
    opened = s.version()
    assert s.references(at, opened) == {"references": wdth_ranges("utf-16")}

    # An edit below everything: the ranges stay, the version moves on.
    s.editor.lua("vim.api.nvim_buf_set_lines(0, -1, -1, false, { '', 'BOX = Box(1)' })")
    s.editor.wait(lambda: s.version() > opened, 10, "the didChange")
    changed = s.version()
    current = "return require('lsp_infer.util').version(vim.api.nvim_get_current_buf())"
    assert s.editor.lua(current) == changed
    assert s.references(at, opened) is None  # the text it was asked about is gone
    assert s.references(at, changed + 1) is None  # not there yet
    assert s.references(at, changed) == {"references": wdth_ranges("utf-16")}
    assert s.editor.lua_errors() == [], s.editor.diagnostics()


def test_null_without_a_server_that_answers_references(
    editor_factory: EditorFactory, workspace: Path, tmp_path: Path
) -> None:
    s = session(editor_factory, workspace, tmp_path)
    at = position(AREA_LINE, column_of(AREA_LINE, r"self\.(wdth)"), "utf-16")
    # lsp-infer alone (the asker answers no textDocument/references: it is never asked).
    assert s.references(at) is None
    # Beside a server that answers definitions only (no referencesProvider).
    s.editor.lua(
        "local file, root = ...; _G.defs = dofile(file); _G.defs.start(0, root)",
        str(DEFINITION_SERVER),
        str(workspace),
    )
    s.editor.wait(
        lambda: s.editor.lua("return #vim.lsp.get_clients({ name = 'definitions', bufnr = 0 })"),
        10,
        "the definition server to attach",
    )
    assert s.references(at) is None
    # A document that is not loaded, and nonsense.
    assert s.ask(at, 0, uri=(workspace / "other.py").as_uri())["answer"] is None
    assert s.ask({"line": -1, "character": "x"})["answer"] is None
    assert s.editor.lua_errors() == [], s.editor.diagnostics()


# An in-process server with a references provider that never answers, recording cancels.
SILENT = """
_G.silent = { cancelled = {}, asked = {} }
local function cmd(dispatchers)
  local closing, next_id = false, 0
  return {
    request = function(method, params, callback)
      next_id = next_id + 1
      if method == 'initialize' then
        callback(nil, { capabilities = { referencesProvider = true, textDocumentSync = 1,
          positionEncoding = 'utf-16' } })
      elseif method == 'textDocument/references' then
        table.insert(_G.silent.asked, params)
      else
        callback(nil, vim.NIL)
      end
      return true, next_id
    end,
    notify = function(method, params)
      if method == '$/cancelRequest' then
        table.insert(_G.silent.cancelled, params.id)
      elseif method == 'exit' then
        closing = true
        dispatchers.on_exit(0, 15)
      end
      return true
    end,
    is_closing = function() return closing end,
    terminate = function() closing = true end,
  }
end
vim.lsp.start({ name = 'silent', cmd = cmd, root_dir = ... }, { bufnr = 0 })
"""


def test_time_bound(
    editor_factory: EditorFactory, workspace: Path, tmp_path: Path, jedi: Path
) -> None:
    """A server that never answers: after next_edit.references_timeout_ms the answer has what
    jedi said, the silent server's request is cancelled, and Neovim answered meanwhile."""
    opts = {"next_edit": {"references_timeout_ms": 1500}}
    s = session(editor_factory, workspace, tmp_path, opts=opts)
    s.start_jedi(jedi)
    s.editor.lua(SILENT, str(workspace))
    s.editor.wait(
        lambda: s.editor.lua("return #vim.lsp.get_clients({ name = 'silent', bufnr = 0 })"),
        10,
        "the silent server to attach",
    )
    at = position(AREA_LINE, column_of(AREA_LINE, r"self\.(wdth)"), "utf-16")
    started = time.monotonic()
    params = {"textDocument": {"uri": s.uri, "version": 0}, "position": at}
    s.editor.lua(
        "vim.lsp.get_clients({ name = 'lsp_infer' })[1]:notify('test/ask', ...)",
        {"method": METHOD, "params": params},
    )
    time.sleep(0.5)
    # The handler is waiting on the silent server: Neovim still answers at once.
    responsive = time.monotonic()
    assert s.editor.lua("return 1 + 1") == 2
    assert time.monotonic() - responsive < 0.5
    assert not [r for r in records(s.record) if "answer" in r]  # not yet
    answer = s.editor.wait(
        lambda: [r for r in records(s.record) if "answer" in r], 10, "the answer"
    )[0]
    assert answer["answer"] == {"references": wdth_ranges("utf-16")}, answer
    assert 1400 <= answer["ms"] < 3000, answer
    assert time.monotonic() - started < 4
    # Asked as the protocol says, in its own encoding (utf-16, as lsp-infer's here).
    asked = s.editor.lua("return _G.silent.asked")
    assert asked == [
        {"textDocument": {"uri": s.uri}, "position": at, "context": {"includeDeclaration": True}}
    ]
    assert len(s.editor.lua("return _G.silent.cancelled")) == 1
    assert s.editor.lua_errors() == [], s.editor.diagnostics()


# -- the capability ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("opts", "announced"),
    [
        pytest.param({}, True, id="default"),
        pytest.param({"definitions": False}, True, id="definitions-off"),
        pytest.param({"next_edit": {"enabled": True}}, True, id="next-edit-on"),
        pytest.param({"next_edit": {"enabled": False}}, False, id="next-edit-off"),
    ],
)
def test_announced_only_with_next_edits(
    editor_factory: EditorFactory,
    workspace: Path,
    tmp_path: Path,
    jedi: Path,
    opts: dict[str, Any],
    announced: bool,
) -> None:
    s = session(editor_factory, workspace, tmp_path, opts=opts)
    initialize = records(s.record)[0]["initialize"]
    assert initialize["lspInfer"].get("references", False) is announced, initialize
    assert ("definitions" in initialize["lspInfer"]) is (opts.get("definitions") is not False)
    if announced:
        return
    # Asked anyway: null, though jedi could answer.
    s.start_jedi(jedi)
    at = position(AREA_LINE, column_of(AREA_LINE, r"self\.(wdth)"), "utf-16")
    assert s.references(at) is None
    assert s.editor.lua_errors() == [], s.editor.diagnostics()


def test_the_option_is_checked(editor_factory: EditorFactory) -> None:
    editor = editor_factory()
    check = (
        "local ok, why = pcall(require('lsp_infer.config').set, ...) "
        "return { ok, not ok and why or '' }"
    )
    ok, why = editor.lua(check, {"next_edit": {"references_timeout_ms": -1}})
    assert ok is False and "next_edit.references_timeout_ms must not be negative" in why
    ok, why = editor.lua(check, {"next_edit": {"references_timeout_ms": "1s"}})
    assert ok is False and "next_edit.references_timeout_ms must be a number" in why
    timeout = "return require('lsp_infer.references').timeout_ms()"
    assert editor.lua(check, {"next_edit": {"enabled": False}}) == [True, ""]
    assert editor.lua(timeout) == 3000  # the default, kept beside the other next_edit fields
    assert editor.lua(check, {"next_edit": {"references_timeout_ms": 250}}) == [True, ""]
    assert editor.lua(timeout) == 250
