"""Where Kafka, MongoDB and Redis are: the `Endpoints` value and the local stack's state file.

`mnemostream infra up` (`services.ops.stack`) writes ``<state_dir>/infra.json``; this module
only reads it, so the composition root and the gateway find a running local stack without
importing the launcher (its process supervision, probes and CLI). The file::

    {"version": 1, "written_at": "<ISO 8601>", "ready": true,
     "endpoints": {"kafka_bootstrap": ..., "mongo_uri": ..., "redis_url": ...},
     "services": {"kafka": {"endpoint": "127.0.0.1:PORT", "managed": true, "pid": ..., ...},
                  "mongo": {...}, "redis": {...}}}

Endpoints are read from ``services.<name>.endpoint``; entries that are not objects are ignored.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal
from urllib.parse import urlsplit, urlunsplit

__all__ = [
    "ENV_KAFKA",
    "ENV_MONGO",
    "ENV_REDIS",
    "SERVICES",
    "STATE_FILE",
    "Endpoints",
    "InfraError",
    "NotConfigured",
    "ServiceName",
    "read_endpoints",
    "read_services",
    "state_path",
]

ENV_KAFKA: Final = "MNEMOSTREAM_KAFKA_BOOTSTRAP"
ENV_MONGO: Final = "MNEMOSTREAM_MONGO_URI"
ENV_REDIS: Final = "MNEMOSTREAM_REDIS_URL"

STATE_FILE: Final = "infra.json"

ServiceName = Literal["kafka", "mongo", "redis"]
SERVICES: Final[tuple[ServiceName, ...]] = ("kafka", "mongo", "redis")


class NotConfigured(RuntimeError):
    """No server URL was configured and no local stack is running."""


class InfraError(RuntimeError):
    """A local server could not be found, started, reached or stopped (or its state file read)."""


@dataclass(frozen=True, repr=False)
class Endpoints:
    """Where the three services are reachable."""

    kafka_bootstrap: str
    mongo_uri: str
    redis_url: str

    def to_env(self) -> dict[str, str]:
        """The ``MNEMOSTREAM_*`` environment variables pointing at these endpoints."""
        return {
            ENV_KAFKA: self.kafka_bootstrap,
            ENV_MONGO: self.mongo_uri,
            ENV_REDIS: self.redis_url,
        }

    def get(self, service: ServiceName) -> str:
        """The endpoint of one service by name."""
        return {"kafka": self.kafka_bootstrap, "mongo": self.mongo_uri, "redis": self.redis_url}[
            service
        ]

    def __repr__(self) -> str:
        # a URI may carry a password: repr (logs, tracebacks, a Runtime's repr) masks it
        return (
            f"Endpoints(kafka_bootstrap={self.kafka_bootstrap!r}, "
            f"mongo_uri={mask_url(self.mongo_uri)!r}, redis_url={mask_url(self.redis_url)!r})"
        )


def state_path(state_dir: Path) -> Path:
    """The state file of the stack recorded in ``state_dir``."""
    return state_dir / STATE_FILE


def read_services(state_dir: Path) -> dict[ServiceName, dict[str, Any]] | None:
    """Each recorded service's entry of ``state_dir/infra.json`` (raw JSON objects, in
    `SERVICES` order), or None when there is no file; `InfraError` when it cannot be read."""
    path = state_path(state_dir)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise InfraError(f"cannot read {path}: {exc}") from exc
    services = raw.get("services", {}) if isinstance(raw, dict) else {}
    return {name: services[name] for name in SERVICES if isinstance(services.get(name), dict)}


def read_endpoints(state_dir: Path) -> Endpoints | None:
    """The endpoints recorded in ``state_dir/infra.json``, or None when there is no stack."""
    services = read_services(Path(state_dir).resolve())
    if services is None or any(name not in services for name in SERVICES):
        return None
    return Endpoints(
        kafka_bootstrap=str(services["kafka"].get("endpoint", "")),
        mongo_uri=str(services["mongo"].get("endpoint", "")),
        redis_url=str(services["redis"].get("endpoint", "")),
    )


def mask_url(url: str) -> str:
    """`url` with the password of its user info replaced by `***` (`scheme://user:***@host`);
    other URLs (and bootstrap lists) unchanged."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return url
    if not password:
        return url
    user = parts.username or ""
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))
