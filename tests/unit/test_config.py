"""Settings: camelCase in, validation per field, environment overrides."""

from __future__ import annotations

from typing import Any

import pytest

from lsp_infer.config import Settings, camel, load_settings, snake, to_wire


def test_defaults_when_nothing_is_sent() -> None:
    settings, problems = load_settings(None)
    assert settings == Settings()
    assert problems == []


def test_camel_case_keys() -> None:
    settings, problems = load_settings(
        {
            "model": {"nCtx": 2048, "nThreads": 1, "fimTemplate": "starcoder"},
            "completion": {"maxTokens": 32, "maxLines": 2, "enabled": False},
        }
    )
    assert problems == []
    assert settings.model.n_ctx == 2048 and settings.model.n_threads == 1
    assert settings.model.fim_template == "starcoder"
    assert settings.completion.max_tokens == 32 and settings.completion.enabled is False


def test_section_wrapper_is_accepted() -> None:
    settings, problems = load_settings({"lspInfer": {"completion": {"maxTokens": 9}}})
    assert problems == [] and settings.completion.max_tokens == 9


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ({"completion": {"maxTokens": "lots"}}, "completion.maxTokens: expected a whole number"),
        ({"completion": {"maxTokens": 0}}, "completion.maxTokens: must be between 1 and 1024"),
        ({"completion": {"maxTokens": True}}, "completion.maxTokens: expected a whole number"),
        ({"completion": {"enabled": "maybe"}}, "completion.enabled: expected true or false"),
        ({"model": {"fimTemplate": "gpt"}}, "model.fimTemplate: must be one of"),
        ({"model": {"nCtx": 1.5}}, "model.nCtx: expected a whole number"),
        ({"model": {"path": 42}}, "model.path: expected a string"),
        ({"model": "big"}, "model: expected an object"),
        ({"colour": "blue"}, "colour: unknown setting"),
        ({"completion": {"maxTokenz": 3}}, "completion.maxTokenz: unknown setting"),
        ("not an object", "settings: expected an object"),
    ],
)
def test_bad_values_are_reported_and_defaulted(raw: Any, problem: str) -> None:
    settings, problems = load_settings(raw)
    assert len(problems) == 1 and problems[0].startswith(problem), problems
    assert settings.completion.max_tokens == Settings().completion.max_tokens


def test_one_bad_value_keeps_the_good_ones() -> None:
    settings, problems = load_settings({"completion": {"maxTokens": -5, "maxLines": 3}})
    assert len(problems) == 1
    assert settings.completion.max_lines == 3


def test_environment_overrides_client_settings() -> None:
    env = {
        "LSP_INFER_MODEL": "/models/x.gguf",
        "LSP_INFER_THREADS": "3",
        "LSP_INFER_MAX_TOKENS": "12",
    }
    settings, problems = load_settings({"model": {"path": "/other.gguf"}}, env)
    assert problems == []
    assert settings.model.path == "/models/x.gguf"
    assert settings.model.n_threads == 3
    assert settings.completion.max_tokens == 12


def test_bad_environment_value_is_reported() -> None:
    _, problems = load_settings(None, {"LSP_INFER_THREADS": "many"})
    assert problems and problems[0].startswith("model.nThreads")


def test_wire_round_trip() -> None:
    settings, _ = load_settings({"completion": {"maxLines": 4}})
    again, problems = load_settings(to_wire(settings))
    assert problems == [] and again == settings


@pytest.mark.parametrize(
    ("snake_name", "camel_name"), [("n_ctx", "nCtx"), ("max_tokens", "maxTokens"), ("path", "path")]
)
def test_case_conversion(snake_name: str, camel_name: str) -> None:
    assert camel(snake_name) == camel_name
    assert snake(camel_name) == snake_name
