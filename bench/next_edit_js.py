"""Next-edit renames in TypeScript and JavaScript, against TypeScript's own rename.

A case: a name in a real file (ajv's TypeScript sources; express and its dependencies'
JavaScript, both installed by ``npm ci`` in bench/typescript), renamed by the user at one
occurrence (its declaration, or one of its uses), typed key by key as an editor sends it. The
server's prediction (lsp_infer/next_edit: the same history and predict code the server runs,
its scopes from tree-sitter) is applied and compared with what tsserver's rename
(typescript-language-server, ``textDocument/rename``) makes of the same name: right when the
two texts are equal. Each file is opened alone, from a folder of its own, so that a rename
never reaches another file. The names are picked from the file's syntax (every identifier is
a candidate); tsserver says which occurrence is the declaration (``textDocument/definition``).

Also cases where the right answer is no prediction: a use changed to another variable that is
already visible there (tsserver finds its declaration in the file once the change is made).

    (cd bench/typescript && npm ci)
    python bench/next_edit_js.py --cases 400 --seed 0 --show-wrong 10
    python bench/next_edit_js.py --cases 400 --seed 0 --references

With ``--references``, the same cases again with what tsserver answers
``textDocument/references`` at the renamed place before the edit (lspInfer/references:
next_edit/references.py, used where the scope rules give no rename).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import sys
import tempfile
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import tree_sitter_javascript
import tree_sitter_typescript
from lsprotocol import types
from tree_sitter import Language, Node, Parser

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from language_server import REQUEST_TIMEOUT_S, LanguageServerEditor  # noqa: E402
from next_edit import Case, _table, run_case  # noqa: E402

from lsp_infer.next_edit.syntax import Syntax  # noqa: E402
from lsp_infer.positions import offset_at, position_at  # noqa: E402

MODULES = ROOT / "bench" / "typescript" / "node_modules"
SERVER = MODULES / ".bin" / "typescript-language-server"
# JavaScript nobody here wrote: express 4 and the packages it depends on (CommonJS, `var`).
JS_PACKAGES = [
    "express", "qs", "body-parser", "negotiator", "send", "finalhandler", "serve-static",
    "proxy-addr", "accepts", "type-is", "content-disposition",
]  # fmt: skip
# Line breaks other than "\n" (splitlines' and the LSP's lines would disagree): such a file is
# left out.
ODD_BREAKS = "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


def sources() -> list[tuple[Path, Syntax]]:
    found: list[tuple[Path, Syntax]] = [
        (path, "typescript") for path in sorted((MODULES / "ajv" / "lib").rglob("*.ts"))
    ]
    for package in JS_PACKAGES:
        for path in sorted((MODULES / package).rglob("*.js")):
            parts = set(path.relative_to(MODULES / package).parts)
            if not parts & {"node_modules", "test", "dist"} and ".min." not in path.name:
                found.append((path, "javascript"))
    return found


def identifiers(source: str, syntax: Syntax) -> Iterator[tuple[int, str]]:
    """Every ``identifier`` token of the file (offset, name): the candidates, picked by
    syntax alone."""
    language = Language(
        tree_sitter_javascript.language()
        if syntax == "javascript"
        else tree_sitter_typescript.language_typescript()
    )
    data = source.encode("utf-8")
    tree = Parser(language).parse(data)
    stack: list[Node] = [tree.root_node]
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        if node.type == "identifier":
            start = len(data[: node.start_byte].decode("utf-8"))
            yield start, source[start : start + (node.end_byte - node.start_byte)]


def refused_by_design(source: str, syntax: Syntax) -> dict[str, str]:
    """The names the rename refuses by design, and why: imported or exported by name (in an
    import statement or an export list), a type too (TypeScript: a class, an enum)."""
    language = Language(
        tree_sitter_javascript.language()
        if syntax == "javascript"
        else tree_sitter_typescript.language_typescript()
    )
    data = source.encode("utf-8")
    why: dict[str, str] = {}
    stack: list[tuple[Node, bool]] = [(Parser(language).parse(data).root_node, False)]
    while stack:
        node, in_import = stack.pop()
        in_import = in_import or node.type in ("import_statement", "export_clause")
        stack.extend((child, in_import) for child in node.children)
        text = data[node.start_byte : node.end_byte].decode("utf-8")
        if in_import and node.type == "identifier":
            why[text] = "imported or exported by name"
        elif node.type == "type_identifier":
            why.setdefault(text, "a type too")
    return why


def line_column(source: str, offset: int) -> tuple[int, int]:
    line_start = source.rfind("\n", 0, offset) + 1
    return source.count("\n", 0, offset) + 1, offset - line_start


class OneFileServer:
    """A language server over stdio (typescript-language-server; clangd in next_edit_c.py),
    one file open at a time, each in a folder of its own."""

    def __init__(self, editor: LanguageServerEditor, folder: Path) -> None:
        self.editor, self.folder, self.uri, self.opened = editor, folder, "", 0

    async def open(self, name: str, text: str, language: str) -> None:
        if self.uri:
            self.editor.close(self.uri)
        self.opened += 1
        path = self.folder / str(self.opened) / name  # alone in its folder: its own project
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        self.uri = path.as_uri()
        self.editor.open(self.uri, text, language)

    def change(self, text: str) -> None:
        self.editor.open(self.uri, text, "")

    async def rename(self, text: str, offset: int, new: str) -> list[tuple[int, int, str]] | None:
        """tsserver's rename of the name at ``offset``: its edits in this file (offsets);
        None when it refuses, or the rename reaches anything but this file."""
        line, character = position_at(text, offset, "utf-16")
        params = types.RenameParams(
            types.TextDocumentIdentifier(self.uri), types.Position(line, character), new
        )
        try:
            result = await asyncio.wait_for(
                self.editor.client.text_document_rename_async(params), REQUEST_TIMEOUT_S
            )
        except Exception:
            return None
        if result is None:
            return None
        by_uri = {uri: list(edits) for uri, edits in (result.changes or {}).items()}
        for change in result.document_changes or []:
            if not isinstance(change, types.TextDocumentEdit):
                return None
            by_uri.setdefault(change.text_document.uri, []).extend(
                e for e in change.edits if isinstance(e, types.TextEdit)
            )
        if set(by_uri) != {self.uri}:
            return None
        return sorted(
            (
                offset_at(text, e.range.start.line, e.range.start.character, "utf-16"),
                offset_at(text, e.range.end.line, e.range.end.character, "utf-16"),
                e.new_text,
            )
            for e in by_uri[self.uri]
        )

    async def references(self, text: str, offset: int) -> list[tuple[int, int]] | None:
        """The server's references of the name at ``offset`` in this file, its declaration
        included, as an editor's plugin answers lspInfer/references; None when it fails."""
        line, character = position_at(text, offset, "utf-16")
        params = types.ReferenceParams(
            context=types.ReferenceContext(include_declaration=True),
            text_document=types.TextDocumentIdentifier(self.uri),
            position=types.Position(line, character),
        )
        try:
            result = await asyncio.wait_for(
                self.editor.client.text_document_references_async(params), REQUEST_TIMEOUT_S
            )
        except Exception:
            return None
        return sorted(
            (offset_at(text, r.range.start.line, r.range.start.character, "utf-16"),
             offset_at(text, r.range.end.line, r.range.end.character, "utf-16"))
            for r in result or [] if r.uri == self.uri
        )  # fmt: skip

    async def declaration(self, text: str, offset: int) -> int | None:
        """Where, in this file, the name at ``offset`` is declared (tsserver's definition)."""
        line, character = position_at(text, offset, "utf-16")
        params = types.DefinitionParams(
            types.TextDocumentIdentifier(self.uri), types.Position(line, character)
        )
        try:
            result = await asyncio.wait_for(
                self.editor.client.text_document_definition_async(params), REQUEST_TIMEOUT_S
            )
        except Exception:
            return None
        first = (result if isinstance(result, list) else [result])[0] if result else None
        if isinstance(first, types.LocationLink):
            uri, start = first.target_uri, first.target_selection_range.start
        elif isinstance(first, types.Location):
            uri, start = first.uri, first.range.start
        else:
            return None
        return offset_at(text, start.line, start.character, "utf-16") if uri == self.uri else None


def applied(text: str, edits: list[tuple[int, int, str]]) -> str:
    for start, end, new in reversed(edits):
        text = text[:start] + new + text[end:]
    return text


async def cases_of(server: OneFileServer, path: Path, syntax: Syntax, rng: random.Random,
                   per_file: int) -> list[Case]:  # fmt: skip
    source = path.read_text(encoding="utf-8")
    if any(char in source for char in ODD_BREAKS):
        return []
    module = str(path.relative_to(MODULES))
    await server.open(path.name, source, syntax)
    names = list(identifiers(source, syntax))
    return await cases_in(server, module, source, syntax, names, rng, per_file,
                          ["Value", "New", "Item", "Count"])  # fmt: skip


async def cases_in(server: OneFileServer, module: str, source: str, syntax: Syntax | None,
                   names: list[tuple[int, str]], rng: random.Random, per_file: int,
                   suffixes: list[str]) -> list[Case]:  # fmt: skip
    """The cases of one file open in ``server``: ``names`` (offset, name: every identifier in
    the code) picked at random, each renamed (its name and a suffix) as the server renames it,
    at its declaration and at a use, with the server's references there before the edit; and
    that use changed to another name the server resolves in the file."""
    rng.shuffle(names)
    declared = {name for _, name in names}
    code = {offset for offset, _ in names}
    found: list[Case] = []
    seen: set[str] = set()
    for offset, name in names:
        if sum(c.kind != "other variable" for c in found) >= per_file:
            break
        if name in seen:
            continue
        seen.add(name)
        new = f"{name}{rng.choice(suffixes)}"
        edits = await server.rename(source, offset, new)
        if edits is None or len(edits) < 2:
            continue
        expected = applied(source, edits)
        at = await server.declaration(source, offset)
        if at is None or not any(start == at for start, _, _ in edits):
            continue
        references = tuple(await server.references(source, at) or ())
        found.append(Case(module, "definition", *line_column(source, at), name, new, source,
                          expected, syntax, references))  # fmt: skip
        # A use in the code (not a JSDoc comment's `@param`, which tsserver renames too).
        uses = [start for start, end, _ in edits
                if start != at and source[start:end] == name and start in code]  # fmt: skip
        if not uses:
            continue
        use = rng.choice(uses)
        references = tuple(await server.references(source, use) or ())
        found.append(Case(module, "use", *line_column(source, use), name, new, source,
                          expected, syntax, references))  # fmt: skip
        # The same use changed to another name that is a variable there (the server finds
        # its declaration in this file once the change is made): no rename meant.
        others = sorted(declared - {name})
        rng.shuffle(others)
        for other in others[:4]:
            changed = source[:use] + other + source[use + len(name) :]
            server.change(changed)
            bound = await server.declaration(changed, use)
            server.change(source)
            if bound is not None and bound != use:
                found.append(Case(module, "other variable", *line_column(source, use), name,
                                  other, source, changed, syntax, references))  # fmt: skip
                break
    return found


async def build(cases: int, seed: int) -> list[Case]:
    rng = random.Random(seed)
    files = sources()
    per_file = max(1, cases // len(files)) + 1

    async def each(server: OneFileServer) -> list[Case]:
        found: list[Case] = []
        for path, syntax in files:
            found += await cases_of(server, path, syntax, rng, per_file)
        return found

    return await with_server([str(SERVER), "--stdio"], each)


async def with_server(
    command: list[str], work: Callable[[OneFileServer], Awaitable[list[Case]]]
) -> list[Case]:
    """``work`` done with the language server ``command`` over stdio, its files in a
    temporary folder removed after."""
    folder = Path(tempfile.mkdtemp(prefix="next-edit-bench-"))
    editor = await LanguageServerEditor.start(command, folder)
    try:
        return await work(OneFileServer(editor, folder))
    finally:
        await editor.stop()
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=int, default=400, help="rename cases (about)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--show-wrong", type=int, default=0, help="print this many wrong ones")
    parser.add_argument("--references", action="store_true", help="also with tsserver's "
                        "references asked at the renamed place before the edit")  # fmt: skip
    args = parser.parse_args()
    if not SERVER.exists():
        raise SystemExit("no typescript-language-server: run npm ci in bench/typescript")
    cases = asyncio.run(build(args.cases, args.seed))
    for syntax in ("typescript", "javascript"):
        mine = [c for c in cases if c.syntax == syntax]
        print(f"\n{syntax}: {len(mine)} cases from "
              f"{len({c.module for c in mine})} files, seed {args.seed}")  # fmt: skip
        results = {kind: [run_case(c) for c in mine if c.kind == kind]
                   for kind in ("definition", "use", "other variable")}  # fmt: skip
        _table(results)
        if args.references:
            print("with tsserver's references asked before the edit (lspInfer/references)")
            _table({kind: [run_case(c, True) for c in mine if c.kind == kind]
                    for kind in ("definition", "use", "other variable")})  # fmt: skip
        why = {}
        for case in mine:
            if case.module not in why:
                why[case.module] = refused_by_design(case.source, syntax)
        renames = [c for c in mine if c.kind != "other variable"]
        for reason in ("imported or exported by name", "a type too"):
            of = [c for c in renames if why[c.module].get(c.old) == reason]
            if of:
                print(f"  renames of a name {reason} (never offered): {len(of)} of "
                      f"{len(renames)}")  # fmt: skip
        rest = [c for c in renames if c.old not in why[c.module]]
        shown = [c for c in rest if run_case(c)[0]]
        print(f"  the other renames: {len(shown)} of {len(rest)} shown "
              f"({100 * len(shown) / max(1, len(rest)):.1f} %)")  # fmt: skip
        wrong = [(c, r) for c in mine if (r := run_case(c, args.references))[0] and not r[1]]
        for case, _ in wrong[: args.show_wrong]:
            print(f"  wrong: {case.kind} {case.module}:{case.line}:{case.column} "
                  f"{case.old} → {case.new}")  # fmt: skip


if __name__ == "__main__":
    main()
