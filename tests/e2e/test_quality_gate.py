"""The quality gate: the server at its defaults must not suggest worse than the model can.

Every latency trade of the keystroke path (a cold start's smaller window, a decoding
deadline, a confidence threshold) can cost quality unnoticed: on 2026-12-03 a file opened and
a suggestion invoked at once was answered from the cold start's window, below a plain prompt
on the same model, and no test saw it. Here the real server, over stdio with a real LSP
client, answers a fixed set of holes cut from the standard library (bench/holes.py: lines
whose answer depends on their function's signature far above, and lines anywhere in a
function) as a file opened and a suggestion invoked at once: once at the defaults, once as
the model unhurried and unfiltered (the whole window always, a 20 s deadline, no confidence
threshold). The defaults fail the gate when their exact match falls more than one hole
below that, or below a plain prompt on the same model (the model card's, on the same window:
a server that subtracts from what the model can do is a defect). Each embedded model is held
to it, with its own profile (core/profiles.py). The same holes asked as typing asks in a file
just opened (a cold start), then resting as the plugins do (lspInfer/suggestionReady: the
whole window's suggestion offered again), are held to the same bounds: what is on screen after
the rest. bench/paths.py measures the same on more holes and more paths (bench/HISTORY.md,
"Quality along the server's paths", "The whole window's suggestion offered again").
"""

from __future__ import annotations

import logging
import statistics
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

from holes import Hole, score, suites  # noqa: E402
from paths import run_config  # noqa: E402

from lsp_infer.models import embedded_model, ensure_embedded, parts_installed  # noqa: E402

pytestmark = pytest.mark.model
log = logging.getLogger(__name__)

# Per embedded model, the holes of each suite (one hole is 100/total points). The 1.5B takes
# 2.3x as long per hole on two cores: a smaller sample keeps the gate near ten minutes.
HOLES = {
    "qwen2.5-coder-0.5b": {"header": 12, "local": 8},
    "qwen2.5-coder-1.5b": {"header": 8, "local": 6},
}
# One hole of slack (5 points of the 0.5B's 20 holes, 7.1 of the 1.5B's 14): the deadline
# (completion.timeoutMs) may cut a long first line sooner on a slower machine. Calibrated on
# 2026-12-03 (2 cores, 85 prompt tokens/s): defaults 15.0 %, unhurried 15.0 %, in 6 minutes
# 41 s (bench/HISTORY.md, "The quality gate").
HOLES_OF_SLACK = 1
UNHURRIED = {
    "completion": {"coldStartMs": 0, "timeoutMs": 20000, "minConfidence": 0,
                   "coldStartConfidence": 0},
}  # fmt: skip


def exact_match(by_suite: dict[str, list[tuple[Hole, Any]]], rested: bool = False) -> float:
    """Exact match of the first line over every hole; ``rested``: of what is on screen after
    the rest that follows (bench/paths.py, the opened path)."""
    scored = [(hole, found.rested if rested else found) for pairs in by_suite.values()
              for hole, found in pairs]  # fmt: skip
    hits = [score(found.suggestion, hole.expected)[0] for hole, found in scored]
    return 100 * sum(hits) / len(hits)


def p50(by_suite: dict[str, list[tuple[Hole, Any]]], rested: bool = False) -> float:
    """The median seconds to the scored answer (``rested``: to what is on screen after it)."""
    return statistics.median((found.rested if rested else found).seconds
                             for pairs in by_suite.values() for _hole, found in pairs)  # fmt: skip


def plain_match(chosen: dict[str, list[Hole]], model: str) -> float:
    """Exact match of a plain prompt on the same model and holes (bench/quality.py's plain:
    the model card's PSM prompt of the same window, llama-cpp-python's own completion)."""
    from quality import run_plain

    path = str(ensure_embedded(embedded_model(model)))
    results = run_plain(chosen, 512, path)
    records = [r for result in results.values() for r in result["records"]]
    return 100 * sum(r["hit"] for r in records) / len(records)


@pytest.mark.timeout(1500)
@pytest.mark.parametrize("model", list(HOLES))
async def test_the_defaults_suggest_within_a_few_points_of_the_unhurried_model(
    model: str,
) -> None:
    if not parts_installed(embedded_model(model)):
        pytest.skip(f"{model} is not installed (make test installs it)")
    named = {"model": {"name": model}}
    chosen = {name: suites([name], count, seed=7)[name] for name, count in HOLES[model].items()}
    at_defaults = await run_config(named, ["invoked", "opened"], chosen)
    defaults = exact_match(at_defaults["invoked"])
    rested = exact_match(at_defaults["opened"], rested=True)
    unhurried_options = {**UNHURRIED, **named}
    unhurried = exact_match((await run_config(unhurried_options, ["invoked"], chosen))["invoked"])
    plain = plain_match(chosen, model)
    figures = (f"quality gate, {model}: defaults {defaults:.1f} % invoked, {rested:.1f} % "
               f"opened and rested; unhurried {unhurried:.1f} %; plain prompt {plain:.1f} % "
               f"exact match; p50 s: invoked {p50(at_defaults['invoked']):.1f}, opened "
               f"{p50(at_defaults['opened']):.1f}, rested "
               f"{p50(at_defaults['opened'], rested=True):.1f}")  # fmt: skip
    log.warning(figures)
    # Kept for BENCHMARKS.md: pytest shows a passing test's log only when asked.
    report = ROOT / "bench" / "results" / "quality-gate.log"
    report.parent.mkdir(parents=True, exist_ok=True)
    with report.open("a") as out:
        out.write(f"{figures}\n")
    # 3 holes when calibrated: fewer than 2 right means the prompt or the model broke.
    assert unhurried >= 10.0, f"the unhurried model scored {unhurried:.1f} %: the prompt broke"
    slack = 100 * HOLES_OF_SLACK / sum(HOLES[model].values())
    for path, figure in (("invoked", defaults), ("opened and rested", rested)):
        # Compared to a millionth of a point: 3/14 and 4/14 - 1/14 differ in the last bit.
        assert figure >= unhurried - slack - 1e-6, (
            f"{model}: the defaults' exact match {path} ({figure:.1f} %) fell more than "
            f"{slack:.1f} points below the unhurried model's ({unhurried:.1f} %) on the same "
            "holes"
        )
        # The server must add to the model, never subtract: at least a plain prompt's.
        assert figure >= plain - 1e-6, (
            f"{model}: the defaults' exact match {path} ({figure:.1f} %) is below a plain "
            f"prompt's on the same model ({plain:.1f} %)"
        )
