"""The MCP section: the tenant the MCP server (`mnemostream mcp`) acts for, and where its
HTTP transport listens. Over stdio the configured agent (and user, thread) is the scope of
every tool; over HTTP the caller's gateway credential decides, and these only fill in what
it leaves open (docs/integrations.md)."""

from __future__ import annotations

from pydantic import Field

from schemas.scope import MAX_ID_CHARS, Id
from services.settings.base import Section


class McpSettings(Section):
    """The MCP server's tenant and HTTP address."""

    agent: Id | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_ID_CHARS,
        validation_alias="mcp_agent",
        description=(
            "The agentWallet of the MCP server's tools (`mnemostream mcp --agent`). Required "
            "over stdio; over HTTP a tenant credential's own agent is used, and this must "
            "match it when set."
        ),
    )
    user: Id | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_ID_CHARS,
        validation_alias="mcp_user",
        description=(
            "The userAddress of the MCP server's tools (`--user`); unset: the agent's own "
            "memory. A credential confined to a user overrides it only by being equal to it."
        ),
    )
    thread: Id | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_ID_CHARS,
        validation_alias="mcp_thread",
        description=(
            "The threadId of the MCP server's tools (`--thread`): turns are recorded in it "
            "and recall's working and scene layers read it. Unset: turns go to thread "
            "`mcp` and recall reads every thread of the user."
        ),
    )
    host: str = Field(
        default="127.0.0.1",
        validation_alias="mcp_host",
        description="Bind address of `mnemostream mcp --http PORT`.",
    )
