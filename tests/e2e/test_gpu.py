"""model.gpuLayers with the real model on this machine's llama.cpp build (no GPU here): the
setting reaches llama.cpp's model parameters, a number asked of a CPU-only build gives one
clear warning and the model runs on the CPU, and `lsp-infer doctor` says so plainly."""

from __future__ import annotations

import os

import pytest
from pytest_lsp import LanguageClient

from lsp_infer.config import ModelSettings
from lsp_infer.local.llama_cpp import LlamaCppBackend
from tests.e2e.conftest import initialize, inline_at, lsp_infer, open_document, raw_request


def load(backend: LlamaCppBackend, gpu_layers: str) -> None:
    backend.lane.run_blocking(backend.load_blocking, ModelSettings(gpu_layers=gpu_layers))
    assert backend.state == "ready", backend.error


def test_the_setting_reaches_llama_cpp(backend: LlamaCppBackend, monkeypatch: pytest.MonkeyPatch):
    import llama_cpp

    assert not llama_cpp.llama_supports_gpu_offload()  # this machine's build
    load(backend, "auto")
    assert backend._llm.model_params.n_gpu_layers == 0 and backend.warnings == []
    assert backend.loaded is not None and backend.loaded.compute == "CPU"
    # A build that can offload (pretended: llama.cpp takes the parameter and, without a GPU
    # device, keeps the layers on the CPU): auto asks for every layer, a number for that many.
    monkeypatch.setattr(llama_cpp, "llama_supports_gpu_offload", lambda: True)
    backend.close()
    load(backend, "auto")
    assert backend._llm.model_params.n_gpu_layers == 0x7FFFFFFF  # llama-cpp-python's "all"
    load(backend, "7")
    assert backend._llm.model_params.n_gpu_layers == 7


def test_gpu_layers_on_a_cpu_build_warn_once_and_run_on_the_cpu(backend: LlamaCppBackend):
    load(backend, "12")
    assert backend._llm.model_params.n_gpu_layers == 0
    assert len(backend.warnings) == 1 and "without GPU support" in backend.warnings[0]


async def test_the_server_warns_once_and_answers_on_the_cpu(client: LanguageClient):
    options = {"model": {"gpuLayers": 12}, "completion": {"precompute": False}}
    await initialize(client, options=options)
    uri = "file:///tmp/lsp-infer-e2e/gpu.py"
    open_document(client, uri, "def add(a, b):\n    return ")
    result = await inline_at(client, uri, 1, 11)
    assert result.items and "a + b" in str(result.items[0].insert_text)
    await inline_at(client, uri, 1, 11)
    warnings = [m.message for m in client.messages if "gpuLayers" in m.message]
    assert len(warnings) == 1 and "runs on the CPU" in warnings[0]
    stats = await raw_request(client, "lspInfer/stats", {})
    assert stats["compute"]["backend"] == "CPU" and stats["compute"]["gpuLayers"] == 0


def test_doctor_says_the_build_has_no_gpu() -> None:
    done = lsp_infer("doctor", LSP_INFER_GPU_LAYERS="4")
    assert "llama.cpp devices: CPU" in done.stdout
    assert "no GPU support: the model runs on the CPU" in done.stdout
    assert "model.gpuLayers is 4, but this build cannot offload" in done.stdout
    # How the threads wait, set by the command itself (server_env passes no OpenMP variables
    # unless the machine running the tests sets them).
    if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
        assert "threads spin 1000 times, then sleep" in done.stdout
    assert done.returncode == 1  # asking for GPU layers here is a problem to fix
