"""Next-edit predictions against an independent answer: renames in real Python files.

A case: a name in a standard-library module, renamed by the user at one occurrence (its
definition, or one of its uses), typed key by key as an editor sends it. The server's
prediction (lsp_infer/next_edit, through the same history and predict code the server runs)
is applied and compared with rope's rename of the same name (rope's own scope analysis, not
ours; the names are picked by jedi): right when the two texts are equal. (jedi's own rename is
flow-sensitive: renaming a parameter it leaves a later ``param = f(param)`` alone, which no
editor's rename does.) Also cases where the right answer is no
prediction: a use changed to another variable that is already in scope (the user meant a
different variable, not a rename).

Reports, per kind: cases, shown (a prediction was offered), right (of those shown), precision
of shown, and the time to predict (p50/p95, ms).

The history suite (``--suite history``): commits of public repositories that changed one
Python file in a few small hunks near each other (tools/next_edit_suite.py built it into
bench/data/next-edit-history.jsonl.gz). The first hunk is replayed as the user's edit (the
smallest span of characters it changed, as one splice); a prediction is right when every line
it changes is changed the same way by the commit (the next hunk, or any other of the commit's);
recall by kind of commit: a rename (every hunk renames the same identifier), a repeated edit
(the first two hunks make the same change), other.

    python bench/next_edit.py --suite renames --cases 600 --seed 0
    python bench/next_edit.py --suite history
    python bench/next_edit.py --suite history --file bench/data/next-edit-heldout.jsonl.gz

The held-out file (Textualize/rich, fastapi/fastapi) was built after the prediction rules were
settled on the first one, and measured once.
"""

from __future__ import annotations

import argparse
import difflib
import gzip
import json
import random
import statistics
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import jedi
from rope.base.project import Project
from rope.refactor.rename import Rename

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lsp_infer.documents import Splice  # noqa: E402
from lsp_infer.next_edit.history import EditHistory  # noqa: E402
from lsp_infer.next_edit.predict import predict, smallest_edit  # noqa: E402

# Standard-library modules of varied style (classes, closures, comprehensions, globals).
MODULES = [
    "textwrap.py", "shlex.py", "difflib.py", "heapq.py", "fractions.py", "statistics.py",
    "csv.py", "configparser.py", "pprint.py", "string.py", "json/decoder.py",
    "json/encoder.py", "argparse.py", "calendar.py", "gettext.py", "tokenize.py",
]  # fmt: skip


@dataclass(frozen=True)
class Case:
    module: str
    kind: str  # "definition", "use", "other variable"
    line: int  # 1-based, jedi's
    column: int
    old: str
    new: str
    source: str
    expected: str  # the text after the whole rename (or, for "other variable", unchanged)


def offset_of(source: str, line: int, column: int) -> int:
    return sum(len(row) for row in source.splitlines(keepends=True)[: line - 1]) + column


def rope_rename(source: str, line: int, column: int, new: str) -> str | None:
    """The whole file after rope renames the name at (line, column) to ``new``."""
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "case.py").write_text(source, encoding="utf-8")
        project = Project(folder, ropefolder=None)
        try:
            resource = project.get_resource("case.py")
            changes = Rename(project, resource, offset_of(source, line, column)).get_changes(new)
        except Exception:
            return None
        finally:
            project.close()
    contents = [c.new_contents for c in getattr(changes, "changes", [])]
    return contents[0] if len(contents) == 1 else None


def cases_of(module: str, source: str, rng: random.Random, per_module: int) -> list[Case]:
    script = jedi.Script(source, path="case.py")
    names = [n for n in script.get_names(all_scopes=True, definitions=True, references=False)
             if n.type in ("param", "statement", "function", "class") and n.name.isidentifier()
             and not n.name.startswith("__")]  # fmt: skip
    rng.shuffle(names)
    found: list[Case] = []
    for name in names:
        if len(found) >= per_module:
            break
        try:
            found_refs = script.get_references(name.line, name.column, scope="file")
        except Exception:  # jedi gives up on a few names: not a case
            continue
        refs = [r for r in found_refs
                if r.module_path is None or str(r.module_path).endswith("case.py")]  # fmt: skip
        if len(refs) < 2:
            continue
        new = f"{name.name}_{rng.choice(['value', 'new', 'item', 'count'])}"
        expected = rope_rename(source, name.line, name.column, new)
        if expected is None:
            continue
        found.append(Case(module, "definition", name.line, name.column, name.name, new,
                          source, expected))  # fmt: skip
        uses = [r for r in refs if (r.line, r.column) != (name.line, name.column)
                and not r.is_definition()]  # fmt: skip
        if uses:
            use = rng.choice(uses)
            found.append(Case(module, "use", use.line, use.column, name.name, new, source,
                              expected))  # fmt: skip
            # The same use changed to another variable already bound nearby: no rename meant.
            home = _where(name.parent())
            others = sorted(
                {
                    n.name
                    for n in names
                    if n.name != name.name
                    and n.type in ("param", "statement")
                    and n.line < use.line
                    and _where(n.parent()) == home
                    and not _is_attribute(source, n.line, n.column)
                }
            )
            if others:
                other = rng.choice(others)
                changed = _replace(source, offset_of(source, use.line, use.column),
                                   name.name, other)  # fmt: skip
                found.append(Case(module, "other variable", use.line, use.column, name.name,
                                  other, source, changed))  # fmt: skip
    return found


def _is_attribute(source: str, line: int, column: int) -> bool:
    """``self.name = …``: jedi lists it among a method's names, but it is no variable."""
    return source[: offset_of(source, line, column)].rstrip().endswith(".")


def _where(definition: object) -> tuple[object, object]:
    """A jedi definition's place, to tell two scopes of the same name apart."""
    return getattr(definition, "line", None), getattr(definition, "column", None)


def _replace(text: str, at: int, old: str, new: str) -> str:
    return text[:at] + new + text[at + len(old) :]


def run_case(case: Case) -> tuple[bool, bool, float]:
    """(shown, right, seconds to predict) for one case, typed as an editor sends it."""
    at = offset_of(case.source, case.line, case.column)
    history, text = EditHistory(), case.source
    end = at + len(case.old)
    splices = [Splice(end - i - 1, end - i, "") for i in range(len(case.old))]
    splices += [Splice(at + i, at + i, char) for i, char in enumerate(case.new)]
    for splice in splices:
        history.record(text, splice)
        text = text[: splice.start] + splice.new + text[splice.end :]
    started = time.perf_counter()
    prediction = predict(text, history.edits, python=True)
    seconds = time.perf_counter() - started
    if prediction is None:
        return False, text == case.expected, seconds
    for edit in reversed(prediction.edits):
        text = text[: edit.start] + edit.new + text[edit.end :]
    return True, text == case.expected, seconds


HISTORY_SUITE = ROOT / "bench" / "data" / "next-edit-history.jsonl.gz"


def _blocks(a: list[str], b: list[str]) -> list[tuple[int, int, int, int]]:
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return [(i1, i2, j1, j2) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]


def first_splice(before: str, after: str) -> Splice:
    """The commit's first hunk as the smallest span of characters it changed."""
    old_lines, new_lines = before.splitlines(keepends=True), after.splitlines(keepends=True)
    i1, i2, j1, j2 = _blocks(old_lines, new_lines)[0]
    start = sum(len(line) for line in old_lines[:i1])
    edit = smallest_edit(
        before, start, start + len("".join(old_lines[i1:i2])), "".join(new_lines[j1:j2])
    )
    return Splice(edit.start, edit.end, edit.new)


def agrees(base: str, predicted: str, target: str) -> bool:
    """Whether every line ``predicted`` changes in ``base`` is changed alike by ``target``."""
    lines, mine, theirs = (t.splitlines(keepends=True) for t in (base, predicted, target))
    targets = _blocks(lines, theirs)
    for i1, i2, j1, j2 in _blocks(lines, mine):
        block = next(((k1, k2, l1, l2) for k1, k2, l1, l2 in targets
                      if k1 <= i1 and i2 <= k2 and (k1 < k2 or k1 == i1)), None)  # fmt: skip
        if block is None:
            return False
        k1, k2, l1, l2 = block
        if k2 - k1 == l2 - l1 and i2 - i1 == j2 - j1:  # lines replaced one for one
            if mine[j1:j2] != theirs[l1 + (i1 - k1) : l1 + (i2 - k1)]:
                return False
        elif "".join(mine[j1:j2]) not in "".join(theirs[l1:l2]):
            return False
    return True


def kind_of(before: str, after: str) -> str:
    """rename: every hunk changes one identifier into the same other; repeat: the first two
    hunks make the same change; other."""
    old_lines, new_lines = before.splitlines(), after.splitlines()
    changes = []
    for i1, i2, j1, j2 in _blocks(old_lines, new_lines):
        old, new = "\n".join(old_lines[i1:i2]), "\n".join(new_lines[j1:j2])
        changes.append(_word_change(old, new))
    if all(c is not None and c[2] for c in changes) and len({c[:2] for c in changes}) == 1:
        return "rename"
    first = [(old_lines[i1:i2], new_lines[j1:j2]) for i1, i2, j1, j2 in
             _blocks(old_lines, new_lines)[:2]]  # fmt: skip
    if changes[0] is not None and changes[0] == changes[1]:
        return "repeat"
    stripped = [([x.strip() for x in a], [x.strip() for x in b]) for a, b in first]
    return "repeat" if stripped[0] == stripped[1] else "other"


def _word_change(old: str, new: str) -> tuple[str, str, bool] | None:
    """The one span of characters changed between ``old`` and ``new`` (grown to whole words):
    (old, new, whether both are identifiers); None when more than one span changed."""
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    spans = [op for op in matcher.get_opcodes() if op[0] != "equal"]
    if not spans:
        return None
    a1, a2, b1, b2 = spans[0][1], spans[-1][2], spans[0][3], spans[-1][4]
    while a1 > 0 and b1 > 0 and (old[a1 - 1].isalnum() or old[a1 - 1] == "_"):
        a1, b1 = a1 - 1, b1 - 1
    while a2 < len(old) and (old[a2].isalnum() or old[a2] == "_"):
        a2 += 1
    while b2 < len(new) and (new[b2].isalnum() or new[b2] == "_"):
        b2 += 1
    words = old[a1:a2], new[b1:b2]
    if old[:a1] != new[:b1] or old[a2:] != new[b2:]:
        return None
    return words[0], words[1], all(w.isidentifier() for w in words)


def run_history(show_wrong: int, suite: Path = HISTORY_SUITE) -> None:
    with gzip.open(suite, "rt", encoding="utf-8") as lines:
        cases = [json.loads(line) for line in lines]
    results: dict[str, list[tuple[bool, bool, float]]] = {}
    wrong = []
    for case in cases:
        before, after = case["before"], case["after"]
        splice = first_splice(before, after)
        history = EditHistory()
        history.record(before, splice)
        edited = before[: splice.start] + splice.new + before[splice.end :]
        started = time.perf_counter()
        prediction = predict(edited, history.edits, python=True)
        seconds = time.perf_counter() - started
        shown = prediction is not None
        right = False
        if prediction is not None:
            predicted = edited
            for edit in reversed(prediction.edits):
                predicted = predicted[: edit.start] + edit.new + predicted[edit.end :]
            right = agrees(edited, predicted, after)
            if not right:
                wrong.append(f"{case['repo']}@{case['commit'][:10]} {case['path']}")
        results.setdefault(kind_of(before, after), []).append((shown, right, seconds))
    repos = sorted({c["repo"] for c in cases})
    print(f"{len(cases)} commits of {', '.join(repos)} ({suite.name})")
    _table(results)
    for line in wrong[:show_wrong]:
        print(f"  wrong: {line}")


def _table(results: dict[str, list[tuple[bool, bool, float]]]) -> None:
    print(f"{'kind':<16} {'cases':>6} {'shown':>6} {'right':>6} {'precision':>10} "
          f"{'recall':>7} {'p50 ms':>7} {'p95 ms':>7}")  # fmt: skip
    everything = [r for rows in results.values() for r in rows]
    for kind, rows in [*sorted(results.items()), ("all", everything)]:
        shown = sum(s for s, _, _ in rows)
        right = sum(s and r for s, r, _ in rows)
        times = sorted(t * 1000 for _, _, t in rows)
        p95 = times[min(len(times) - 1, int(0.95 * len(times)))] if times else 0.0
        precision = f"{100 * right / shown:.1f} %" if shown else "-"
        recall = f"{100 * right / len(rows):.1f} %" if rows else "-"
        print(f"{kind:<16} {len(rows):>6} {shown:>6} {right:>6} {precision:>10} {recall:>7} "
              f"{statistics.median(times) if times else 0:>7.1f} {p95:>7.1f}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--suite", choices=("renames", "history"), default="renames")
    parser.add_argument("--cases", type=int, default=300, help="rename cases (about)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--show-wrong", type=int, default=0, help="print this many wrong ones")
    parser.add_argument("--file", type=Path, default=HISTORY_SUITE, help="the history suite")
    args = parser.parse_args()
    if args.suite == "history":
        run_history(args.show_wrong, args.file)
        return
    rng = random.Random(args.seed)
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    per_module = max(1, args.cases // (2 * len(MODULES)))
    cases: list[Case] = []
    for module in MODULES:
        cases += cases_of(module, (stdlib / module).read_text(encoding="utf-8"), rng, per_module)
    print(f"{len(cases)} cases from {len(MODULES)} modules of Python "
          f"{sys.version.split()[0]}'s standard library, seed {args.seed}")  # fmt: skip
    wrong_shown = 0
    print(f"{'kind':<16} {'cases':>6} {'shown':>6} {'right':>6} {'precision':>10} "
          f"{'p50 ms':>7} {'p95 ms':>7}")  # fmt: skip
    for kind in ("definition", "use", "other variable"):
        mine = [c for c in cases if c.kind == kind]
        results = [run_case(c) for c in mine]
        shown = sum(s for s, _, _ in results)
        right = sum(s and r for s, r, _ in results)
        times = sorted(t * 1000 for _, _, t in results)
        p95 = times[min(len(times) - 1, int(0.95 * len(times)))] if times else 0.0
        precision = f"{100 * right / shown:.1f} %" if shown else "-"
        print(f"{kind:<16} {len(mine):>6} {shown:>6} {right:>6} {precision:>10} "
              f"{statistics.median(times) if times else 0:>7.1f} {p95:>7.1f}")  # fmt: skip
        for case, (was_shown, was_right, _) in zip(mine, results, strict=True):
            if was_shown and not was_right and wrong_shown < args.show_wrong:
                wrong_shown += 1
                print(f"  wrong: {case.module}:{case.line} {case.old} → {case.new}")


if __name__ == "__main__":
    main()
