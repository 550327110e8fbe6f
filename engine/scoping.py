"""Tenant rules: which stored rows a scope may see, and the cache namespace chain.

Rules (they fix reference §16.3 and §16.20):
* `agentWallet` always matches exactly; ids are case-sensitive everywhere (Mongo and cache
  keys alike, never lower-cased).
* `userAddress` matches exactly; a scope without a user sees only rows stored without a
  user (agent-level memory), never every user's rows.
* Agent knowledge is shared: the memory layers (`TenantFilter.shared_sources`) also admit
  the agent's user-less rows of source `KNOWLEDGE_SOURCE` for a read by any user of that
  agent (issue 17 §4). Only those rows: the agent's other user-less memory stays the agent's,
  another user's rows are never admitted, and `mode` / `haiId` constrain them as any row.
* `mode` / `haiId` constrain only when the scope sets them; a "global" scope also sees rows
  stored without a mode (SDK calls, knowledge, workflow memory: fixes §16.12, where the
  native runtime's `mode: "global"` hid them all). "local" sees local rows only.
* `threadId` constrains thread-scoped layers (working, scene) when set; durable layers
  (vectors and later graph, patterns, archives) ignore it.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, replace
from urllib.parse import quote

from engine.records import ScopeFields
from schemas.requests import ALL_LAYERS
from schemas.scope import Scope

KNOWLEDGE_SOURCE = "knowledge"
"""The `source` of knowledge-document rows (`engine.ingest.knowledge`)."""
SHARED_SOURCES: tuple[str, ...] = (KNOWLEDGE_SOURCE,)
"""Sources whose user-less rows every user of the agent reads (the memory layers)."""


@dataclass(frozen=True, slots=True)
class TenantFilter:
    """What rows a read may return. `user_address=None` means "user-less rows only";
    `mode`, `hai_id`, `thread_id` = None mean "no constraint"."""

    agent_wallet: str
    user_address: str | None
    mode: str | None = None
    hai_id: str | None = None
    thread_id: str | None = None
    shared: bool = False
    """Also admit the agent's user-less rows (agent-wide knowledge such as tool patterns)."""
    shared_sources: tuple[str, ...] = ()
    """Also admit the agent's user-less rows of these `source`s (agent knowledge every user
    of the agent reads). Only rows that carry a source (`memory`) can match them."""

    @property
    def modes(self) -> tuple[str | None, ...] | None:
        """The `mode` values admitted; None means any."""
        if self.mode is None:
            return None
        return ("global", None) if self.mode == "global" else (self.mode,)

    @property
    def users(self) -> tuple[str | None, ...]:
        """The `userAddress` values admitted."""
        if self.shared and self.user_address is not None:
            return (self.user_address, None)
        return (self.user_address,)

    @property
    def widened(self) -> bool:
        """Whether the filter admits user-less rows of `shared_sources` beyond `users`."""
        return bool(self.shared_sources) and None not in self.users

    def exact(self) -> TenantFilter:
        """This filter without its widenings (`shared`, `shared_sources`): the tenant's own
        rows only, what edits and deletes address."""
        if not self.shared and not self.shared_sources:
            return self
        return replace(self, shared=False, shared_sources=())

    def admits(self, row: ScopeFields, source: str | None = None) -> bool:
        """The in-process twin of the adapters' query filter; `source` is the row's (None
        for records without one, which `shared_sources` never admits)."""
        return (
            row.agent_wallet == self.agent_wallet
            and (
                row.user_address in self.users
                or (row.user_address is None and source in self.shared_sources)
            )
            and (self.mode is None or row.mode in (self.modes or ()))
            and (self.hai_id is None or row.hai_id == self.hai_id)
            and (self.thread_id is None or row.thread_id == self.thread_id)
        )


def tenant_filter(
    scope: Scope, *, durable: bool, shared: bool = False, shared_sources: tuple[str, ...] = ()
) -> TenantFilter:
    """The read filter of a scope; durable layers drop the thread constraint; `shared`
    also admits the agent's user-less rows, `shared_sources` those of these sources (never
    another user's)."""
    return TenantFilter(
        agent_wallet=scope.agent_wallet,
        user_address=scope.user_address,
        mode=scope.mode,
        hai_id=scope.hai_id,
        thread_id=None if durable else scope.thread_id,
        shared=shared,
        shared_sources=shared_sources,
    )


def scope_fields(scope: Scope, thread_id: str | None = None) -> ScopeFields:
    """The tenant fields stored on a row written under `scope`."""
    return ScopeFields(
        agent_wallet=scope.agent_wallet,
        user_address=scope.user_address,
        thread_id=thread_id or scope.thread_id,
        mode=scope.mode,
        hai_id=scope.hai_id,
    )


def scope_of(fields: ScopeFields) -> Scope:
    """The scope of stored tenant fields, thread included (the inverse of `scope_fields`):
    what a change to a stored row or session is announced under."""
    return Scope.model_validate(
        {
            "agentWallet": fields.agent_wallet,
            "userAddress": fields.user_address,
            "threadId": fields.thread_id,
            "mode": fields.mode,
            "haiId": fields.hai_id,
        }
    )


def _part(value: str | None) -> str:
    return quote(value, safe="") if value else "_"


def scope_key(
    agent: str,
    mode: str | None = None,
    hai: str | None = None,
    user: str | None = None,
    thread: str | None = None,
) -> str:
    """`a:<agent>:m:<mode>:h:<hai>:u:<user>:t:<thread>` with URI-encoded, case-kept parts."""
    return f"a:{_part(agent)}:m:{_part(mode)}:h:{_part(hai)}:u:{_part(user)}:t:{_part(thread)}"


NAMESPACE_PREFIX = "memory:ns:"
GLOBAL_NAMESPACE = NAMESPACE_PREFIX + "global"
"""Bumped only by maintenance that touches every tenant, never by a normal write (§16.1)."""


def namespace_chain(scope: Scope) -> list[str]:
    """Namespace counters of a scope, broadest first: agent → mode → hai → user → thread.

    A write bumps exactly this chain of its own scope; a read's cache token is derived
    from the global counter plus this chain of the read's scope. The global key is never
    part of a write's chain (fixes reference §16.1: one write no longer invalidates
    every tenant's cache).
    """
    agent, mode, hai = scope.agent_wallet, scope.mode, scope.hai_id
    user, thread = scope.user_address, scope.thread_id
    chain = [scope_key(agent)]
    if mode:
        chain.append(scope_key(agent, mode))
    if hai:
        chain.append(scope_key(agent, mode, hai))
    if user:
        chain.append(scope_key(agent, mode, hai, user))
    if thread:
        chain.append(scope_key(agent, mode, hai, user, thread))
    keys: list[str] = []
    for key in chain:
        full = NAMESPACE_PREFIX + key
        if full not in keys:
            keys.append(full)
    return keys


TOKEN_FAMILIES: dict[str, frozenset[str]] = {
    "patterns": frozenset({"patterns"}),
    "archives": frozenset({"archives"}),
    "relations": frozenset({"graph"}),
}
"""Tenant-level reads kept in process under a counter of their own, and the announced
layers whose writes bump it (issue 28). A turn changes the working buffer, the transcript and
memory rows, never the tenant's patterns, archives or graph links: those reads survive it.
Every write still bumps the scope's own chain (`namespace_chain`), which the query cache,
the text layers and the exact index follow."""


def family_chain(scope: Scope, family: str) -> list[str]:
    """The counters of `family` (a key of `TOKEN_FAMILIES`) along the scope's chain."""
    if family not in TOKEN_FAMILIES:
        raise ValueError(f"unknown token family {family!r}")
    return [
        f"{NAMESPACE_PREFIX}{family}:{key.removeprefix(NAMESPACE_PREFIX)}"
        for key in namespace_chain(scope)
    ]


def shared_chain(scope: Scope) -> list[str]:
    """The counter of the agent's user-less rows (its knowledge every user reads): bumped by
    every write whose scope names no user, whatever its layers (issue 28). A user's read
    widened to them follows it to know whether they changed, so a turn of one user does not
    make every search read the agent's knowledge back from the store."""
    return [f"{NAMESPACE_PREFIX}shared:{scope_key(scope.agent_wallet)}"]


def invalidation_keys(scope: Scope, layers: Collection[str] | None = None) -> list[str]:
    """The counters a write of `layers` under `scope` bumps: the scope's chain, and the chain
    of every family one of the layers feeds. `None`, or a layer this build does not know,
    bumps every family (a write that cannot say what it changed invalidates everything). A
    write that names no user also bumps `shared_chain`."""
    keys = namespace_chain(scope)
    if scope.user_address is None:
        keys.extend(shared_chain(scope))
    unknown = layers is None or any(layer not in ALL_LAYERS for layer in layers)
    for family, fed_by in TOKEN_FAMILIES.items():
        if unknown or any(layer in fed_by for layer in layers or ()):
            keys.extend(family_chain(scope, family))
    return keys
