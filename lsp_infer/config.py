"""Settings: typed dataclasses, camelCase on the wire, validated field by field.

Settings arrive as JSON from the client (``initializationOptions`` and the
``lspInfer`` section of ``workspace/configuration``) and from the environment.
A bad or unknown value never fails the whole load: it is reported (the server
shows the problems in one ``window/showMessage``) and that field keeps its
default.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, NewType, TypeVar
from urllib.parse import urlsplit

import cattrs

FIM_TEMPLATES = ("auto", "qwen", "starcoder", "codellama", "deepseek", "codestral", "codegemma")
# model.name: "auto" or one of models.EMBEDDED_MODELS (a test keeps the two lists equal).
MODEL_NAMES = ("auto", "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b")
LOG_LEVELS = ("error", "warning", "info", "debug")
# "auto", or a whole number of layers as text (JSON may give either a number or "auto").
GpuLayers = NewType("GpuLayers", str)


def _bounded(default: int, low: int, high: int) -> Any:
    return field(default=default, metadata={"min": low, "max": high})


def _choice(default: str, choices: tuple[str, ...]) -> Any:
    return field(default=default, metadata={"choices": choices})


@dataclass(kw_only=True)
class ModelSettings:
    # Which embedded model to load when model.path is not set. "auto": the 1.5B where it is
    # installed and this machine evaluates its prompts fast enough (measured once, remembered:
    # local/model_choice.py), else the 0.5B.
    name: str = _choice("auto", MODEL_NAMES)
    # A GGUF file to load instead of an embedded model (wins over model.name). None: embedded.
    path: str | None = None
    # Expected SHA-256 of a custom model file; checked before loading when set.
    sha256: str | None = None
    n_ctx: int = _bounded(4096, 512, 131072)
    # None: one thread per available core (at most 8).
    n_threads: int | None = field(default=None, metadata={"min": 1, "max": 256})
    n_batch: int = _bounded(256, 16, 4096)
    fim_template: str = _choice("auto", FIM_TEMPLATES)
    # Prompt order: "spm" (suffix first) lets a keystroke reuse the KV cache of all but the
    # last few tokens; "auto" uses each template's measured default (see bench/HISTORY.md).
    fim_order: str = _choice("auto", ("auto", "psm", "spm", "spmv"))
    # Layers offloaded to a GPU: "auto" is all of them where this llama.cpp build can offload
    # (CUDA, Metal, Vulkan, ROCm), else none; a number asks for that many.
    gpu_layers: GpuLayers = GpuLayers("auto")
    # "q4_0": load the embedded model requantized to Q4_0 (derived once into the model cache):
    # prompts about 1.4x as fast on a CPU, decoding 1.2x, exact match a few points lower
    # (bench/HISTORY.md, "Faster weights"). Ignored, with a warning, for a custom model.path.
    requantize: str = _choice("off", ("off", "q4_0"))
    # RAM for documents' evaluated prompts (KV states), so switching files does not evaluate
    # a file's prompt again; 0 keeps none. About 12 KB a token for the default model: 256 MB
    # holds some twenty files' prompts (bench/HISTORY.md, "Switching files").
    state_cache_mb: int = _bounded(256, 0, 65536)
    # Disk for those states, so that they outlive the server (an editor restarted): the first
    # suggestion in a file seen before is then no cold start. 0 (the default) writes none.
    # Only file: documents, in the user cache's kv-states directory (LSP_INFER_STATE_DIR).
    state_disk_mb: int = _bounded(0, 0, 1048576)

    def load_key(self) -> Hashable:
        """What loading the model depends on (the state cache's bounds change without a
        reload)."""
        bounds = ("state_cache_mb", "state_disk_mb")
        return tuple(
            getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in bounds
        )


@dataclass(kw_only=True)
class CompletionSettings:
    enabled: bool = True
    max_tokens: int = _bounded(64, 1, 1024)
    max_lines: int = _bounded(8, 1, 200)
    # Prompt budget for the text around the cursor (prefix + suffix), in tokens.
    # 512 tokens is ~40 lines; on 2 cores a cold 512-token prompt takes ~6 s.
    context_tokens: int = _bounded(512, 64, 32768)
    # At most this much of the budget goes to the code after the cursor. With a
    # prefix-first prompt it is evaluated again on every keystroke (see bench/HISTORY.md).
    suffix_tokens: int = _bounded(128, 0, 16384)
    # Past this, decoding stops at a line end and the completed lines are returned (the first
    # line is finished unless that takes half as long again). On 2 cores the model decodes 20-25
    # tokens/s: 1 s is a line or two, and a long suggestion would hold the lane for seconds
    # (bench/HISTORY.md, "Switching files"); what follows an accepted suggestion is precomputed
    # in the background.
    timeout_ms: int = _bounded(1000, 100, 120000)
    # After a suggestion is shown, generate what would follow its acceptance while idle.
    precompute: bool = True
    # An automatic request waits this long before starting the model; a newer keystroke in
    # that time makes it stale (answered empty) without any model work. 0 turns it off.
    debounce_ms: int = _bounded(50, 0, 2000)
    # A suggestion whose prompt the model has not evaluated yet (a new file, or a place far
    # from the last one) gets a window small enough to evaluate in about this long, at the
    # measured prompt speed; the whole window is evaluated after it is shown. 0: always the
    # whole window.
    cold_start_ms: int = _bounded(1500, 0, 60_000)
    # An explicitly invoked request (the user asked, e.g. by cycling through suggestions) is
    # answered with up to this many distinct suggestions; typing always gets one.
    choices: int = _bounded(3, 1, 10)
    # How sure the model must be of a line (the probability it gave the whole line, the
    # product of its tokens') for it to be shown: a suggestion whose first line is below it is
    # hidden (an automatic one: an invoked one is only cut), and one is cut before a later line
    # below it. 0 shows whatever the model wrote. See core/confidence.py and bench/HISTORY.md,
    # "Confidence".
    min_confidence: float = field(default=0.1, metadata={"min": 0.0, "max": 1.0})
    # The same for a typing request's suggestion from a cold start's smaller window, which
    # guesses more: one whose first line is below this is hidden (the larger of the two
    # thresholds holds), and the whole window, evaluated right after, answers the next
    # request. See bench/HISTORY.md, "Cold start by structure and confidence".
    cold_start_confidence: float = field(default=0.3, metadata={"min": 0.0, "max": 1.0})
    # When the editor says the cursor rests somewhere (lspInfer/warm: after switching files or
    # moving the cursor), evaluate the whole window's prompt there in the background, so the
    # first suggestion there needs no cold start. Costs CPU while the user reads.
    warm: bool = True


@dataclass(kw_only=True)
class ExtraContextSettings:
    """Code from other files in the prompt (local/extra_context.py); the ``context`` section
    on the wire."""

    enabled: bool = True
    # Token budget for other files' code, on top of completion.contextTokens.
    extra_tokens: int = _bounded(256, 0, 16384)
    # The pick of other files' code is refreshed (and its prompt evaluated) after the user
    # has paused this long, never while typing.
    idle_ms: int = _bounded(1000, 100, 60_000)
    # Ask the editor's own language servers where the names near the cursor are defined
    # (lspInfer/definitions, local/definitions.py), in that pause; their signatures and
    # docstrings come first in the extra context. Only a client that announces it is asked.
    definitions: bool = True
    # How long the pause's pick waits for the editor's answer; it goes on without it after
    # this, and a late answer is kept for the next pick.
    definitions_ms: int = _bounded(100, 0, 5000)


@dataclass(kw_only=True)
class NextEditSettings:
    """Next-edit suggestions (lspInfer/nextEdit, next_edit/): the ``nextEdit`` section."""

    # Answer lspInfer/nextEdit from the document's recent edits (a rename carried to the
    # name's other uses); off: every answer is empty, and no edit is recorded.
    enabled: bool = True
    # Where the edits make nothing certain, ask the local model for the same change on a line
    # like the one just edited (next_edit/analogy.py); shown only when it is sure enough.
    model: bool = True
    # How sure: the least probability each token of the model's line must have. 0: the model
    # profile's, measured per model (none for a model without measurements: then off).
    min_probability: float = field(default=0.0, metadata={"min": 0.0, "max": 1.0})
    # Ask the team's model (team.url) for like changes instead: a larger model, served by
    # vLLM with log-probabilities; the local model where the team cannot answer in
    # team.completionTimeoutMs. Never for a file kept from the team. Its threshold:
    # minProbability, or 0.7 (measured on the embedded models, not on the team's).
    team: bool = False
    # What the team's model is asked: "analogy", the like change above (any code model);
    # "zeta" / "sweep", the region around the cursor rewritten in Zed's Zeta format or in
    # Sweep's, for a team that serves such a trained next-edit model (next_edit/zeta.py,
    # sweep.py: untested here without their weights).
    team_format: str = _choice("analogy", ("analogy", "zeta", "sweep"))


@dataclass(kw_only=True)
class TeamSettings:
    """The shared OpenAI-compatible server (vLLM) for whole-file refactors."""

    # Base URL of the OpenAI-compatible API, e.g. "http://gpu-box:8000/v1", or several
    # replicas serving the same model: a list, or one string with the URLs separated by commas
    # or spaces (team/router.py picks one per request). None: no team tier.
    url: str | list[str] | None = field(default=None, metadata={"urls": True})
    # Bearer token. Never logged, never echoed in messages (repr=False keeps it out of reprs).
    api_key: str | None = field(default=None, repr=False, metadata={"secret": True})
    # Served model name; None: the first model the server lists at /v1/models.
    model: str | None = None
    # "chat": /v1/chat/completions (the server applies the model's chat template);
    # "completions": /v1/completions with a plain prompt; either way one streamed request per
    # file, so that each file can be cancelled alone.
    api: str = _choice("chat", ("chat", "completions"))
    timeout_ms: int = _bounded(300_000, 1000, 3_600_000)
    connect_timeout_ms: int = _bounded(5000, 100, 60_000)
    max_tokens: int = _bounded(8192, 16, 131_072)
    max_concurrency: int = _bounded(4, 1, 64)
    # Refactor jobs arriving within this window go out together.
    batch_window_ms: int = _bounded(100, 0, 10_000)
    retries: int = _bounded(2, 0, 10)
    # Send vLLM's `priority` field (needs `vllm serve --scheduling-policy priority`).
    priority: bool = False
    verify_tls: bool = True
    # Explicitly invoked completions (not automatic ones) may use the team model, with the
    # local model as the fallback on timeout or error.
    completions: bool = False
    completion_timeout_ms: int = _bounded(3000, 100, 60_000)
    fim_template: str = _choice("qwen", FIM_TEMPLATES[1:])
    # The OpenAI `user` field sent with every request, so the server's logs and a gateway can
    # tell developers apart. None: the OS user name; "": not sent.
    user: str | None = None
    # The team model's context in tokens: a rewrite that cannot fit is refused before it is
    # sent. None: what the server reports (vLLM's /v1/models has max_model_len).
    max_model_len: int | None = field(default=None, metadata={"min": 256, "max": 10_000_000})

    def urls(self) -> tuple[str, ...]:
        """The replicas' base URLs (none: no team tier)."""
        return team_urls(self.url)


def team_urls(value: str | list[str] | None) -> tuple[str, ...]:
    """team.url as a tuple of base URLs: a list, or a string of URLs separated by commas or
    whitespace; trailing slashes dropped, duplicates kept once."""
    if value is None:
        return ()
    parts = re.split(r"[\s,]+", value) if isinstance(value, str) else value
    return tuple(dict.fromkeys(part.strip().rstrip("/") for part in parts if part.strip()))


def shown_url(url: str) -> str:
    """A URL fit for logs, messages and stats: without user name or password."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()


def _check_urls(value: Any) -> str | list[str] | None:
    """A valid team.url (one URL, a string of several, or a list), or ValueError."""
    if value is None:
        return None
    is_list = isinstance(value, list) and all(isinstance(item, str) for item in value)
    if not (is_list or isinstance(value, str)):
        raise ValueError("expected a URL, or a list of URLs")
    urls = team_urls(value)
    if not urls:
        return None
    for url in urls:
        parts = urlsplit(url)
        try:
            valid = parts.scheme in ("http", "https") and bool(parts.hostname)
            parts.port  # noqa: B018  (raises ValueError for a port that is not a number)
        except ValueError:
            valid = False
        if not valid:
            raise ValueError(f"not an http(s) URL: {shown_url(url)!r}")
    return value if isinstance(value, str) else list(value)


@dataclass(kw_only=True)
class Settings:
    model: ModelSettings = field(default_factory=ModelSettings)
    completion: CompletionSettings = field(default_factory=CompletionSettings)
    context: ExtraContextSettings = field(default_factory=ExtraContextSettings)
    team: TeamSettings = field(default_factory=TeamSettings)
    next_edit: NextEditSettings = field(default_factory=NextEditSettings)
    # Extra exclusion patterns (gitignore syntax) on top of the secret-file defaults and
    # .lspinferignore: matching files never enter a prompt or reach the team server.
    exclude: list[str] = field(default_factory=list)
    log_level: str = _choice("info", LOG_LEVELS)
    # Enables lspInfer/debug/document (the server's copy of a document), for tests and bug
    # reports. Off by default: it hands out document text on request.
    debug: bool = False
    # Not a setting: the (section, field) pairs the client or the environment set, so that a
    # model profile (core/profiles.py) fills in only the others.
    explicit: frozenset[tuple[str, str]] = field(
        default_factory=frozenset, compare=False, metadata={"internal": True}
    )


# Environment variable → (section, field). The environment wins over client settings.
ENV_OVERRIDES: dict[str, tuple[str, ...]] = {
    "LSP_INFER_MODEL": ("model", "path"),
    "LSP_INFER_MODEL_NAME": ("model", "name"),
    "LSP_INFER_MODEL_SHA256": ("model", "sha256"),
    "LSP_INFER_N_CTX": ("model", "n_ctx"),
    "LSP_INFER_THREADS": ("model", "n_threads"),
    "LSP_INFER_FIM_TEMPLATE": ("model", "fim_template"),
    "LSP_INFER_GPU_LAYERS": ("model", "gpu_layers"),
    "LSP_INFER_STATE_CACHE_MB": ("model", "state_cache_mb"),
    "LSP_INFER_STATE_DISK_MB": ("model", "state_disk_mb"),
    "LSP_INFER_REQUANTIZE": ("model", "requantize"),
    "LSP_INFER_MAX_TOKENS": ("completion", "max_tokens"),
    "LSP_INFER_TEAM_URL": ("team", "url"),
    "LSP_INFER_TEAM_API_KEY": ("team", "api_key"),
    "LSP_INFER_TEAM_MODEL": ("team", "model"),
    "LSP_INFER_TEAM_USER": ("team", "user"),
    "LSP_INFER_LOG_LEVEL": ("log_level",),
    "LSP_INFER_DEBUG": ("debug",),
}


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def snake(name: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()


def _strict_converter() -> cattrs.Converter:
    """cattrs, minus the coercions that would hide mistakes ("false" → True, 1.5 → 1)."""
    converter = cattrs.Converter()

    def structure_bool(value: Any, _: type) -> bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "1", "yes", "on"):
            return True
        if isinstance(value, str) and value.lower() in ("false", "0", "no", "off"):
            return False
        raise ValueError(f"expected true or false, got {value!r}")

    def structure_int(value: Any, _: type) -> int:
        if isinstance(value, bool):
            raise ValueError(f"expected a whole number, got {value!r}")
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value):
            return int(value)
        raise ValueError(f"expected a whole number, got {value!r}")

    def structure_float(value: Any, _: type) -> float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):
            try:
                return float(value)
            except ValueError:
                pass
        raise ValueError(f"expected a number, got {value!r}")

    def structure_str(value: Any, _: type) -> str:
        if isinstance(value, str):
            return value
        raise ValueError(f"expected a string, got {value!r}")

    def structure_gpu_layers(value: Any, _: type) -> GpuLayers:
        if value == "auto":
            return GpuLayers("auto")
        problem = ValueError(f'expected "auto" or a number of layers (0 or more), got {value!r}')
        try:
            layers = structure_int(value, int)
        except ValueError:
            raise problem from None
        if layers < 0:
            raise problem
        return GpuLayers(str(layers))

    converter.register_structure_hook(bool, structure_bool)
    converter.register_structure_hook(int, structure_int)
    converter.register_structure_hook(float, structure_float)
    converter.register_structure_hook(str, structure_str)
    converter.register_structure_hook(GpuLayers, structure_gpu_layers)
    return converter


_converter = _strict_converter()

T = TypeVar("T")


def _check_field(f: dataclasses.Field[Any], value: Any) -> None:
    low, high = f.metadata.get("min"), f.metadata.get("max")
    if value is not None and low is not None and not low <= value <= high:
        raise ValueError(f"must be between {low} and {high}, got {value}")
    choices = f.metadata.get("choices")
    if choices is not None and value not in choices:
        raise ValueError(f"must be one of {', '.join(choices)}; got {value!r}")


def _structure(cls: type[T], raw: Any, path: str, problems: list[str]) -> T:
    """Build ``cls`` from ``raw`` one field at a time; bad fields keep their defaults."""
    if not isinstance(raw, Mapping):
        problems.append(f"{path or 'settings'}: expected an object, got {raw!r}")
        return cls()
    fields = {
        camel(f.name): f
        for f in dataclasses.fields(cls)  # type: ignore[arg-type]
        if not f.metadata.get("internal")
    }
    values: dict[str, Any] = {}
    for key, value in raw.items():
        where = f"{path}.{key}" if path else str(key)
        f = fields.get(key) or fields.get(camel(str(key)))
        if f is None:
            problems.append(f"{where}: unknown setting")
            continue
        field_type = _FIELD_TYPES[(cls, f.name)]
        if isinstance(field_type, type) and dataclasses.is_dataclass(field_type):
            values[f.name] = _structure(field_type, value, where, problems)
            continue
        try:
            if f.metadata.get("urls"):
                converted = _check_urls(value)
            else:
                converted = _converter.structure(value, field_type)
            _check_field(f, converted)
        except Exception as exc:
            if f.metadata.get("secret"):  # never echo a secret, not even a malformed one
                problems.append(f"{where}: not a valid value (not shown); using the default")
            else:
                problems.append(f"{where}: {_describe(exc)}; using the default")
            continue
        values[f.name] = converted
    return cls(**values)


def _describe(exc: Exception) -> str:
    if isinstance(exc, cattrs.BaseValidationError):
        return "; ".join(cattrs.transform_error(exc)) or str(exc)
    return str(exc)


def _resolved_field_types() -> dict[tuple[type, str], Any]:
    """Field types as objects (``from __future__ import annotations`` makes them strings)."""
    import typing

    table: dict[tuple[type, str], Any] = {}
    for cls in (ModelSettings, CompletionSettings, ExtraContextSettings, NextEditSettings,
                TeamSettings, Settings):  # fmt: skip
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            table[(cls, f.name)] = hints[f.name]
    return table


_FIELD_TYPES = _resolved_field_types()


def _unwrap_section(raw: Any) -> Any:
    """Accept both ``{"lspInfer": {...}}`` and the bare ``{...}``."""
    if isinstance(raw, Mapping) and set(raw) == {"lspInfer"}:
        return raw["lspInfer"]
    return raw


def env_settings(env: Mapping[str, str]) -> dict[str, Any]:
    """The environment overrides as a camelCase settings object."""
    raw: dict[str, Any] = {}
    for var, path in ENV_OVERRIDES.items():
        value = env.get(var)
        if value is None or value == "":
            continue
        node = raw
        for part in path[:-1]:
            node = node.setdefault(camel(part), {})
        node[camel(path[-1])] = value
    return raw


def merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Deep merge of two camelCase settings objects; ``override`` wins."""
    merged: dict[str, Any] = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def load_settings(raw: Any, env: Mapping[str, str] | None = None) -> tuple[Settings, list[str]]:
    """Settings from a client's raw JSON plus environment overrides, and the problems found.

    ``None`` (the client sent nothing) is the defaults.
    """
    problems: list[str] = []
    raw = _unwrap_section(raw)
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        problems.append(f"settings: expected an object, got {raw!r}; using the defaults")
        raw = {}
    if env:
        raw = merge(raw, env_settings(env))
    settings = _structure(Settings, raw, "", problems)
    settings.explicit = frozenset(
        (snake(section), snake(name))
        for section, fields in raw.items()
        if isinstance(fields, Mapping)
        for name in fields
    )
    return settings, problems


def to_wire(settings: Settings) -> dict[str, Any]:
    """Settings as camelCase JSON, secrets replaced by "(hidden)" (for doctor and logs)."""

    def convert(obj: Any) -> Any:
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            return {
                camel(f.name): "(hidden)"
                if f.metadata.get("secret") and getattr(obj, f.name)
                else convert(getattr(obj, f.name))
                for f in dataclasses.fields(obj)
                if not f.metadata.get("internal")
            }
        return obj

    result: dict[str, Any] = convert(settings)
    return result
