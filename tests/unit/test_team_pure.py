"""Team tier pure logic: retries, metrics, prompts, validation, edits, privacy, arguments."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcInvalidParams

from lsp_infer.config import TeamSettings, load_settings, to_wire
from lsp_infer.lsp.convert import refactor_arguments
from lsp_infer.privacy import NotAllowed, Policy, path_of
from lsp_infer.team.http_client import TeamAnswer, parse_metrics, retry_delay
from lsp_infer.team.refactor import (
    InvalidResult,
    RefactorJob,
    Slots,
    TooLarge,
    answer_budget,
    apply_line_edits,
    chat_messages,
    completion_prompt,
    extract_code,
    fit,
    line_edits,
    line_end,
    validate,
)


def job(text: str = "x = 1\n", path: str = "a.py", language: str = "python") -> RefactorJob:
    return RefactorJob("file:///w/" + path, 3, path, language, text, "Add type hints")


@pytest.mark.parametrize(
    ("attempt", "retry_after", "low", "high"),
    [
        (1, "2", 2.0, 2.0),
        (1, "0", 0.0, 0.0),
        (1, "999", 30.0, 30.0),  # capped
        (1, None, 0.0, 0.5),
        (3, None, 0.0, 2.0),
        (1, "not a date", 0.0, 0.5),
    ],
)
def test_retry_delay(attempt: int, retry_after: str | None, low: float, high: float) -> None:
    delay = retry_delay(attempt, retry_after, random.Random(1))
    assert low <= delay <= high


def test_retry_delay_http_date_in_the_past_is_zero() -> None:
    assert retry_delay(1, "Wed, 21 Oct 2015 07:28:00 GMT", random.Random(1)) == 0.0


def test_parse_vllm_metrics() -> None:
    # The shape of vLLM's /metrics (Prometheus text; one series per engine / model).
    text = """# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="qwen2.5-coder"} 3.0
vllm:num_requests_running{engine="1",model_name="qwen2.5-coder"} 1.0
vllm:num_requests_waiting{engine="0",model_name="qwen2.5-coder"} 7.0
vllm:kv_cache_usage_perc{engine="0",model_name="qwen2.5-coder"} 0.42
vllm:prompt_tokens_total{engine="0",model_name="qwen2.5-coder"} 12345.0
"""
    assert parse_metrics(text) == {
        "vllm:num_requests_running": 4.0,
        "vllm:num_requests_waiting": 7.0,
        "vllm:kv_cache_usage_perc": 0.42,
    }


def test_prompts_put_the_shared_part_first() -> None:
    a, b = job("a = 1\n", "a.py"), job("b = 2\n", "b.py")
    first_a, first_b = chat_messages(a), chat_messages(b)
    assert first_a[0] == first_b[0]  # same system message
    user_a, user_b = first_a[1]["content"], first_b[1]["content"]
    assert user_a.startswith("Instruction: Add type hints") and user_b.startswith(
        "Instruction: Add type hints"
    )
    assert user_a.endswith("a = 1\n\n```")
    prompt = completion_prompt(a)
    assert prompt.index("Instruction") < prompt.index("a = 1") and prompt.endswith("```python\n")


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("```python\nx: int = 1\n```", "x: int = 1\n"),
        ("Here you go:\n```py\nx: int = 1\n```\nDone.", "x: int = 1\n"),
        ("```\nsmall\n```\n```python\nthe longer block\n```", "the longer block\n"),
        ("x: int = 1\n", "x: int = 1\n"),  # no fence at all: the answer is the code
    ],
)
def test_extract_code(answer: str, expected: str) -> None:
    assert extract_code(answer) == expected


def test_extract_code_refuses_an_unclosed_fence() -> None:
    with pytest.raises(InvalidResult, match="never closes"):
        extract_code("```python\nx = 1\n")


def test_extract_code_after_an_opened_fence() -> None:
    assert extract_code("x: int = 1\n```\ntrailing chatter", opened=True) == "x: int = 1\n"


def test_validate() -> None:
    assert validate(job(), TeamAnswer("```python\nx: int = 1\n```", "stop")) == "x: int = 1\n"
    with pytest.raises(InvalidResult, match="cut off"):
        validate(job(), TeamAnswer("```python\nx: int = 1\n```", "length"))
    with pytest.raises(InvalidResult, match="not valid Python"):
        validate(job(), TeamAnswer("```python\ndef broken(:\n```", "stop"))
    with pytest.raises(InvalidResult, match="no code"):
        validate(job(), TeamAnswer("```python\n\n```", "stop"))
    # Not Python: no parse check.
    assert validate(job("a\n", "a.txt", "plaintext"), TeamAnswer("```\ndef broken(:\n```", "stop"))


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("a\nb\nc\n", "a\nB\nc\n"),
        ("a\nb\nc\n", "a\nc\n"),
        ("a\nb\n", "a\nb\nc\n"),
        ("", "new\n"),
        ("a\nb", "a\nb\nc"),
        ("x\r\ny\r\n", "x\r\nz\r\n"),
    ],
)
def test_line_edits_round_trip(old: str, new: str) -> None:
    edits = line_edits(old, new)
    assert apply_line_edits(old, edits) == new
    assert len(edits) <= 2


def test_line_edits_touch_only_changed_lines() -> None:
    edits = line_edits("a\nb\nc\nd\n", "a\nb\nC\nd\n")
    assert [(e.start, e.end, e.text) for e in edits] == [(2, 3, "C\n")]


def test_privacy_policy(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / ".lspinferignore").write_text("generated/\n*.secret.py\n")
    policy = Policy.for_workspace([tmp_path.as_uri()], ["vendor/**"])
    assert policy.check((tmp_path / "src" / "app.py").as_uri()) == tmp_path / "src" / "app.py"
    for name in [
        ".env",
        ".env.local",
        "config/.env.production",
        "server.pem",
        "id_rsa",
        "id_ed25519.pub",
        "secrets.yaml",
        "credentials.json",
        "cert.p12",
        "generated/x.py",
        "a.secret.py",
        "vendor/lib/x.py",
        ".ssh/config",
    ]:
        with pytest.raises(NotAllowed, match="exclusion"):
            policy.check((tmp_path / name).as_uri())
    with pytest.raises(NotAllowed, match="outside the workspace"):
        policy.check("file:///etc/passwd")
    with pytest.raises(NotAllowed, match="only file: URIs"):
        policy.check("untitled:Untitled-1")
    with pytest.raises(NotAllowed, match="remote"):
        path_of("file://server/share/x.py")


def test_privacy_follows_symlinks_out_of_the_workspace(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.py").write_text("x = 1\n")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "link.py").symlink_to(outside / "x.py")
    with pytest.raises(NotAllowed, match="outside the workspace"):
        Policy.for_workspace([workspace.as_uri()]).check((workspace / "link.py").as_uri())


@pytest.mark.parametrize(
    ("arguments", "batch", "expected"),
    [
        ({"uri": "file:///a.py", "instruction": "x"}, False, (["file:///a.py"], "x")),
        ({"uri": "file:///a.py"}, False, (["file:///a.py"], None)),
        (
            {"uris": ["file:///a.py", "file:///a.py", "file:///b.py"], "instruction": "x"},
            True,
            (["file:///a.py", "file:///b.py"], "x"),
        ),
    ],
)
def test_command_arguments(arguments, batch: bool, expected) -> None:
    assert refactor_arguments(arguments, batch=batch) == expected


@pytest.mark.parametrize(
    ("arguments", "batch"),
    [
        (None, False),
        ("file:///a.py", False),
        ({"uri": 3}, False),
        ({"uris": []}, True),
        ({"uris": "file:///a.py"}, True),
        ({"uri": "file:///a.py", "instruction": 5}, False),
    ],
)
def test_command_arguments_refused(arguments, batch: bool) -> None:
    with pytest.raises(JsonRpcInvalidParams):
        refactor_arguments(arguments, batch=batch)


def test_api_key_never_echoed() -> None:
    settings, problems = load_settings({"team": {"apiKey": 1234567}})
    assert problems and "1234567" not in problems[0]
    settings, problems = load_settings({"team": {"apiKey": "sk-very-secret"}})
    assert problems == []
    assert "sk-very-secret" not in repr(settings)
    assert "sk-very-secret" not in str(to_wire(settings))
    settings, _ = load_settings(
        None, {"LSP_INFER_TEAM_API_KEY": "from-env", "LSP_INFER_TEAM_URL": "http://h/v1"}
    )
    assert settings.team.api_key == "from-env" and settings.team.url == "http://h/v1"


def test_excluded_applies_to_local_prompts_too(tmp_path: Path) -> None:
    (tmp_path / ".lspinferignore").write_text("private/\n")
    policy = Policy.for_workspace([tmp_path.as_uri()])
    assert policy.excluded((tmp_path / ".env").as_uri())
    assert policy.excluded((tmp_path / "private" / "a.py").as_uri())
    assert not policy.excluded((tmp_path / "src" / "a.py").as_uri())
    # Outside the workspace only the defaults apply; untitled buffers match nothing.
    assert policy.excluded("file:///home/someone/.ssh/config")
    assert not policy.excluded("file:///tmp/scratch.py")
    assert not policy.excluded("untitled:Untitled-1")
    # The ignore file is re-read when it changes.
    (tmp_path / ".lspinferignore").write_text("src/\n")
    import os

    os.utime(tmp_path / ".lspinferignore", (1, 1))
    assert policy.excluded((tmp_path / "src" / "a.py").as_uri())


@pytest.mark.parametrize(
    "relative",
    [
        "app/.docker/config.json",
        "a/b/.kube/config",
        ".ENV",
        "config/.Env.local",
        "keys/ID_RSA",
        "certs/Server.PEM",
        "deploy/Secrets.yaml",
    ],
)
def test_secret_patterns_match_at_any_depth_and_in_any_case(tmp_path: Path, relative: str) -> None:
    policy = Policy.for_workspace([tmp_path.as_uri()])
    path = tmp_path / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("token = 1\n")
    assert policy.excluded(path.as_uri()), relative
    assert not policy.allowed(path.as_uri()), relative


def test_crlf_files_are_sent_with_lf_and_get_their_crlf_back() -> None:
    crlf = RefactorJob("file:///w/a.py", 1, "a.py", "python", "x = 1\r\ny = 2\r\n", "hints")
    assert crlf.line_end == "\r\n" and "\r" not in chat_messages(crlf)[1]["content"]
    new = validate(crlf, TeamAnswer("```python\nx: int = 1\ny = 2\n```", "stop"))
    assert new == "x: int = 1\r\ny = 2\r\n"
    assert [e.start for e in line_edits(crlf.text, new)] == [0]  # only the changed line
    assert line_end("a\nb\r\nc\n") == "\n" and line_end("a\r\nb\r\nc\n") == "\r\n"


@pytest.mark.parametrize(
    ("chars", "limit", "expected"),
    [
        (300, None, "budget"),  # no limit known: team.maxTokens and the file's size decide
        (300, 100_000, "budget"),
        (30_000, 4096, "refused"),  # the 30 KB file
        (3_000, 2048, "fits"),  # fits, max_tokens cut to the room left
    ],
)
def test_fit(chars: int, limit: int | None, expected: str) -> None:
    text = ("x = 1\n" * (chars // 6))[:chars]
    job = RefactorJob("file:///w/a.py", 1, "a.py", "python", text, "hints")
    settings = TeamSettings(max_tokens=8192)
    prompt = sum(len(m["content"]) for m in chat_messages(job))
    if expected == "refused":
        with pytest.raises(TooLarge, match="context"):
            fit(job, prompt, settings, limit)
        return
    max_tokens = fit(job, prompt, settings, limit)
    if expected == "budget":
        assert max_tokens == answer_budget(job, settings)
    else:
        assert limit is not None and 0 < max_tokens <= limit - prompt // 4


def test_a_file_over_the_size_limit_is_refused_whatever_the_context() -> None:
    job = RefactorJob("file:///w/a.py", 1, "a.py", "python", "#" * 1_000_001, "hints")
    with pytest.raises(TooLarge, match="larger than"):
        fit(job, 10, TeamSettings(), None)


async def test_slots_keep_to_the_limit_and_pass_on_a_cancelled_turn() -> None:
    slots = Slots()
    running, most = 0, 0

    async def work(delay: float) -> None:
        nonlocal running, most
        async with slots.take(2):
            running += 1
            most = max(most, running)
            await asyncio.sleep(delay)
            running -= 1

    tasks = [asyncio.ensure_future(work(0.05)) for _ in range(5)]
    await asyncio.sleep(0.01)
    tasks[3].cancel()  # waiting for a turn: leaves without taking one
    await asyncio.gather(*tasks, return_exceptions=True)
    assert most == 2 and slots.active == 0
