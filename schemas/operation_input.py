"""The bodies of the gateway's other scoped operations as one model each: a conflict's
resolution (`ResolveInput`), a pattern's promotion (`PromoteInput`) and a session's
compression (`CompressInput`). A body that is only the scope is `schemas.bodies.ScopeInput`.
The loose rules and the refusals are `schemas.bodies`'.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from schemas.bodies import LooseId, ScopeInput, Text
from schemas.scope import ScopeError


class ResolveInput(ScopeInput):
    """POST /conflicts/{id}/resolve: `resolution` is required."""

    resolution: Text = Field(
        default=None, max_length=16, description="Required: supersede, keep, merge or ignore."
    )
    winning_memory_id: LooseId = Field(
        default=None, validation_alias="winningMemoryId", max_length=200
    )
    reason: Text = Field(default=None, max_length=1_000)

    def chosen(self) -> str:
        """The resolution (`ScopeError` when absent; checked after the scope: 403 first)."""
        if self.resolution is None:
            raise ScopeError("resolution is required (supersede, keep, merge or ignore)")
        return self.resolution


class PromoteInput(ScopeInput):
    """POST /patterns/{id}/promote: `skillName` is required."""

    skill_name: Text = Field(
        default=None, validation_alias="skillName", max_length=200, description="Required."
    )
    validation_data: Any = Field(
        default=None,
        validation_alias="validationData",
        exclude=True,
        description="Ignored: validation is recomputed from stored counts.",
    )

    def name(self) -> str:
        """The skill's name (`ScopeError` when absent; checked after the scope)."""
        if self.skill_name is None:
            raise ScopeError("skillName is required")
        return self.skill_name


class CompressInput(ScopeInput):
    """POST /sessions/{id}/compress: `agentWallet` (required unless the token names one)
    and `userAddress` name the session's tenant."""

    coordinator_model: str | None = Field(
        default=None,
        validation_alias="coordinatorModel",
        min_length=1,
        max_length=200,
        description="The LLM model (ignored without an LLM).",
    )
