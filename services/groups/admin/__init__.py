"""admin group: answers `AdminRequest` on `memory.admin.v1` (patterns, skills, job records,
stats, evals) through the request's `reply_to` topic.

Every operation stays inside the request's scope: a pattern, skill, job or eval run outside
it is reported as not found (HTTP 404), bad input as `error` (400). Results are JSON with the
reference's camelCase keys (reference §9, §10.6, §12, §13.2-§13.3). Promotion writes only
a skill (not a retrieval layer), and an archive pin only stores where the archive was pinned,
so nothing is announced on `memory.changed`.
"""

from __future__ import annotations

import logging

from faststream.kafka import KafkaRouter
from faststream.kafka.annotations import KafkaMessage
from pydantic import ValidationError

from engine.errors import MemoryError_, NotFound
from schemas import topics
from schemas.requests import AdminReply, AdminRequest
from schemas.scope import first_error
from services.groups.admin.operations import OPERATIONS
from services.runtime import Runtime
from services.stream.consumers import EXPIRED, GroupRouter, expired
from services.stream.metrics import Metrics

GROUP = "admin"
log = logging.getLogger(__name__)


def router(rt: Runtime, metrics: Metrics | None) -> KafkaRouter:
    group = GroupRouter(GROUP, rt, metrics)

    @group.replier(topics.ADMIN)
    async def on_admin_request(message: KafkaMessage) -> AdminReply:
        if expired(message):
            return AdminReply(error=EXPIRED)
        try:
            request = AdminRequest.model_validate_json(message.body)
            result = await OPERATIONS[request.op](rt, request)
        except ValidationError as exc:
            return AdminReply(error=first_error(exc))
        except NotFound as exc:
            return AdminReply(not_found=True, error=str(exc))
        except MemoryError_ as exc:
            log.warning("admin request failed: %s", exc)
            return AdminReply(error=str(exc))
        return AdminReply(result=result)

    return group.router
