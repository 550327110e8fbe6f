"""The launcher's records in ``<state_dir>/infra.json``: one `Record` per service.

The file's format and its reading for endpoints are `services.endpoints`'; this module writes
it and reads back the launcher's own fields (PIDs, ports, logs, start times).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from services.endpoints import ServiceName, read_services, state_path

__all__ = ["Record", "read_records", "write_state"]


@dataclass
class Record:
    """One service in ``infra.json``."""

    endpoint: str
    managed: bool  # started by us (True) or handed in as a URL (False)
    pid: int | None = None
    port: int | None = None
    log: str | None = None
    argv: list[str] = field(default_factory=list)
    start_ticks: int | None = None  # /proc/<pid>/stat field 22: guards against PID reuse

    def to_json(self) -> dict[str, Any]:
        return {
            "endpoint": self.endpoint,
            "managed": self.managed,
            "pid": self.pid,
            "port": self.port,
            "log": self.log,
            "argv": self.argv,
            "start_ticks": self.start_ticks,
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Record:
        pid, port, ticks = raw.get("pid"), raw.get("port"), raw.get("start_ticks")
        log_path = raw.get("log")
        return cls(
            endpoint=str(raw.get("endpoint", "")),
            managed=bool(raw.get("managed", False)),
            pid=int(pid) if pid is not None else None,
            port=int(port) if port is not None else None,
            log=str(log_path) if log_path is not None else None,
            argv=[str(a) for a in raw.get("argv", [])],
            start_ticks=int(ticks) if ticks is not None else None,
        )


def write_state(state_dir: Path, records: dict[ServiceName, Record], *, ready: bool) -> None:
    """Replace ``state_dir/infra.json`` atomically (write a temporary file, rename it)."""
    endpoints = {name: rec.endpoint for name, rec in records.items()}
    payload = {
        "version": 1,
        "written_at": datetime.now(UTC).isoformat(),
        "ready": ready,
        "endpoints": {
            "kafka_bootstrap": endpoints.get("kafka"),
            "mongo_uri": endpoints.get("mongo"),
            "redis_url": endpoints.get("redis"),
        },
        "services": {name: rec.to_json() for name, rec in records.items()},
    }
    path = state_path(state_dir)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)


def read_records(state_dir: Path) -> dict[ServiceName, Record] | None:
    """The recorded services, or None when there is no state file; `InfraError` when it
    cannot be read."""
    services = read_services(state_dir)
    if services is None:
        return None
    return {name: Record.from_json(raw) for name, raw in services.items()}
