"""The sections of the pipeline's other workers: fact extraction, and the archives (sealed at
rest with their keys, pinned to IPFS)."""

from __future__ import annotations

import base64
import binascii
from typing import Annotated, Any, ClassVar, Literal, Self

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import NoDecode

from services.settings.base import Section, split_keys


class ExtractionSettings(Section):
    """Fact extraction from turns: rules, an OpenAI-compatible LLM, or none; what is kept."""

    extractor: Literal["rules", "llm", "none"] = Field(
        default="rules",
        validation_alias="extractor",
        description="Fact extractor: rule-based (offline), an OpenAI-compatible LLM, or none.",
    )
    llm_base_url: str | None = Field(
        default=None,
        validation_alias="llm_base_url",
        description="Base URL of the OpenAI-compatible API (…/v1/chat/completions).",
    )
    llm_api_key: SecretStr | None = Field(
        default=None, validation_alias="llm_api_key", description="Bearer key of that API."
    )
    llm_model: str = Field(
        default="gpt-4o-mini", validation_alias="llm_model", description="Extraction model."
    )
    llm_timeout_seconds: float = Field(
        default=8.0,
        gt=0,
        validation_alias="llm_timeout_seconds",
        description=("Extraction timeout. A timeout is retried, then the turn is dead-lettered."),
    )
    fact_max_per_turn: int = Field(
        default=5,
        ge=1,
        le=50,
        validation_alias="fact_max_per_turn",
        description="Facts kept per turn.",
    )
    fact_min_confidence: float = Field(
        default=0.6,
        ge=0,
        le=1,
        validation_alias="fact_min_confidence",
        description="Facts below this confidence are dropped.",
    )
    fact_max_chars: int = Field(
        default=240,
        ge=40,
        le=1000,
        validation_alias="fact_max_chars",
        description="Longest fact kept.",
    )


class KeyRing(Section):
    """A current key and previous ones (rotation), each base64 of 32 bytes: an empty variable
    means no key, previous keys are `a,b` or a JSON list, and previous keys need a current
    one. The values never appear in a message. Subclasses declare `encryption_key` and
    `previous_encryption_keys` and name their variables' prefix and what each key does."""

    _prefix: ClassVar[str]
    _roles: ClassVar[str]

    @field_validator("encryption_key", mode="before", check_fields=False)
    @classmethod
    def _blank_key_is_unset(cls, value: Any) -> Any:
        """An empty variable (as compose passes an unset one) means no key."""
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("previous_encryption_keys", mode="before", check_fields=False)
    @classmethod
    def _split_keys(cls, value: Any) -> Any:
        """`a,b` or `["a", "b"]` from the environment (`split_keys`)."""
        return split_keys(value)

    @model_validator(mode="after")
    def _check_keys(self) -> Self:
        current: SecretStr | None = getattr(self, "encryption_key", None)
        previous: list[SecretStr] = getattr(self, "previous_encryption_keys", [])
        if current is not None and archive_key_bytes(current) is None:
            raise ValueError(f"{self._prefix}_ENCRYPTION_KEY {_KEY_FORMAT}")
        for n, key in enumerate(previous, 1):
            if archive_key_bytes(key) is None:
                raise ValueError(f"{self._prefix}_PREVIOUS_ENCRYPTION_KEYS: key {n} {_KEY_FORMAT}")
        if previous and current is None:
            raise ValueError(
                f"{self._prefix}_PREVIOUS_ENCRYPTION_KEYS needs {self._prefix}_ENCRYPTION_KEY: "
                f"{self._roles}"
            )
        return self


class ArchiveSettings(KeyRing):
    """Archives: their encryption keys and the Pinata (IPFS) credentials."""

    _prefix: ClassVar[str] = "MNEMOSTREAM_ARCHIVE"
    _roles: ClassVar[str] = "previous keys open archives, the current key seals them"

    encryption_key: SecretStr | None = Field(
        default=None,
        validation_alias="archive_encryption_key",
        description=(
            "Base64 of a 32-byte AES-256-GCM key. When set, every archive is stored sealed "
            "(its summary, topics, embedding and payload, under a key per agent and user "
            "derived from it, its key id on the document), and archives are pinned to IPFS "
            "only encrypted; unset, archives are stored in clear and never pinned. "
            "Archives are pinned only when it and Pinata credentials are set."
        ),
    )
    previous_encryption_keys: Annotated[list[SecretStr], NoDecode] = Field(
        default_factory=list,
        validation_alias="archive_previous_encryption_keys",
        description=(
            "Keys that sealed archives before the current one (comma-separated or a JSON "
            "list, base64 of 32 bytes each): they open the archives sealed under their key "
            "ids and never seal. Key rotation: make the new key current and list the old one "
            "here. Needs the current key."
        ),
    )
    pinata_jwt: SecretStr | None = Field(
        default=None, validation_alias="pinata_jwt", description="Pinata JWT."
    )
    pinata_api_key: str | None = Field(
        default=None,
        validation_alias="pinata_api_key",
        description=("Pinata API key. With the secret, instead of a JWT."),
    )
    pinata_api_secret: SecretStr | None = Field(
        default=None, validation_alias="pinata_api_secret", description="Pinata API secret."
    )
    pinata_base_url: str = Field(
        default="https://api.pinata.cloud",
        validation_alias="pinata_base_url",
        description="Pinata API base URL.",
    )


_KEY_FORMAT = "must be base64 of 32 bytes (e.g. `openssl rand -base64 32`)"
ARCHIVE_KEY_BYTES = 32


def archive_key_bytes(key: SecretStr) -> bytes | None:
    """The 32 bytes of a base64 archive key, or None when it is not that."""
    try:
        raw = base64.b64decode(key.get_secret_value().strip(), validate=True)
    except (binascii.Error, ValueError):
        return None
    return raw if len(raw) == ARCHIVE_KEY_BYTES else None
