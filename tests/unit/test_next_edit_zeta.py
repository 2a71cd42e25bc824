"""Next edits in Zed's Zeta format (next_edit/zeta.py), the pure parts: the prompt as Zed's
zeta crate writes it, the region read back from an answer, and the gates on what is shown;
and the service asking a region model (a scripted one: no trained next-edit model's weights
can be fetched here)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from lsp_infer.core.backend import BackendUnavailable, Decoded
from lsp_infer.core.cancel import CancelToken
from lsp_infer.documents import Snapshot, Splice
from lsp_infer.next_edit.edits import Prediction, TextEdit
from lsp_infer.next_edit.history import Edit
from lsp_infer.next_edit.service import ModelAsk, NextEdits
from lsp_infer.next_edit.zeta import (
    CURSOR,
    REGION_END,
    REGION_START,
    ZetaQuestion,
    rewritten_region,
    zeta_prediction,
    zeta_question,
)
from lsp_infer.team.http_client import TeamAnswer
from lsp_infer.team.next_edit_model import decoded_text

BEFORE = "class Point:\n    def __init__(self, x, y):\n        self.x = x\n        self.y = y\n"
ADDED = BEFORE.index(", y)") + 3  # ", z" typed after y in the def line
TEXT = BEFORE[:ADDED] + ", z" + BEFORE[ADDED:]
LATEST = Edit(ADDED, "", ", z")
CURSOR_AT = ADDED + 3
WITH_Z = TEXT + "        self.z = z\n"
SURE = ((1, 0.99),)


def answer_for(question: ZetaQuestion, text: str, new_text: str) -> str:
    """The answer a Zeta model gives when it rewrites the region of ``text`` into the same
    region of ``new_text`` (the same text before and after the region)."""
    tail = len(text) - question.region_end
    region = new_text[question.region_start : len(new_text) - tail]
    return f"```file\n{REGION_START}\n{region}\n{REGION_END}\n```"


def test_the_prompt_is_zetas() -> None:
    question = zeta_question("point.py", TEXT, CURSOR_AT, [LATEST])
    excerpt = (
        "```point.py\n<|start_of_file|>\n<|editable_region_start|>\n"
        + TEXT[:CURSOR_AT] + CURSOR + TEXT[CURSOR_AT:]
        + "\n<|editable_region_end|>\n```"
    )  # fmt: skip
    events = (
        'User edited "point.py":\n```diff\n@@ -1,4 +1,4 @@\n class Point:\n'
        "-    def __init__(self, x, y):\n+    def __init__(self, x, y, z):\n"
        "         self.x = x\n         self.y = y\n```"
    )
    assert question.prompt == (
        "### Instruction:\nYou are a code completion assistant and your task is to analyze "
        "user edits and then rewrite an excerpt that the user provides, suggesting the "
        "appropriate edits within the excerpt, taking into account the cursor location.\n\n"
        f"### User Edits:\n\n{events}\n\n### User Excerpt:\n\n{excerpt}\n\n### Response:\n\n"
    )
    assert (question.region_start, question.region_end) == (0, len(TEXT))


def test_a_long_file_gets_a_region_around_the_cursor_and_context_around_that() -> None:
    lines = [f"    value_{n} = compute(value_{n - 1}, {n})" for n in range(400)]
    text = "def f():\n" + "\n".join(lines) + "\n"
    cursor = text.index("value_200 =")
    question = zeta_question("f.py", text, cursor, [])
    region = text[question.region_start : question.region_end]
    # 350 tokens of 3 bytes: about 27 lines of 40 bytes, half above and half below.
    assert "value_190 =" in region and "value_210 =" in region
    assert "value_180 =" not in region and "value_220 =" not in region
    assert "<|start_of_file|>" not in question.prompt  # the context does not reach the top
    above = text[: question.region_start].rsplit("\n", 3)[-3]  # a line just above the region
    assert above in question.prompt and "### User Edits:\n\n\n\n" in question.prompt


def test_only_the_newest_edits_that_fit_are_shown() -> None:
    text = "".join(f"line_{n} = {'x' * 60}\n" for n in range(60))
    edits = [Edit(text.index(f"line_{n} ="), f"row_{n} =", f"line_{n} =") for n in range(60)]
    prompt = zeta_question("m.py", text, 0, edits).prompt
    shown = prompt.count("User edited")
    assert 1 <= shown < 60 and "+line_59 =" in prompt and "+line_0 =" not in prompt


@pytest.mark.parametrize(
    ("answer", "region"),
    [
        (f"```a.py\n{REGION_START}\nx = 1\n{REGION_END}\n```", "x = 1"),
        (f"```a.py\nabove\n{REGION_START}\nx = 1{CURSOR}\ny\n{REGION_END}\nbelow\n```", "x = 1\ny"),
        (f"{REGION_START}\n{REGION_END}", ""),
        ("```a.py\nx = 1\n```", None),  # no markers
        (f"{REGION_START}\nx\n{REGION_START}\ny\n{REGION_END}", None),  # two starts
        (f"{REGION_END}\nx\n{REGION_START}\n", None),  # the end first
        (f"{REGION_START}\nx = 1\n", None),  # cut before the end
    ],
)
def test_the_region_is_read_back_between_one_start_and_one_end(
    answer: str, region: str | None
) -> None:
    assert rewritten_region(answer) == region


def predicted(
    answer_text: str, probabilities: tuple[tuple[int, float], ...] = SURE
) -> Prediction | None:
    question = zeta_question("point.py", TEXT, CURSOR_AT, [LATEST])
    return zeta_prediction(TEXT, question, answer_text, probabilities, 0.7, LATEST, "python")


def test_the_field_added_is_offered_as_the_smallest_edit() -> None:
    question = zeta_question("point.py", TEXT, CURSOR_AT, [LATEST])
    prediction = predicted(answer_for(question, TEXT, WITH_Z))
    assert prediction is not None
    assert prediction.kind == "region"
    assert prediction.edits == (TextEdit(len(TEXT), len(TEXT), "        self.z = z\n"),)
    assert prediction.label == "an edit at line 5"


@pytest.mark.parametrize(
    ("new_text", "probabilities", "why"),
    [
        (WITH_Z, ((5, 0.99), (9, 0.4)), "a token below the threshold"),
        (WITH_Z, (), "no log-probabilities"),
        (TEXT, SURE, "the region unchanged"),
        (BEFORE + "        self.z = z\n", SURE, "the user's edit taken back"),
        (TEXT + "        self.z = (z\n", SURE, "the file no longer parses"),
        (TEXT + f"        self.z = '{'z' * 400}'\n", SURE, "more than a small change"),
    ],
)
def test_what_is_not_shown(
    new_text: str, probabilities: tuple[tuple[int, float], ...], why: str
) -> None:
    question = zeta_question("point.py", TEXT, CURSOR_AT, [LATEST])
    assert predicted(answer_for(question, TEXT, new_text), probabilities) is None, why


class ScriptedRegionModel:
    """Writes the region of TEXT out again as WITH_Z's, or is unavailable."""

    def __init__(self, available: bool = True) -> None:
        self.available = available
        self.prompts: list[str] = []

    async def rewrite(
        self,
        prompt: str,
        until: Sequence[str],
        max_tokens: int,
        seconds: float,
        cancel: CancelToken,
    ) -> Decoded:
        assert until == (REGION_END,)
        self.prompts.append(prompt)
        if not self.available:
            raise BackendUnavailable("the team's server is down")
        question = zeta_question("point.py", TEXT, CURSOR_AT, [LATEST])
        answer = answer_for(question, TEXT, WITH_Z)
        return Decoded(answer, "end", ((len(answer), 0.95),))

    async def continue_line(self, prompt: str, seconds: float, cancel: CancelToken) -> Decoded:
        raise AssertionError("a region model is not asked for a line")


def service_with_the_edit() -> NextEdits:
    service = NextEdits()
    service.changed("file:///point.py", BEFORE, [Splice(ADDED, ADDED, ", z")])
    history = service.histories.get("file:///point.py")
    assert history is not None and history.edits == [LATEST]
    return service


def test_the_service_asks_the_region_model_at_the_cursor() -> None:
    service, model = service_with_the_edit(), ScriptedRegionModel()
    snapshot = Snapshot("file:///point.py", 2, TEXT, "python")
    ask = ModelAsk(model, 0.7, tier="team", region=model)
    issued = asyncio.run(service.predict(snapshot, ask, CURSOR_AT))
    assert issued is not None and issued[1].kind == "region"
    assert f"z{CURSOR}):" in model.prompts[0]
    counts = service.stats()["model"]
    assert (counts["asked"], counts["team"], counts["unsure"]) == (1, 1, 0), counts


class ScriptedLineModel:
    def __init__(self) -> None:
        self.asked = 0

    async def continue_line(self, prompt: str, seconds: float, cancel: CancelToken) -> Decoded:
        self.asked += 1
        return Decoded("", "end", ())


def test_where_the_team_cannot_answer_the_local_model_is_asked_by_analogy() -> None:
    service, team, local = service_with_the_edit(), ScriptedRegionModel(False), ScriptedLineModel()
    # A line like the edited one, so the local model has a question to answer.
    text = TEXT + "    def move(self, x, y):\n        pass\n"
    snapshot = Snapshot("file:///point.py", 2, text, "python")
    fallback = ModelAsk(local, 0.5)
    ask = ModelAsk(team, 0.7, tier="team", region=team, fallback=fallback)
    assert asyncio.run(service.predict(snapshot, ask, CURSOR_AT)) is None
    assert len(team.prompts) == 1 and local.asked == 1
    counts = service.stats()["model"]
    assert (counts["asked"], counts["team"], counts["unavailable"]) == (2, 1, 1), counts


def test_more_than_a_small_group_of_edits_is_not_shown() -> None:
    text = "".join(f"a{n} = {n}\n\n" for n in range(6))
    question = zeta_question("m.py", text, 0, [Edit(0, "b0", "a0")])
    rewritten = text.replace(" = ", " == 0 or ")  # six lines changed, apart
    answer = answer_for(question, text, rewritten)
    assert zeta_prediction(text, question, answer, SURE, 0.7, Edit(0, "b0", "a0"), None) is None
    fewer = text.replace("a1 = ", "a1 += ").replace("a3 = ", "a3 += ")
    shown = zeta_prediction(text, question, answer_for(question, text, fewer), SURE, 0.7,
                            Edit(0, "b0", "a0"), None)  # fmt: skip
    assert shown is not None and len(shown.edits) == 2


def test_an_edit_deep_in_a_file_is_numbered_as_in_the_file() -> None:
    text = "".join(f"v{n} = {n}\n" for n in range(200))
    at = text.index("v100 = 100")
    edit = Edit(at, "w100", "v100")  # w100 renamed to v100 on line 101
    prompt = zeta_question("m.py", text, at, [edit]).prompt
    hunk = "@@ -98,7 +98,7 @@\n v97 = 97\n v98 = 98\n v99 = 99\n-w100 = 100\n+v100 = 100\n"
    assert hunk + " v101 = 101\n v102 = 102\n v103 = 103\n```" in prompt


@pytest.mark.parametrize(
    ("text", "finish", "logprobs", "reason", "probs"),
    [
        ("ab<|end|>", "until", [("ab", -0.1), ("<|end|>", 0.0)], "end", ((2, 0.905), (9, 1.0))),
        ("ab", "length", [("a", 0.0), ("b", None)], "max_tokens", ((1, 1.0),)),
    ],
)
def test_a_team_answer_as_a_region_models(
    text: str, finish: str, logprobs: list, reason: str, probs: tuple
) -> None:
    decoded = decoded_text(TeamAnswer(text, finish, token_logprobs=tuple(logprobs)))
    assert decoded.text == text and decoded.stop_reason == reason
    assert [(end, round(p, 3)) for end, p in decoded.probs] == list(probs)
