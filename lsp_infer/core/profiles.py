"""Model profiles: what differs between models, as data, chosen from the GGUF's metadata (pure).

A profile holds the values that were measured on one model family and size: the prompt
order, the window, the decoding limits, the confidence thresholds. The completion code reads
the settings a profile filled in and never asks which model it is. A value the user set (in
the client's settings or the environment) wins over the profile's.

Every number carries the command whose figures chose it (BENCHMARKS.md, "Per model"; the
figures themselves are in bench/HISTORY.md, "Model profiles").
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Set
from dataclasses import dataclass

from lsp_infer.config import CompletionSettings, ModelSettings, NextEditSettings
from lsp_infer.core.prompts import Order

# The completion settings a profile fills in when the user left them alone.
COMPLETION_FIELDS = (
    "context_tokens", "suffix_tokens", "max_tokens", "timeout_ms", "cold_start_ms",
    "min_confidence", "cold_start_confidence",
)  # fmt: skip


@dataclass(frozen=True)
class ModelProfile:
    name: str
    # What it is for, in words (doctor, stats): "measured on ...", or why it is a fallback.
    basis: str
    # model.fimOrder when it is "auto"; None: the FIM template's own order.
    fim_order: Order | None = None
    context_tokens: int = 512
    suffix_tokens: int = 128
    max_tokens: int = 64
    timeout_ms: int = 1000
    cold_start_ms: int = 1500
    min_confidence: float = 0.1
    cold_start_confidence: float = 0.3
    # nextEdit.minProbability: how sure the model must be of a like change (next_edit/
    # analogy.py); None: not measured, the model is not asked unless the user sets one.
    next_edit_min_probability: float | None = None
    # False: a model this server has no measurements for (doctor warns).
    measured: bool = True

    def completion(
        self, settings: CompletionSettings, explicit: Set[tuple[str, str]]
    ) -> CompletionSettings:
        """``settings`` with this profile's values where the user did not set one."""
        chosen = {
            name: getattr(self, name)
            for name in COMPLETION_FIELDS
            if ("completion", name) not in explicit
        }
        return dataclasses.replace(settings, **chosen)

    def next_edit_threshold(self, settings: NextEditSettings) -> float | None:
        """How sure the model must be of a like change: the user's nextEdit.minProbability,
        else this profile's; None: the model is not asked (off, or nothing measured)."""
        if not settings.model:
            return None
        return settings.min_probability or self.next_edit_min_probability

    def order(self, settings: ModelSettings) -> str:
        """model.fimOrder as the backend should read it: the profile's order for "auto"."""
        if settings.fim_order == "auto" and self.fim_order is not None:
            return self.fim_order
        return settings.fim_order


# The 0.5B: the values every earlier figure of BENCHMARKS.md was measured with (the spmv order:
# bench/HISTORY.md "Completion quality"; minConfidence 0.1 on 300 held-out holes: "Confidence";
# coldStartConfidence 0.3: "Cold start by structure and confidence").
QWEN_CODER_SMALL = ModelProfile(
    name="qwen2.5-coder-0.5b",
    basis="measured on Qwen2.5-Coder-0.5B (BENCHMARKS.md, 'Per model')",
    fim_order="spmv",
    # Next edits' like changes: the history suite's curve (`python bench/next_edit.py --suite
    # history --model qwen2.5-coder-0.5b`): 15 right of 29 answers at 0, 15 of 21 at 0.7, 12
    # of 16 at 0.8; held out (rich, fastapi), 3 of 4 at 0.7 (bench/HISTORY.md, "Next edits by
    # analogy").
    next_edit_min_probability=0.7,
)
# The 1.5B (bench/HISTORY.md, "Model profiles", 20 + 20 holes of seed 1 and of seed 2):
# - spmv: against PSM through the same engine 25.0 / 40.0 vs 15.0 / 45.0 % (header / local);
#   a window by structure (spmv@512) 20.0 / 40.0: the nearest lines stay;
# - a 1024-token window: 30.0 / 45.0 % against 512's 25.0 / 40.0, for 1.8x the prompt time
#   (`python bench/quality.py --suite header,local --holes 20 --seed 1 --configs spmv
#   --context-tokens 1024 --model ...`); what is evaluated while typing stays a few tokens a key;
# - minConfidence 0.15. Chosen first on seed 1 as 0.2 (right of shown 38.5 -> 57.7 %, every
#   right one kept), which on seed 2, held out, gave 30.8 -> 43.5 % but kept 83 % of the right
#   ones (10 of 12); 0.15 keeps 100 % / 92 % on the two seeds (+13.2 / +15.0 points): chosen
#   on both, so not yet held out (`--configs spmv --context-tokens 1024 --json`, then the
#   curve of the records).
QWEN_CODER_LARGER = ModelProfile(
    name="qwen2.5-coder-1.5b",
    basis="measured on Qwen2.5-Coder-1.5B (BENCHMARKS.md, 'Per model')",
    fim_order="spmv",
    context_tokens=1024,
    min_confidence=0.15,
    # Like changes: 17 right of 30 answers at 0, 14 of 18 at 0.7, 10 of 13 at 0.8 on the
    # history suite; held out, 3 of 4 at 0.7 (`--model qwen2.5-coder-1.5b`).
    next_edit_min_probability=0.7,
)
# Anything else: the template's own order (the model card's), the middle of the road.
GENERIC = ModelProfile(
    name="generic",
    basis="no measurements for this model: the generic profile (the FIM template's own order)",
    measured=False,
)
PROFILES: dict[str, ModelProfile] = {
    p.name: p for p in (QWEN_CODER_SMALL, QWEN_CODER_LARGER, GENERIC)
}


def _billions(metadata: Mapping[str, str]) -> float | None:
    """The model's size in billions of parameters, from general.size_label ("1.5B") or, for
    Qwen2, its embedding width."""
    label = metadata.get("general.size_label", "")
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*[Bb]\s*", label)
    if match:
        return float(match.group(1))
    width = metadata.get("qwen2.embedding_length")
    return {"896": 0.5, "1536": 1.5, "2048": 3.0, "3584": 7.0}.get(width or "")


def profile_for(metadata: Mapping[str, str]) -> ModelProfile:
    """The profile for a model, from its GGUF metadata (general.*, <architecture>.*)."""
    names = " ".join(metadata.get(key, "") for key in ("general.basename", "general.name")).lower()
    qwen_coder = metadata.get("general.architecture") == "qwen2" and bool(
        re.search(r"qwen2\.5[- ]coder", names)
    )
    if not qwen_coder:
        return GENERIC
    size = _billions(metadata)
    if size is None:
        return GENERIC
    # Sizes not measured here take the nearest measured one below or at them: a 7B is
    # closer to the 1.5B than to the 0.5B in what it can use (a larger window, PSM).
    return QWEN_CODER_SMALL if size < 1.0 else QWEN_CODER_LARGER
