"""Who is calling: an API key or an HS256 JWT, checked on every route but `/healthz`.

* `X-API-Key: <key>` or `Authorization: Bearer <key>` with one of `gateway_api_keys`
  (compared in constant time) ⇒ an unrestricted caller.
* `Authorization: Bearer <jwt>` signed with `gateway_jwt_secret` (HS256; `exp`/`nbf` are
  checked when present) ⇒ a caller named by `sub`. A token carrying an `agent` claim (alias
  `agentWallet`) may only act for that agentWallet: asking for another one is 403.
* Neither configured ⇒ the gateway refuses to start, unless `gateway_allow_anonymous` is set
  explicitly (every caller is then unrestricted).

Credentials are never logged; failures say what was wrong, never what was sent.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from typing import Annotated, Literal

import jwt
from fastapi import Depends, Request, Security
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from services.gateway.errors import ApiError
from services.settings import Settings

ALGORITHM = "HS256"
AGENT_CLAIMS = ("agent", "agentWallet")
CHALLENGE = {"WWW-Authenticate": "Bearer"}


class GatewayNotSecured(RuntimeError):
    """Neither API keys nor a JWT secret is configured and anonymous access was not allowed."""


@dataclass(frozen=True, slots=True)
class Principal:
    """An authenticated caller. `agent` set ⇒ limited to that agentWallet."""

    kind: Literal["api_key", "jwt", "anonymous"]
    subject: str | None = None
    agent: str | None = None

    def allow(self, agent_wallet: str) -> None:
        """Raise 403 when this caller may not act for `agent_wallet`."""
        if self.agent is not None and agent_wallet != self.agent:
            raise ApiError(403, "this credential may not access another agentWallet")

    def agent_or(self, agent_wallet: str | None) -> str | None:
        """The agentWallet a request is for: the given one (checked), else the caller's own."""
        if agent_wallet is None:
            return self.agent
        self.allow(agent_wallet)
        return agent_wallet


def unauthorized(message: str) -> ApiError:
    return ApiError(401, message, headers=CHALLENGE)


class Authenticator:
    """Checks credentials against the configured keys and JWT secret."""

    def __init__(
        self, api_keys: list[str], jwt_secret: str | None, *, allow_anonymous: bool = False
    ) -> None:
        if not api_keys and not jwt_secret and not allow_anonymous:
            raise GatewayNotSecured(
                "the gateway needs MNEMOSTREAM_GATEWAY_API_KEYS or MNEMOSTREAM_GATEWAY_JWT_SECRET "
                "(or MNEMOSTREAM_GATEWAY_ALLOW_ANONYMOUS=true, explicitly, for development)"
            )
        self._keys = [key.encode() for key in api_keys]
        self._secret = jwt_secret
        self._anonymous = allow_anonymous and not api_keys and not jwt_secret

    @classmethod
    def from_settings(cls, settings: Settings) -> Authenticator:
        secret = settings.gateway_jwt_secret
        return cls(
            [key.get_secret_value() for key in settings.gateway_api_keys],
            secret.get_secret_value() if secret is not None else None,
            allow_anonymous=settings.gateway_allow_anonymous,
        )

    def _is_key(self, candidate: str) -> bool:
        given = candidate.encode()
        # every key is compared (no early exit), each in constant time
        matches = [hmac.compare_digest(given, key) for key in self._keys]
        return any(matches)

    def check(self, api_key: str | None, bearer: str | None) -> Principal:
        """The caller of a request with these header values; 401 when none is valid."""
        if self._anonymous:
            return Principal("anonymous")
        if api_key is not None:
            if self._is_key(api_key):
                return Principal("api_key")
            raise unauthorized("invalid API key")
        if bearer is None:
            raise unauthorized("missing credentials: send X-API-Key or Authorization: Bearer")
        if self._is_key(bearer):
            return Principal("api_key")
        if self._secret is None:
            raise unauthorized("invalid API key")
        return self.decode(bearer)

    def decode(self, token: str) -> Principal:
        """The principal of a JWT signed with the secret; 401 if it is not one."""
        assert self._secret is not None  # noqa: S101 - checked by the caller
        try:
            claims = jwt.decode(token, self._secret, algorithms=[ALGORITHM])
        except jwt.ExpiredSignatureError:
            raise unauthorized("token expired") from None
        except jwt.InvalidTokenError:
            raise unauthorized("invalid token") from None
        agent = next((claims[c] for c in AGENT_CLAIMS if c in claims), None)
        if agent is not None and (not isinstance(agent, str) or not agent.strip()):
            raise unauthorized("invalid token: the agent claim must be a non-empty string")
        subject = claims.get("sub")
        return Principal("jwt", subject if isinstance(subject, str) else None, agent)


_api_key = APIKeyHeader(name="X-API-Key", auto_error=False, scheme_name="ApiKey")
_bearer = HTTPBearer(
    auto_error=False,
    scheme_name="Bearer",
    description="An API key, or an HS256 JWT (an `agent` claim limits it to that agentWallet).",
)


def principal(
    request: Request,
    api_key: Annotated[str | None, Security(_api_key)],
    bearer: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)],
) -> Principal:
    """FastAPI dependency: the request's caller (401 when unauthenticated)."""
    auth: Authenticator = request.app.state.auth
    return auth.check(api_key, bearer.credentials if bearer is not None else None)


Caller = Annotated[Principal, Depends(principal)]
"""Route parameter type: the authenticated caller."""
