"""The gateway section: where the HTTP gateway listens and whom it lets in (API keys, operator
keys, JWT). Every key names exactly one caller; a key is confined to one tenant unless it is an
operator key."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator
from pydantic_settings import NoDecode

from schemas.scope import MAX_ID_CHARS, Id
from services.settings.base import Section, split_keys

TENANT_KEYS_FORMAT = (
    'MNEMOSTREAM_GATEWAY_API_KEYS must be a JSON list of {"key", "agent", "user"?} objects: '
    "every API key is confined to one tenant (a key for every tenant is an operator key: "
    "MNEMOSTREAM_GATEWAY_OPERATOR_KEYS)"
)

JWT_SECRET_BYTES = {"HS256": 32, "HS384": 48, "HS512": 64}
"""Shortest gateway JWT secret per algorithm: the size of its hash (RFC 7518 §3.2)."""


class TenantKey(BaseModel):
    """A gateway API key and the tenant it acts for: `agent`, and only `user` when set."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    key: SecretStr
    agent: Id = Field(min_length=1, max_length=MAX_ID_CHARS)
    user: Id | None = Field(default=None, min_length=1, max_length=MAX_ID_CHARS)


class GatewaySettings(Section):
    """The HTTP gateway: its address and its credentials."""

    host: str = Field(
        default="127.0.0.1",
        validation_alias="gateway_host",
        description="HTTP gateway bind address.",
    )
    port: int = Field(
        default=8080,
        ge=1,
        le=65535,
        validation_alias="gateway_port",
        description="HTTP gateway port.",
    )
    api_keys: Annotated[list[TenantKey], NoDecode] = Field(
        default_factory=list,
        validation_alias="gateway_api_keys",
        description=(
            'Gateway API keys, each confined to one tenant: a JSON list of `{"key": …, '
            '"agent": …, "user": …}` objects (`user` optional), sent as `X-API-Key` or '
            "`Authorization: Bearer`. Each acts only for its agent, and its user when set "
            "([security.md](security.md)). A bare key is refused."
        ),
    )
    operator_keys: Annotated[list[SecretStr], NoDecode] = Field(
        default_factory=list,
        validation_alias="gateway_operator_keys",
        description="Gateway operator keys (comma-separated or a JSON list): each acts for "
        "every tenant. For operators' tools, not for agent runtimes.",
    )
    jwt_secret: SecretStr | None = Field(
        default=None,
        validation_alias="gateway_jwt_secret",
        description=(
            "Secret of gateway JWTs (`Authorization: Bearer`): a token acts for the tenant of"
            ' its `agent` (and `user`) claims, or for every tenant with `scope: "operator"`. '
            "At least 32, 48 or 64 bytes for HS256, HS384, HS512; a token needs `exp`; "
            "`mnemostream token mint` signs with it."
        ),
    )
    jwt_algorithm: Literal["HS256", "HS384", "HS512"] = Field(
        default="HS256",
        validation_alias="gateway_jwt_algorithm",
        description="Algorithm of gateway JWTs (the only one accepted).",
    )
    jwt_max_ttl_seconds: int = Field(
        default=86_400,
        ge=60,
        le=31_536_000,
        validation_alias="gateway_jwt_max_ttl_seconds",
        description="Longest accepted JWT lifetime: `exp − iat` (or `exp − now` without `iat`).",
    )
    allow_anonymous: bool = Field(
        default=False,
        validation_alias="gateway_allow_anonymous",
        description="Serve the gateway without keys or JWT secret (explicit opt-in, dev only).",
    )

    @field_validator("operator_keys", mode="before")
    @classmethod
    def _split_keys(cls, value: Any) -> Any:
        """`a,b` or `["a", "b"]` from the environment (`split_keys`)."""
        return split_keys(value)

    @field_validator("api_keys", mode="before")
    @classmethod
    def _tenant_keys(cls, value: Any) -> Any:
        """A JSON list of `{key, agent, user?}` objects (blank ⇒ none). A bare key is refused
        with the way out, never silently made a key for every tenant."""
        if isinstance(value, str):
            text = value.strip()
            try:
                value = json.loads(text) if text else []
            except json.JSONDecodeError:
                raise ValueError(TENANT_KEYS_FORMAT) from None
        if not isinstance(value, list) or any(isinstance(v, str | SecretStr) for v in value):
            raise ValueError(TENANT_KEYS_FORMAT)
        return value

    @field_validator("jwt_secret", mode="before")
    @classmethod
    def _blank_secret_is_unset(cls, value: Any) -> Any:
        """An empty variable (as compose passes an unset one) means no JWT secret."""
        return None if isinstance(value, str) and not value.strip() else value

    @model_validator(mode="after")
    def _check_credentials(self) -> GatewaySettings:
        """Every key names one caller: none is empty or listed twice (in either list); the
        JWT secret is at least as long as the algorithm's hash (RFC 7518 §3.2)."""
        secret = self.jwt_secret
        shortest = JWT_SECRET_BYTES[self.jwt_algorithm]
        if secret is not None and len(secret.get_secret_value().encode()) < shortest:
            raise ValueError(
                f"MNEMOSTREAM_GATEWAY_JWT_SECRET must be at least {shortest} bytes for "
                f"{self.jwt_algorithm}"
            )
        keys = [k.key for k in self.api_keys] + list(self.operator_keys)
        values = [k.get_secret_value() for k in keys]
        if any(not v.strip() for v in values):
            raise ValueError("a gateway API key is empty")
        if len(set(values)) != len(values):
            raise ValueError(
                "a gateway key is listed twice (MNEMOSTREAM_GATEWAY_API_KEYS, "
                "MNEMOSTREAM_GATEWAY_OPERATOR_KEYS): each key must name exactly one caller"
            )
        return self
