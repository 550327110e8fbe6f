"""The sections of the pipeline's other workers: fact extraction, and the archives pinned to
IPFS."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, SecretStr

from services.settings.base import Section


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


class ArchiveSettings(Section):
    """Session archives: their encryption key and the Pinata (IPFS) credentials."""

    encryption_key: SecretStr | None = Field(
        default=None,
        validation_alias="archive_encryption_key",
        description=(
            "Base64 of a 32-byte AES-256-GCM key; archives are pinned only encrypted. "
            "Archives are pinned to IPFS only when it and Pinata credentials are set."
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
