"""Which files may leave the machine or enter a prompt, and which URIs may be read at all.

Rules, in order:
* only ``file:`` URIs inside a workspace folder are eligible (anything else is refused);
* a file matching the exclusion patterns is never read, sent or put in a prompt. The patterns
  are the secret-file defaults below, a ``.lspinferignore`` file (gitignore syntax) at the
  root of each workspace folder, and the ``exclude`` setting.

Matching ignores case (``.ENV`` is ``.env``: case-insensitive file systems, and secrets named
in capitals, are common); for the patterns that means erring towards excluding.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlparse

import pathspec

IGNORE_FILE = ".lspinferignore"

# Secrets that must never reach a model (gitignore syntax, matched anywhere in the tree: a
# pattern with a slash inside is anchored at the root unless it starts with **/).
DEFAULT_EXCLUDES: tuple[str, ...] = (
    ".env",
    ".env.*",
    "*.env",
    ".envrc",
    "*.pem",
    "*.key",
    "*.crt",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "*.kdbx",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    "secrets.*",
    "secret.*",
    "credentials*",
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".git-credentials",
    "*.tfstate",
    "*.tfstate.*",
    "*.tfvars",
    ".ssh/",
    ".aws/",
    ".gnupg/",
    "**/.docker/config.json",
    "**/.kube/config",
)


class NotAllowed(Exception):
    """A URI that may not be read or sent; the message says why (without file contents)."""


def path_of(uri: str) -> Path:
    """The local path of a ``file:`` URI, or NotAllowed."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        scheme = parsed.scheme or "a bare path"
        raise NotAllowed(f"only file: URIs are supported, not {scheme}: {uri}")
    if parsed.netloc not in ("", "localhost"):
        raise NotAllowed(f"remote file URIs are not supported: {uri}")
    return Path(unquote(parsed.path))


@dataclass(frozen=True)
class Policy:
    roots: tuple[Path, ...]  # workspace folders, resolved
    extra_patterns: tuple[str, ...] = ()
    # root → (mtime of its ignore file, compiled spec): checked on every keystroke, so cached.
    _specs: dict[Path | None, tuple[float, pathspec.GitIgnoreSpec]] = field(
        default_factory=dict, compare=False, repr=False
    )

    @classmethod
    def for_workspace(cls, root_uris: Sequence[str], extra_patterns: Sequence[str] = ()) -> Policy:
        roots = []
        for uri in root_uris:
            try:
                roots.append(Path(os.path.realpath(path_of(uri))))
            except NotAllowed:
                continue
        return cls(tuple(roots), tuple(extra_patterns))

    def root_of(self, path: Path) -> Path | None:
        """The workspace folder that holds ``path`` (a resolved path), or None."""
        for root in self.roots:
            if path == root or root in path.parents:
                return root
        return None

    def display_path(self, path: Path) -> str:
        """``path`` as the model and the user should see it: relative to its workspace
        folder, or just its name outside them all."""
        root = self.root_of(path)
        return path.relative_to(root).as_posix() if root is not None else path.name

    def _spec(self, root: Path | None) -> pathspec.GitIgnoreSpec:
        """The patterns for files under ``root`` (None: files outside every workspace folder,
        which only the defaults and the setting apply to)."""
        mtime = -1.0
        ignore_file = root / IGNORE_FILE if root is not None else None
        if ignore_file is not None:
            with contextlib.suppress(OSError):
                mtime = ignore_file.stat().st_mtime
        cached = self._specs.get(root)
        if cached is not None and cached[0] == mtime:
            return cached[1]
        lines = [*DEFAULT_EXCLUDES, *self.extra_patterns]
        if ignore_file is not None and mtime >= 0:
            with contextlib.suppress(OSError):
                lines += ignore_file.read_text(encoding="utf-8", errors="replace").splitlines()
        spec = pathspec.GitIgnoreSpec.from_lines(line.lower() for line in lines)
        self._specs[root] = (mtime, spec)
        return spec

    def _match(self, path: Path) -> tuple[Path | None, str, bool]:
        """``path``'s workspace folder (None: outside them all), its path relative to it (or
        to /), and whether the exclusion rules for that folder match it."""
        root = self.root_of(path)
        relative = path.relative_to(root).as_posix() if root else path.as_posix().lstrip("/")
        return root, relative, bool(self._spec(root).match_file(relative.lower()))

    def check(self, uri: str) -> Path:
        """The file's resolved path if it may be read and sent; NotAllowed otherwise."""
        path = Path(os.path.realpath(path_of(uri)))
        root, relative, matched = self._match(path)
        if root is None:
            raise NotAllowed(f"{uri} is outside the workspace folders")
        if matched:
            raise NotAllowed(
                f"{relative} matches the exclusion rules (secrets, {IGNORE_FILE}, or the "
                "exclude setting)"
            )
        return path

    def excluded(self, uri: str) -> bool:
        """Whether a document's content must stay out of every prompt (local ones too).

        Unlike check(), a file outside the workspace is not refused here (the editor gave us
        its text; nothing is read from disk) — only the patterns decide. Non-file documents
        (untitled buffers) match nothing.
        """
        try:
            path = Path(os.path.realpath(path_of(uri)))
        except NotAllowed:
            return False
        return self._match(path)[2]

    def allowed(self, uri: str) -> bool:
        try:
            self.check(uri)
        except NotAllowed:
            return False
        return True
