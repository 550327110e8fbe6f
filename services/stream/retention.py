"""Does the log keep what replay needs? (issue 31: retention as a decision.)

The source topics (`schemas.topics.SOURCES`) are the source of truth: `replay` rebuilds
memory from them. A finite retention there (Apache Kafka's default is 7 days) silently makes
a replay rebuild only the last days. So a group process reads, at start, the retention of
the source topics it consumes and says when one would drop records: a warning in the log,
`mnemostream_source_topic_retention_ms` (-1: every record kept), and a line under `notes` of
`/readyz` (the process stays ready: it works, but the log will not hold all of memory).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from services.stream.security import NO_OPTIONS

log = logging.getLogger(__name__)

RETENTION_KEYS = ("retention.ms", "retention.bytes")


@dataclass(frozen=True, slots=True)
class TopicRetention:
    """What the broker says of one topic's retention. None: not reported (a broker that
    lists only the configs set on a topic, and none was): the broker's default applies."""

    topic: str
    retention_ms: int | None
    retention_bytes: int | None

    @property
    def keeps_everything(self) -> bool:
        """Whether no record is ever dropped: unlimited time and size."""
        return self.retention_ms == -1 and self.retention_bytes in (None, -1)

    def describe(self) -> str:
        """One line for the log and `/readyz`: what is dropped, and what follows for replay."""
        if self.keeps_everything:
            return f"source topic {self.topic} keeps every record"
        if self.retention_ms is None:
            kept = "the broker's default retention (7 days on Apache Kafka)"
        elif self.retention_ms == -1:
            kept = f"records up to {self.retention_bytes} bytes a partition"
        else:
            kept = f"records for {self.retention_ms} ms"
            if self.retention_bytes not in (None, -1):
                kept += f" and up to {self.retention_bytes} bytes a partition"
        return (
            f"source topic {self.topic} keeps {kept}: a replay rebuilds only what it still "
            "holds (set retention.ms=-1 on it; docs/operations.md#keeping-the-log)"
        )


def parse_retention(topic: str, entries: Iterable[tuple[Any, ...]]) -> TopicRetention:
    """The retention of `topic` from its DescribeConfigs entries (name, value, …)."""
    found: dict[str, int | None] = dict.fromkeys(RETENTION_KEYS)
    for entry in entries:
        name, value = entry[0], entry[1]
        if name in found and value is not None:
            with contextlib.suppress(ValueError):
                found[name] = int(value)
    return TopicRetention(topic, found["retention.ms"], found["retention.bytes"])


async def read_retention(
    bootstrap: str,
    topic_names: Iterable[str],
    *,
    kafka_options: Mapping[str, Any] = NO_OPTIONS,
) -> list[TopicRetention]:
    """The retention the broker reports for each of `topic_names` (sorted by name)."""
    names = sorted(set(topic_names))
    if not names:
        return []
    from aiokafka.admin import AIOKafkaAdminClient
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

    admin = AIOKafkaAdminClient(
        bootstrap_servers=bootstrap, client_id="mnemostream-retention", **kafka_options
    )
    await admin.start()
    try:
        responses = await admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, name) for name in names]
        )
    finally:
        await admin.close()
    by_topic: dict[str, TopicRetention] = {}
    for response in responses:
        for error_code, message, _kind, name, entries, *_ in response.resources:
            if error_code:
                log.warning("retention of topic %s not readable: %s", name, message)
                continue
            by_topic[str(name)] = parse_retention(str(name), entries)
    return [by_topic[n] for n in names if n in by_topic]


def report(found: Iterable[TopicRetention]) -> list[str]:
    """Log each source topic that would drop records (a warning); their lines."""
    lines: list[str] = []
    for retention in found:
        if retention.keeps_everything:
            continue
        line = retention.describe()
        log.warning(line, extra={"topic": retention.topic})
        lines.append(line)
    return lines
