"""What was loaded, and the choices made at load: threads, the FIM template and order."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from lsp_infer.core.profiles import GENERIC, ModelProfile
from lsp_infer.core.prompts import TEMPLATES, FimTemplate, Order, detect_template
from lsp_infer.local.devices import Device
from lsp_infer.models import ModelError, ResolvedModel


def default_threads() -> int:
    try:
        available = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        available = os.cpu_count() or 1
    return max(1, min(available, 8))


@dataclass(frozen=True)
class LoadedModel:
    resolved: ResolvedModel
    name: str
    architecture: str
    template: FimTemplate
    order: Order
    n_ctx: int
    n_threads: int
    load_seconds: float
    devices: tuple[Device, ...] = ()  # what this llama.cpp build computes on
    n_layers: int = 0
    gpu_layers: int = 0  # layers offloaded to a GPU
    # The values measured for this model (core/profiles.py), chosen from its metadata.
    profile: ModelProfile = GENERIC
    # Why this embedded model (model.name "auto": model_choice.py); None when it was named.
    chosen_because: str | None = None

    @property
    def compute(self) -> str:
        """Where the model runs, in a few words (for status, stats and doctor)."""
        gpus = [d.name for d in self.devices if d.kind != "cpu"]
        if self.gpu_layers and gpus:
            layers = min(self.gpu_layers, self.n_layers)
            return f"{', '.join(gpus)}: {layers}/{self.n_layers} layers"
        return "CPU"


def choose_template(
    setting: str, model_name: str, has_special: Callable[[str], bool]
) -> FimTemplate:
    """model.fimTemplate's template, or the one the model's special tokens show ("auto")."""
    if setting != "auto":
        template = TEMPLATES[setting]
        missing = [m for m in template.markers if not has_special(m)]
        if missing:
            raise ModelError(
                f"model.fimTemplate is {setting!r} but the model has no {', '.join(missing)} "
                'token(s); use "auto" or a template this model was trained with'
            )
        return template
    detected = detect_template(model_name, has_special)
    if detected is None:
        raise ModelError(
            f"{model_name} cannot fill in the middle: its vocabulary lacks "
            f"{missing_markers(has_special)}; use a code model trained with FIM (Qwen2.5-Coder, "
            "StarCoder, CodeLlama, DeepSeek-Coder, Codestral, CodeGemma), or set model.fimTemplate"
        )
    return detected


def missing_markers(has_special: Callable[[str], bool]) -> str:
    """What each known FIM template needs that the vocabulary does not have, in words."""
    missing = []
    for template in TEMPLATES.values():
        lacks = [m for m in template.markers if not has_special(m)]
        if lacks:
            missing.append(f"{' '.join(lacks)} ({template.name})")
    return "; ".join(missing)


def choose_order(setting: str, template: FimTemplate) -> Order:
    """model.fimOrder, or the template's own order ("auto")."""
    for order in ("psm", "spm", "spmv"):
        if setting == order:
            return order
    return template.order
