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

With ``--references``, the editor's references come first, as the server has them when the
cursor rested on the name before the edit (lspInfer/references, next_edit/references.py):
jedi's answer for the file (what jedi-language-server answers textDocument/references), the
scope rules where they give nothing; and renames of attributes (``self.name``), which only the
references can carry, are added (rope renames them too).

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
    python bench/next_edit.py --suite renames --cases 600 --seed 0 --references
    python bench/next_edit.py --suite history
    python bench/next_edit.py --suite history --file bench/data/next-edit-heldout.jsonl.gz
    python bench/next_edit.py --suite history --model qwen2.5-coder-0.5b
    LSP_INFER_TEAM_API_KEY=... python bench/next_edit.py --suite history --team-url URL

``--model`` adds the like changes a local model is sure of (next_edit/analogy.py); ``--team-url``
asks a team's OpenAI-compatible server for them instead (nextEdit.team), as the server does:
over /v1/completions with log-probabilities (team/next_edit_model.py); with ``--team-format
zeta`` or ``sweep``, a trained next-edit model's region rewrites (next_edit/zeta.py,
sweep.py), for a team that serves one (not measured here: no such weights can be fetched).

The held-out file (Textualize/rich, fastapi/fastapi) was built after the prediction rules were
settled on the first one, and measured once.
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import gzip
import json
import os
import random
import statistics
import sys
import sysconfig
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import jedi
from rope.base.project import Project
from rope.refactor.rename import Rename

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lsp_infer.config import CompletionSettings, ModelSettings, TeamSettings  # noqa: E402
from lsp_infer.core.backend import Decoded, JobOptions  # noqa: E402
from lsp_infer.core.cancel import CancelReason, CancelToken  # noqa: E402
from lsp_infer.core.engine import CompletionEngine  # noqa: E402
from lsp_infer.documents import Snapshot, Splice  # noqa: E402
from lsp_infer.local.lane import ModelLane  # noqa: E402
from lsp_infer.local.line_model import LocalLineModel  # noqa: E402
from lsp_infer.local.llama_cpp import LlamaCppBackend  # noqa: E402
from lsp_infer.next_edit.analogy import line_confidence  # noqa: E402
from lsp_infer.next_edit.edits import applied  # noqa: E402
from lsp_infer.next_edit.history import EditHistory  # noqa: E402
from lsp_infer.next_edit.predict import predict, smallest_edit  # noqa: E402
from lsp_infer.next_edit.references import (  # noqa: E402
    references_in,
)
from lsp_infer.next_edit.service import LineModel, ModelAsk, NextEdits  # noqa: E402
from lsp_infer.next_edit.syntax import Syntax  # noqa: E402
from lsp_infer.stats import percentile  # noqa: E402
from lsp_infer.team.http_client import TeamClient  # noqa: E402
from lsp_infer.team.next_edit_model import TEAM_MIN_PROBABILITY, TeamNextEditModel  # noqa: E402

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
    syntax: Syntax | None = "python"  # None: a language without a parser here (C)
    # What the editor's language server answers textDocument/references at the case's place
    # before the edit (offsets), when the suite asked it (next_edit_c.py); else jedi's.
    references: tuple[tuple[int, int], ...] | None = None


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


def attribute_cases_of(module: str, source: str, rng: random.Random, per_module: int
                       ) -> list[Case]:  # fmt: skip
    """Renames of an attribute set as ``self.name = …`` (at that line, or at a use), which the
    scope rules refuse: only the editor's references (``--references``) can carry them."""
    script = jedi.Script(source, path="case.py")
    names = [n for n in script.get_names(all_scopes=True, definitions=True, references=False)
             if n.type == "statement" and _is_attribute(source, n.line, n.column)
             and not n.name.startswith("__")]  # fmt: skip
    rng.shuffle(names)
    found: list[Case] = []
    seen: set[str] = set()
    for name in names:
        if len(found) >= per_module or name.name in seen:
            continue
        seen.add(name.name)
        uses = [(r.line, r.column) for r in _file_references(script, name.line, name.column)
                if (r.line, r.column) != (name.line, name.column)]  # fmt: skip
        new = f"{name.name}_{rng.choice(['value', 'new', 'item', 'count'])}"
        expected = rope_rename(source, name.line, name.column, new)
        if not uses or expected is None:
            continue
        line, column = rng.choice([(name.line, name.column), *uses])
        kind = "attribute def" if (line, column) == (name.line, name.column) else "attribute use"
        found.append(Case(module, kind, line, column, name.name, new, source, expected))
    return found


def _file_references(script: jedi.Script, line: int, column: int) -> list[jedi.api.classes.Name]:
    try:
        found = script.get_references(line, column, scope="file")
    except Exception:  # jedi gives up on a few names
        return []
    return [r for r in found if r.module_path is None or str(r.module_path).endswith("case.py")]


def references_before(case: Case) -> list[tuple[int, int]]:
    """What an editor's language server (jedi, as jedi-language-server answers
    textDocument/references) says of the name at the case's place, asked before the edit."""
    script = jedi.Script(case.source, path="case.py")
    return [(offset_of(case.source, r.line, r.column),
             offset_of(case.source, r.line, r.column) + len(case.old))
            for r in _file_references(script, case.line, case.column)]  # fmt: skip


def run_case(case: Case, references: bool = False) -> tuple[bool, bool, float]:
    """(shown, right, seconds to predict) for one case, typed as an editor sends it; with
    ``references``, the editor's references asked before the edit are there too (as the
    server has them when the cursor rested on the name: lspInfer/references)."""
    text, after, seconds = predicted(case, references)
    if after is None:
        return False, text == case.expected, seconds
    return True, after == case.expected, seconds


def predicted(case: Case, references: bool = False) -> tuple[str, str | None, float]:
    """The text after the user's edit, the text after the prediction (None: nothing shown),
    and the seconds to predict."""
    at = offset_of(case.source, case.line, case.column)
    history, text = EditHistory(), case.source
    end = at + len(case.old)
    splices = [Splice(end - i - 1, end - i, "") for i in range(len(case.old))]
    splices += [Splice(at + i, at + i, char) for i, char in enumerate(case.new)]
    spans = list(case.references) if case.references is not None else None
    if references and spans is None:
        spans = references_before(case)
    found = references_in(case.source, case.old, spans) if references and spans else None
    for splice in splices:
        history.record(text, splice)
        if found is not None:
            found.splice(splice)
        text = text[: splice.start] + splice.new + text[splice.end :]
    started = time.perf_counter()
    prediction = predict(text, history.edits, case.syntax, found)
    seconds = time.perf_counter() - started
    return text, None if prediction is None else applied(text, prediction.edits), seconds


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


class _Recording:
    """A model as the next-edit service asks it, keeping each answer's confidence (for the
    curve of thresholds); ``backend``: the local one it runs on, if it is local."""

    def __init__(self, model: LineModel, backend: LlamaCppBackend | None = None) -> None:
        self.backend = backend
        self.model = model
        self.last: float | None = None

    async def continue_line(self, prompt: str, seconds: float, cancel: CancelToken) -> Decoded:
        decoded = await self.model.continue_line(prompt, seconds, cancel)
        ending = "\n" if decoded.stop_reason == "end" else ""
        self.last = line_confidence(decoded.text + ending, decoded.probs)
        return decoded

    async def rewrite(
        self,
        prompt: str,
        until: Sequence[str],
        max_tokens: int,
        seconds: float,
        cancel: CancelToken,
    ) -> Decoded:
        """A region model's answer (the team's, ``--team-format zeta|sweep``); its
        confidence: the least probability of its tokens, as next_edit/region.py gates it."""
        assert isinstance(self.model, _TeamModel)
        decoded = await self.model.rewrite(prompt, until, max_tokens, seconds, cancel)
        self.last = min((chance for _, chance in decoded.probs), default=0.0)
        return decoded


class _TeamModel:
    """The team's model as the server asks it (team/next_edit_model.py), with a client of
    its own for each question: every case here runs in an event loop of its own."""

    def __init__(self, settings: TeamSettings) -> None:
        self.settings = settings

    async def continue_line(self, prompt: str, seconds: float, cancel: CancelToken) -> Decoded:
        client = TeamClient(self.settings)
        try:
            return await TeamNextEditModel(client, "bench").continue_line(prompt, seconds, cancel)
        finally:
            await client.aclose()

    async def rewrite(
        self,
        prompt: str,
        until: Sequence[str],
        max_tokens: int,
        seconds: float,
        cancel: CancelToken,
    ) -> Decoded:
        client = TeamClient(self.settings)
        try:
            model = TeamNextEditModel(client, "bench")
            return await model.rewrite(prompt, until, max_tokens, seconds, cancel)
        finally:
            await client.aclose()


def load_model(model: str) -> tuple[ModelLane, LlamaCppBackend]:
    """An embedded model's name or a GGUF path, loaded as the server loads it."""
    lane, backend = ModelLane(), None
    backend = LlamaCppBackend(lane)
    settings = ModelSettings(path=model) if model.endswith(".gguf") else ModelSettings(name=model)
    lane.run_blocking(backend.load_blocking, settings, None)
    if backend.state != "ready" or backend.loaded is None:
        raise SystemExit(f"the model did not load: {backend.error}")
    return lane, backend


def run_history(
    show_wrong: int, suite: Path = HISTORY_SUITE, model: str | None = None,
    min_probability: float | None = None, keystroke_cost: int = 0,
    team: TeamSettings | None = None, team_format: str = "analogy",
) -> None:  # fmt: skip
    """The suite through the server's next-edit service (next_edit/service.py): its rules,
    and with ``model`` its like changes from that model (at its profile's threshold, or
    ``min_probability``), with the precision and recall each threshold would give."""
    with gzip.open(suite, "rt", encoding="utf-8") as lines:
        cases = [json.loads(line) for line in lines]
    lane = recording = None
    threshold, seconds = 0.0, 2.0
    if team is not None:
        recording = _Recording(_TeamModel(team))
        threshold = min_probability if min_probability is not None else TEAM_MIN_PROBABILITY
        seconds = team.completion_timeout_ms / 1000
        print(f"the team's model {team.model or '(the first listed)'} at {team.url}, shown at a "
              f"line confidence of {threshold}")  # fmt: skip
    elif model is not None:
        lane, backend = load_model(model)
        assert backend.loaded is not None
        recording = _Recording(LocalLineModel(backend), backend)
        profile_threshold = backend.loaded.profile.next_edit_min_probability
        threshold = min_probability if min_probability is not None else profile_threshold or 0.0
        print(f"model {backend.loaded.resolved.path} ({backend.loaded.profile.name}), "
              f"shown at a line confidence of {threshold}")  # fmt: skip
    results: dict[str, list[tuple[bool, bool, float]]] = {}
    by_source: dict[str, list[bool]] = {}
    curve: list[tuple[float, bool]] = []  # the model's answers: confidence, right
    asked_cases: list[dict[str, str]] = []
    wrong = []
    for case in cases:
        before, after = case["before"], case["after"]
        service, uri, _, edited = replayed(case)
        snapshot = Snapshot(uri, 1, edited, "python")
        started = time.perf_counter()
        # Every answer of the model is kept (threshold 0) and the gate applied here, so that
        # one run gives the whole curve.
        region = recording if team_format in ("zeta", "sweep") else None
        ask = None if recording is None else ModelAsk(recording, 0.0, seconds, region=region,
                                                      region_format=team_format)  # fmt: skip
        if recording is not None:
            recording.last = None
        asked_before = service.stats()["model"]["asked"]
        issued = asyncio.run(service.predict(snapshot, ask))
        if service.stats()["model"]["asked"] > asked_before:
            asked_cases.append(case)
        elapsed = time.perf_counter() - started
        prediction = issued[1] if issued is not None else None
        right = False
        if prediction is not None:
            right = agrees(edited, applied(edited, prediction.edits), after)
            if prediction.kind in ("analogy", "region"):
                assert recording is not None and recording.last is not None
                curve.append((recording.last, right))
                if recording.last < threshold:
                    prediction, right = None, False
        if prediction is not None:
            by_source.setdefault(prediction.kind, []).append(right)
            if not right:
                wrong.append(f"{case['repo']}@{case['commit'][:10]} {case['path']} "
                             f"({prediction.kind}: {prediction.label})")  # fmt: skip
        results.setdefault(kind_of(before, after), []).append((prediction is not None, right,
                                                               elapsed))  # fmt: skip
    if keystroke_cost and recording is not None and recording.backend is not None:
        asyncio.run(_keystroke_cost(recording.backend, asked_cases[:keystroke_cost]))
    if lane is not None:
        lane.shutdown()
    repos = sorted({c["repo"] for c in cases})
    print(f"{len(cases)} commits of {', '.join(repos)} ({suite.name})")
    _table(results)
    print("shown, by what made it: " + ", ".join(
        f"{kind} {sum(rights)} right of {len(rights)}" for kind, rights in sorted(by_source.items())
    ))  # fmt: skip
    if curve:
        rules = sum(sum(r) for kind, r in by_source.items() if kind not in ("analogy", "region"))
        rules_shown = sum(
            len(r) for kind, r in by_source.items() if kind not in ("analogy", "region")
        )
        print("the model's like changes at each threshold (with the rules' predictions):")
        for gate in (0.0, 0.3, 0.5, 0.6, 0.7, 0.8, 0.9):
            kept = [right for sureness, right in curve if sureness >= gate]
            shown, right_ones = rules_shown + len(kept), rules + sum(kept)
            print(f"  >= {gate:.1f}: model {sum(kept)} right of {len(kept)}; all "
                  f"{right_ones} of {shown} ({100 * right_ones / max(1, shown):.1f} %), "
                  f"recall {100 * right_ones / len(cases):.1f} %")  # fmt: skip
    for line in wrong[:show_wrong]:
        print(f"  wrong: {line}")


def replayed(case: dict[str, str]) -> tuple[NextEdits, str, Splice, str]:
    """A next-edit service that saw the case's first hunk made (as one splice): it, the
    document's uri, the splice and the text after it."""
    before, after = case["before"], case["after"]
    splice = first_splice(before, after)
    service, uri = NextEdits(), f"file:///suite/{case['path']}"
    service.changed(uri, before, [splice])
    return service, uri, splice, before[: splice.start] + splice.new + before[splice.end :]


def _pct(values: list[float], fraction: float) -> float:
    return percentile(values, fraction) or 0.0


async def _keystroke_cost(backend: LlamaCppBackend, cases: list[dict[str, str]]) -> None:
    """What a like change asked of the model costs the keystroke that stops it: the same
    completion (a key typed at the end of the edited line) from the same warm cache, once
    right after it, once right after a next-edit ask stopped 0.2 s in, as the server stops
    it on didChange. Reports both arms' time (p50/p95) and how long the stop took."""
    assert backend.loaded is not None
    settings = backend.loaded.profile.completion(CompletionSettings(), frozenset())
    engine, model = CompletionEngine(backend), LocalLineModel(backend)
    plain_ms: list[float] = []
    after_ms: list[float] = []
    stop_ms: list[float] = []
    reused: list[tuple[int, int]] = []
    for case in cases:
        service, uri, splice, edited = replayed(case)
        line_end = edited.find("\n", splice.start + len(splice.new))
        line_end = len(edited) if line_end < 0 else line_end
        typed = edited[:line_end] + " " + edited[line_end:]
        options = JobOptions(document=uri)
        times = []
        for ask_first in (False, True):
            await engine.complete(edited, line_end, settings, CancelToken(), options=options)
            if ask_first:
                asking = asyncio.ensure_future(
                    service.predict(Snapshot(uri, 1, edited, "python"), ModelAsk(model, 0.0))
                )
                await asyncio.sleep(0.2)
                stopped = time.perf_counter()
                service.stop(uri, CancelReason.DOCUMENT_CHANGED)
                await asking
                stop_ms.append((time.perf_counter() - stopped) * 1000)
            started = time.perf_counter()
            suggestion = await engine.complete(
                typed, line_end + 1, settings, CancelToken(), options=options
            )
            times.append((time.perf_counter() - started) * 1000)
            generation = suggestion.generation
            reused.append((generation.prompt_tokens_reused, generation.prompt_tokens)
                          if generation else (0, 0))  # fmt: skip
        plain_ms.append(times[0])
        after_ms.append(times[1])
    print(f"a keystroke's completion, {len(cases)} edits (the cases the model is asked about):")
    for name, values in (("right after the edit", plain_ms), ("after a stopped ask", after_ms)):
        print(f"  {name:<22} p50 {_pct(values, 0.5):7.0f} ms  "
              f"p95 {_pct(values, 0.95):7.0f} ms")  # fmt: skip
    print(f"  ratio p50 {_pct(after_ms, 0.5) / _pct(plain_ms, 0.5):.2f}x, "
          f"p95 {_pct(after_ms, 0.95) / _pct(plain_ms, 0.95):.2f}x; the ask "
          f"stopped in p50 {_pct(stop_ms, 0.5):.0f} / p95 "
          f"{_pct(stop_ms, 0.95):.0f} ms; prompt tokens reused "
          f"{sum(r for r, _ in reused[0::2])}/{sum(t for _, t in reused[0::2])} vs "
          f"{sum(r for r, _ in reused[1::2])}/{sum(t for _, t in reused[1::2])}")  # fmt: skip


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
    parser.add_argument("--references", action="store_true", help="renames: the editor's "
                        "references (jedi's) asked before each edit come first, and attribute "
                        "renames are added")  # fmt: skip
    parser.add_argument("--file", type=Path, default=HISTORY_SUITE, help="the history suite")
    parser.add_argument("--model", help="history: also the like changes of this model (an "
                        "embedded model's name or a GGUF path)")  # fmt: skip
    parser.add_argument("--min-probability", type=float,
                        help="history: the model's threshold (default: its profile's)")  # fmt: skip
    parser.add_argument("--keystroke-cost", type=int, default=0, metavar="N",
                        help="history with --model: a keystroke's completion after a stopped "
                        "ask, beside one without, on N of the edits asked about")  # fmt: skip
    parser.add_argument(
        "--team-url",
        help="history: the like changes of a team's server "
        "(its /v1 URL; the key from LSP_INFER_TEAM_API_KEY) instead of --model",
    )
    parser.add_argument("--team-format", choices=("analogy", "zeta", "sweep"),
                        default="analogy", help="with --team-url: what the team's model is "
                        "asked (nextEdit.teamFormat; zeta, sweep: a trained next-edit "
                        "model)")  # fmt: skip
    parser.add_argument("--team-model", help="with --team-url: the served model's name "
                        "(default: the first the server lists)")  # fmt: skip
    args = parser.parse_args()
    if args.suite == "history":
        team = None
        if args.team_url:
            # Generous: this measures what the model says, not how fast the server is.
            team = TeamSettings(url=args.team_url, model=args.team_model,
                                api_key=os.environ.get("LSP_INFER_TEAM_API_KEY"),
                                completion_timeout_ms=60_000)  # fmt: skip
        run_history(args.show_wrong, args.file, args.model, args.min_probability,
                    args.keystroke_cost, team, args.team_format)  # fmt: skip
        return
    rng = random.Random(args.seed)
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    per_module = max(1, args.cases // (2 * len(MODULES)))
    cases: list[Case] = []
    kinds = ["definition", "use", "other variable"]
    for module in MODULES:
        source = (stdlib / module).read_text(encoding="utf-8")
        cases += cases_of(module, source, rng, per_module)
        if args.references:
            cases += attribute_cases_of(module, source, rng, per_module)
    if args.references:
        kinds += ["attribute def", "attribute use"]
    print(f"{len(cases)} cases from {len(MODULES)} modules of Python "
          f"{sys.version.split()[0]}'s standard library, seed {args.seed}"
          + (", with the editor's references (jedi) asked before the edit"
             if args.references else ""))  # fmt: skip
    wrong_shown = 0
    print(f"{'kind':<16} {'cases':>6} {'shown':>6} {'right':>6} {'precision':>10} "
          f"{'p50 ms':>7} {'p95 ms':>7}"
          + ("   the scope rules alone: shown, right" if args.references else ""))  # fmt: skip
    for kind in kinds:
        mine = [c for c in cases if c.kind == kind]
        results = [run_case(c, args.references) for c in mine]
        shown = sum(s for s, _, _ in results)
        right = sum(s and r for s, r, _ in results)
        times = sorted(t * 1000 for _, _, t in results)
        p95 = times[min(len(times) - 1, int(0.95 * len(times)))] if times else 0.0
        precision = f"{100 * right / shown:.1f} %" if shown else "-"
        alone = ""
        if args.references:  # the same cases without the editor's references, beside
            rules = [run_case(c) for c in mine]
            alone = (f"   {sum(s for s, _, _ in rules):>5} "
                     f"{sum(s and r for s, r, _ in rules):>6}")  # fmt: skip
        print(f"{kind:<16} {len(mine):>6} {shown:>6} {right:>6} {precision:>10} "
              f"{statistics.median(times) if times else 0:>7.1f} {p95:>7.1f}{alone}")  # fmt: skip
        for case, (was_shown, was_right, _) in zip(mine, results, strict=True):
            if was_shown and not was_right and wrong_shown < args.show_wrong:
                wrong_shown += 1
                print(f"  wrong: {case.module}:{case.line} {case.old} → {case.new}")


if __name__ == "__main__":
    main()
