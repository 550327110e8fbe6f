"""The gateway's credentials on the MCP HTTP transport: the MCP SDK's bearer-token check,
answered by the gateway's `Authenticator` (tenant and operator API keys, JWTs; see
`services.gateway.auth`). A key or token is sent as `Authorization: Bearer <credential>`.

The principal travels with the SDK's `AccessToken` (its `claims`), so a tool reads it back
with `caller()`. Its `client_id` names the principal's kind and tenant (never the secret),
which is what the SDK binds an HTTP session to: another credential cannot resume it.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken

from services.gateway.auth import Authenticator, Principal
from services.gateway.errors import ApiError

__all__ = ["GatewayTokenVerifier", "caller"]

Kind = Literal["tenant_key", "operator_key", "jwt", "anonymous"]
KINDS: dict[str, Kind] = {k: k for k in ("tenant_key", "operator_key", "jwt", "anonymous")}


class GatewayTokenVerifier:
    """`mcp.server.auth.provider.TokenVerifier` over the gateway's credential rules."""

    def __init__(self, auth: Authenticator) -> None:
        self._auth = auth

    async def verify_token(self, token: str) -> AccessToken | None:
        """The principal of a valid credential; None (the SDK answers 401) otherwise."""
        try:
            who = self._auth.check(None, token)
        except ApiError:
            return None
        claims: dict[str, Any] = {"kind": who.kind, "agent": who.agent, "user": who.user}
        return AccessToken(
            token=token,
            client_id=json.dumps([who.kind, who.agent, who.user]),
            scopes=[],
            subject=who.subject,
            claims=claims,
        )


def caller() -> Principal | None:
    """The credential of the HTTP request being served (checked by `GatewayTokenVerifier`);
    None without one (stdio)."""
    token = get_access_token()
    claims = token.claims if token is not None else None
    kind = KINDS.get(str(claims.get("kind"))) if claims is not None else None
    if token is None or claims is None or kind is None:
        return None
    agent, user = claims.get("agent"), claims.get("user")
    return Principal(
        kind,
        subject=token.subject,
        agent=agent if isinstance(agent, str) else None,
        user=user if isinstance(user, str) else None,
    )
