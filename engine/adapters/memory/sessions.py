"""In-memory `SessionStore` (unit tests, the contract suite's twin)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from engine.scoping import TenantFilter
from engine.upkeep.sessions import SessionDocument, SessionEdit, apply_edit


@dataclass
class InMemorySessionStore:
    """`SessionStore` over a dict of documents, for unit tests."""

    docs: dict[str, SessionDocument] = field(default_factory=dict)

    def put(self, doc: SessionDocument) -> None:
        self.docs[doc.scope.document_key(doc.session_id)] = doc

    def _find(self, where: TenantFilter, session_id: str) -> SessionDocument | None:
        exact = where.exact()
        found = [
            d for d in self.docs.values() if d.session_id == session_id and exact.admits(d.scope)
        ]
        return max(found, key=lambda d: d.last_accessed_at, default=None)

    async def touch(self, where: TenantFilter, session_id: str, at: int) -> SessionDocument | None:
        doc = self._find(where, session_id)
        if doc is None:
            return None
        self.put(replace(doc, last_accessed_at=max(doc.last_accessed_at, at)))
        return self._find(where, session_id)

    async def edit(
        self, where: TenantFilter, session_id: str, edit: SessionEdit
    ) -> SessionDocument | None:
        doc = self._find(where, session_id)
        if doc is None:
            return None
        self.put(apply_edit(doc, edit))
        return self._find(where, session_id)
