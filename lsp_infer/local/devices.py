"""What this llama.cpp build computes on (CPU, CUDA, Metal, Vulkan, ROCm …) and how many of a
model's layers go to a GPU (``model.gpuLayers``)."""

from __future__ import annotations

import ctypes
import logging
import os
from dataclasses import dataclass
from typing import Literal

log = logging.getLogger(__name__)

Kind = Literal["cpu", "gpu", "accelerator", "integrated gpu"]
# ggml_backend_dev_type, in ggml-backend.h's order.
_KINDS: tuple[Kind, ...] = ("cpu", "gpu", "integrated gpu", "accelerator")


@dataclass(frozen=True)
class Device:
    name: str  # "CPU", "CUDA0", "Metal", "Vulkan0" …
    description: str
    kind: Kind


def describe_devices() -> tuple[Device, ...]:
    """The devices ggml registered in this build (from libggml's device registry; llama-cpp-
    python has no binding for it). Empty when the library cannot be asked."""
    try:
        import llama_cpp

        folder = os.path.dirname(llama_cpp.llama_cpp._lib._name)
        names = ("libggml.so", "libggml.dylib", "ggml.dll")
        library = next(p for n in names if os.path.exists(p := os.path.join(folder, n)))
        ggml = ctypes.CDLL(library)
        ggml.ggml_backend_dev_count.restype = ctypes.c_size_t
        ggml.ggml_backend_dev_get.argtypes = [ctypes.c_size_t]
        ggml.ggml_backend_dev_get.restype = ctypes.c_void_p
        for function in (ggml.ggml_backend_dev_name, ggml.ggml_backend_dev_description):
            function.argtypes = [ctypes.c_void_p]
            function.restype = ctypes.c_char_p
        ggml.ggml_backend_dev_type.argtypes = [ctypes.c_void_p]
        ggml.ggml_backend_dev_type.restype = ctypes.c_int
        devices = []
        for index in range(ggml.ggml_backend_dev_count()):
            device = ggml.ggml_backend_dev_get(index)
            kind = ggml.ggml_backend_dev_type(device)
            devices.append(
                Device(
                    (ggml.ggml_backend_dev_name(device) or b"?").decode(),
                    (ggml.ggml_backend_dev_description(device) or b"").decode(),
                    _KINDS[kind] if 0 <= kind < len(_KINDS) else "accelerator",
                )
            )
        return tuple(devices)
    except (OSError, AttributeError, ImportError, StopIteration) as exc:
        log.debug("could not list llama.cpp's devices: %s", exc)
        return ()


def gpu_layers_for(setting: str, offload_supported: bool) -> tuple[int, str | None]:
    """``n_gpu_layers`` for llama.cpp from the ``model.gpuLayers`` setting ("auto" or a number),
    and a warning for the user when the setting asks for what this build cannot do.

    auto: every layer (-1) where the build can offload, else none. A number on a build
    without GPU support: none, and the warning says how to get a GPU build."""
    if setting == "auto":
        return (-1 if offload_supported else 0), None
    layers = int(setting)
    if layers > 0 and not offload_supported:
        return 0, (
            f"model.gpuLayers is {layers}, but this llama-cpp-python was built without GPU "
            "support, so the model runs on the CPU. Reinstall it with CMAKE_ARGS for your GPU "
            '(docs/performance.md, "GPU offload"); `lsp-infer doctor` tells what the build has.'
        )
    return layers, None
