"""Next edits by analogy, the pure parts: which line is asked about, the prompt, what is made
of the model's answer, and the service asking a model (a scripted one: the real model's
answers are measured in bench/next_edit.py and tested over stdio in tests/e2e)."""

from __future__ import annotations

import asyncio

import pytest

from lsp_infer.core.backend import BackendUnavailable, Decoded
from lsp_infer.core.cancel import CancelReason, CancelToken
from lsp_infer.documents import Snapshot, Splice
from lsp_infer.next_edit.analogy import (
    Analogy,
    analogy_for,
    analogy_prediction,
    analogy_prompt,
    line_confidence,
)
from lsp_infer.next_edit.history import EditHistory
from lsp_infer.next_edit.service import ModelAsk, NextEdits
from lsp_infer.team.http_client import TeamAnswer
from lsp_infer.team.next_edit_model import decoded_line

HASHES = (
    "def md5(x):\n"
    "    return hashlib.md5(x).hexdigest()\n"
    "\n"
    "def sha256(x):\n"
    "    return hashlib.sha256(x).hexdigest()\n"
)
FIX = ", usedforsecurity=False"


def edited(source: str, splice: Splice) -> tuple[str, EditHistory]:
    history = EditHistory()
    history.record(source, splice)
    return source[: splice.start] + splice.new + source[splice.end :], history


def md5_fixed() -> tuple[str, EditHistory]:
    at = HASHES.index("(x).hex")
    return edited(HASHES, Splice(at + 2, at + 2, FIX))


def answer_of(line: str, chance: float = 0.95) -> tuple[str, tuple[tuple[int, float], ...]]:
    """A model's answer: the line and its newline, one token a character."""
    text = line + "\n"
    return text, tuple((i + 1, chance) for i in range(len(text)))


def test_the_likest_line_near_the_edit_is_asked_about() -> None:
    text, history = md5_fixed()
    analogy = analogy_for(text, history.edits[-1])
    assert analogy == Analogy(
        "    return hashlib.md5(x).hexdigest()",
        f"    return hashlib.md5(x{FIX}).hexdigest()",
        4,
        "    return hashlib.sha256(x).hexdigest()",
    )
    prompt = analogy_prompt("hashes.py", analogy)
    assert prompt.endswith("@@ @@\n-    return hashlib.sha256(x).hexdigest()\n+")
    assert f"+    return hashlib.md5(x{FIX}).hexdigest()\n" in prompt


@pytest.mark.parametrize(
    ("source", "splice"),
    [
        # Typed at the end of a line: new code, nothing to make by analogy.
        ("x = compute(a)\ny = compute(b)\n", Splice(14, 14, "  # both")),
        # No line like it nearby.
        ("x = compute(a)\nreturn nothing_alike\n", Splice(12, 13, "alpha")),
        # Lines joined or added: not a change to one line.
        ("x = compute(a)\ny = compute(b)\n", Splice(14, 15, "")),
        # Too short to be alike by more than chance.
        ("f(a)\nf(b)\n", Splice(2, 3, "c")),
        # A long paste into a line: too long a question for a pause.
        ("x = compute(a)\ny = compute(b)\n", Splice(12, 13, "a" * 300)),
    ],
)
def test_nothing_is_asked(source: str, splice: Splice) -> None:
    text, history = edited(source, splice)
    assert analogy_for(text, history.edits[-1]) is None


def test_a_sure_changed_line_is_the_smallest_edit_and_keeps_its_indentation() -> None:
    text, history = md5_fixed()
    analogy = analogy_for(text, history.edits[-1])
    assert analogy is not None
    answer, probs = answer_of(f"  return hashlib.sha256(x{FIX}).hexdigest()")
    prediction = analogy_prediction(text, analogy, answer, probs, 0.7, syntax="python")
    assert prediction is not None and prediction.kind == "analogy"
    (edit,) = prediction.edits
    assert text[: edit.start] + edit.new + text[edit.end :] == HASHES.replace("(x).", f"(x{FIX}).")
    assert edit.new == FIX and prediction.label == "a like change at line 5"


def test_unsure_unchanged_unfinished_or_unparsable_answers_are_not_shown() -> None:
    text, history = md5_fixed()
    analogy = analogy_for(text, history.edits[-1])
    assert analogy is not None
    sure = f"return hashlib.sha256(x{FIX}).hexdigest()"
    answer, probs = answer_of(sure)
    shaky = (*probs[:3], (probs[3][0], 0.4), *probs[4:])  # one token below the threshold
    assert analogy_prediction(text, analogy, answer, shaky, 0.7, syntax="python") is None
    assert analogy_prediction(text, analogy, answer, shaky, 0.3, syntax="python") is not None
    # The line's end counts: unsure the line stops there, it is not shown.
    ending = (*probs[:-1], (probs[-1][0], 0.2))
    assert line_confidence(answer, ending) == 0.2
    assert analogy_prediction(text, analogy, answer, ending, 0.7, syntax="python") is None
    same, same_probs = answer_of("return hashlib.sha256(x).hexdigest()")
    assert analogy_prediction(text, analogy, same, same_probs, 0.7, syntax="python") is None
    assert analogy_prediction(text, analogy, sure, probs[:-1], 0.7, syntax="python") is None
    broken, broken_probs = answer_of(f"return hashlib.sha256(x{FIX}.hexdigest()")
    assert analogy_prediction(text, analogy, broken, broken_probs, 0.7, syntax="python") is None
    # Where no parser tells (another language), the same answer is shown.
    assert analogy_prediction(text, analogy, broken, broken_probs, 0.7, syntax=None) is not None


class ScriptedModel:
    """Answers every prompt with one line, or waits until stopped."""

    def __init__(self, line: str | None) -> None:
        self.line = line
        self.prompts: list[str] = []

    async def continue_line(self, prompt: str, seconds: float, cancel: CancelToken) -> Decoded:
        self.prompts.append(prompt)
        while self.line is None:
            await asyncio.sleep(0.001)
            cancel.raise_if_cancelled()
        text, probs = answer_of(self.line)
        return Decoded(text, "stopped", probs)


def test_the_service_asks_the_model_only_where_the_rules_have_nothing() -> None:
    service, uri = NextEdits(), "file:///hashes.py"
    at = HASHES.index("(x).hex") + 2
    service.changed(uri, HASHES, [Splice(at, at, FIX)])
    text = HASHES[:at] + FIX + HASHES[at:]
    model = ScriptedModel(f"    return hashlib.sha256(x{FIX}).hexdigest()")
    issued = asyncio.run(service.predict(Snapshot(uri, 2, text, "python"), ModelAsk(model, 0.7)))
    assert issued is not None and issued[1].kind == "analogy"
    assert len(model.prompts) == 1 and model.prompts[0].startswith("--- a/hashes.py\n")
    # A rename the rules carry: the model is not asked.
    service.changed("file:///r.py", "def f(wdth):\n    return wdth\n", [Splice(6, 10, "width")])
    renamed = Snapshot("file:///r.py", 2, "def f(width):\n    return wdth\n", "python")
    issued = asyncio.run(service.predict(renamed, ModelAsk(model, 0.7)))
    assert issued is not None and issued[1].kind == "rename" and len(model.prompts) == 1
    stats = service.stats()
    assert stats["model"]["asked"] == 1 and stats["byKind"]["analogy"]["predicted"] == 1


def test_a_name_changed_to_another_is_never_asked_of_the_model() -> None:
    """The rename rule refused it (another variable meant): the model must not carry the
    change to the line like it, where it would be just as wrong."""
    source = "def f(a, b):\n    print(a, 1)\n    print(a, 2)\n"
    at = source.index("a, 1")
    service, uri = NextEdits(), "file:///f.py"
    service.changed(uri, source, [Splice(at, at + 1, "b")])
    text = source[:at] + "b" + source[at + 1 :]
    model = ScriptedModel("    print(b, 2)")
    snapshot = Snapshot(uri, 2, text, "python")
    assert asyncio.run(service.predict(snapshot, ModelAsk(model, 0.7))) is None
    assert model.prompts == [] and service.stats()["model"]["asked"] == 0


def test_a_keystroke_stops_the_model_and_the_answer_is_empty() -> None:
    service, uri = NextEdits(), "file:///hashes.py"
    at = HASHES.index("(x).hex") + 2
    service.changed(uri, HASHES, [Splice(at, at, FIX)])
    text = HASHES[:at] + FIX + HASHES[at:]
    model = ScriptedModel(None)  # still working when the user types on

    async def typed_on() -> object:
        asking = asyncio.ensure_future(
            service.predict(Snapshot(uri, 2, text, "python"), ModelAsk(model, 0.7))
        )
        while not model.prompts:
            await asyncio.sleep(0.001)
        service.stop(uri, CancelReason.DOCUMENT_CHANGED)
        return await asking

    assert asyncio.run(typed_on()) is None
    assert service.stats()["model"]["stopped"] == 1


class Unavailable:
    """A model that cannot answer (the team's server down)."""

    def __init__(self) -> None:
        self.asked = 0

    async def continue_line(self, prompt: str, seconds: float, cancel: CancelToken) -> Decoded:
        self.asked += 1
        raise BackendUnavailable("the team server is unreachable")


def test_the_local_model_answers_where_the_team_cannot() -> None:
    service, uri = NextEdits(), "file:///hashes.py"
    at = HASHES.index("(x).hex") + 2
    service.changed(uri, HASHES, [Splice(at, at, FIX)])
    text = HASHES[:at] + FIX + HASHES[at:]
    team, local = Unavailable(), ScriptedModel(f"    return hashlib.sha256(x{FIX}).hexdigest()")
    ask = ModelAsk(team, 0.7, tier="team", fallback=ModelAsk(local, 0.7))
    issued = asyncio.run(service.predict(Snapshot(uri, 2, text, "python"), ask))
    assert issued is not None and issued[1].kind == "analogy"
    assert team.asked == 1 and len(local.prompts) == 1
    counts = service.stats()["model"]
    assert counts["asked"] == 2 and counts["team"] == 1 and counts["unavailable"] == 1
    # Without a fallback: no prediction, and nothing else goes wrong.
    alone = ModelAsk(Unavailable(), 0.7, tier="team")
    assert asyncio.run(service.predict(Snapshot(uri, 2, text, "python"), alone)) is None


@pytest.mark.parametrize(
    ("text", "finish", "logprobs", "expected_text", "reason", "probs"),
    [
        # The line and the token that ends it, each token's end and probability.
        ("x = 1\n", "until", [("x", 0.0), (" = 1", -0.1), ("\n", -0.2)], "x = 1\n",
         "stopped", [(1, 1.0), (5, 0.905), (6, 0.819)]),
        # The server went past the newline before the stream closed: cut there.
        ("x\ny", "until", [("x", 0.0), ("\ny", -0.1)], "x\n", "stopped", [(1, 1.0), (2, 0.905)]),
        # The model ended its output: a whole line without a newline token.
        ("x = 1", "stop", [("x", 0.0), (" = 1", -0.1)], "x = 1", "end", [(1, 1.0), (5, 0.905)]),
        # Cut by max_tokens: no whole line (the gate refuses it).
        ("x = (", "length", [("x", 0.0), (" = (", 0.0)], "x = (", "max_tokens",
         [(1, 1.0), (5, 1.0)]),
        # A token without a log-probability: nothing from it on is vouched for.
        ("x = 1\n", "until", [("x", 0.0), (" = 1", None), ("\n", 0.0)], "x = 1\n", "stopped",
         [(1, 1.0)]),
        # No log-probabilities at all (a server that sends none): no probabilities.
        ("x = 1\n", "until", [], "x = 1\n", "stopped", []),
    ],
)  # fmt: skip
def test_a_team_answer_reads_as_a_local_one(
    text: str, finish: str, logprobs: list[tuple[str, float | None]], expected_text: str,
    reason: str, probs: list[tuple[int, float]],
) -> None:  # fmt: skip
    decoded = decoded_line(TeamAnswer(text, finish, token_logprobs=tuple(logprobs)))
    assert decoded.text == expected_text and decoded.stop_reason == reason
    assert [end for end, _ in decoded.probs] == [end for end, _ in probs]
    assert [round(p, 3) for _, p in decoded.probs] == [p for _, p in probs]
