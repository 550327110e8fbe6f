"""Forgetting a user: every stored record of one user of one agent, removed for good.

`forget_user` is the erasure behind the MCP `forget` tool (and `MemoryClient.forget_user`):
it removes, not soft-deletes, everything the stream wrote for the user (`ERASED_KINDS`): the
`memory` rows (facts, remembered notes, turn vectors, the user's knowledge, archive rows),
transcripts, working buffers and sessions, relations, patterns, archives and skills, and it
erases the texts of the user's item history (`memory_history`: the old and new contents and
the spoken details of every change; what happened and when stays, issue 31). It is
confined to the exact tenant: the agent's user-less rows (agent knowledge every user reads),
another user's and another agent's are never touched, and a call without a user is refused,
so it cannot erase an agent's own memory by omission.

With sealed events (`engine.sealing`, issue 31) it first deletes the user's data key
(`keys`, counted as `keys`): their events in the Kafka log, their dead letters and any backup
of either can no longer be opened, so a `replay` after the erasure rebuilds nothing of them.
Deleting the key first means an event of the user still in flight is skipped by the groups
instead of writing again what the erasure removes.

Not erased, by design: without sealed events, the Kafka log (its retention applies; a
`replay` rebuilds from what it still holds, as it does for item deletes); content-addressed
document vectors (keyed by a hash of the text, not by tenant), job and eval records (the
agent's operations), and archives already pinned to IPFS (encrypted; the local record goes).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from engine.errors import InputRejected
from engine.scoping import TenantFilter

ERASED_KINDS = (
    "memory",
    "transcripts",
    "working",
    "relations",
    "patterns",
    "archives",
    "skills",
    "history",
    "keys",
)
"""What an erasure counts, in this order (`UserEraser.erase_user`). `history` counts the
user's item-history changes whose texts went: the changes stay, saying what happened and
when, no longer what was said (as a single item's hard delete leaves them). `keys` counts
the user's deleted data key (0 or 1; always 0 without sealed events)."""


class UserEraser(Protocol):
    """Removes one user's records from every store."""

    async def erase_user(self, agent_wallet: str, user_address: str) -> Mapping[str, int]:
        """Remove every record of `user_address` of `agent_wallet` (whatever its thread,
        mode or hai) and nothing else; how many of each of `ERASED_KINDS` were removed."""
        ...


class KeyShredder(Protocol):
    """Deletes a tenant's data key: `engine.sealing.EventSealer` (its cache too) or the
    `TenantKeyStore` itself (a process without the event key still shreds)."""

    async def delete(self, agent_wallet: str, user_address: str) -> int: ...


async def forget_user(
    eraser: UserEraser, where: TenantFilter, keys: KeyShredder | None = None
) -> dict[str, int]:
    """Erase the user of `where` (its thread, mode and hai are ignored: the whole user);
    the counts of `ERASED_KINDS`, every kind present. `InputRejected` without an agent or
    without a user (its widenings, `shared`, are ignored: only the user's own rows go)."""
    if not where.agent_wallet.strip():
        raise InputRejected("agentWallet is required")
    user = where.user_address
    if user is None or not user.strip():
        raise InputRejected(
            "forgetting a user's memory needs a userAddress: the agent's own memory is "
            "never erased this way"
        )
    shredded = 0 if keys is None else await keys.delete(where.agent_wallet, user)
    counts = {**await eraser.erase_user(where.agent_wallet, user), "keys": shredded}
    return {kind: int(counts.get(kind, 0)) for kind in ERASED_KINDS}
