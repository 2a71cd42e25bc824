"""What the scope readers (python_scopes.py, js_scopes.py) answer, and the two walks they
share: the occurrence at an offset, and whether one scope is nested in another."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol, TypeVar


@dataclass(frozen=True)
class Occurrence:
    """A name where it stands in the source: ``source[start:end] == name``."""

    name: str
    start: int
    end: int
    binds: bool  # assigned, a parameter, a def or class name
    # JavaScript's ``{name}`` (an object's property, or a destructured one): a rename there
    # keeps the key, ``{name: renamed}``.
    shorthand: bool = False


@dataclass(frozen=True)
class Binding:
    """Every occurrence of one variable, and the names visible where it is used."""

    name: str
    occurrences: tuple[Occurrence, ...]
    # Every name that occurs (bound or read) in the scopes where this one does: a new name
    # among them would be captured by, or capture, another binding.
    names_nearby: frozenset[str]


class Scope(Protocol):
    @property
    def parent(self) -> Scope | None: ...

    @property
    def occurrences(self) -> list[Occurrence]: ...


ScopeT = TypeVar("ScopeT", bound=Scope)


def occurrence_at(scopes: Iterable[ScopeT], offset: int) -> tuple[ScopeT, Occurrence] | None:
    """The name at ``offset`` (within it or at its end) and the scope it stands in."""
    return next(((scope, occurrence) for scope in scopes for occurrence in scope.occurrences
                 if occurrence.start <= offset <= occurrence.end), None)  # fmt: skip


def inside(scope: Scope, home: Scope) -> bool:
    """Whether ``scope`` is ``home`` or nested in it (where a new name would be captured)."""
    at: Scope | None = scope
    while at is not None:
        if at is home:
            return True
        at = at.parent
    return False
