"""workflows group: stores `WorkflowCheckpointRecorded` events as `session` rows of the
workflow wallet (reference §14) and announces `MemoryChanged` (vectors); answers
`ReliabilityRequest` (request-reply on `memory.workflows.reliability.v1`) from the
request's own tenant only."""

from __future__ import annotations

import logging

from faststream.kafka import KafkaRouter
from faststream.kafka.annotations import KafkaMessage
from pydantic import ValidationError

from engine.errors import MemoryError_
from engine.ingest.workflows import checkpoint_of, read_reliability, record_checkpoint
from engine.scoping import tenant_filter
from schemas import topics
from schemas.events import WorkflowCheckpointRecorded
from schemas.ids import to_ms
from schemas.requests import ReliabilityReply, ReliabilityRequest
from schemas.scope import Scope, first_error
from services.runtime import Runtime
from services.stream.batches import one_by_one
from services.stream.consumers import EXPIRED, GroupRouter, expired
from services.stream.metrics import Metrics

GROUP = "workflows"
log = logging.getLogger(__name__)


def router(rt: Runtime, metrics: Metrics | None) -> KafkaRouter:
    group = GroupRouter(GROUP, rt, metrics)

    async def record(event: WorkflowCheckpointRecorded) -> None:
        checkpoint = checkpoint_of(event)
        await record_checkpoint(rt.memory, rt.embedder, checkpoint, to_ms(event.occurred_at))
        # the row's own scope: no mode (reference §14)
        written = Scope.model_validate(
            {
                "agentWallet": checkpoint.workflow_wallet,
                "userAddress": checkpoint.user_id,
                "threadId": checkpoint.run_id,
            }
        )
        await group.changes.announce(event, written, ["vectors"])

    group.on_events(
        topics.WORKFLOWS,
        WorkflowCheckpointRecorded,
        one_by_one(record),
        name="on_workflow_checkpoint_recorded",
    )

    @group.replier(topics.RELIABILITY, part="reliability")
    async def on_reliability_request(message: KafkaMessage) -> ReliabilityReply:
        if expired(message):
            return ReliabilityReply(error=EXPIRED)
        try:
            request = ReliabilityRequest.model_validate_json(message.body)
            where = tenant_filter(request.scope, durable=True)
            result = await read_reliability(rt.memory, where, request.agent, request.last)
        except ValidationError as exc:
            return ReliabilityReply(error=first_error(exc))
        except MemoryError_ as exc:
            log.warning("reliability request failed: %s", exc)
            return ReliabilityReply(error=str(exc))
        return ReliabilityReply(
            agent=request.agent,
            runs=result.runs,
            graded=result.graded,
            success_rate=result.success_rate,
            avg_quality=result.avg_quality,
        )

    return group.router
