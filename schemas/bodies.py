"""Wire bodies as models: the reference's loose JSON (reference §1.1, §7.1) parsed once.

The gateway takes these as its request bodies (their JSON schema is the OpenAPI document's)
and the SDK, MCP and the CLI parse through them (`schemas.inputs`), so one model says what a
body may hold, and each refusal has one message. The reference's looseness is on the model:

* aliases with `AliasChoices`; the first alias *present* wins (a blank or null one is absent,
  dropped by `drop_absent` before pydantic picks one);
* an empty (or blank, for text) string means absent;
* a value of the wrong JSON type is refused (400), a number or time out of its range is
  `ValueOutOfRange` (422), never clamped into range nor replaced by a default.

Validators raise `Refused` / `ScopeError` / `ValueOutOfRange` with a message relative to
where they sit; `refusal` puts the location in front (`messages[1].role is invalid`), so the
gateway (`services.gateway.errors`) and `parse_body` answer the same line. Times are
milliseconds since epoch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, TypeVar

from pydantic import (
    AfterValidator,
    AliasChoices,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    WithJsonSchema,
    model_validator,
)
from pydantic_core import PydanticSerializationError

from schemas.bounds import (
    MAX_TIME_MS,
    MIN_TIME_MS,
    OUT_OF_RANGE_TYPES,
    ValueOutOfRange,
    epoch_ms,
    whole_count,
)
from schemas.limits import INT64_MAX, MAX_MESSAGE_BYTES
from schemas.scope import ScopeError, id_problem

B = TypeVar("B", bound=BaseModel)
E = TypeVar("E", bound=BaseModel)

_NAMED = "\0"
"""A stand-in field name for the checks of `schemas.bounds`, cut from their messages (the
location names the field)."""


class Refused(ScopeError):
    """A body refused by one of its validators: `problem`, about `field` of the value at the
    error's location (None: the value itself); `out_of_range` makes it `ValueOutOfRange`
    (422) once `refusal` has named where. `problem` may start with ":" (`field: problem`)."""

    def __init__(
        self, problem: str, field: str | None = None, *, out_of_range: bool = False
    ) -> None:
        super().__init__(f"{field} {problem}" if field else problem)
        self.problem = problem
        self.field = field
        self.out_of_range = out_of_range

    @classmethod
    def of(cls, exc: ScopeError) -> Refused:
        """A `schemas.bounds` refusal made for the field `_NAMED`, relative to its field."""
        problem = str(exc).replace(_NAMED, "").lstrip(" ")
        return cls(problem, out_of_range=isinstance(exc, ValueOutOfRange))


# --- refusals ------------------------------------------------------------------------------


def _where(loc: Sequence[int | str], root: str = "") -> str:
    """`("messages", 0, "role")` → `messages[0].role` (after `root`)."""
    out = root
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out = f"{out}.{part}" if out else str(part)
    return out


def refusal(error: Mapping[str, Any], root: str = "") -> ScopeError:
    """One pydantic error (`ValidationError.errors()`'s item; the gateway's with `body`
    dropped from `loc`) as the one-line refusal: our own checks keep their class
    (`ValueOutOfRange` is 422), pydantic's are `field: message`."""
    loc = tuple(error.get("loc", ()))
    cause = (error.get("ctx") or {}).get("error")
    where = _where(loc, root)
    if isinstance(cause, Refused):
        subject = f"{where}.{cause.field}" if where and cause.field else where or cause.field
        gap = "" if cause.problem.startswith(":") else " "
        text = f"{subject}{gap}{cause.problem}" if subject else cause.problem
        return ValueOutOfRange(text) if cause.out_of_range else ScopeError(text)
    msg = str(error.get("msg", "invalid input")).removeprefix("Value error, ")
    kind = ValueOutOfRange if error.get("type") in OUT_OF_RANGE_TYPES else ScopeError
    return kind(f"{where}: {msg}" if where else msg)


def parse_body(model: type[B], data: object, root: str = "") -> B:
    """`model.model_validate(data)`, the first problem raised as its `refusal`."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise refusal(exc.errors(include_url=False)[0], root) from None


def within_message_limit(event: E, label: str) -> E:
    """`event` if its JSON fits in one message (`MAX_MESSAGE_BYTES`), else `ScopeError`: the
    edge never publishes what the broker or a consumer would refuse."""
    try:
        size = len(event.model_dump_json().encode("utf-8"))
    except PydanticSerializationError:  # a lone surrogate in a field no text check covers
        raise ScopeError(f"{label} must be valid Unicode (no lone surrogates)") from None
    if size > MAX_MESSAGE_BYTES:
        raise ScopeError(
            f"{label} is {size} bytes as JSON; at most {MAX_MESSAGE_BYTES} bytes are accepted"
        )
    return event


# --- loose field types ---------------------------------------------------------------------


def _text(value: str | None) -> str | None:
    """`str()` of reference §0: trimmed; blank is absent."""
    return (value.strip() or None) if value is not None else None


def _loose_id(value: object) -> object:
    """An id: an empty string is absent; one with a problem (`id_problem`) is refused."""
    if value == "":
        return None
    if isinstance(value, str) and (problem := id_problem(value)) is not None:
        raise Refused(f": {problem}")
    return value


def _time(value: object) -> object:
    try:
        return epoch_ms(value, _NAMED)
    except ScopeError as exc:
        raise Refused.of(exc) from None


def _tokens(value: object) -> object:
    try:
        return whole_count(value, _NAMED, minimum=0)
    except ScopeError as exc:
        raise Refused.of(exc) from None


Text = Annotated[str | None, AfterValidator(_text)]
"""A string, trimmed; blank means absent."""
LooseId = Annotated[str | None, BeforeValidator(_loose_id)]
"""An identifier, never trimmed; empty means absent."""
Time = Annotated[
    int | None,
    BeforeValidator(_time),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "integer", "minimum": MIN_TIME_MS, "maximum": MAX_TIME_MS},
                {"type": "string", "format": "date-time"},
                {"type": "null"},
            ]
        }
    ),
]
"""ms since epoch or ISO-8601 (naive means UTC), as ms; `ValueOutOfRange` outside the range."""
Tokens = Annotated[int, Field(ge=0, le=INT64_MAX), BeforeValidator(_tokens)]
"""A token count: a whole number of at least 0 (an integral float is its integer)."""


def _absent(value: object) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def drop_absent(data: Any, *groups: tuple[str, ...]) -> Any:
    """`data` without the absent (null or blank) keys of each alias group, so `AliasChoices`
    takes the first one present (first present wins)."""
    if not isinstance(data, dict):
        return data
    out = dict(data)
    for group in groups:
        for key in group:
            if key in out and _absent(out[key]):
                del out[key]
    return out


def json_type(value: object) -> str:
    """The JSON name of a (decoded JSON) value's type, for messages: "an object", …"""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return "a string"
    return "a number" if isinstance(value, int | float) else "a list"


class Body(BaseModel):
    """A wire body: frozen; unknown keys are ignored (the reference's bodies carry more)."""

    model_config = ConfigDict(
        frozen=True, extra="ignore", populate_by_name=True, protected_namespaces=()
    )


def require_object(data: Any) -> Any:
    if not isinstance(data, dict):
        raise Refused("must be an object")
    return data


# --- the scope keys ------------------------------------------------------------------------


class ScopeInput(Body):
    """The tenant scope (reference §1.1) as sent; `Scope.parse` checks it (`scope_keys`)."""

    agent_wallet: str | None = Field(
        default=None,
        validation_alias=AliasChoices("agentWallet", "agent_id", "agent_wallet"),
        description="Required (aliases agent_id, agent_wallet).",
    )
    user_address: str | None = Field(
        default=None,
        validation_alias=AliasChoices("userAddress", "user_id", "user_address"),
        description="Aliases user_id, user_address.",
    )
    thread_id: str | None = Field(
        default=None,
        validation_alias=AliasChoices("threadId", "thread_id", "runId", "run_id"),
        description="Aliases thread_id, runId, run_id.",
    )
    mode: str | None = Field(
        default=None, description='"global" or "local" (else ignored; never padded).'
    )
    hai_id: str | None = Field(
        default=None,
        validation_alias=AliasChoices("haiId", "hai_id"),
        description="Required when mode is local (alias hai_id).",
    )
    filters: dict[str, Any] | None = Field(default=None, description="Allowlisted filters.")
    metadata: dict[str, Any] | None = None

    @model_validator(mode="before")
    @classmethod
    def _scope_aliases(cls, data: Any) -> Any:
        data = require_object(data)
        out = dict(data)
        for group in (
            ("agentWallet", "agent_id", "agent_wallet"),
            ("userAddress", "user_id", "user_address"),
            ("threadId", "thread_id", "runId", "run_id"),
            ("haiId", "hai_id"),
        ):
            for key in group:
                if out.get(key, 0) in (None, ""):
                    del out[key]
        return out

    def scope_keys(self) -> dict[str, Any]:
        """The scope as `Scope.parse` takes it (canonical names; absent keys left out)."""
        keys = {
            "agentWallet": self.agent_wallet,
            "userAddress": self.user_address,
            "threadId": self.thread_id,
            "mode": self.mode,
            "haiId": self.hai_id,
            "filters": self.filters,
            "metadata": self.metadata,
        }
        return {k: v for k, v in keys.items() if v is not None}
