"""Sealing the log (issue 31): the master key that wraps each tenant's data key, the
previous master keys (rotation), where the wrapped data keys live, and whether a publisher
sends its events through the sealing group (`docs/security.md#sealed-events`)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import NoDecode

from services.settings.base import Section, split_keys
from services.settings.pipeline import archive_key_bytes

_KEY_FORMAT = "must be base64 of 32 bytes (e.g. `openssl rand -base64 32`)"


class SealingSettings(Section):
    """Events sealed under per-tenant data keys; erasing a user deletes their key."""

    encryption_key: SecretStr | None = Field(
        default=None,
        validation_alias="event_encryption_key",
        description=(
            "Base64 of a 32-byte master key. When set, the user content of every source "
            "event (turns, remembers, knowledge, workflow checkpoints, extracted facts) and "
            "of embedding requests is sealed (AES-256-GCM) under a data key of its agent and "
            "user, kept in MongoDB wrapped by this key; `forget_user` deletes that data key, "
            "so the user's events in the log, dead letters and backups can no longer be "
            "read. Needed by the consumer groups only (agent runtimes publish through the "
            "sealing group: `MNEMOSTREAM_EVENT_INGRESS`). Unset: events are published and "
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
            "`MNEMOSTREAM_EVENT_ENCRYPTION_KEY`, so no runtime needs the key."
        ),
    )

    @field_validator("encryption_key", mode="before")
    @classmethod
    def _blank_key_is_unset(cls, value: Any) -> Any:
        """An empty variable (as compose passes an unset one) means no key."""
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("previous_encryption_keys", mode="before")
    @classmethod
    def _split_keys(cls, value: Any) -> Any:
        return split_keys(value)

    @model_validator(mode="after")
    def _check_keys(self) -> SealingSettings:
        """Every key is base64 of 32 bytes; previous keys need a current one (the values
        never appear in the message)."""
        if self.encryption_key is not None and archive_key_bytes(self.encryption_key) is None:
            raise ValueError(f"MNEMOSTREAM_EVENT_ENCRYPTION_KEY {_KEY_FORMAT}")
        for n, key in enumerate(self.previous_encryption_keys, 1):
            if archive_key_bytes(key) is None:
                raise ValueError(
                    f"MNEMOSTREAM_EVENT_PREVIOUS_ENCRYPTION_KEYS: key {n} {_KEY_FORMAT}"
                )
        if self.previous_encryption_keys and self.encryption_key is None:
            raise ValueError(
                "MNEMOSTREAM_EVENT_PREVIOUS_ENCRYPTION_KEYS needs "
                "MNEMOSTREAM_EVENT_ENCRYPTION_KEY: previous keys unwrap, the current key wraps"
            )
        return self
