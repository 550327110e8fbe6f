"""Whose memory an MCP tool call reaches (`services.mcp.tenancy`): the configured tenant,
narrowed by the HTTP caller's gateway credential, never widened by it."""

from __future__ import annotations

import pytest

from services.gateway.auth import Principal
from services.mcp.tenancy import Refused, Tenancy

ALICE_KEY = Principal("tenant_key", agent="0xA", user="alice")
AGENT_KEY = Principal("tenant_key", agent="0xA")
OPERATOR = Principal("operator_key")


def tenant(tenancy: Tenancy, caller: Principal | None) -> tuple[str, str | None, str | None]:
    scope = tenancy.scope(caller)
    return scope.agent_wallet, scope.user_address, scope.thread_id


def test_stdio_is_the_configuration() -> None:
    assert tenant(Tenancy("0xA", "alice", "t1"), None) == ("0xA", "alice", "t1")
    assert tenant(Tenancy("0xA"), None) == ("0xA", None, None)
    with pytest.raises(Refused, match="no agent configured"):
        Tenancy(user="alice").scope(None)


def test_a_tenant_credential_brings_its_own_tenant() -> None:
    assert tenant(Tenancy(), ALICE_KEY) == ("0xA", "alice", None)
    assert tenant(Tenancy("0xA", "alice", "t9"), ALICE_KEY) == ("0xA", "alice", "t9")
    # an agent-wide credential acts for the configured user, or for the agent's own memory
    assert tenant(Tenancy(user="bob"), AGENT_KEY) == ("0xA", "bob", None)
    assert tenant(Tenancy(), AGENT_KEY) == ("0xA", None, None)
    assert tenant(Tenancy(), Principal("jwt", "sub", "0xA", "alice")) == ("0xA", "alice", None)


def test_a_credential_never_reaches_past_the_configuration() -> None:
    with pytest.raises(Refused, match="another agentWallet"):
        Tenancy("0xB").scope(ALICE_KEY)
    with pytest.raises(Refused, match="another userAddress"):
        Tenancy("0xA", "bob").scope(ALICE_KEY)
    with pytest.raises(Refused, match="another agentWallet"):
        Tenancy("0xB", "alice").scope(AGENT_KEY)


def test_an_operator_acts_for_the_configured_tenant_only() -> None:
    assert tenant(Tenancy("0xA", "alice"), OPERATOR) == ("0xA", "alice", None)
    with pytest.raises(Refused, match="no agent configured"):
        Tenancy().scope(OPERATOR)


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"agent": ""}, "agent is empty"),
        ({"agent": " 0xA"}, "agent must not start or end with whitespace"),
        ({"agent": "0xA", "user": "al\nice"}, "user must not contain control characters"),
        ({"agent": "0xA", "thread": "t\x00"}, "thread must not contain control characters"),
    ],
)
def test_a_configured_id_must_be_usable(fields: dict[str, str], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        Tenancy(**fields)
