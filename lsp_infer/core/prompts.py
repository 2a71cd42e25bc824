"""Fill-in-the-middle prompt templates per model family, and choosing one (pure).

A prompt is a sequence of segments: plain text (tokenized *without* special-token
parsing, so code that happens to contain ``<|fim_prefix|>`` cannot inject a
control token) and :class:`Special` markers, which the backend maps to the
vocabulary's token ids.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Special:
    """A special token, named by its exact text in the vocabulary."""

    text: str


class PrefixText(str):
    """The text before the cursor, marked so the backend can back up its last token and let
    the model choose how to continue it (token healing)."""


Segment = str | Special
# psm: <PRE>prefix<SUF>suffix<MID>. spm: <SUF>suffix<PRE>prefix<MID>. spmv: the SPM variant of
# "Efficient Training of Language Models to Fill in the Middle": <PRE><SUF>suffix<MID>prefix.
Order = Literal["psm", "spm", "spmv"]
Prompt = tuple[Segment, ...]


@dataclass(frozen=True)
class FimTemplate:
    name: str
    prefix: str
    suffix: str
    # None: no middle marker; generation starts right after the last part (Codestral).
    middle: str | None
    # "psm": prefix, suffix, middle. "spm": suffix first, then prefix — the part that
    # changes while typing comes last, so more of the prompt's KV cache is reused.
    order: Order
    # Extra stop markers beyond the vocabulary's end-of-generation tokens.
    stop: tuple[str, ...] = ()
    add_bos: bool = False
    # Repository-level markers, for models trained with multi-file context.
    repo_name: str | None = None
    file_sep: str | None = None

    @property
    def markers(self) -> tuple[str, ...]:
        """The special tokens a vocabulary must have for this template to work."""
        return tuple(m for m in (self.prefix, self.suffix, self.middle) if m is not None)

    def build(self, prefix: str, suffix: str, order: Order | None = None) -> Prompt:
        """The FIM prompt for the text before and after the cursor (in ``order``, default
        the template's own)."""
        prefix = PrefixText(prefix)
        pre: Prompt = (Special(self.prefix), prefix)
        suf: Prompt = (Special(self.suffix), suffix)
        mid: Prompt = (Special(self.middle),) if self.middle else ()
        order = order or self.order
        if order == "psm":
            parts = (*pre, *suf, *mid)
        elif order == "spm" or not self.middle:
            parts = (*suf, *pre, *mid)
        else:  # spmv
            parts = (Special(self.prefix), *suf, *mid, prefix)
        return tuple(p for p in parts if p != "")


TEMPLATES: dict[str, FimTemplate] = {
    t.name: t
    for t in (
        # Qwen2.5-Coder [Qwen2.5-Coder README shows PSM]. Measured here (bench/quality.py, 40
        # stdlib holes): the SPM variant scores 32.5 % exact match vs 17.5 % for PSM and
        # 7.5 % for plain suffix-first, and puts the prefix last, so a keystroke re-evaluates
        # only its own tokens. See bench/HISTORY.md.
        FimTemplate(
            name="qwen",
            prefix="<|fim_prefix|>",
            suffix="<|fim_suffix|>",
            middle="<|fim_middle|>",
            order="spmv",
            stop=("<|fim_pad|>", "<|file_sep|>", "<|repo_name|>", "<|endoftext|>", "<|im_end|>"),
            repo_name="<|repo_name|>",
            file_sep="<|file_sep|>",
        ),
        # StarCoder, StarCoder2 (also SantaCoder-style vocabularies).
        FimTemplate(
            name="starcoder",
            prefix="<fim_prefix>",
            suffix="<fim_suffix>",
            middle="<fim_middle>",
            order="psm",
            stop=("<fim_pad>", "<file_sep>", "<|endoftext|>"),
            repo_name="<repo_name>",
            file_sep="<file_sep>",
        ),
        # CodeLlama: the markers carry SentencePiece's "▁"; token layout as llama.cpp's infill.
        FimTemplate(
            name="codellama",
            prefix="▁<PRE>",
            suffix="▁<SUF>",
            middle="▁<MID>",
            order="psm",
            stop=("▁<EOT>",),
            add_bos=True,
        ),
        # DeepSeek-Coder (v1): hole-style markers with full-width bars.
        FimTemplate(
            name="deepseek",
            prefix="<｜fim▁begin｜>",
            suffix="<｜fim▁hole｜>",
            middle="<｜fim▁end｜>",
            order="psm",
            stop=("<|EOT|>",),
            add_bos=True,
        ),
        # Codestral: "[SUFFIX]{suffix}[PREFIX]{prefix}" — suffix first by design.
        FimTemplate(
            name="codestral",
            prefix="[PREFIX]",
            suffix="[SUFFIX]",
            middle=None,
            order="spm",
            add_bos=True,
        ),
        # CodeGemma: Qwen-like markers, its own file separator.
        FimTemplate(
            name="codegemma",
            prefix="<|fim_prefix|>",
            suffix="<|fim_suffix|>",
            middle="<|fim_middle|>",
            order="psm",
            stop=("<|file_separator|>",),
            add_bos=True,
            file_sep="<|file_separator|>",
        ),
    )
}


def with_repository(
    template: FimTemplate,
    fim: Prompt,
    files: Sequence[tuple[str, str]],
    current_path: str,
    repo_name: str = "workspace",
) -> Prompt:
    """``fim`` preceded by other files' code, in the model's repository format when it has one
    (Qwen2.5-Coder, StarCoder2: ``<|repo_name|>name <|file_sep|>path\ncode …``, the file being
    completed last). Without one, the files go into the prefix text as commented-path blocks.
    ``files`` are (path, text) pairs; an empty list leaves ``fim`` unchanged."""
    if not files:
        return fim
    if template.repo_name and template.file_sep:
        parts: list[Segment] = [Special(template.repo_name), f"{repo_name}\n"]
        for path, text in files:
            parts += [Special(template.file_sep), f"{path}\n{text.rstrip()}\n"]
        parts += [Special(template.file_sep), f"{current_path}\n"]
        return (*parts, *fim)
    comment = (
        "#" if current_path.endswith((".py", ".sh", ".rb", ".pl", ".r", ".yaml", ".toml")) else "//"
    )
    block = "".join(f"{comment} file: {path}\n{text.rstrip()}\n\n" for path, text in files)
    return tuple(PrefixText(block + p) if isinstance(p, PrefixText) else p for p in fim)


def detect_template(model_name: str, has_token: Callable[[str], bool]) -> FimTemplate | None:
    """Choose the FIM template from the vocabulary (and the model's name to break ties).

    ``has_token(text)`` says whether the vocabulary has a special token spelled
    exactly ``text``. Returns None when no known template fits: the model cannot
    fill in the middle (e.g. a plain chat model).
    """
    name = model_name.lower()
    candidates: Sequence[str]
    if "gemma" in name:
        candidates = ("codegemma", "qwen", "starcoder", "deepseek", "codestral", "codellama")
    else:
        candidates = ("qwen", "codegemma", "starcoder", "deepseek", "codestral", "codellama")
    for key in candidates:
        template = TEMPLATES[key]
        if not all(has_token(m) for m in template.markers):
            continue
        # Qwen and CodeGemma share the three markers; the file separator tells them apart.
        if key == "qwen" and has_token("<|file_separator|>") and not has_token("<|file_sep|>"):
            continue
        return template
    return None


def prompt_text(prompt: Prompt) -> str:
    """The prompt as one string (for logs, the OpenAI-compatible tier, and tests)."""
    return "".join(p.text if isinstance(p, Special) else p for p in prompt)
