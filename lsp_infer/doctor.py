"""``lsp-infer doctor``: plain-language checks of everything the server needs.

Settings come from the sources that do not need an editor: a settings file given with
``--settings`` (the ``lspInfer`` object an editor would send, camelCase JSON) and the
environment's ``LSP_INFER_*`` variables, which win, as they do for the server.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import os
import platform
import sys
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from lsp_infer import __version__, models
from lsp_infer.config import (
    ENV_OVERRIDES,
    ModelSettings,
    Settings,
    TeamSettings,
    load_settings,
    shown_url,
)
from lsp_infer.threads import THREAD_SPIN_COUNT, describe_thread_waiting

if TYPE_CHECKING:
    from lsp_infer.local.loaded_model import LoadedModel
    from lsp_infer.team.http_client import Health

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


def run_doctor(say: Say, settings_file: str | None = None) -> int:
    checks = Checks(say)
    say(f"lsp-infer {__version__}")
    say(f"  Python {platform.python_version()} at {sys.executable}")
    say(
        f"  pygls {_version('pygls')}, lsprotocol {_version('lsprotocol')}, "
        f"llama-cpp-python {_version('llama-cpp-python')}"
    )
    settings = _check_settings(checks, settings_file)
    _check_states(checks, settings.model)
    _check_model(checks, settings)
    _check_team(checks, settings.team)  # whether or not the model loads
    return _summary(checks)


def _read_settings_file(checks: Checks, settings_file: str | None) -> object:
    if settings_file is None:
        return None
    try:
        raw = json.loads(Path(settings_file).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        checks.bad(f"cannot read {settings_file}: {exc}", "give a JSON file with the settings")
        return None
    checks.ok(f"settings from {settings_file}")
    return raw


def _check_settings(checks: Checks, settings_file: str | None) -> Settings:
    from lsp_infer.local.loaded_model import default_threads

    checks.section("Settings (file, then the environment)")
    raw = _read_settings_file(checks, settings_file)
    settings, setting_problems = load_settings(raw, os.environ)
    env_set = [var for var in ENV_OVERRIDES if os.environ.get(var)]
    if not env_set:
        checks.ok("no LSP_INFER_* overrides set")
    for var in env_set:
        value = os.environ[var]
        shown = "(set, hidden)" if "KEY" in var else shown_url(value) if "URL" in var else value
        checks.ok(f"{var}={shown}")
    for problem in setting_problems:
        checks.bad(problem, "correct the setting or unset the environment variable")

    checks.section("Threads")
    threads = settings.model.n_threads or default_threads()
    checks.ok(f"{threads} model threads ({os.cpu_count()} cores on this machine)")
    waiting, ours = describe_thread_waiting(os.environ)
    if ours:
        checks.ok(waiting)
    else:  # the user's choice, which can halve decoding or keep a core busy while idle
        own = f"PASSIVE with {THREAD_SPIN_COUNT} spins"
        checks.note(f"{waiting}; lsp-infer's own is {own} (docs/troubleshooting.md)")
    return settings


def _check_states(checks: Checks, model: ModelSettings) -> None:
    """Where files' evaluated prompts are kept: RAM (model.stateCacheMb), disk
    (model.stateDiskMb) and what the disk holds now."""
    from lsp_infer.local.kv import default_directory, state_files

    checks.section("Evaluated prompts (KV states)")
    if model.state_cache_mb:
        checks.ok(f"up to {model.state_cache_mb} MB of RAM (model.stateCacheMb)")
    else:
        checks.note("not kept: model.stateCacheMb is 0 (coming back to a file is a cold start)")
    directory = default_directory()
    held = [size for _, size, _ in state_files(directory)]
    on_disk = f"{len(held)} files, {sum(held) / 2**20:.1f} MB, in {directory}"
    if not model.state_disk_mb:
        checks.ok("not kept on disk (model.stateDiskMb is 0)" + (f"; {on_disk}" if held else ""))
    elif not model.state_cache_mb:
        checks.bad(
            f"model.stateDiskMb is {model.state_disk_mb}, but nothing is kept to write",
            "set model.stateCacheMb above 0, or model.stateDiskMb to 0",
        )
    else:
        checks.ok(f"up to {model.state_disk_mb} MB on disk (model.stateDiskMb): {on_disk}")


def _check_model(checks: Checks, settings: Settings) -> bool:
    """Loads the model and runs one completion; False when the checks cannot go on."""
    from lsp_infer.core.backend import BackendUnavailable
    from lsp_infer.local.one_shot import complete_once

    checks.section("Model")
    for model, installed, assembled in models.installed_models():
        if installed:
            where = "assembled and verified" if assembled else "assembled on first use"
            checks.ok(f"embedded {model.name} installed ({model.description}; {where})")
        else:
            checks.note(f"embedded {model.name} not installed: {model.install_hint}")
    if settings.model.path is None:
        named = settings.model.name
        needed = models.DEFAULT_MODEL if named == "auto" else models.embedded_model(named)
        if not models.parts_installed(needed):
            checks.bad(
                f"model.name is {named!r} but {needed.name} is not installed",
                needed.install_hint,
            )
            return False
    else:
        checks.note(f"custom model configured: {settings.model.path}")
        ignored = models.requantize_ignored(settings.model.path, settings.model.requantize)
        if ignored:
            checks.note(ignored)
    text = "def add(a, b):\n    return "
    try:
        result = complete_once(settings, text, len(text))
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
        f", order {loaded.order}"
    )
    if loaded.chosen_because:
        checks.ok(loaded.chosen_because)
    profile = loaded.profile
    if profile.measured:
        checks.ok(f"profile {profile.name}: {profile.basis}")
    else:
        checks.note(
            f"profile {profile.name} ({loaded.architecture}): {profile.basis}; "
            "tune completion.* and model.fimOrder by hand if suggestions look off"
        )
    _report_compute(checks, loaded, settings.model)
    suggestion = result.suggestion.text
    if "a" in suggestion and "b" in suggestion:
        checks.ok(
            f"test completion in {result.complete_seconds:.2f}s: 'return {suggestion.strip()}'"
        )
    else:
        checks.bad(f"test completion looks wrong: {suggestion!r}", "try the embedded default model")
    return True


def _report_compute(checks: Checks, loaded: LoadedModel, model: ModelSettings) -> None:
    """Where the model runs: the build's devices and the layers offloaded (model.gpuLayers);
    on a CPU, the faster weights the embedded model can have (model.requantize)."""
    gpu_layers = model.gpu_layers
    gpus = [d for d in loaded.devices if d.kind != "cpu"]
    devices = ", ".join(f"{d.name} ({d.description})" for d in loaded.devices) or "unknown"
    checks.ok(f"llama.cpp devices: {devices}")
    if not gpus:
        checks.note(
            "this llama-cpp-python build has no GPU support: the model runs on the CPU "
            f"({loaded.n_threads} threads). For a GPU, reinstall it with CMAKE_ARGS for "
            'Metal, CUDA, Vulkan or ROCm (docs/performance.md, "GPU offload")'
        )
        if gpu_layers not in ("auto", "0"):
            checks.bad(
                f"model.gpuLayers is {gpu_layers}, but this build cannot offload",
                'set model.gpuLayers to "auto", or install a GPU build',
            )
        if model.path is None and loaded.resolved.requantized is None:
            checks.note(
                'on a CPU, model.requantize "q4_0" evaluates prompts about 1.4x as fast, for '
                'slightly lower quality (docs/performance.md, "Faster weights on a CPU")'
            )
        return
    offloaded = min(loaded.gpu_layers, loaded.n_layers)
    checks.ok(f"GPU offload: {offloaded} of {loaded.n_layers} layers on {loaded.compute}")


def _check_team(checks: Checks, team: TeamSettings) -> None:
    checks.section("Team server")
    from lsp_infer.team.vllm_server import VLLM_RANGE, installed_vllm

    local = installed_vllm()
    if local is not None:  # this is the team's server machine (or one being set up)
        if VLLM_RANGE[0] <= local.version < VLLM_RANGE[1]:
            checks.ok(f"{local.describe()} installed here (lsp-infer team-server runs it)")
        else:
            checks.note(
                f"{local.describe()} installed here: outside the releases lsp-infer ran "
                "against (0.32); lsp-infer team-server warns about its flags"
            )
    urls = team.urls()
    if not urls:
        checks.note("not configured (set LSP_INFER_TEAM_URL or team.url for whole-file refactors)")
        return
    from lsp_infer.team.http_client import TeamClient

    async def health() -> list[Health]:
        client = TeamClient(team)
        try:
            return await client.health()
        finally:
            await client.aclose()

    results = asyncio.run(health())
    for result in results:
        _report_replica(checks, team, result)
    served = {result.models for result in results if result.ok}
    if len(served) > 1:
        checks.bad(
            "the replicas in team.url serve different models",
            "list only replicas of the same model (and the same served name)",
        )
    plain = [shown_url(u) for u in urls if urlsplit(u).scheme == "http" and not _loopback(u)]
    if team.api_key and plain:
        checks.note(
            f"the API key travels unencrypted to {', '.join(plain)}: serve over https "
            "(lsp-infer team-server --ssl-keyfile/--ssl-certfile) or behind a TLS gateway"
        )


def _report_replica(checks: Checks, team: TeamSettings, result: Health) -> None:
    if not result.ok:
        checks.bad(
            f"{result.url}: {result.detail}", "start the team server or fix team.url / team.apiKey"
        )
        return
    load = ""
    if result.running is not None:
        load = f"; {result.running:.0f} running, {result.waiting or 0:.0f} waiting"
    context = f"; context {result.max_model_len:,} tokens" if result.max_model_len else ""
    engine = f" on {result.engine}" if result.engine else ""
    checks.ok(f"{result.url}: serving {', '.join(result.models)}{engine}{load}{context}")
    if result.priority is False:
        checks.note(
            f"{result.url} refuses request priorities: refactors and invoked completions queue "
            "alike (start vLLM with --scheduling-policy priority, as lsp-infer team-server does)"
        )
    elif result.priority and result.engine:
        checks.note(
            f"{result.url} accepts request priorities; {result.engine} orders by them only when "
            "started with --scheduling-policy priority (lsp-infer team-server does), and no "
            "answer says which policy it runs"
        )
    if team.model and team.model not in result.models:
        checks.bad(
            f"{result.url}: team.model {team.model!r} is not served there",
            f"use one of {', '.join(result.models)}",
        )


def _loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _summary(checks: Checks) -> int:
    checks.say("")
    if checks.problems:
        checks.say(f"{checks.problems} problem(s) found.")
        return 1
    checks.say("All checks passed.")
    return 0
