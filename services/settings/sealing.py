"""Sealing the log (issue 31): the master key that wraps each tenant's data key, the
previous master keys (rotation), where the wrapped data keys live, and whether a publisher
sends its events through the sealing group (`docs/security.md#sealed-events`)."""

from __future__ import annotations

from typing import Annotated, ClassVar

from pydantic import Field, SecretStr
from pydantic_settings import NoDecode

from services.settings.pipeline import KeyRing


class SealingSettings(KeyRing):
    """Events sealed under per-tenant data keys; erasing a user deletes their key."""

    _prefix: ClassVar[str] = "MNEMOSTREAM_EVENT"
    _roles: ClassVar[str] = "previous keys unwrap, the current key wraps"

    encryption_key: SecretStr | None = Field(
        default=None,
        validation_alias="event_encryption_key",
        description=(
            "Base64 of a 32-byte master key. When set, the user content of every source "
            "event (turns, remembers, knowledge, workflow checkpoints, extracted facts) and "
            "of embedding requests is sealed (AES-256-GCM) under a data key of its agent and "
            "user, kept in MongoDB wrapped by this key; `forget_user` deletes that data key, "
            "so the user's events in the log, dead letters and backups can no longer be "
            "read. Needed by the consumer groups, and by the gateway if it is to seal what it "
            "publishes itself (one hop; agent runtimes publish through the sealing group "
            "instead: `MNEMOSTREAM_EVENT_INGRESS`). Unset: events are published and "
            "read in clear, as before; a sealed event met is dead-lettered "
            "(`SealedEventNoKey`, redrivable once the key is set)."
        ),
    )
    previous_encryption_keys: Annotated[list[SecretStr], NoDecode] = Field(
        default_factory=list,
        validation_alias="event_previous_encryption_keys",
        description=(
            "Master keys that wrapped data keys before the current one (comma-separated or a "
            "JSON list, base64 of 32 bytes each): they unwrap the data keys wrapped under "
            "their ids, never wrap. Key rotation: make the new key current and list the old "
            "one here. Needs the current key."
        ),
    )
    keys_db: str | None = Field(
        default=None,
        validation_alias="event_keys_db",
        description=(
            "Database of the wrapped data keys (`tenant_keys`); unset ⇒ `MNEMOSTREAM_MONGO_DB`. "
            "A replay into another database reads the keys from here."
        ),
    )
    ingress: bool = Field(
        default=False,
        validation_alias="event_ingress",
        description=(
            "The gateway (like an SDK client made with `ingress=True`) sends turns, "
            "remembers, knowledge and checkpoints to `memory.ingress.v1`, whose `sealing` "
            "group seals them into their source topics: set it where the groups have "
            "`MNEMOSTREAM_EVENT_ENCRYPTION_KEY`, so no runtime needs the key. A gateway "
            "given that key seals them itself and ignores this setting."
        ),
    )
