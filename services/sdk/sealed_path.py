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

from pydantic import BaseModel

from engine.sealing import EventSealer, Tenant
from schemas import topics
from schemas.bodies import topic_label
from schemas.limits import MAX_MESSAGE_BYTES
from schemas.scope import ScopeError
from schemas.sealing import IngressEvent
from services.stream.sealing import tenant_of


def to_ingress(topic: str, key: str, tenant: Tenant, value: bytes) -> bytes:
    """The `IngressEvent` of an event of `tenant` (JSON `value`) for `topic`, keyed by `key`."""
    wrapped = IngressEvent(
        topic=topic,  # one of topics.INGRESS_TARGETS (validated)
        key=key,
        agent=tenant[0],
        user=tenant[1],
        event=value.decode(),
    )
    return wrapped.model_dump_json().encode()


async def routed(
    topic: str,
    key: str,
    event: BaseModel,
    value: bytes,
    *,
    sealer: EventSealer | None,
    ingress: bool,
) -> tuple[str, bytes]:
    """(topic, value) to publish for `event` (JSON `value`): sealed here when a sealer is
    given, sent through the ingress when `ingress`, else as it is. Only the source topics
    the sealing group serves (`topics.INGRESS_TARGETS`) are sealed or rerouted. An envelope
    is about a third longer than its event (base64): `ScopeError` when it no longer fits in
    one message, which every consumer would refuse."""
    tenant = tenant_of(event)  # every ingress target has a scope
    if topic not in topics.INGRESS_TARGETS or tenant is None:
        return topic, value
    if sealer is not None:
        [sealed] = await sealer.seal_many([(tenant, value)])
        if len(sealed) > MAX_MESSAGE_BYTES:
            raise ScopeError(
                f"{topic_label(topic)} is {len(sealed)} bytes sealed; at most "
                f"{MAX_MESSAGE_BYTES} bytes are accepted"
            )
        return topic, sealed
    if ingress:
        return topics.INGRESS, to_ingress(topic, key, tenant, value)
    return topic, value
