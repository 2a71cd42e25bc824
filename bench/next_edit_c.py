"""Next-edit renames from the editor's references in C, a language without a parser here,
against clangd's own rename.

The server has no scopes for C: a rename there comes only from the editor's language server,
asked where the name is used before the edit (lspInfer/references, next_edit/references.py).
A case: a name in a real C file (the examples Debian ships with zlib, libpng and nettle, and
two C extensions of Python packages), renamed by the user at its declaration (clangd's
definition in the file) or at a use, typed key by key. What clangd answers
``textDocument/references`` there before the edit is what the plugins would answer; the
prediction (the server's history, references and predict code) is applied and compared with
clangd's ``textDocument/rename`` of the same name: right when the texts are equal. Each file
is opened alone, from a folder of its own (a rename reaching another file is no case).

Also cases where the right answer is no prediction: a use changed to another name that
clangd resolves to a declaration in the file.

Beside: the same cases without the references (what the server offered before them).

    apt-get install clangd    # clangd 14 here; not a dependency of the project
    python bench/next_edit_c.py --cases 300 --seed 0 --show-wrong 10
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import shutil
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from next_edit import Case, _table, agrees, predicted, run_case  # noqa: E402
from next_edit_js import ODD_BREAKS, OneFileServer, cases_in, with_server  # noqa: E402

SITE = Path(sysconfig.get_paths()["purelib"])
SOURCES = [
    *sorted(Path("/usr/share/doc/zlib1g-dev/examples").glob("*.c")),
    *sorted(Path("/usr/share/doc/libpng-dev/examples").glob("*.c")),
    *sorted(Path("/usr/share/doc/nettle-dev/examples").glob("*.c")),
    SITE / "wrapt" / "_wrappers.c",
    SITE / "lazy_object_proxy" / "cext.c",
]
KEYWORDS = frozenset({
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else",
    "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "register",
    "restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch", "typedef",
    "union", "unsigned", "void", "volatile", "while", "NULL",
})  # fmt: skip
# Comments, strings, character constants and preprocessor lines: no names to pick there.
_NOT_CODE = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|'
                       r"^[ \t]*#[^\n]*(?:\\\n[^\n]*)*", re.S | re.M)  # fmt: skip


def identifiers(source: str) -> Iterator[tuple[int, str]]:
    """Each identifier in the code (offset, name): the candidates clangd is asked about."""
    code = _NOT_CODE.sub(lambda m: " " * len(m.group()), source)
    for match in re.finditer(r"\b[A-Za-z_]\w*\b", code):
        if match.group() not in KEYWORDS:
            yield match.start(), match.group()


async def cases_of(server: OneFileServer, path: Path, rng: random.Random, per_file: int
                   ) -> list[Case]:  # fmt: skip
    source = path.read_text(encoding="utf-8", errors="strict")
    if any(char in source for char in ODD_BREAKS):
        return []
    await server.open(path.name, source, "c")
    module = f"{path.parent.parent.name}/{path.name}"
    return await cases_in(server, module, source, None, list(identifiers(source)), rng,
                          per_file, ["_value", "_new", "_item", "_count"])  # fmt: skip


async def build(cases: int, seed: int) -> list[Case]:
    rng = random.Random(seed)
    files = [path for path in SOURCES if path.exists()]
    per_file = max(1, cases // len(files)) + 1
    clangd = shutil.which("clangd")
    assert clangd is not None

    async def each(server: OneFileServer) -> list[Case]:
        found: list[Case] = []
        for path in files:
            found += await cases_of(server, path, rng, per_file)
        return found

    return await with_server([clangd, "--log=error"], each)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=int, default=300, help="rename cases (about)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--show-wrong", type=int, default=0, help="print this many wrong ones")
    args = parser.parse_args()
    if shutil.which("clangd") is None:
        raise SystemExit("no clangd: apt-get install clangd")
    cases = asyncio.run(build(args.cases, args.seed))
    print(f"C: {len(cases)} cases from {len({c.module for c in cases})} files, seed {args.seed}")
    kinds = ("definition", "use", "other variable")
    runs = (("with the editor's references (clangd's)", True),
            ("without them (before lspInfer/references)", False))  # fmt: skip
    for title, with_references in runs:
        print(f"\n{title}")
        _table({kind: [run_case(c, with_references) for c in cases if c.kind == kind]
                for kind in kinds})  # fmt: skip
        # A repeat (one line at a time, by design) is no whole rename: how many of those
        # shown change each line they change as clangd's rename does.
        partly = [c for c in cases if c.kind != "other variable"
                  and (p := predicted(c, with_references))[1] is not None
                  and p[1] != c.expected and agrees(p[0], p[1], c.expected)]  # fmt: skip
        print(f"  shown but not the whole rename, every line it changes changed as clangd's "
              f"rename changes it: {len(partly)}")  # fmt: skip
    wrong = [c for c in cases if (r := run_case(c, True))[0] and not r[1]]
    for case in wrong[: args.show_wrong]:
        print(f"  wrong: {case.kind} {case.module}:{case.line}:{case.column} "
              f"{case.old} → {case.new}")  # fmt: skip


if __name__ == "__main__":
    main()
