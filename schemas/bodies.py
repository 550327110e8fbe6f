"""Wire bodies as models: the reference's loose JSON (reference §1.1, §7.1) parsed once.

The gateway takes these as its request bodies (their JSON schema is the OpenAPI document's)
and the SDK, MCP and the CLI parse through them, so one model says what a body may hold, and
each refusal has one message. The reference's looseness is on the model:

* aliases with `AliasChoices`; the first alias *present* wins (an absent one, null or blank,
  is dropped by `Body._loose`, from the model's alias table `ALIASES`, before pydantic
  picks one);
* an empty (or blank, for text) string means absent;
* a value of the wrong JSON type is refused (400), a number or time out of its range is
  `ValueOutOfRange` (422), never clamped into range nor replaced by a default (a per-page
  count above its maximum is lowered to it, reference §6.1: `ContextInput`).

Validators raise `Refused` / `ScopeError` / `ValueOutOfRange` with a message relative to
where they sit; `refusal` puts the location in front (`messages[1].role is invalid`), so the
gateway (`services.gateway.errors`) and `parse_body` answer the same line. Times are
milliseconds since epoch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal, TypeVar

from pydantic import (
    AfterValidator,
    AliasChoices,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    ValidationInfo,
    WithJsonSchema,
    model_validator,
)
from pydantic_core import PydanticSerializationError

from schemas import topics
from schemas.bounds import (
    MAX_TIME_MS,
    MIN_TIME_MS,
    OUT_OF_RANGE_TYPES,
    ValueOutOfRange,
    epoch_ms,
    whole_count,
)
from schemas.limits import INT64_MAX, MAX_MESSAGE_BYTES, check_json_object
from schemas.scope import MAX_ID_CHARS, Id, Scope, ScopeError, id_problem

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
        # no location and no field: the body itself (`Body._loose`: not an object)
        subject = f"{where}.{cause.field}" if where and cause.field else where or cause.field
        gap = "" if cause.problem.startswith(":") else " "
        text = f"{subject or 'body'}{gap}{cause.problem}"
        return ValueOutOfRange(text) if cause.out_of_range else ScopeError(text)
    msg = str(error.get("msg", "invalid input")).removeprefix("Value error, ")
    kind = ValueOutOfRange if error.get("type") in OUT_OF_RANGE_TYPES else ScopeError
    return kind(f"{where}: {msg}" if where else msg)


def parse_body(model: type[B], data: object, root: str = "") -> B:
    """`model.model_validate(data)`, the first problem raised as its `refusal` under `root`
    (a value that is not an object: "`root` must be an object", default "body"); a `model`
    instance is `data` itself (a body is parsed once)."""
    if isinstance(data, model):
        return data
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise refused(exc, root) from None


def refused(exc: ValidationError, root: str = "") -> ScopeError:
    """The first problem of `exc` as its one-line `refusal` (under `root`)."""
    return refusal(exc.errors(include_url=False)[0], root)


def message_json(event: BaseModel, label: str) -> bytes:
    """`event`'s JSON (UTF-8) if it fits in one message (`MAX_MESSAGE_BYTES`), else
    `ScopeError` naming it as `label` ("the turn"): the edge never publishes what the broker
    or a consumer would refuse. The SDK's publish (`services.sdk.transport`) sends these
    bytes, so an event is serialised once."""
    try:
        value = event.model_dump_json().encode("utf-8")
    except PydanticSerializationError:  # a lone surrogate in a field no text check covers
        raise ScopeError(f"{label} must be valid Unicode (no lone surrogates)") from None
    if len(value) > MAX_MESSAGE_BYTES:
        raise ScopeError(
            f"{label} is {len(value)} bytes as JSON; at most {MAX_MESSAGE_BYTES} bytes are accepted"
        )
    return value


def topic_label(topic: str) -> str:
    """How a refusal of its size names the event of `topic` (`message_json`)."""
    labels = {
        topics.TURNS: "the turn",
        topics.REMEMBER: "the fact",
        topics.KNOWLEDGE: "the document",
        topics.WORKFLOWS: "the checkpoint",
    }
    return labels.get(topic, "the message")


def within_message_limit(event: E, label: str) -> E:
    """`event` if it fits in one message (`message_json`): for what is checked before its
    publish (each turn of a transcript, before the first is sent; the plain-body parsers of
    `schemas.inputs`)."""
    message_json(event, label)
    return event


# --- loose field types ---------------------------------------------------------------------


def _text(value: str | None) -> str | None:
    """`str()` of reference §0 (trimmed by `Text`'s constraint): blank is absent."""
    return value or None


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


def _objects(*, document: bool) -> AfterValidator:
    """The bounds of a free-form object (`schemas.limits.check_json_object`), refused as a
    400 naming the path, as the scope's objects always were."""

    def check(value: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        try:
            return check_json_object(value, info.field_name or "object", document=document)
        except ValueError as exc:
            raise Refused(f": {exc}") from None

    return AfterValidator(check)


def _count(value: object) -> object:
    try:
        return whole_count(value, _NAMED)
    except ScopeError as exc:
        raise Refused.of(exc) from None


Text = Annotated[
    Annotated[str, StringConstraints(strip_whitespace=True)] | None, AfterValidator(_text)
]
"""A string, trimmed; blank means absent. A field's `max_length` applies to the trimmed text."""
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
OccurredAt = Annotated[
    Time,
    Field(
        validation_alias=AliasChoices("occurredAt", "occurred_at"),
        description="ISO-8601 or ms since epoch (alias occurred_at). Default: now.",
    ),
]
"""An event's time as its body gives it (`schemas.ids.event_time`); its alias row is
`OCCURRED_AT`."""
Tokens = Annotated[int, Field(ge=0, le=INT64_MAX), BeforeValidator(_tokens)]
"""A token count: a whole number of at least 0 (an integral float is its integer)."""
LooseCount = Annotated[int, Field(ge=1, le=INT64_MAX), BeforeValidator(_count)]
"""A count: a whole number of at least 1 (an integral float is its integer); a per-page
count above its maximum is lowered to it by its model."""


def json_type(value: object) -> str:
    """The JSON name of a (decoded JSON) value's type, for messages: "an object", …"""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return "a string"
    return "a number" if isinstance(value, int | float) else "a list"


@dataclass(frozen=True, slots=True)
class Alias:
    """One row of a model's alias table (`Body.ALIASES`): the keys of one field, first
    *present* wins. `absent` says which values are absent (dropped, so the next key is
    used): `"blank"` null or a blank string (text), `"empty"` null or "" (an id: a blank
    one is refused by the id rule), `"null"` null only (then the first key present must be
    a `kind`, else it is refused with `problem`, where `{given}` is the value's JSON type)."""

    keys: tuple[str, ...]
    absent: Literal["blank", "empty", "null"] = "blank"
    kind: type | None = None
    problem: str = ""

    def gone(self, value: object) -> bool:
        if value is None:
            return True
        if not isinstance(value, str) or self.absent == "null":
            return False
        return not (value.strip() if self.absent == "blank" else value)


class Body(BaseModel):
    """A wire body: frozen; unknown keys are ignored (the reference's bodies carry more).
    `ALIASES` is the model's alias table, applied by one before-validator for every model:
    the body must be an object, absent values of each row are dropped, the first key present
    must be of the row's `kind`."""

    model_config = ConfigDict(
        frozen=True, extra="ignore", populate_by_name=True, protected_namespaces=()
    )

    ALIASES: ClassVar[tuple[Alias, ...]] = ()

    @model_validator(mode="before")
    @classmethod
    def _loose(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            raise Refused("must be an object")
        out = dict(data)
        for row in cls.ALIASES:
            for key in row.keys:
                if key in out and row.gone(out[key]):
                    del out[key]
            first = next((key for key in row.keys if key in out), None)
            if first is not None and row.kind is not None and not isinstance(out[first], row.kind):
                raise Refused(row.problem.format(given=json_type(out[first])), first)
        return out


OCCURRED_AT = Alias(("occurredAt", "occurred_at"))


# --- the scope keys ------------------------------------------------------------------------


SCOPE_ALIASES = tuple(
    Alias(keys, "empty")
    for keys in (
        ("agentWallet", "agent_id", "agent_wallet"),
        ("userAddress", "user_id", "user_address"),
        ("threadId", "thread_id", "runId", "run_id"),
        ("haiId", "hai_id"),
    )
)
"""The scope's rows: a blank id is refused (`schemas.scope.id_problem`), not absent."""


class ScopeInput(Body):
    """The tenant scope (reference §1.1) as sent. Every id is checked here (the id rule,
    `schemas.scope.Id`, and its length), so `scope()` makes the `Scope` without a second
    pass."""

    agent_wallet: Id | None = Field(
        default=None,
        validation_alias=AliasChoices("agentWallet", "agent_id", "agent_wallet"),
        max_length=MAX_ID_CHARS,
        description="Required (aliases agent_id, agent_wallet).",
    )
    user_address: Id | None = Field(
        default=None,
        validation_alias=AliasChoices("userAddress", "user_id", "user_address"),
        max_length=MAX_ID_CHARS,
        description="Aliases user_id, user_address.",
    )
    thread_id: Id | None = Field(
        default=None,
        validation_alias=AliasChoices("threadId", "thread_id", "runId", "run_id"),
        max_length=MAX_ID_CHARS,
        description="Aliases thread_id, runId, run_id.",
    )
    mode: Id | None = Field(
        default=None, description='"global" or "local" (else ignored; never padded).'
    )
    hai_id: Id | None = Field(
        default=None,
        validation_alias=AliasChoices("haiId", "hai_id"),
        max_length=MAX_ID_CHARS,
        description="Required when mode is local (alias hai_id).",
    )
    filters: Annotated[dict[str, Any], _objects(document=False)] | None = Field(
        default=None, description="Allowlisted filters."
    )
    metadata: Annotated[dict[str, Any], _objects(document=True)] | None = None

    ALIASES = SCOPE_ALIASES

    def scope(self, *, agent: str | None = None, user: str | None = None) -> Scope:
        """The `Scope` (reference §1.1-§1.2), made from the checked keys. `agent` and `user`
        stand for an absent `agentWallet` and `userAddress` (a confined credential's own);
        `mode` is kept when it is "global" or "local"."""
        wallet = self.agent_wallet or agent
        if wallet is None:
            raise ScopeError("agentWallet is required")
        mode: Literal["global", "local"] | None = (
            "global" if self.mode == "global" else "local" if self.mode == "local" else None
        )
        if mode == "local" and self.hai_id is None:
            raise ScopeError("haiId is required when mode is local")
        return Scope.model_construct(
            agent_wallet=wallet,
            user_address=self.user_address or user,
            thread_id=self.thread_id,
            mode=mode,
            hai_id=self.hai_id,
            filters=self.filters,
            metadata=self.metadata,
        )
