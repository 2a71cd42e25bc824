"""The team's vLLM server: which vLLM releases lsp-infer was checked against, and the
`vllm serve` command line it recommends (`lsp-infer team-server`), with what the person starting
it must know. The command prints and runs it (cli.py); this module only decides."""

from __future__ import annotations

import argparse
import re

# The vLLM releases `lsp-infer[team]` allows (pyproject.toml), whose flags used here were
# checked against vLLM's documentation and source: docs/team-server.md.
VLLM_RANGE = ((0, 10, 1), (0, 19))
# From 0.10.1 request logging is opt-in (--enable-log-requests, vLLM PR #21739); before, every
# prompt was logged unless --disable-log-requests, which 0.12 deprecated and later removed.
VLLM_OPT_IN_LOGGING = (0, 10, 1)


def vllm_version_tuple(version: str) -> tuple[int, ...]:
    """ "0.11.0rc1" → (0, 11, 0): the leading numbers."""
    numbers = []
    for part in version.split("."):
        digits = re.match(r"\d+", part)
        if digits is None:
            break
        numbers.append(int(digits[0]))
    return tuple(numbers)


def no_prompt_logging(version: tuple[int, ...] | None) -> list[str]:
    """The flag that keeps vLLM from logging prompts (developers' files): explicit on every
    version, in the spelling that version knows (None: not installed here, the current one)."""
    if version is not None and version < VLLM_OPT_IN_LOGGING:
        return ["--disable-log-requests"]
    return ["--no-enable-log-requests"]


def team_server_command(args: argparse.Namespace, version: tuple[int, ...] | None) -> list[str]:
    """The recommended `vllm serve` command line (the API key is not on it: vLLM reads
    VLLM_API_KEY from the environment, which keeps it out of `ps` and shell history)."""
    command = [
        "vllm", "serve", args.model,
        "--served-model-name", args.served_name,
        "--host", args.host, "--port", str(args.port),
        "--enable-prefix-caching",
        "--scheduling-policy", "priority",
        "--max-model-len", str(args.max_model_len),
        "--gpu-memory-utilization", str(args.gpu_memory_utilization),
        *no_prompt_logging(version),
    ]  # fmt: skip
    if args.tensor_parallel_size > 1:
        command += ["--tensor-parallel-size", str(args.tensor_parallel_size)]
    if args.data_parallel_size > 1:
        command += ["--data-parallel-size", str(args.data_parallel_size)]
    if args.ssl_certfile:
        command += ["--ssl-keyfile", args.ssl_keyfile, "--ssl-certfile", args.ssl_certfile]
    return command


def team_server_warnings(args: argparse.Namespace, version: tuple[int, ...] | None) -> list[str]:
    """What the person starting the server must know (printed to stderr)."""
    warnings = []
    if args.host in ("0.0.0.0", "::", "") and not args.ssl_certfile:
        warnings.append(
            f"listening on every interface ({args.host or 'all'}) without TLS: the API key "
            "and every developer's files cross the network in clear text. Give "
            "--ssl-keyfile/--ssl-certfile, bind to one interface with --host, or put a TLS "
            "gateway in front"
        )
    if version is not None and not VLLM_RANGE[0] <= version < VLLM_RANGE[1]:
        shown = ".".join(map(str, version))
        low, high = (".".join(map(str, v)) for v in VLLM_RANGE)
        warnings.append(
            f"vLLM {shown} is outside the versions lsp-infer checked (>={low},<{high}); its "
            "flags may differ: check that prompts are not logged"
        )
    return warnings


def installed_vllm() -> tuple[int, ...] | None:
    from importlib import metadata

    try:
        return vllm_version_tuple(metadata.version("vllm"))
    except metadata.PackageNotFoundError:
        return None
