"""Working-memory sessions read and edited by id (reference §7.2, §13.3 `…/sessions/{id}/
working`), always within an explicit tenant.

A session is the working buffer post_turn appends to (`sessions` collection, keyed by the
session id *within* its tenant, `ScopeFields.document_key`). Here it is addressed by its
session id plus a `TenantFilter`: the agent is required and the user matches exactly (no
user ⇒ user-less sessions only), so another tenant's session is reported exactly like a
missing one (`NotFound`). The reference matched by `sessionId + agentWallet` alone and read
every user's sessions (§16.3).

Editing (`update_session`) follows the reference's `updateWorkingSessionMemory`: merged by
default (new context lines appended and the newest `keep` kept; `entities`, `state` and
`metadata` shallowly merged, new keys win), or replaced wholesale with `replace=True` (the
context is then not trimmed). Differences: a session is created only by post_turn, so
editing a missing one is `NotFound` rather than an upsert under a guessed scope; the edit is
one atomic write (the reference read, merged and wrote back, §16.24).

Times are milliseconds since epoch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol

from engine.errors import InputRejected, NotFound
from engine.records import ScopeFields
from engine.scoping import TenantFilter, scope_of
from schemas.scope import Scope

MAX_CONTEXT_LINES = 100
"""Lines one edit may carry (the stored buffer is trimmed to `keep` unless replaced)."""
LINE_CHARS = 1000
"""A context line is cut to this many characters (reference §7.2)."""


@dataclass(frozen=True, slots=True)
class SessionDocument:
    """A stored working session as callers see it (no turn vectors, no turn ids).
    `context` is oldest first, as stored; `expires_at` is when the TTL index removes it."""

    session_id: str
    scope: ScopeFields
    context: list[str]
    entities: dict[str, Any]
    state: dict[str, Any]
    metadata: dict[str, Any]
    created_at: int
    last_accessed_at: int
    expires_at: int | None
    compressed: bool = False

    def json(self) -> dict[str, Any]:
        """The reference's turn row (reference §2.3), camelCase, times in ms."""
        return {
            "sessionId": self.session_id,
            **self.scope.view(),
            "workingMemory": {
                "context": list(self.context),
                "entities": dict(self.entities),
                "state": dict(self.state),
            },
            "metadata": dict(self.metadata),
            "compressed": self.compressed,
            "createdAt": self.created_at,
            "lastAccessedAt": self.last_accessed_at,
            "expiresAt": self.expires_at,
        }


@dataclass(frozen=True, slots=True)
class SessionEdit:
    """One atomic edit. None leaves a part alone. Merging: `context` lines are appended
    and the newest `keep` kept; the three objects are merged key by key. `replace`: each
    given part replaces the stored one. Every edit sets `lastAccessedAt = at` and
    `expiresAt = at + ttl_ms` (neither moves backwards)."""

    at: int
    ttl_ms: int
    keep: int
    context: list[str] | None = None
    entities: Mapping[str, Any] | None = None
    state: Mapping[str, Any] | None = None
    metadata: Mapping[str, Any] | None = None
    replace: bool = False

    @property
    def touches_working(self) -> bool:
        """Whether what the working layer reads (lines, state, entities) changes."""
        return any(part is not None for part in (self.context, self.entities, self.state))


class SessionStore(Protocol):
    """Working sessions addressed by session id within a tenant filter (`shared` ignored).
    When several of the tenant's documents carry the id (a mode-less and a `global` turn
    of one thread), the most recently accessed one is meant."""

    async def touch(self, where: TenantFilter, session_id: str, at: int) -> SessionDocument | None:
        """The session after setting `lastAccessedAt` to at least `at`, or None."""
        ...

    async def edit(
        self, where: TenantFilter, session_id: str, edit: SessionEdit
    ) -> SessionDocument | None:
        """Apply `edit` atomically; the session after, or None."""
        ...


def apply_edit(doc: SessionDocument, edit: SessionEdit) -> SessionDocument:
    """The session after `edit` (the in-memory twin of the Mongo update)."""
    out = doc
    if edit.context is not None:
        lines = list(edit.context) if edit.replace else [*doc.context, *edit.context][-edit.keep :]
        out = replace(out, context=lines)

    def merged(old: dict[str, Any], given: Mapping[str, Any] | None) -> dict[str, Any]:
        if given is None:
            return old
        return dict(given) if edit.replace else {**old, **given}

    out = replace(
        out,
        entities=merged(doc.entities, edit.entities),
        state=merged(doc.state, edit.state),
        metadata=merged(doc.metadata, edit.metadata),
    )
    expires = edit.at + edit.ttl_ms
    return replace(
        out,
        last_accessed_at=max(doc.last_accessed_at, edit.at),
        expires_at=max(doc.expires_at or expires, expires),
    )


def _checked(where: TenantFilter, session_id: str) -> TenantFilter:
    if not where.agent_wallet.strip():
        raise InputRejected("agentWallet is required")
    if not session_id.strip():
        raise InputRejected("session id is required")
    return where.exact()


def _missing(session_id: str) -> NotFound:
    return NotFound(f"working session {session_id!r} not found")


def context_lines(lines: list[str]) -> list[str]:
    """Caller lines trimmed and cut to `LINE_CHARS`; blank ones dropped."""
    if len(lines) > MAX_CONTEXT_LINES:
        raise InputRejected(f"context has more than {MAX_CONTEXT_LINES} lines")
    return [line.strip()[:LINE_CHARS] for line in lines if line.strip()]


async def get_session(
    store: SessionStore, where: TenantFilter, session_id: str, *, at: int
) -> SessionDocument:
    """The session, its `lastAccessedAt` moved to `at` (reference §7.2: a read touches it).
    NotFound when absent or outside `where`."""
    doc = await store.touch(_checked(where, session_id), session_id, at)
    if doc is None:
        raise _missing(session_id)
    return doc


async def update_session(
    store: SessionStore, where: TenantFilter, session_id: str, edit: SessionEdit
) -> SessionDocument:
    """Apply `edit` (see `SessionEdit`; context lines cleaned by `context_lines`); the
    session after. NotFound when absent or outside `where`; InputRejected for bad input."""
    where = _checked(where, session_id)
    if edit.keep < 1 or edit.ttl_ms <= 0:
        raise InputRejected("keep and ttl must be positive")
    if edit.context is not None:
        edit = replace(edit, context=context_lines(edit.context))
    doc = await store.edit(where, session_id, edit)
    if doc is None:
        raise _missing(session_id)
    return doc


def session_scope(doc: SessionDocument) -> Scope:
    """The scope to announce a change of `doc` under (its thread included)."""
    return scope_of(doc.scope)
