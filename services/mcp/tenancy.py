"""Whose memory a tool call reaches: the server's configured tenant, narrowed by the caller's
credential over HTTP. No tool takes an agent, user or thread argument, so a model cannot name
another tenant; the rules below decide alone.

* stdio: the configured `agent` (required), `user` and `thread` (`McpSettings`): whoever
  starts the process chose them.
* HTTP: the gateway credential of the request (`services.gateway.auth.Principal`):
  - a tenant credential acts for its own agent; a configured agent must equal it. A
    credential confined to a user acts for that user (a configured user must equal it); an
    agent-wide one for the configured user, or the agent's own memory when none is set;
  - an operator credential (or an anonymous gateway, development only) acts for the
    configured tenant, and is refused when no agent is configured.

A refusal is a `Refused` error with the gateway's message, shown to the model as the tool's
error.
"""

from __future__ import annotations

from dataclasses import dataclass

from schemas.scope import Scope, id_problem
from services.gateway.auth import OTHER_AGENT, OTHER_USER, Principal

__all__ = ["Refused", "Tenancy"]

NO_AGENT = (
    "this MCP server has no agent configured (mnemostream mcp --agent, or "
    "MNEMOSTREAM_MCP_AGENT): only a credential confined to an agent can use it"
)


class Refused(PermissionError):
    """The caller may not act for the tenant it would reach."""


@dataclass(frozen=True, slots=True)
class Tenancy:
    """The configured tenant (any part may be unset; stdio needs the agent)."""

    agent: str | None = None
    user: str | None = None
    thread: str | None = None

    def __post_init__(self) -> None:
        """`ValueError` for a part that is not a usable id."""
        for name, value in (("agent", self.agent), ("user", self.user), ("thread", self.thread)):
            problem = "is empty" if value == "" else id_problem(value) if value else None
            if problem is not None:
                raise ValueError(f"the MCP server's {name} {problem}")

    def scope(self, caller: Principal | None) -> Scope:
        """The scope of a tool call: `caller` is the request's credential over HTTP, None
        over stdio. `Refused` when the credential and the configuration disagree."""
        agent, user = self.agent, self.user
        if caller is not None and caller.agent is not None:
            if agent is not None and agent != caller.agent:
                raise Refused(OTHER_AGENT)
            if caller.user is not None and user is not None and user != caller.user:
                raise Refused(OTHER_USER)
            agent, user = caller.agent, caller.user or user
        if agent is None:
            raise Refused(NO_AGENT)
        body = {"agentWallet": agent, "userAddress": user, "threadId": self.thread}
        return Scope.model_validate({k: v for k, v in body.items() if v is not None})
