"""``lsp-infer doctor``: plain-language checks of everything the server needs."""

from __future__ import annotations

import asyncio
import os
import platform
import sys
import time
from collections.abc import Callable
from importlib import metadata

from lsp_infer import __version__, models
from lsp_infer.config import ENV_OVERRIDES, load_settings

Say = Callable[[str], None]


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def run_doctor(say: Say) -> int:
    problems = 0

    def ok(message: str) -> None:
        say(f"  ok    {message}")

    def bad(message: str, fix: str) -> None:
        nonlocal problems
        problems += 1
        say(f"  FAIL  {message}\n        fix: {fix}")

    say(f"lsp-infer {__version__}")
    say(f"  Python {platform.python_version()} at {sys.executable}")
    say(
        f"  pygls {_version('pygls')}, lsprotocol {_version('lsprotocol')}, "
        f"llama-cpp-python {_version('llama-cpp-python')}"
    )

    say("\nThreads")
    from lsp_infer.backends.llama_cpp import default_threads

    settings, setting_problems = load_settings(None, os.environ)
    threads = settings.model.n_threads or default_threads()
    ok(f"{threads} model threads ({os.cpu_count()} cores on this machine)")

    say("\nSettings from the environment")
    env_set = [var for var in ENV_OVERRIDES if os.environ.get(var)]
    if not env_set:
        ok("no LSP_INFER_* overrides set")
    for var in env_set:
        shown = os.environ[var] if "KEY" not in var else "(set, hidden)"
        ok(f"{var}={shown}")
    for problem in setting_problems:
        bad(problem, "correct or unset the environment variable")

    say("\nModel")
    if settings.model.path is None:
        if models.parts_installed():
            ok(f"embedded default model installed ({models.DEFAULT_MODEL.description})")
        else:
            bad("the embedded default model is not installed", models.INSTALL_HINT)
            return _summary(say, problems)
    else:
        say(f"  note  custom model configured: {settings.model.path}")

    from lsp_infer.backends.llama_cpp import LlamaCppBackend
    from lsp_infer.engine import CompletionEngine
    from lsp_infer.scheduling import CancelToken, ModelLane

    lane = ModelLane()
    backend = LlamaCppBackend(lane)
    lane.run_blocking(backend.load_blocking, settings.model, None)
    if backend.state != "ready" or backend.loaded is None:
        bad(
            f"the model does not load: {backend.error}",
            "see the message above; `lsp-infer model verify` checks the file",
        )
        return _summary(say, problems)
    loaded = backend.loaded
    ok(f"{loaded.resolved.path} (checked: {loaded.resolved.verified_by})")
    ok(f"loaded {loaded.name} in {loaded.load_seconds:.2f}s; FIM template {loaded.template.name}")
    text = "def add(a, b):\n    return "
    started = time.monotonic()
    suggestion = asyncio.run(
        CompletionEngine(backend).complete(text, len(text), settings.completion, CancelToken())
    )
    elapsed = time.monotonic() - started
    if "a" in suggestion.text and "b" in suggestion.text:
        ok(f"test completion in {elapsed:.2f}s: 'return {suggestion.text.strip()}'")
    else:
        bad(f"test completion looks wrong: {suggestion.text!r}", "try the embedded default model")
    lane.run_blocking(backend._close)
    lane.shutdown()

    say("\nTeam server")
    team = settings.team
    if not team.url:
        say("  note  not configured (set LSP_INFER_TEAM_URL or team.url for whole-file refactors)")
    else:
        from lsp_infer.backends.openai_http import TeamClient

        async def check() -> None:
            client = TeamClient(team)
            try:
                health = await client.health()
            finally:
                await client.aclose()
            if not health.ok:
                bad(
                    f"{team.url}: {health.detail}",
                    "start the team server or fix team.url / team.apiKey",
                )
                return
            load = ""
            if health.running is not None:
                load = f"; {health.running:.0f} running, {health.waiting or 0:.0f} waiting"
            ok(f"{team.url}: serving {', '.join(health.models)}{load}")
            if team.model and team.model not in health.models:
                bad(
                    f"team.model {team.model!r} is not served there",
                    f"use one of {', '.join(health.models)}",
                )

        asyncio.run(check())
    return _summary(say, problems)


def _summary(say: Say, problems: int) -> int:
    say("")
    say("All checks passed." if problems == 0 else f"{problems} problem(s) found.")
    return 0 if problems == 0 else 1
