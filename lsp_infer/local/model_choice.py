"""model.name "auto": which embedded model this machine runs, measured once and remembered.

The 1.5B gets more first lines right than the 0.5B, and while typing (a keystroke evaluates a
few tokens and decodes a line) it is only a little slower; where a whole window is evaluated
(a file just opened, an invoked suggestion) it is 2.3x slower a token on a CPU, with a window
twice as large (its profile). So it is chosen where
it is installed and this machine evaluates its prompts fast enough: measured on its warm-up
prompt the first time it loads, and remembered for this machine (the CPU, the threads, the GPU
setting, the llama.cpp version) in the model cache. `lsp-infer doctor` says which and why;
model.name names one outright.
"""

from __future__ import annotations

import json
import logging
import os
import platform
from dataclasses import dataclass
from pathlib import Path

from lsp_infer.models import DEFAULT_MODEL, LARGER_MODEL, EmbeddedModel, cache_dir

log = logging.getLogger(__name__)

# Prompt tokens a second, measured on the 1.5B's warm-up prompt, from which "auto" takes it.
# At this speed its whole window (1024 tokens: its profile) takes about 2.5 s to evaluate, what
# the 0.5B's 512 take on two cores, where the 1.5B's go at about 90 a second and a file just
# opened or an invoked suggestion would wait 4-5x as long (BENCHMARKS.md, "Per model").
LARGER_MIN_PROMPT_SPEED = 400.0


@dataclass(frozen=True)
class Choice:
    model: EmbeddedModel
    why: str  # in words, for doctor, the stats and the log


def choice_path() -> Path:
    """Where choices are remembered: the model cache, or LSP_INFER_MODEL_CHOICE_FILE."""
    return Path(os.environ.get("LSP_INFER_MODEL_CHOICE_FILE") or cache_dir() / "model-choice.json")


def machine_key(threads: int, gpu_layers: str, llama_version: str) -> str:
    """What the measured speed depends on: a change of any of these measures again."""
    return f"{_cpu_name()} | {threads} threads | gpuLayers {gpu_layers} | llama.cpp {llama_version}"


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def remembered(key: str) -> Choice | None:
    """The choice measured earlier on this machine, or None."""
    try:
        stored = json.loads(choice_path().read_text())
        entry = stored[key]
        model = {m.name: m for m in (DEFAULT_MODEL, LARGER_MODEL)}[entry["model"]]
        return Choice(model, str(entry["why"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def remember(key: str, choice: Choice) -> None:
    """Record the choice for this machine (an unwritable cache only costs a measurement)."""
    path = choice_path()
    try:
        stored = json.loads(path.read_text()) if path.is_file() else {}
        if not isinstance(stored, dict):
            stored = {}
    except (OSError, ValueError):
        stored = {}
    stored[key] = {"model": choice.model.name, "why": choice.why}
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial.write_text(json.dumps(stored, indent=1))
        os.replace(partial, path)
    except OSError as exc:
        log.warning("could not remember the model choice in %s: %s", path, exc.strerror)
        partial.unlink(missing_ok=True)


def judge_speed(prompt_speed: float | None) -> Choice:
    """The choice once the 1.5B's prompt speed was measured here."""
    speed = prompt_speed or 0.0
    if speed >= LARGER_MIN_PROMPT_SPEED:
        return Choice(
            LARGER_MODEL,
            f"model.name auto: {LARGER_MODEL.name}, measured here at {speed:.0f} prompt "
            f"tokens/s (at least {LARGER_MIN_PROMPT_SPEED:.0f})",
        )
    return Choice(
        DEFAULT_MODEL,
        f"model.name auto: {DEFAULT_MODEL.name}; {LARGER_MODEL.name} is installed but measured "
        f"here at {speed:.0f} prompt tokens/s (it needs {LARGER_MIN_PROMPT_SPEED:.0f}: a file "
        f"just opened would wait several times longer); set model.name to {LARGER_MODEL.name} "
        "to use it anyway",
    )


NOT_INSTALLED = Choice(
    DEFAULT_MODEL,
    f"model.name auto: {DEFAULT_MODEL.name} ({LARGER_MODEL.name} is not installed: "
    f"{LARGER_MODEL.install_hint})",
)
