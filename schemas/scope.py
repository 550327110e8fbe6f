"""The tenant scope of every read and write (REFERENCE §1.1-§1.2).

Aliases accepted on input (first present wins): `agentWallet|agent_id`, `userAddress|user_id`,
`threadId|thread_id|runId|run_id`, `haiId|hai_id`. Strings are trimmed; blank means absent.
`mode` is kept only when exactly "global" or "local" (anything else is dropped, as in the
reference). Serialisation always uses the canonical camelCase names.
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from schemas.limits import DocumentObject, JsonObject

M = TypeVar("M", bound="BaseModel")

MAX_ID_CHARS = 256
"""Upper bound on any identifier (agent, user, thread, hai)."""


SCOPE_KEYS = frozenset(
    {
        "agentWallet",
        "agent_id",
        "agent_wallet",
        "userAddress",
        "user_id",
        "user_address",
        "threadId",
        "thread_id",
        "runId",
        "run_id",
        "mode",
        "haiId",
        "hai_id",
        "filters",
        "metadata",
    }
)
"""Every input key that belongs to the scope (canonical names and aliases)."""


class ScopeError(ValueError):
    """An input that cannot be scoped; the message is the reference's 400 message."""


def clean_str(value: object) -> str | None:
    """`str()` of REFERENCE §0: a non-blank string, trimmed; anything else is absent."""
    if isinstance(value, str):
        stripped = value.strip()
        return stripped or None
    return None


def _clean_obj(value: object) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None


def parse_model(model: type[M], data: object) -> M:
    """`model.model_validate(data)`, with the first error turned into a one-line `ScopeError`."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ScopeError(first_error(exc)) from None


def first_error(exc: ValidationError) -> str:
    """A short, human message for the first validation error (`field: problem`)."""
    err = exc.errors(include_url=False)[0]
    msg = str(err.get("msg", "invalid input")).removeprefix("Value error, ")
    loc = ".".join(str(part) for part in err.get("loc", ()) if part != "__root__")
    return f"{loc}: {msg}" if loc and err.get("type") != "value_error" else msg


class Scope(BaseModel):
    """Who a memory belongs to. `agent_wallet` is required; absent fields mean "not set"."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    agent_wallet: str = Field(
        validation_alias=AliasChoices("agentWallet", "agent_id", "agent_wallet"),
        serialization_alias="agentWallet",
        max_length=MAX_ID_CHARS,
    )
    user_address: str | None = Field(
        default=None,
        validation_alias=AliasChoices("userAddress", "user_id", "user_address"),
        serialization_alias="userAddress",
        max_length=MAX_ID_CHARS,
    )
    thread_id: str | None = Field(
        default=None,
        validation_alias=AliasChoices("threadId", "thread_id", "runId", "run_id"),
        serialization_alias="threadId",
        max_length=MAX_ID_CHARS,
    )
    mode: Literal["global", "local"] | None = None
    hai_id: str | None = Field(
        default=None,
        validation_alias=AliasChoices("haiId", "hai_id"),
        serialization_alias="haiId",
        max_length=MAX_ID_CHARS,
    )
    filters: JsonObject | None = None
    metadata: DocumentObject | None = None

    @model_validator(mode="before")
    @classmethod
    def _normalise(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            raise ScopeError("scope must be an object")
        out = dict(data)
        for aliases in (
            ("agentWallet", "agent_id", "agent_wallet"),
            ("userAddress", "user_id", "user_address"),
            ("threadId", "thread_id", "runId", "run_id"),
            ("haiId", "hai_id"),
        ):
            for key in aliases:
                if key in out:
                    out[key] = clean_str(out[key])
            # first *present* (non-blank) alias wins: drop blank ones so the next alias is used
            for key in aliases:
                if key in out and out[key] is None:
                    del out[key]
            # the losing aliases must go too, or `extra="forbid"` rejects them
            for key in [key for key in aliases if key in out][1:]:
                del out[key]
        if "mode" in out and out["mode"] not in ("global", "local"):
            del out["mode"]
        for key in ("filters", "metadata"):
            if key in out and _clean_obj(out[key]) is None:
                del out[key]
        if not any(k in out for k in ("agentWallet", "agent_id", "agent_wallet")):
            raise ScopeError("agentWallet is required")
        return out

    @model_validator(mode="after")
    def _local_needs_hai(self) -> Scope:
        if self.mode == "local" and self.hai_id is None:
            raise ScopeError("haiId is required when mode is local")
        return self

    @field_validator("agent_wallet", "user_address", "thread_id", "hai_id")
    @classmethod
    def _no_control_chars(cls, value: str | None) -> str | None:
        if value is not None and any(ord(ch) < 32 for ch in value):
            raise ValueError("identifiers must not contain control characters")
        return value

    @classmethod
    def parse(cls, data: object) -> Scope:
        """Validate the scope keys of a loose input object (other keys are ignored here, they
        belong to the request); raise `ScopeError` with the reference's message."""
        if not isinstance(data, dict):
            raise ScopeError("scope must be an object")
        return parse_model(cls, {k: v for k, v in data.items() if k in SCOPE_KEYS})

    def tenant(self) -> Scope:
        """This scope without thread, filters and metadata: what durable layers are keyed by."""
        return self.model_copy(update={"thread_id": None, "filters": None, "metadata": None})

    def wire(self) -> dict[str, Any]:
        """The canonical camelCase form (absent fields omitted)."""
        return self.model_dump(by_alias=True, exclude_none=True)
