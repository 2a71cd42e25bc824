"""model.requantize with the real embedded model: the Q4_0 copy is derived once from the
verified file, trusted while its stamp matches and derived again when the file or llama.cpp
changed; the server answers from it and says which file it loaded; a custom model.path is
loaded as it is, with one warning."""

from __future__ import annotations

import json
from pathlib import Path

import llama_cpp
import pytest
from pytest_lsp import LanguageClient

from lsp_infer import models
from lsp_infer.config import ModelSettings
from lsp_infer.local.llama_cpp import LlamaCppBackend
from tests.e2e.conftest import initialize, inline_at, lsp_infer, open_document, raw_request

# These tests are about the 0.5B's copy: named, not left to model.name "auto"'s choice.
SMALL = models.DEFAULT_MODEL.name


def test_a_copy_that_cannot_be_written_warns_and_the_model_runs_as_shipped(
    monkeypatch: pytest.MonkeyPatch, backend: LlamaCppBackend
) -> None:
    monkeypatch.setattr(models, "requantized_path", lambda *_: Path("/proc/no/m.q4_0.gguf"))
    with pytest.raises(models.ModelError, match="check that /proc/no is writable and has room"):
        models.ensure_requantized("q4_0")
    backend.lane.run_blocking(backend.load_blocking, ModelSettings(name=SMALL, requantize="q4_0"))
    assert backend.state == "ready", backend.error
    assert backend.loaded is not None
    assert backend.loaded.resolved.path == models.default_model_path()
    assert len(backend.warnings) == 1 and "/proc/no is writable" in backend.warnings[0]
    assert backend.warnings[0].endswith("the model runs as shipped")


@pytest.fixture
def derived_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The Q4_0 copy goes to a scratch folder, not the user's model cache."""
    target = tmp_path / "model.q4_0.gguf"
    monkeypatch.setattr(models, "requantized_path", lambda *_: target)
    return target


def stamp_of(path: Path) -> dict[str, object]:
    return dict(json.loads(path.with_name(path.name + ".verified").read_text()))


def test_derived_once_trusted_then_derived_again_when_changed(derived_here: Path) -> None:
    path = models.ensure_requantized("q4_0")
    assert path == derived_here and path.read_bytes()[:4] == b"GGUF"
    stamp = stamp_of(path)
    assert stamp["source_sha256"] == models.DEFAULT_MODEL.sha256 and stamp["kind"] == "q4_0"
    assert stamp["sha256"] == models.sha256_of(path)
    assert path.stat().st_size < models.DEFAULT_MODEL.size  # 4.5 bits a weight, not 5.5
    made = path.stat().st_mtime_ns

    assert models.ensure_requantized("q4_0") == path
    assert path.stat().st_mtime_ns == made  # trusted: not derived again

    assert models.verify_requantized("q4_0") == path  # `lsp-infer model verify` re-hashes
    with path.open("ab") as f:  # changed on disk (truncated, edited, replaced)
        f.write(b"junk")
    with pytest.raises(models.ModelError, match="refusing to load it"):
        models.verify_requantized("q4_0")
    models.ensure_requantized("q4_0")
    assert models.sha256_of(path) == stamp["sha256"]  # derived again, the same bytes

    changed = stamp_of(path) | {"llama_cpp": "0.0.1"}  # derived by another llama.cpp
    path.with_name(path.name + ".verified").write_text(json.dumps(changed))
    before = path.stat().st_mtime_ns
    models.ensure_requantized("q4_0")
    assert path.stat().st_mtime_ns != before and stamp_of(path)["llama_cpp"] != "0.0.1"

    with pytest.raises(models.ModelError, match="unknown requantization"):
        models.ensure_requantized("q2_k")
    path.with_name(path.name + ".verified").unlink()
    with pytest.raises(models.ModelError, match="model fetch"):
        models.verify_requantized("q4_0")


def test_the_backend_loads_the_derived_file(derived_here: Path, backend: LlamaCppBackend) -> None:
    backend.lane.run_blocking(backend.load_blocking, ModelSettings(name=SMALL, requantize="q4_0"))
    assert backend.state == "ready", backend.error
    assert backend.loaded is not None and backend.loaded.resolved.path == derived_here
    assert "q4_0" in backend.loaded.resolved.verified_by and backend.warnings == []
    # Read, not mapped: llama.cpp keeps its own repacked copy of Q4_0 weights anyway.
    assert backend._llm.model_params.load_mode == llama_cpp.LLAMA_LOAD_MODE_NONE


def test_a_custom_model_is_loaded_as_it_is_with_one_warning(backend: LlamaCppBackend) -> None:
    custom = models.ensure_default_model()
    settings = ModelSettings(path=str(custom), name=SMALL, requantize="q4_0")
    backend.lane.run_blocking(backend.load_blocking, settings)
    assert backend.state == "ready", backend.error
    assert backend.loaded is not None and backend.loaded.resolved.path == custom
    assert len(backend.warnings) == 1 and "embedded models only" in backend.warnings[0]
    assert backend._llm.model_params.load_mode == llama_cpp.LLAMA_LOAD_MODE_MMAP


async def test_the_server_answers_from_the_requantized_model(client: LanguageClient) -> None:
    # The server process derives into the user's model cache, as it would for a user.
    options = {"model": {"name": SMALL, "requantize": "q4_0"}, "completion": {"precompute": False}}
    await initialize(client, options=options)
    uri = "file:///tmp/lsp-infer-e2e/requantized.py"
    open_document(client, uri, "def add(a, b):\n    return ")
    result = await inline_at(client, uri, 1, 11)
    assert result.items and "a + b" in str(result.items[0].insert_text)
    stats = await raw_request(client, "lspInfer/stats", {})
    assert stats["compute"]["modelFile"] == models.requantized_path("q4_0").name
    assert not [m.message for m in client.messages if "requantize" in m.message]


def test_model_fetch_path_and_verify_name_the_requantized_file() -> None:
    derived = str(models.requantized_path("q4_0"))
    fetch = lsp_infer("model", "fetch", LSP_INFER_REQUANTIZE="q4_0", LSP_INFER_MODEL_NAME=SMALL)
    assert fetch.returncode == 0, fetch.stderr
    assert f"ok: {derived} (model.requantize q4_0" in fetch.stdout
    path = lsp_infer("model", "path", LSP_INFER_REQUANTIZE="q4_0", LSP_INFER_MODEL_NAME=SMALL)
    assert path.stdout.strip() == str(Path(derived).resolve())
    verify = lsp_infer("model", "verify", LSP_INFER_REQUANTIZE="q4_0", LSP_INFER_MODEL_NAME=SMALL)
    assert verify.returncode == 0, verify.stderr
    assert f"ok: {derived} matches the SHA-256 recorded when it was made" in verify.stdout


def test_doctor_names_the_requantized_file_and_says_a_custom_model_is_not() -> None:
    shipped = lsp_infer("doctor")  # on this CPU-only build: the setting is suggested
    assert 'model.requantize "q4_0" evaluates prompts about 1.4x as fast' in shipped.stdout
    derived = lsp_infer("doctor", LSP_INFER_REQUANTIZE="q4_0", LSP_INFER_MODEL_NAME=SMALL)
    assert derived.returncode == 0, derived.stdout
    assert f"{models.requantized_path('q4_0')} (checked: q4_0, derived from" in derived.stdout
    assert "evaluates prompts about 1.4x as fast" not in derived.stdout
    custom = str(models.ensure_default_model())
    as_is = lsp_infer("doctor", LSP_INFER_REQUANTIZE="q4_0", LSP_INFER_MODEL=custom)
    assert as_is.returncode == 0, as_is.stdout
    assert "applies to the embedded models only" in as_is.stdout
    assert f"{custom} (checked: GGUF header only" in as_is.stdout


def test_a_stamp_that_cannot_be_written_is_a_clear_error(
    derived_here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stamp_path = models._stamp_path
    monkeypatch.setattr(
        models, "_stamp_path",
        lambda path: Path("/proc/no/stamp") if path == derived_here else stamp_path(path),
    )  # fmt: skip
    with pytest.raises(models.ModelError, match=r"could not write the q4_0 copy .*\(No such"):
        models.ensure_requantized("q4_0")
