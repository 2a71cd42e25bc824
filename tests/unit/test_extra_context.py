"""Extra context: the ring of recent chunks, definitions by text search, the pick under a budget."""

from __future__ import annotations

import pytest

from lsp_infer.core.prompts import TEMPLATES, prompt_text, with_repository
from lsp_infer.local.extra_context import (
    Chunk,
    ChunkRing,
    OpenDocument,
    chunk_around,
    find_definition,
    identifiers_near,
    imported_modules,
    imported_names,
    module_name,
    outline_chunk,
    qualified_near,
    select,
    trimmed,
)

DECODER = "import re\n\nclass JSONDecoder(object):\n    def decode(self, s):\n        return s\n"
MAIN = (
    "from .decoder import JSONDecoder, JSONDecodeError\n\n"
    "def loads(s):\n    return _default_decoder.decode("
)


def chunk(uri: str, text: str) -> Chunk:
    return Chunk(uri, uri.rsplit("/", 1)[-1], 0, text)


def test_ring_keeps_the_newest_and_drops_near_duplicates() -> None:
    ring = ChunkRing(size=2)
    ring.add(chunk("file:///a.py", "a = 1\nb = 2\nc = 3"))
    ring.add(chunk("file:///a.py", "a = 1\nb = 2\nc = 3\nd = 4"))  # mostly the same: replaces
    assert len(ring) == 1
    ring.add(chunk("file:///b.py", "x = 1"))
    ring.add(chunk("file:///c.py", "y = 2"))
    assert [c.uri for c in ring] == ["file:///b.py", "file:///c.py"]
    ring.forget("file:///c.py")
    assert [c.uri for c in ring] == ["file:///b.py"]


def test_chunk_around_is_stable_for_nearby_lines() -> None:
    text = "\n".join(f"line {i}" for i in range(200))
    assert (
        chunk_around("u", "p", text, 100).start_line == chunk_around("u", "p", text, 110).start_line
    )


def test_trimmed_keeps_whole_lines_around_the_focus() -> None:
    text = "\n".join(f"line {i:02d}" for i in range(10))  # 7 characters a line
    whole = Chunk("u", "p", 100, text, focus=4)
    assert trimmed(whole, len(text)) is whole  # fits: the same chunk
    cut = trimmed(whole, 7 * 3 + 2)  # three lines: the focus, the one after, the one before
    assert cut is not None
    assert cut.text == "line 03\nline 04\nline 05"
    assert (cut.start_line, cut.focus) == (103, 1)
    at_the_top = trimmed(Chunk("u", "p", 0, text), 7 * 3 + 2)
    assert at_the_top is not None and at_the_top.text == "line 00\nline 01\nline 02"
    assert trimmed(whole, 6) is None  # not even the focus line fits


def test_a_chunk_larger_than_the_budget_is_cut_to_fit_not_skipped() -> None:
    source = "\n".join(f"value_{i} = compute({i}, scale={i * 3})" for i in range(200))
    ring = ChunkRing()
    ring.add(chunk_around("file:///w/other.py", "other.py", source, 100))  # 64 lines
    chosen = select("file:///w/main.py", MAIN, len(MAIN), ring, [], 1024, lambda _u: False)
    assert len(chosen) == 1
    assert len(chosen[0].text) + len("other.py") + 2 <= 1024
    # cut around the middle of the region line 100 is in (lines 96-127)
    assert chosen[0].start_line < 112 < chosen[0].start_line + chosen[0].text.count("\n")
    # Too little room left to say anything: left out.
    assert select("file:///w/main.py", MAIN, len(MAIN), ring, [], 120, lambda _u: False) == ()


def test_definitions_and_names() -> None:
    assert find_definition("JSONDecoder", DECODER) == 2
    assert find_definition("decode", DECODER) == 3
    assert find_definition("loads", DECODER) is None
    assert identifiers_near(MAIN, len(MAIN))[:2] == ["decode", "_default_decoder"]
    assert imported_names(MAIN) == ["JSONDecoder", "JSONDecodeError"]
    assert imported_names("from x import (\n    alpha,\n    beta as b,\n)\n") == ["alpha", "beta"]


def test_select_prefers_definitions_of_names_near_the_cursor() -> None:
    documents = [
        OpenDocument("file:///w/decoder.py", "decoder.py", DECODER),
        OpenDocument("file:///w/other.py", "other.py", "unrelated = 1\n"),
    ]
    chosen = select(
        "file:///w/__init__.py", MAIN, len(MAIN), [], documents, 10_000, lambda _u: False
    )
    assert chosen[-1].path == "decoder.py"  # the most useful last, next to the code
    assert "class JSONDecoder" in chosen[-1].text


def test_select_respects_budget_and_exclusions() -> None:
    documents = [
        OpenDocument("file:///w/.env", ".env", "TOKEN = secret\n"),
        OpenDocument("file:///w/decoder.py", "decoder.py", DECODER),
    ]
    chosen = select("file:///w/__init__.py", MAIN, len(MAIN), [], documents, 10_000,
                    lambda uri: uri.endswith(".env"))  # fmt: skip
    assert all("secret" not in c.text for c in chosen)
    assert (
        select("file:///w/__init__.py", MAIN, len(MAIN), [], documents, 10, lambda _u: False) == ()
    )


def test_repository_prompt() -> None:
    fim = TEMPLATES["qwen"].build("P", "S", "spmv")
    prompt = prompt_text(with_repository(TEMPLATES["qwen"], fim, [("a.py", "x = 1\n")], "b.py"))
    assert prompt == (
        "<|repo_name|>workspace\n<|file_sep|>a.py\nx = 1\n<|file_sep|>b.py\n"
        "<|fim_prefix|><|fim_suffix|>S<|fim_middle|>P"
    )
    # Without a repository format the files go into the prefix, before the code.
    deepseek = TEMPLATES["deepseek"]
    plain = prompt_text(
        with_repository(deepseek, deepseek.build("P", "S"), [("a.py", "x = 1")], "b.py")
    )
    assert "# file: a.py\nx = 1\n\nP" in plain


def test_workspace_context_notes_regions_once_and_keeps_saves() -> None:
    from lsp_infer.local.extra_context import ExtraContext
    from lsp_infer.session import Session

    texts = {"file:///w/a.py": "\n".join(f"a{i} = {i}" for i in range(100))}
    session = Session()  # no workspace folders: paths are file names; .env is a secret
    session.documents.open("file:///w/a.py", 1, texts["file:///w/a.py"])
    context = ExtraContext(session)
    context.note("file:///w/a.py", texts["file:///w/a.py"], 3)
    context.note("file:///w/a.py", texts["file:///w/a.py"], 5)  # same region: no new chunk
    assert len(context.ring) == 1
    context.note("file:///w/.env", "SECRET = 1", 0)  # excluded: never noted
    assert len(context.ring) == 1
    texts["file:///w/a.py"] = texts["file:///w/a.py"].replace("a3 = 3", "a3 = 33")
    session.documents.open("file:///w/a.py", 2, texts["file:///w/a.py"])
    context.saved("file:///w/a.py", texts["file:///w/a.py"])
    assert "a3 = 33" in list(context.ring)[-1].text
    picked = context.pick("file:///w/b.py", "x = a3\n", 7, 512)
    assert picked and picked[-1][0] == "a.py"
    # Closing keeps the chunks (recent code stays useful) but not the per-document state:
    # a reopened document's first edit is noted again.
    context.closed("file:///w/a.py")
    assert len(context.ring) == 1 and not context._last_region
    context.note("file:///w/a.py", texts["file:///w/a.py"], 5)
    assert context._last_region == {"file:///w/a.py": 0}


ERRORS = (
    '"""Exceptions."""\n\nimport sys\n\n\nclass MessageError(Exception):\n    """Base."""\n\n\n'
    "class HeaderParseError(MessageError):\n    pass\n\n\ndef describe(error):\n"
    "    return str(error)\n\n\nLIMIT = 3\n"
)
PARSER = (
    "from . import errors\nfrom .util import helper\n\n\ndef parse(value):\n    try:\n"
    "        return helper(value)\n    except errors.HeaderParseError:\n        raise\n"
    "    except errors."
)


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("email/errors.py", "errors"),
        ("email/__init__.py", "email"),
        ("errors.py", "errors"),
        ("src/lib/index.ts", "lib"),
        ("__init__.py", "__init__"),
    ],
)
def test_module_name(path: str, name: str) -> None:
    assert module_name(path) == name


def test_qualified_names_and_imported_modules() -> None:
    assert qualified_near(PARSER, len(PARSER))[0] == ("errors", "HeaderParseError")
    assert ("errors", "HeaderParseError") in qualified_near(PARSER, 0, after=len(PARSER))
    assert qualified_near("x = a.b.c", 9) == [("a", "b")]  # b.c is an attribute, not a module
    assert imported_modules(PARSER) == ["errors", "util", "helper"]
    assert imported_modules("import email.utils, os as o\nfrom x.y import z\n") == [
        "utils",
        "os",
        "y",
    ]


def test_outline_lists_a_modules_top_level_names() -> None:
    outline = outline_chunk(OpenDocument("file:///w/errors.py", "errors.py", ERRORS))
    assert outline.text.split("\n") == [
        "class MessageError(Exception):",
        "class HeaderParseError(MessageError):",
        "def describe(error):",
        "LIMIT = 3",
    ]


def test_select_shows_the_module_a_qualified_name_comes_from() -> None:
    documents = [
        OpenDocument("file:///w/errors.py", "errors.py", ERRORS),
        OpenDocument("file:///w/util.py", "util.py", "def helper(value):\n    return value\n"),
        OpenDocument("file:///w/other.py", "other.py", "unrelated = 1\n"),
    ]
    chosen = select(
        "file:///w/parser.py", PARSER, len(PARSER), [], documents, 4000, lambda _u: False
    )
    texts = [c.text for c in chosen]
    # The definition of the name written with its module, nearest the code ...
    assert "class HeaderParseError(MessageError):" in texts[-1]
    # ... and that module: whole when it is small next to the budget ...
    partial = "from . import errors\n\nlimit = errors.LIM"
    whole = select("file:///w/p.py", partial, len(partial), [], documents, 4000, lambda _u: False)
    assert whole[-1].text == ERRORS
    # ... else its outline, which names what else it offers.
    errors = OpenDocument("file:///w/errors.py", "errors.py", ERRORS)
    assert outline_chunk(errors, whole_below=len(ERRORS) + 1).text == ERRORS
    assert outline_chunk(errors, whole_below=len(ERRORS)).text.endswith("LIMIT = 3")
    assert any("def helper(value):" in text for text in texts)
    # An excluded module is never shown, qualified or imported.
    hidden = select("file:///w/parser.py", PARSER, len(PARSER), [], documents, 4000,
                    lambda uri: uri.endswith("errors.py"))  # fmt: skip
    assert all("HeaderParseError" not in c.text for c in hidden)
