"""`TenantKeyStore` in a dict (the in-memory runtime, unit tests)."""

from __future__ import annotations

from collections.abc import Sequence

from engine.sealing import Tenant, WrappedKey


class InMemoryTenantKeys:
    """The tenants' wrapped data keys, one per tenant; the first `add` wins."""

    def __init__(self) -> None:
        self.keys: dict[Tenant, WrappedKey] = {}

    async def find(self, tenants: Sequence[Tenant]) -> dict[Tenant, WrappedKey]:
        return {t: self.keys[t] for t in tenants if t in self.keys}

    async def add(self, key: WrappedKey) -> WrappedKey:
        return self.keys.setdefault(key.tenant, key)

    async def delete(self, agent_wallet: str, user_address: str) -> int:
        return 1 if self.keys.pop((agent_wallet, user_address), None) is not None else 0
