"""The session: what the tiers may know of the editor's state.

The open documents, the privacy policy for the current workspace folders and exclusion
settings, and the negotiated position encoding. The protocol edge keeps it up to date; the
tiers read it (they never see the server).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from lsp_infer.documents import DocumentStore
from lsp_infer.positions import Encoding
from lsp_infer.privacy import NotAllowed, Policy, path_of


class Session:
    def __init__(self, workspace_roots: Callable[[], Sequence[str]] = tuple) -> None:
        """``workspace_roots``: the workspace folders' URIs now (they may change)."""
        self.documents = DocumentStore()
        self.encoding: Encoding = "utf-16"
        self.exclude: tuple[str, ...] = ()  # the exclude setting's patterns
        self._workspace_roots = workspace_roots
        self._policy: Policy | None = None
        self._policy_key: tuple[Any, ...] = ()

    def policy(self) -> Policy:
        """What may be read and sent, for the current workspace folders and settings."""
        key = (tuple(self._workspace_roots()), self.exclude)
        if self._policy is None or self._policy_key != key:
            self._policy = Policy.for_workspace(key[0], self.exclude)
            self._policy_key = key
        return self._policy

    def relative_path(self, uri: str) -> str:
        """A document's path as the model and the user should see it: relative to its
        workspace folder (its name outside them; the URI's last part for other schemes)."""
        try:
            path = Path(os.path.realpath(path_of(uri)))
        except NotAllowed:
            return uri.rsplit("/", 1)[-1] or uri
        return self.policy().display_path(path)

    def is_current(self, uri: str, version: int) -> bool:
        """Whether the document is open at exactly this version."""
        snapshot = self.documents.find(uri)
        return snapshot is not None and snapshot.version == version
