"""Who is calling, and which tenant it may act for. Checked on every `/api/memory` route; the
probes (`/livez`, `/readyz`, `/healthz`, `/metrics`) are public by design (docs/security.md).

Credentials (`services.settings`):

* A **tenant key** (`MNEMOSTREAM_GATEWAY_API_KEYS`, sent as `X-API-Key: <key>` or
  `Authorization: Bearer <key>`, compared in constant time) acts only inside its tenant: its
  `agent`, and its `user` when it names one.
* An **operator key** (`MNEMOSTREAM_GATEWAY_OPERATOR_KEYS`) acts for every tenant.
* A **JWT** signed with `MNEMOSTREAM_GATEWAY_JWT_SECRET` (`…_JWT_ALGORITHM`, the only
  algorithm accepted) must carry `exp`, and its lifetime — `exp − iat`, or `exp − now` for a
  token without `iat` (an `iat` in the future is refused) — may not exceed
  `…_JWT_MAX_TTL_SECONDS`. Its `agent` claim (alias `agentWallet`) and optional `user` claim
  (alias `userAddress`) confine it like a tenant key; only a token whose `scope` claim holds
  `operator` (space-separated, or a list) names no agent, and acts for every tenant. A token
  that is both (operator scope and a tenant claim) is refused. `mint_token` writes these.
* Nothing configured ⇒ the gateway refuses to start, unless `gateway_allow_anonymous` is set
  explicitly (every caller is then an operator).

A confined caller (`Principal.agent` set): a request naming another agentWallet, or another
userAddress when the credential has a user, is 403; a request naming none is given the
credential's own (`Principal.fill`), so a user-confined credential never reaches the agent's
user-less rows. Operations over every user of an agent (job records and jobs, the eval run
list) need a credential not confined to a user; `cleanup` (every tenant) an operator.

Credentials are never logged; failures say what was wrong, never what was sent.
"""

from __future__ import annotations

import hmac
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import jwt
from fastapi import Depends, Request, Security
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from schemas.scope import Scope, id_problem
from services.gateway.errors import ApiError
from services.settings import Settings

AGENT_CLAIMS = ("agent", "agentWallet")
USER_CLAIMS = ("user", "userAddress")
OPERATOR_SCOPE = "operator"
"""The `scope` claim value of a token that acts for every tenant."""
AGENT_KEYS = ("agentWallet", "agent_id", "agent_wallet")
USER_KEYS = ("userAddress", "user_id", "user_address")
CHALLENGE = {"WWW-Authenticate": "Bearer"}
OTHER_AGENT = "this credential may not access another agentWallet"
OTHER_USER = "this credential may not access another userAddress"
USER_CONFINED = (
    "this operation spans every user of the agent: a credential confined to one "
    "userAddress may not use it"
)


class GatewayNotSecured(RuntimeError):
    """No credential is configured and anonymous access was not allowed."""


def _names(data: Mapping[str, Any], keys: Sequence[str]) -> bool:
    """Whether a loose input names one of `keys` (a non-empty string: else it is absent)."""
    return any(isinstance(data.get(k), str) and data[k] != "" for k in keys)


@dataclass(frozen=True, slots=True)
class Principal:
    """An authenticated caller: `agent` set ⇒ confined to that agentWallet (and to `user`
    when set); `agent` None ⇒ an operator (every tenant)."""

    kind: Literal["tenant_key", "operator_key", "jwt", "anonymous"]
    subject: str | None = None
    agent: str | None = None
    user: str | None = None

    @property
    def operator(self) -> bool:
        return self.agent is None

    @property
    def actor(self) -> str:
        """Who this caller is in the item history: `jwt:<sub>` for a token with a subject,
        else the kind of credential with its tenant (`tenant_key:<agent>[/<user>]`,
        `operator_key`, `anonymous`)."""
        if self.kind == "jwt" and self.subject:
            return f"jwt:{self.subject}"
        if self.agent is None:
            return self.kind
        return f"{self.kind}:{self.agent}" + (f"/{self.user}" if self.user else "")

    def fill(self, data: dict[str, Any]) -> None:
        """Give a loose input that names no agent (user) the credential's own."""
        if self.agent is not None and not _names(data, AGENT_KEYS):
            data["agentWallet"] = self.agent
        if self.user is not None and not _names(data, USER_KEYS):
            data["userAddress"] = self.user

    def allow(self, scope: Scope) -> None:
        """Raise 403 when this caller may not act inside `scope`."""
        if self.agent is None:
            return
        if scope.agent_wallet != self.agent:
            raise ApiError(403, OTHER_AGENT)
        if self.user is not None and scope.user_address != self.user:
            raise ApiError(403, OTHER_USER)

    def agent_wide(self) -> None:
        """Raise 403 for a credential confined to one user (the operation spans them all)."""
        if self.user is not None:
            raise ApiError(403, USER_CONFINED)

    def allow_agent(self, agent_wallet: str) -> None:
        """Raise 403 unless this caller may act on every user of `agent_wallet`."""
        self.agent_wide()
        if self.agent is not None and agent_wallet != self.agent:
            raise ApiError(403, OTHER_AGENT)

    def agent_or(self, agent_wallet: str | None) -> str | None:
        """The agent of an agent-wide operation: the given one (checked), else the caller's
        own (None for an operator that named none)."""
        if agent_wallet is None:
            self.agent_wide()
            return self.agent
        self.allow_agent(agent_wallet)
        return agent_wallet


def unauthorized(message: str) -> ApiError:
    return ApiError(401, message, headers=CHALLENGE)


@dataclass(frozen=True, slots=True)
class JwtRules:
    """How gateway JWTs are checked (and minted)."""

    secret: str
    algorithm: str = "HS256"
    max_ttl_seconds: int = 86_400


TIME_CLAIMS = ("exp", "nbf", "iat")
"""The claims that are times: JSON numbers of seconds since epoch (RFC 7519 NumericDate)."""


def _scopes(claims: Mapping[str, Any]) -> list[str]:
    value = claims.get("scope")
    if isinstance(value, str):
        return value.split()
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    return []


def _id_claim(claims: Mapping[str, Any], names: Sequence[str]) -> str | None:
    """The first present claim of `names`, checked like every id (401 when unusable)."""
    name = next((n for n in names if n in claims), None)
    if name is None:
        return None
    value = claims[name]
    if not isinstance(value, str) or not value:
        raise unauthorized(f"invalid token: the {names[0]} claim must be a non-empty string")
    problem = id_problem(value)
    if problem is not None:
        raise unauthorized(f"invalid token: the {names[0]} claim {problem}")
    return value


class Authenticator:
    """Checks credentials against the configured keys and JWT rules."""

    def __init__(
        self,
        keys: Sequence[tuple[str, Principal]],
        jwt_rules: JwtRules | None,
        *,
        allow_anonymous: bool = False,
    ) -> None:
        if not keys and jwt_rules is None and not allow_anonymous:
            raise GatewayNotSecured(
                "the gateway needs MNEMOSTREAM_GATEWAY_API_KEYS, "
                "MNEMOSTREAM_GATEWAY_OPERATOR_KEYS or MNEMOSTREAM_GATEWAY_JWT_SECRET "
                "(or MNEMOSTREAM_GATEWAY_ALLOW_ANONYMOUS=true, explicitly, for development)"
            )
        self._keys = [(key.encode(), who) for key, who in keys]
        self._jwt = jwt_rules
        self._anonymous = allow_anonymous and not keys and jwt_rules is None

    @classmethod
    def from_settings(cls, settings: Settings) -> Authenticator:
        keys = [
            (k.key.get_secret_value(), Principal("tenant_key", agent=k.agent, user=k.user))
            for k in settings.gateway.api_keys
        ]
        keys += [
            (k.get_secret_value(), Principal("operator_key"))
            for k in settings.gateway.operator_keys
        ]
        secret = settings.gateway.jwt_secret
        rules = (
            JwtRules(
                secret.get_secret_value(),
                settings.gateway.jwt_algorithm,
                settings.gateway.jwt_max_ttl_seconds,
            )
            if secret is not None
            else None
        )
        return cls(keys, rules, allow_anonymous=settings.gateway.allow_anonymous)

    def _key(self, candidate: str) -> Principal | None:
        given = candidate.encode()
        found = None
        for key, who in self._keys:  # every key is compared (no early exit), in constant time
            if hmac.compare_digest(given, key):
                found = who
        return found

    def check(self, api_key: str | None, bearer: str | None) -> Principal:
        """The caller of a request with these header values; 401 when none is valid."""
        if self._anonymous:
            return Principal("anonymous")
        if api_key is not None:
            who = self._key(api_key)
            if who is None:
                raise unauthorized("invalid API key")
            return who
        if bearer is None:
            raise unauthorized("missing credentials: send X-API-Key or Authorization: Bearer")
        who = self._key(bearer)
        if who is not None:
            return who
        if self._jwt is None:
            raise unauthorized("invalid API key")
        return self.decode(bearer)

    def decode(self, token: str) -> Principal:
        """The principal of a JWT signed with the secret; 401 if it is not an acceptable one."""
        assert self._jwt is not None  # noqa: S101 - checked by the caller
        rules = self._jwt
        try:
            claims = jwt.decode(
                token, rules.secret, algorithms=[rules.algorithm], options={"require": ["exp"]}
            )
        except jwt.ExpiredSignatureError:
            raise unauthorized("token expired") from None
        except jwt.MissingRequiredClaimError:
            raise unauthorized("invalid token: the exp claim is required") from None
        except jwt.InvalidTokenError:
            raise unauthorized("invalid token") from None
        for name in TIME_CLAIMS:  # RFC 7519 NumericDate: PyJWT takes "9999999999" too
            value = claims.get(name)
            if name in claims and (isinstance(value, bool) or not isinstance(value, int | float)):
                raise unauthorized(f"invalid token: the {name} claim must be a number")
        start = int(claims["iat"]) if "iat" in claims else int(time.time())
        if int(claims["exp"]) - start > rules.max_ttl_seconds:
            raise unauthorized(
                f"invalid token: its lifetime exceeds the maximum of {rules.max_ttl_seconds} s"
            )
        agent, user = _id_claim(claims, AGENT_CLAIMS), _id_claim(claims, USER_CLAIMS)
        subject = claims.get("sub")
        subject = subject if isinstance(subject, str) else None
        if OPERATOR_SCOPE in _scopes(claims):
            if agent is not None or user is not None:
                raise unauthorized("invalid token: an operator token names no agent or user")
            return Principal("jwt", subject)
        if agent is None:
            raise unauthorized(
                f'invalid token: the agent claim is required (or scope "{OPERATOR_SCOPE}")'
            )
        return Principal("jwt", subject, agent, user)


def mint_token(
    rules: JwtRules,
    *,
    ttl_seconds: int,
    agent: str | None = None,
    user: str | None = None,
    operator: bool = False,
    subject: str | None = None,
    now: float | None = None,
) -> str:
    """A token the gateway accepts: for `agent` (and `user`), or with `operator` for every
    tenant; issued `now` (default: the clock), expiring `ttl_seconds` later. `ValueError`
    for a combination the gateway would refuse."""
    if operator == (agent is not None):
        raise ValueError("a token is either for one agent or an operator's")
    if user is not None and agent is None:
        raise ValueError("a token for a user names its agent too")
    if not 0 < ttl_seconds <= rules.max_ttl_seconds:
        raise ValueError(
            f"the lifetime must be between 1 s and the gateway's maximum of "
            f"{rules.max_ttl_seconds} s (MNEMOSTREAM_GATEWAY_JWT_MAX_TTL_SECONDS)"
        )
    for name, value in (("agent", agent), ("user", user)):
        if value == "":
            raise ValueError(f"{name} is empty")
        problem = id_problem(value) if value is not None else None
        if problem is not None:
            raise ValueError(f"{name} {problem}")
    issued = int(time.time() if now is None else now)
    claims: dict[str, Any] = {"iat": issued, "exp": issued + ttl_seconds}
    if subject is not None:
        claims["sub"] = subject
    if operator:
        claims["scope"] = OPERATOR_SCOPE
    else:
        claims["agent"] = agent
        if user is not None:
            claims["user"] = user
    return jwt.encode(claims, rules.secret, algorithm=rules.algorithm)


_api_key = APIKeyHeader(name="X-API-Key", auto_error=False, scheme_name="ApiKey")
_bearer = HTTPBearer(
    auto_error=False,
    scheme_name="Bearer",
    description="An API key, or a JWT with `exp` whose `agent` (and `user`) claims confine "
    'it to one tenant (or `scope: "operator"` for every tenant).',
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
