"""`TenantKeyStore` on MongoDB: one document per tenant in `tenant_keys`, its `_id` the JSON
of [agent, user] (ids may hold any character but these brackets' JSON escaping), holding the
wrapped data key, its id and the id of the master key that wrapped it. Creation is an insert
that loses to a concurrent one (duplicate `_id`: the stored key is read back), so a tenant
never has two keys; deletion is by `_id`, the crypto-shredding of `forget_user`."""

from __future__ import annotations

import json
from collections.abc import Sequence

from bson import Binary
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import DuplicateKeyError, PyMongoError

from engine.adapters.mongo.documents import Doc
from engine.errors import DependencyFailed
from engine.sealing import Tenant, WrappedKey

TENANT_KEYS = "tenant_keys"


def tenant_id(tenant: Tenant) -> str:
    """The `_id` of a tenant's key document."""
    return json.dumps(list(tenant), ensure_ascii=False, separators=(",", ":"))


async def ensure_tenant_keys(db: AsyncDatabase[Doc]) -> None:
    """Create the collection at start-up (only `_id` is queried), before any consumer."""
    if TENANT_KEYS not in await db.list_collection_names():
        await db.create_collection(TENANT_KEYS)


class MongoTenantKeys:
    def __init__(self, db: AsyncDatabase[Doc]) -> None:
        self._keys = db[TENANT_KEYS]

    async def find(self, tenants: Sequence[Tenant]) -> dict[Tenant, WrappedKey]:
        ids = [tenant_id(t) for t in tenants]
        try:
            docs = await self._keys.find({"_id": {"$in": ids}}).to_list(None)
        except PyMongoError as exc:
            raise DependencyFailed(f"reading tenant keys failed: {exc}") from exc
        found = (_key(doc) for doc in docs)
        return {key.tenant: key for key in found}

    async def add(self, key: WrappedKey) -> WrappedKey:
        doc = {
            "_id": tenant_id(key.tenant),
            "agentWallet": key.tenant[0],
            "userAddress": key.tenant[1],
            "keyId": key.key_id,
            "wrapped": Binary(key.wrapped),
            "masterKeyId": key.master_id,
            "createdAt": key.created_at,
        }
        try:
            await self._keys.insert_one(doc)
        except DuplicateKeyError:
            found = await self.find([key.tenant])
            if key.tenant in found:
                return found[key.tenant]
            return await self.add(key)  # deleted between the two: try again
        except PyMongoError as exc:
            raise DependencyFailed(f"storing a tenant key failed: {exc}") from exc
        return key

    async def delete(self, agent_wallet: str, user_address: str) -> int:
        try:
            result = await self._keys.delete_one({"_id": tenant_id((agent_wallet, user_address))})
        except PyMongoError as exc:
            raise DependencyFailed(f"deleting the tenant key failed: {exc}") from exc
        return result.deleted_count


def _key(doc: Doc) -> WrappedKey:
    return WrappedKey(
        tenant=(doc["agentWallet"], doc.get("userAddress")),
        key_id=doc["keyId"],
        wrapped=bytes(doc["wrapped"]),
        master_id=doc["masterKeyId"],
        created_at=doc["createdAt"],
    )
