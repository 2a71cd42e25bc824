"""``lsp-infer doctor``: plain-language checks of everything the server needs."""

from __future__ import annotations

import asyncio
import os
import platform
import sys
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from typing import TYPE_CHECKING

from lsp_infer import __version__, models
from lsp_infer.config import ENV_OVERRIDES, Settings, TeamSettings, load_settings

if TYPE_CHECKING:
    from lsp_infer.local.llama_cpp import LoadedModel

Say = Callable[[str], None]


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


@dataclass
class Checks:
    """Prints each check's outcome and counts the failures."""

    say: Say
    problems: int = 0

    def ok(self, message: str) -> None:
        self.say(f"  ok    {message}")

    def note(self, message: str) -> None:
        self.say(f"  note  {message}")

    def bad(self, message: str, fix: str) -> None:
        self.problems += 1
        self.say(f"  FAIL  {message}\n        fix: {fix}")

    def section(self, title: str) -> None:
        self.say(f"\n{title}")


def run_doctor(say: Say) -> int:
    checks = Checks(say)
    say(f"lsp-infer {__version__}")
    say(f"  Python {platform.python_version()} at {sys.executable}")
    say(
        f"  pygls {_version('pygls')}, lsprotocol {_version('lsprotocol')}, "
        f"llama-cpp-python {_version('llama-cpp-python')}"
    )
    settings = _check_environment(checks)
    if _check_model(checks, settings):
        _check_team(checks, settings.team)
    return _summary(checks)


def _check_environment(checks: Checks) -> Settings:
    from lsp_infer.local.llama_cpp import default_threads

    checks.section("Threads")
    settings, setting_problems = load_settings(None, os.environ)
    threads = settings.model.n_threads or default_threads()
    checks.ok(f"{threads} model threads ({os.cpu_count()} cores on this machine)")

    checks.section("Settings from the environment")
    env_set = [var for var in ENV_OVERRIDES if os.environ.get(var)]
    if not env_set:
        checks.ok("no LSP_INFER_* overrides set")
    for var in env_set:
        shown = os.environ[var] if "KEY" not in var else "(set, hidden)"
        checks.ok(f"{var}={shown}")
    for problem in setting_problems:
        checks.bad(problem, "correct or unset the environment variable")
    return settings


def _check_model(checks: Checks, settings: Settings) -> bool:
    """Loads the model and runs one completion; False when the checks cannot go on."""
    from lsp_infer.core.backend import BackendUnavailable
    from lsp_infer.local.once import complete_once

    checks.section("Model")
    if settings.model.path is None:
        if not models.parts_installed():
            checks.bad("the embedded default model is not installed", models.INSTALL_HINT)
            return False
        checks.ok(f"embedded default model installed ({models.DEFAULT_MODEL.description})")
    else:
        checks.note(f"custom model configured: {settings.model.path}")
    text = "def add(a, b):\n    return "
    try:
        result = complete_once(settings.model, settings.completion, text, len(text))
    except BackendUnavailable as exc:
        checks.bad(
            f"the model does not load: {exc}",
            "see the message above; `lsp-infer model verify` checks the file",
        )
        return False
    loaded = result.model
    checks.ok(f"{loaded.resolved.path} (checked: {loaded.resolved.verified_by})")
    checks.ok(
        f"loaded {loaded.name} in {loaded.load_seconds:.2f}s; FIM template {loaded.template.name}"
    )
    _report_compute(checks, loaded, settings.model.gpu_layers)
    suggestion = result.suggestion.text
    if "a" in suggestion and "b" in suggestion:
        checks.ok(
            f"test completion in {result.complete_seconds:.2f}s: 'return {suggestion.strip()}'"
        )
    else:
        checks.bad(f"test completion looks wrong: {suggestion!r}", "try the embedded default model")
    return True


def _report_compute(checks: Checks, loaded: LoadedModel, gpu_layers: str) -> None:
    """Where the model runs: the build's devices and the layers offloaded (model.gpuLayers)."""
    gpus = [d for d in loaded.devices if d.kind != "cpu"]
    devices = ", ".join(f"{d.name} ({d.description})" for d in loaded.devices) or "unknown"
    checks.ok(f"llama.cpp devices: {devices}")
    if not gpus:
        checks.note(
            "this llama-cpp-python build has no GPU support: the model runs on the CPU "
            f"({loaded.n_threads} threads). For a GPU, reinstall it with CMAKE_ARGS for "
            'Metal, CUDA, Vulkan or ROCm (README, "GPU offload")'
        )
        if gpu_layers not in ("auto", "0"):
            checks.bad(
                f"model.gpuLayers is {gpu_layers}, but this build cannot offload",
                'set model.gpuLayers to "auto", or install a GPU build',
            )
        return
    offloaded = min(loaded.gpu_layers, loaded.n_layers)
    checks.ok(f"GPU offload: {offloaded} of {loaded.n_layers} layers on {loaded.compute}")


def _check_team(checks: Checks, team: TeamSettings) -> None:
    checks.section("Team server")
    if not team.url:
        checks.note("not configured (set LSP_INFER_TEAM_URL or team.url for whole-file refactors)")
        return
    from lsp_infer.team.client import TeamClient

    async def health() -> None:
        client = TeamClient(team)
        try:
            health = await client.health()
        finally:
            await client.aclose()
        if not health.ok:
            checks.bad(
                f"{team.url}: {health.detail}",
                "start the team server or fix team.url / team.apiKey",
            )
            return
        load = ""
        if health.running is not None:
            load = f"; {health.running:.0f} running, {health.waiting or 0:.0f} waiting"
        checks.ok(f"{team.url}: serving {', '.join(health.models)}{load}")
        if team.model and team.model not in health.models:
            checks.bad(
                f"team.model {team.model!r} is not served there",
                f"use one of {', '.join(health.models)}",
            )

    asyncio.run(health())


def _summary(checks: Checks) -> int:
    checks.say("")
    if checks.problems:
        checks.say(f"{checks.problems} problem(s) found.")
        return 1
    checks.say("All checks passed.")
    return 0
