"""Next edits in Sweep's format (next_edit/sweep.py), the pure parts: the prompt as Zed's
Sweep prompt mode writes it, the window read back from an answer, and the service asking a
region model in this format (a scripted one: no Sweep model's weights can be fetched here)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from lsp_infer.core.backend import Decoded
from lsp_infer.core.cancel import CancelToken
from lsp_infer.documents import Snapshot, Splice
from lsp_infer.next_edit.edits import applied
from lsp_infer.next_edit.history import Edit
from lsp_infer.next_edit.service import ModelAsk, NextEdits
from lsp_infer.next_edit.sweep import (
    FILE_SEP,
    sweep_prediction,
    sweep_question,
    updated_window,
)

BEFORE = "class Point:\n    def __init__(self, x, y):\n        self.x = x\n        self.y = y\n"
ADDED = BEFORE.index(", y)") + 3  # ", z" typed after y in the def line
TEXT = BEFORE[:ADDED] + ", z" + BEFORE[ADDED:]
LATEST = Edit(ADDED, "", ", z")
CURSOR_AT = ADDED + 3
WITH_Z = TEXT + "        self.z = z\n"
SURE = ((1, 0.99),)


def test_the_prompt_is_sweeps() -> None:
    question = sweep_question("point.py", TEXT, CURSOR_AT, [LATEST])
    assert question is not None
    assert question.prompt == (
        "<|file_sep|>point.py.diff\n"
        "original:\nclass Point:\n    def __init__(self, x, y):\n        self.x = x\n"
        "        self.y = y\n"
        "updated:\nclass Point:\n    def __init__(self, x, y, z):\n        self.x = x\n"
        "        self.y = y\n"
        f"<|file_sep|>original/point.py\n{BEFORE}"
        f"<|file_sep|>current/point.py\n{TEXT}"
        "<|file_sep|>updated/point.py\n"
    )
    # The whole file is the window here (it has fewer than 21 lines).
    assert (question.region_start, question.region_end) == (0, len(TEXT))
    assert question.until == ("<|file_sep|>", "</s>")


def test_the_window_is_ten_lines_either_side_before_the_edit_and_now() -> None:
    before = "".join(f"v{n} = {n}\n" for n in range(40))
    at = before.index("v20 = 20") + len("v20 = ")
    text = before[:at] + "2" + before[at + 2 :]  # 20 → 2
    edit = Edit(at, "20", "2")
    question = sweep_question("v.py", text, at, [edit])
    assert question is not None
    lines = text.split("\n")
    assert text[question.region_start : question.region_end] == "\n".join(lines[10:31])
    original = question.prompt.split("<|file_sep|>original/v.py\n")[1].split(FILE_SEP)[0]
    assert original == "\n".join(before.split("\n")[10:31]) + "\n"


def test_the_latest_three_edits_each_at_most_forty_lines_a_side() -> None:
    text = "".join(f"a{n} = {n}\n" for n in range(100))
    edits = [Edit(text.index(f"a{n} ="), f"b{n}", f"a{n}") for n in (1, 30, 60, 90)]
    prompt = sweep_question("m.py", text, 0, edits)
    assert prompt is not None
    assert prompt.prompt.count(".diff\n") == 3 and "b1 = 1" not in prompt.prompt
    big = "x = [\n" + "".join(f"    {n},\n" for n in range(60)) + "]\n"
    grown = sweep_question("m.py", big, 0, [Edit(0, "", big)])  # the whole list pasted
    assert grown is not None
    updated = grown.prompt.split("updated:\n")[1].split(FILE_SEP)[0]
    assert len(updated.splitlines()) == 40 and "..." in updated.splitlines()


@pytest.mark.parametrize(
    ("text", "edits", "path"),
    [
        ('s = "<|file_sep|>"\n', [], "m.py"),  # the text would read as the model's marker
        ("x = 1\n", [Edit(0, "</s>", "x")], "m.py"),  # so would the text before an edit
        ("x = 1\n", [], "<|file_sep|>.py"),
    ],
)
def test_no_prompt_where_the_text_holds_a_marker(text: str, edits: list[Edit], path: str) -> None:
    assert sweep_question(path, text, 0, edits) is None


@pytest.mark.parametrize(
    ("answer", "current", "ended", "window"),
    [
        ("a\nb\n<|file_sep|>", "a\nb", False, "a\nb"),  # the prompt's newline taken off
        ("a\nb\n<|file_sep|>", "a\nb\n", False, "a\nb\n"),  # the window's own kept
        ("a\nb\n</s>junk", "a\nb", False, "a\nb"),
        ("a\nb\n", "a\nb", False, None),  # no marker: cut short at the token limit
        ("a\nb\n", "a\nb", True, "a\nb"),  # the server stopped at the marker, unwritten
        ("<|file_sep|>", "a", False, ""),
    ],
)
def test_the_window_read_back(answer: str, current: str, ended: bool, window: str | None) -> None:
    assert updated_window(answer, current, ended) == window


def test_a_sure_answer_becomes_the_edit_and_an_unsure_one_nothing() -> None:
    question = sweep_question("point.py", TEXT, CURSOR_AT, [LATEST])
    assert question is not None
    answer = WITH_Z + FILE_SEP
    shown = sweep_prediction(TEXT, question, answer, SURE, 0.7, LATEST, "python")
    assert shown is not None and shown.kind == "region"
    assert applied(TEXT, shown.edits) == WITH_Z
    assert sweep_prediction(TEXT, question, answer, ((1, 0.5),), 0.7, LATEST, "python") is None
    same = sweep_prediction(TEXT, question, TEXT + FILE_SEP, SURE, 0.7, LATEST, "python")
    assert same is None
    undo = sweep_prediction(TEXT, question, BEFORE + FILE_SEP, SURE, 0.7, LATEST, "python")
    assert undo is None  # it would take back what the user just typed


class SweepModel:
    """Writes the window of TEXT out again as WITH_Z's, as a Sweep model would."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, tuple[str, ...]]] = []

    async def rewrite(
        self,
        prompt: str,
        until: Sequence[str],
        max_tokens: int,
        seconds: float,
        cancel: CancelToken,
    ) -> Decoded:
        self.asked.append((prompt, tuple(until)))
        answer = WITH_Z + FILE_SEP
        return Decoded(answer, "end", ((len(answer), 0.95),))

    async def continue_line(self, prompt: str, seconds: float, cancel: CancelToken) -> Decoded:
        raise AssertionError("a region model is not asked for a line")


def test_the_service_asks_in_sweeps_format() -> None:
    service, model = NextEdits(), SweepModel()
    service.changed("file:///point.py", BEFORE, [Splice(ADDED, ADDED, ", z")])
    snapshot = Snapshot("file:///point.py", 2, TEXT, "python")
    ask = ModelAsk(model, 0.7, tier="team", region=model, region_format="sweep")
    issued = asyncio.run(service.predict(snapshot, ask, CURSOR_AT))
    assert issued is not None and issued[1].kind == "region"
    assert applied(TEXT, issued[1].edits) == WITH_Z
    prompt, until = model.asked[0]
    assert prompt.endswith("<|file_sep|>updated/point.py\n") and until == ("<|file_sep|>", "</s>")
