"""The tenant scope of every read and write (reference §1.1-§1.2).

Aliases accepted on input (first present wins): `agentWallet|agent_id`, `userAddress|user_id`,
`threadId|thread_id|runId|run_id`, `haiId|hai_id`. An empty string (or a non-string) means
absent. `mode` is kept only when exactly "global" or "local" (anything else is dropped, as in
the reference). Serialisation always uses the canonical camelCase names.

Identifiers are matched exactly, so they are never trimmed: `Id` (below) is the one rule every
contract's id field uses (agent wallet, user address, thread/run id, hai id, session id, turn
id, job id, item id, …): an id that starts or ends with whitespace, or holds a control
character, is rejected — by the SDK and the gateway before anything is published, and by a
consumer (which dead-letters it) when a hand-made record carries one. `mode` follows the same
rule before its value is looked at.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    AfterValidator,
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)
from pydantic_core import PydanticCustomError

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


def id_problem(value: str) -> str | None:
    """What makes `value` unusable as an identifier, in words; None when it is fine. The
    whole rule: no leading or trailing whitespace (ids match exactly, so `"alice "` is not
    `"alice"` and is refused rather than trimmed) and no control character (Unicode `Cc`:
    C0, DEL, C1). Emptiness and length are each field's own bounds."""
    if value != value.strip():
        return "must not start or end with whitespace"
    if _CONTROL.search(value) is not None:
        return "must not contain control characters"
    return None


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
"""Unicode's control characters (`Cc`): exactly C0, DEL and C1, a set the standard keeps
fixed. A class searched in C: every id of every event a group reads is checked (with
`check_json_object`'s way out for an empty object, decoding a turn event went from 26 to
17 µs)."""


def _valid_id(value: str) -> str:
    problem = id_problem(value)
    if problem is not None:
        # a custom error type (not `value_error`), so `first_error` names the field
        raise PydanticCustomError("invalid_id", problem)
    return value


Id = Annotated[str, AfterValidator(_valid_id)]
"""An identifier field of a contract (see `id_problem`); bounds are set per field."""


def clean_id(value: object, name: str) -> str | None:
    """An identifier from a loose input: a non-empty string is returned unchanged (never
    trimmed) when `id_problem` has nothing against it, else `ScopeError` naming `name`; an
    empty string or a non-string is absent (None), as in `clean_str`."""
    if not isinstance(value, str) or value == "":
        return None
    problem = id_problem(value)
    if problem is not None:
        raise ScopeError(f"{name}: {problem}")
    return value


def clean_str(value: object) -> str | None:
    """`str()` of reference §0: a non-blank string, trimmed; anything else is absent."""
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

    agent_wallet: Id = Field(
        validation_alias=AliasChoices("agentWallet", "agent_id", "agent_wallet"),
        serialization_alias="agentWallet",
        max_length=MAX_ID_CHARS,
    )
    user_address: Id | None = Field(
        default=None,
        validation_alias=AliasChoices("userAddress", "user_id", "user_address"),
        serialization_alias="userAddress",
        max_length=MAX_ID_CHARS,
    )
    thread_id: Id | None = Field(
        default=None,
        validation_alias=AliasChoices("threadId", "thread_id", "runId", "run_id"),
        serialization_alias="threadId",
        max_length=MAX_ID_CHARS,
    )
    mode: Literal["global", "local"] | None = None
    hai_id: Id | None = Field(
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
                    out[key] = out[key] if isinstance(out[key], str) and out[key] else None
            # first *present* (non-blank) alias wins: drop blank ones so the next alias is used
            for key in aliases:
                if key in out and out[key] is None:
                    del out[key]
            # the losing aliases must go too, or `extra="forbid"` rejects them
            for key in [key for key in aliases if key in out][1:]:
                del out[key]
        mode = out.get("mode")
        if isinstance(mode, str) and (problem := id_problem(mode)) is not None:
            raise ScopeError(f"mode: {problem}")
        if "mode" in out and mode not in ("global", "local"):
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
