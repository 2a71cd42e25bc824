"""Single-line holes cut from real code nobody here wrote (the standard library), for
bench/quality.py, bench/paths.py and the quality gate (tests/e2e/test_quality_gate.py).

Each hole removes the code of one line inside a function body (keeping its indentation); the
cursor sits where the code starts and the model must write the line. Suites:

  local   random lines from 25 modules
  cross   lines that use a name defined in another module of the same package and not in
          their own: the answer needs another file
  header  lines that use a parameter of their function that none of the 8 lines above them
          mentions, at least 12 lines below the ``def``: the answer depends on the signature
          (and docstring), which a window of the nearest lines cuts off
  ts      TypeScript (ajv's sources): lines that use a name imported from another file of the
          project, like cross
"""

from __future__ import annotations

import ast
import difflib
import json
import random
import re
from dataclasses import dataclass
from pathlib import Path

STDLIB = Path(json.__file__).parent.parent
MODULES = [
    "textwrap.py", "shlex.py", "difflib.py", "fractions.py", "calendar.py", "csv.py", "glob.py",
    "pprint.py", "string.py", "json/decoder.py", "json/encoder.py", "configparser.py",
    "heapq.py", "bisect.py", "statistics.py", "ipaddress.py", "gettext.py", "netrc.py",
    "colorsys.py", "dataclasses.py", "functools.py", "tokenize.py", "ast.py", "base64.py",
    "quopri.py",
]  # fmt: skip
PACKAGES = [
    "json", "unittest", "logging", "concurrent/futures", "http", "email", "importlib",
    "xml/etree", "multiprocessing", "asyncio", "urllib", "dbm", "sqlite3", "wsgiref",
]  # fmt: skip


@dataclass(frozen=True)
class Hole:
    module: str
    text: str  # the file with the line's code removed
    offset: int  # cursor: where the removed code started
    expected: str  # the removed code
    siblings: tuple[tuple[str, str], ...] = ()  # the package's other modules (path, text)
    # Every file of the project on disk, for a language server (default: the siblings).
    project: tuple[tuple[str, str], ...] = ()


def _line_holes(module: str, source: str, keep) -> list[tuple[int, int, str]]:
    """(start, end, code) of candidate lines inside function bodies."""
    result = []
    lines = source.split("\n")
    offset = 0
    in_function = False
    for line in lines:
        stripped = line.strip()
        indent = len(line) - len(line.lstrip(" "))
        if stripped.startswith("def "):
            in_function = True
        if (
            in_function
            and indent >= 8
            and len(stripped) >= 12
            and not stripped.startswith(("#", '"', "'", "def ", "@", "import ", "from "))
            and not stripped.endswith(("\\", ","))
            and keep(stripped)
        ):
            result.append((offset + indent, offset + indent + len(stripped), stripped))
        offset += len(line) + 1
    return result


def _top_level_names(source: str) -> set[str]:
    names: set[str] = set()
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return names
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return {n for n in names if len(n) >= 5}


def local_holes(count: int, rng: random.Random) -> list[Hole]:
    candidates = []
    for module in MODULES:
        source = (STDLIB / module).read_text()
        package = (STDLIB / module).parent
        siblings = _siblings(package, module) if package != STDLIB else ()
        for start, end, code in _line_holes(module, source, lambda _code: True):
            candidates.append(Hole(module, source[:start] + source[end:], start, code, siblings))
    return _spread(candidates, count, rng)


def _siblings(package: Path, module: str) -> tuple[tuple[str, str], ...]:
    files = []
    for path in sorted(package.glob("*.py")):
        relative = path.relative_to(STDLIB).as_posix()
        if relative != module and path.stat().st_size < 200_000:
            files.append((relative, path.read_text(errors="replace")))
    return tuple(files)


def cross_holes(count: int, rng: random.Random) -> list[Hole]:
    candidates = []
    for package in PACKAGES:
        directory = STDLIB / package
        modules = sorted(directory.glob("*.py"))
        sources = {m.relative_to(STDLIB).as_posix(): m.read_text(errors="replace") for m in modules}
        for module, source in sources.items():
            own = _top_level_names(source)
            foreign = set()
            for other, other_source in sources.items():
                if other != module:
                    foreign |= _top_level_names(other_source) - own
            if not foreign:
                continue
            pattern = re.compile(r"\b(" + "|".join(map(re.escape, sorted(foreign))) + r")\b")
            siblings = tuple((p, t) for p, t in sources.items() if p != module)
            for start, end, code in _line_holes(module, source, pattern.search):
                candidates.append(
                    Hole(module, source[:start] + source[end:], start, code, siblings)
                )
    return _spread(candidates, count, rng)


def _spread(candidates: list[Hole], count: int, rng: random.Random) -> list[Hole]:
    """At most 3 holes per module, in a seeded random order."""
    rng.shuffle(candidates)
    per_module: dict[str, int] = {}
    chosen: list[Hole] = []
    for hole in candidates:
        if per_module.get(hole.module, 0) < 3:
            per_module[hole.module] = per_module.get(hole.module, 0) + 1
            chosen.append(hole)
        if len(chosen) == count:
            break
    return chosen


def score(suggestion: str, expected: str) -> tuple[bool, float]:
    first = suggestion.strip().split("\n")[0].strip() if suggestion.strip() else ""
    return first == expected, difflib.SequenceMatcher(None, first, expected).ratio()


# Modules for the header suite: long functions with parameters (more than MODULES).
HEADER_MODULES = [
    *MODULES, "argparse.py", "inspect.py", "tarfile.py", "zipfile.py", "pathlib.py",
    "subprocess.py", "shutil.py", "urllib/parse.py", "pickle.py", "enum.py", "locale.py",
    "optparse.py", "random.py", "threading.py", "traceback.py", "mailbox.py", "smtplib.py",
    "http/client.py", "http/cookiejar.py", "email/feedparser.py", "logging/__init__.py",
    "logging/handlers.py", "sre_parse.py", "pydoc.py", "trace.py", "typing.py", "zipimport.py",
]  # fmt: skip
# A header hole's parameter is not mentioned in this many lines above it, and its def is at
# least HEADER_DISTANCE lines above it.
HEADER_NEAR_LINES = 8
HEADER_DISTANCE = 12


def _parameters(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    args = function.args
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    every += [a for a in (args.vararg, args.kwarg) if a is not None]
    return {a.arg for a in every if a.arg not in ("self", "cls") and len(a.arg) >= 2}


def header_holes(count: int, rng: random.Random) -> list[Hole]:
    """Lines whose answer needs a parameter named only far above them (see the module doc)."""
    candidates = []
    for module in HEADER_MODULES:
        path = STDLIB / module
        if not path.exists():
            continue
        source = path.read_text(errors="replace")
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        lines = source.split("\n")
        starts = [0]
        for line in lines:
            starts.append(starts[-1] + len(line) + 1)
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            names = _parameters(node)
            if not names or node.end_lineno is None:
                continue
            pattern = re.compile(r"\b(" + "|".join(map(re.escape, sorted(names))) + r")\b")
            def_line = node.lineno - 1
            for number in range(def_line + HEADER_DISTANCE, node.end_lineno):
                line = lines[number]
                stripped = line.strip()
                indent = len(line) - len(line.lstrip(" "))
                if (
                    indent < 8
                    or len(stripped) < 12
                    or stripped.startswith(("#", '"', "'", "def ", "@", "import ", "from "))
                    or stripped.endswith(("\\", ","))
                ):
                    continue
                used = set(pattern.findall(stripped))
                above = "\n".join(lines[max(def_line + 1, number - HEADER_NEAR_LINES) : number])
                if not used or any(re.search(rf"\b{re.escape(n)}\b", above) for n in used):
                    continue
                start = starts[number] + indent
                end = start + len(stripped)
                hole_text = source[:start] + source[end:]
                candidates.append(Hole(module, hole_text, start, stripped))
    return _spread(candidates, count, rng)


# TypeScript code nobody here wrote: ajv's sources, installed by `npm ci` in bench/typescript.
TS_ROOT = Path(__file__).resolve().parent / "typescript" / "node_modules" / "ajv"
_TS_IMPORT = re.compile(r"^import\s+(?:type\s+)?\{([^}]*)\}\s+from\s+[\"'](\.[^\"']*)[\"']", re.M)


def ts_cross_holes(count: int, rng: random.Random) -> list[Hole]:
    """TypeScript lines inside function bodies that use a name imported from another file of
    the project (``import {x} from "./…"``): the answer needs another file. Every file of the
    project is in the hole's ``project``; its directory's files are its ``siblings``."""
    files = sorted((TS_ROOT / "lib").rglob("*.ts"))
    if not files:
        raise SystemExit(f"no TypeScript sources under {TS_ROOT}: run npm ci in bench/typescript")
    sources = {f.relative_to(TS_ROOT).as_posix(): f.read_text(errors="replace") for f in files}
    project = tuple(sources.items())
    candidates = []
    for module, source in sources.items():
        imported = {
            name.strip().split(" as ")[-1].strip()
            for match in _TS_IMPORT.finditer(source)
            for name in match.group(1).replace("type ", "").split(",")
        } - {""}
        if not imported:
            continue
        pattern = re.compile(r"\b(" + "|".join(map(re.escape, sorted(imported))) + r")\b")
        folder = module.rsplit("/", 1)[0]
        siblings = tuple(
            (p, t) for p, t in project if p != module and p.rsplit("/", 1)[0] == folder
        )
        offset = 0
        for line in source.split("\n"):
            stripped = line.strip()
            indent = len(line) - len(line.lstrip(" "))
            if (
                indent >= 4
                and len(stripped) >= 12
                and not stripped.startswith(("//", "/*", "*", "import ", "export ", "}", "case "))
                and not stripped.endswith(("\\", ","))
                and pattern.search(stripped)
            ):
                start, end = offset + indent, offset + indent + len(stripped)
                hole_text = source[:start] + source[end:]
                candidates.append(Hole(module, hole_text, start, stripped, siblings, project))
            offset += len(line) + 1
    return _spread(candidates, count, rng)


SUITES = {"local": local_holes, "cross": cross_holes, "header": header_holes, "ts": ts_cross_holes}


def suites(names: str | list[str], count: int, seed: int) -> dict[str, list[Hole]]:
    """The named suites ("both" is local and cross), ``count`` holes each."""
    chosen = ["local", "cross"] if names == "both" else names
    if isinstance(chosen, str):
        chosen = chosen.split(",")
    return {name: SUITES[name](count, random.Random(seed)) for name in chosen}
