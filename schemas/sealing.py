"""The ingress of sealed deployments (issue 31): an agent runtime that must not hold the key
publishes its event wrapped in an `IngressEvent` to `topics.INGRESS`; the `sealing` group
seals the event under its tenant's key and publishes it to `topic`, keyed by `key`."""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import Field

from schemas import topics
from schemas.events import Contract
from schemas.limits import MAX_MESSAGE_BYTES
from schemas.scope import Id

IngressTarget = Literal[
    "memory.turns.v1", "memory.remember.v1", "memory.knowledge.v1", "memory.workflows.v1"
]
assert set(get_args(IngressTarget)) == set(topics.INGRESS_TARGETS)  # noqa: S101 - one list


class IngressEvent(Contract):
    """One event on its way to its source topic. `event` is the event's JSON text, sealed as
    it is; `agent` and `user` name the tenant whose key seals it (the groups refuse an
    opened event whose scope names another tenant)."""

    topic: IngressTarget
    key: str = Field(max_length=2_048)
    agent: Id = Field(min_length=1, max_length=512)
    user: Id | None = Field(default=None, max_length=512)
    event: str = Field(min_length=2, max_length=MAX_MESSAGE_BYTES)
