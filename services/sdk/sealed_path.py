"""How a write reaches its source topic in a deployment that seals its events (issue 31,
docs/security.md#sealed-events): the SDK's two paths, chosen when the client is made.

* **Through the ingress** (`ingress=True`): an agent runtime holds no key. The event goes,
  in clear, wrapped in an `IngressEvent`, to `memory.ingress.v1`, and the `sealing` group
  seals it into its source topic: a second hop through the broker and a process.
* **Sealed at the edge** (`sealer=`): a process of the deployment that holds the master key
  (the gateway, given `MNEMOSTREAM_EVENT_ENCRYPTION_KEY`) seals the event itself under its
  tenant's data key and publishes the envelope straight to the source topic, as the sealing
  group would have: one hop, and no clear copy in the ingress topic either.

Either way the groups read the same envelope (`engine.sealing`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from pydantic import BaseModel

from schemas import topics
from schemas.bodies import topic_label
from schemas.limits import MAX_MESSAGE_BYTES
from schemas.scope import Scope, ScopeError
from schemas.sealing import IngressEvent

Tenant = tuple[str, str | None]
"""(agent wallet, user address): whose data key seals an event."""


class Sealer(Protocol):
    """What seals events under their tenants' keys (`engine.sealing.EventSealer`)."""

    async def seal_many(self, items: Sequence[tuple[Tenant, bytes]]) -> list[bytes]:
        """The envelopes of (tenant, event JSON) items, in order."""
        ...


def tenant_of(event: BaseModel) -> Tenant:
    scope: Scope = getattr(event, "scope")  # noqa: B009 - every ingress target has a scope
    return scope.agent_wallet, scope.user_address


def to_ingress(topic: str, key: str, event: BaseModel, value: bytes) -> bytes:
    """The `IngressEvent` of `event` (JSON `value`) for `topic`, keyed by `key`."""
    agent, user = tenant_of(event)
    wrapped = IngressEvent(
        topic=topic,  # one of topics.INGRESS_TARGETS (validated)
        key=key,
        agent=agent,
        user=user,
        event=value.decode(),
    )
    return wrapped.model_dump_json().encode()


async def routed(
    topic: str,
    key: str,
    event: BaseModel,
    value: bytes,
    *,
    sealer: Sealer | None,
    ingress: bool,
) -> tuple[str, bytes]:
    """(topic, value) to publish for `event` (JSON `value`): sealed here when a sealer is
    given, sent through the ingress when `ingress`, else as it is. Only the source topics
    the sealing group serves (`topics.INGRESS_TARGETS`) are sealed or rerouted. An envelope
    is about a third longer than its event (base64): `ScopeError` when it no longer fits in
    one message, which every consumer would refuse."""
    if topic not in topics.INGRESS_TARGETS:
        return topic, value
    if sealer is not None:
        [sealed] = await sealer.seal_many([(tenant_of(event), value)])
        if len(sealed) > MAX_MESSAGE_BYTES:
            raise ScopeError(
                f"{topic_label(topic)} is {len(sealed)} bytes sealed; at most "
                f"{MAX_MESSAGE_BYTES} bytes are accepted"
            )
        return topic, sealed
    if ingress:
        return topics.INGRESS, to_ingress(topic, key, event, value)
    return topic, value
