"""`Settings` pointing at the session's real stack (see the `stack` fixture in conftest)."""

from __future__ import annotations

from typing import Any

from pydantic import SecretStr

from services.endpoints import Endpoints
from services.settings import Settings


def make_settings(stack: Endpoints, db: str, **extra: Any) -> Settings:
    """Settings for `stack`'s Kafka, MongoDB and Redis, the database `db`, and any `extra`."""
    return Settings(
        kafka_bootstrap=stack.kafka_bootstrap,
        mongo_uri=SecretStr(stack.mongo_uri),
        redis_url=SecretStr(stack.redis_url),
        mongo_db=db,
        **extra,
    )
