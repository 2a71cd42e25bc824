"""The team tier assembled: the clients (one per settings, over the router), refactor
commands, invoked completions, and their counters — what ``lspInfer/stats`` shows of it."""

from __future__ import annotations

from typing import Any

from lsp_infer.config import TeamSettings
from lsp_infer.editor import Editor
from lsp_infer.session import Session
from lsp_infer.team.counters import TeamCounters
from lsp_infer.team.http_client import Clients
from lsp_infer.team.invoked_completions import TeamCompletions
from lsp_infer.team.refactor import Refactorer
from lsp_infer.team.refactor_batches import TeamCommands


class TeamTier:
    def __init__(self, session: Session, editor: Editor) -> None:
        self.clients = Clients()
        self.counters = TeamCounters()
        self.commands = TeamCommands(
            session, editor, Refactorer(self.clients), self.counters.refactors
        )
        self.completions = TeamCompletions(session, self.clients, self.counters.completions)
        self.settings = TeamSettings()
        self._logged_activity = 0

    def configure(self, settings: TeamSettings) -> None:
        """New settings: requests from now on use them (running ones keep theirs)."""
        self.settings = settings
        self.commands.settings = settings
        if settings.urls():
            self.clients.get(settings)  # the replicas show in stats before the first request

    def document_changed(self, uri: str) -> None:
        """An edit: refactors and team completions in flight for the document are stale."""
        self.commands.document_changed(uri)
        self.completions.document_changed(uri)

    def replicas(self) -> list[dict[str, Any]]:
        client = self.clients.current() if self.settings.urls() else None
        return [replica.as_json() for replica in client.replicas] if client else []

    def stats(self) -> dict[str, Any]:
        """``team`` in ``lspInfer/stats``: each replica, and counters per request class."""
        return {
            "replicas": self.replicas(),
            "refactors": self.counters.refactors.as_json(),
            "completions": self.counters.completions.as_json(),
        }

    def stats_line(self) -> str | None:
        """A line for the log, or None when nothing was asked since the last one."""
        activity = self.counters.activity()
        if activity == self._logged_activity:
            return None
        self._logged_activity = activity
        return self.counters.line(self.replicas())

    async def aclose(self) -> None:
        await self.commands.shutdown()
        await self.clients.aclose()
