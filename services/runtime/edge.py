"""What the edge processes of a deployment (the gateway) open beside their Kafka client: the
event sealer, when they are given the master key (issue 31: a sealed turn that a trusted edge
publishes takes one hop, not two; `services.sdk.sealed_path`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from pymongo import AsyncMongoClient

from engine.adapters.mongo.tenant_keys import MongoTenantKeys, ensure_tenant_keys
from engine.sealing import EventSealer
from services.endpoints import NotConfigured, read_endpoints
from services.runtime.providers import event_sealer
from services.settings import Settings
from services.stream.security import mongo_options


@asynccontextmanager
async def edge_sealer(settings: Settings) -> AsyncIterator[EventSealer | None]:
    """The event sealer on the tenant keys' database (`MNEMOSTREAM_EVENT_KEYS_DB`, else the
    deployment's), its MongoDB client open while the context is; None, and no connection,
    without `MNEMOSTREAM_EVENT_ENCRYPTION_KEY`."""
    if settings.sealing.encryption_key is None:
        yield None
        return
    mongo: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(
        mongo_uri(settings),
        retryWrites=False,
        serverSelectionTimeoutMS=10_000,
        socketTimeoutMS=30_000,
        maxPoolSize=4,
        tz_aware=True,
        **mongo_options(settings),
    )
    try:
        db = mongo[settings.sealing.keys_db or settings.mongo.db]
        await ensure_tenant_keys(db)
        yield event_sealer(settings, MongoTenantKeys(db))
    finally:
        await mongo.close()


def mongo_uri(settings: Settings) -> str:
    """The configured MongoDB URI, else the running local stack's: the edge needs no Redis,
    so it does not ask for the groups' whole set of endpoints."""
    if settings.mongo.uri is not None:
        return settings.mongo.uri.get_secret_value()
    local = read_endpoints(settings.state_dir)
    if local is None:
        raise NotConfigured(
            "MNEMOSTREAM_EVENT_ENCRYPTION_KEY is set but no MongoDB is configured for the "
            "tenant keys: set MNEMOSTREAM_MONGO_URI or run `mnemostream infra up`"
        )
    return local.mongo_uri
