"""Numeric and time bounds of every contract and request body, and how a value outside them
is refused.

A number or a time outside its documented range is refused, never clamped into range nor
replaced by a default (issue 13, part 3). Such a refusal is `ValueOutOfRange` at the edge (a
`ScopeError`: nothing is published) and, in a pydantic model, an error whose type is in
`OUT_OF_RANGE_TYPES`; the HTTP gateway answers both with 422 and a one-line message naming
the field, while every other bad input (missing, wrong JSON type, refused by a rule) stays
400. The ranges:

* a count (`limit`, `maxItems`, `maxItemChars`, `last`, `k`, `topK`, a budget) is a whole
  number of at least 1 (`Count`); absent means the default. Above its maximum, a per-page
  count is lowered to the maximum (reference §6.1, documented on each field);
* a token count is a whole number of at least 0 (`TokenCount`);
* a time is milliseconds since epoch from 0 (1970-01-01T00:00:00Z) to `MAX_TIME_MS`
  (9999-12-31T23:59:59.999Z), or an ISO-8601 time within the same range (`Moment`; naive
  means UTC); `EpochMs` is the millisecond form alone, `within_time_range` the check of an
  aware datetime;
* no number is NaN or infinite: JSON has no such literal, and the gateway's body parser
  refuses Python's `NaN`/`Infinity` extensions; float fields say `allow_inf_nan=False`.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Annotated, TypeVar

from pydantic import BaseModel, BeforeValidator, Field, ValidationError
from pydantic_core import PydanticCustomError

from schemas.limits import INT64_MAX, OUT_OF_RANGE
from schemas.scope import ScopeError, first_error

M = TypeVar("M", bound=BaseModel)

MIN_TIME_MS = 0
"""1970-01-01T00:00:00Z: message timestamps and stored times are milliseconds since epoch."""
MAX_TIME_MS = 253_402_300_799_999
"""9999-12-31T23:59:59.999Z, the last millisecond a `datetime` can hold (fits int64)."""
TIME_RANGE = (
    f"from {MIN_TIME_MS} to {MAX_TIME_MS} whole ms since epoch "
    "(1970-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z)"
)

OUT_OF_RANGE_TYPES = frozenset(
    {
        OUT_OF_RANGE,
        "greater_than",
        "greater_than_equal",
        "less_than",
        "less_than_equal",
        "finite_number",
        "int_from_float",
        "int_parsing_size",
    }
)
"""Pydantic error types that mean "a number outside its range" (HTTP 422)."""


class ValueOutOfRange(ScopeError):
    """A number or time outside its documented range (HTTP 422); the message names the
    field."""


def out_of_range(reason: str) -> PydanticCustomError:
    """A pydantic error of type `out_of_range` (HTTP 422) saying `reason`."""
    return PydanticCustomError(OUT_OF_RANGE, "{reason}", {"reason": reason})


def is_out_of_range(exc: ValidationError) -> bool:
    """Whether the first error of `exc` (the one reported) is a value out of its range."""
    errors = exc.errors(include_url=False)
    return bool(errors) and errors[0]["type"] in OUT_OF_RANGE_TYPES


def parse_contract(model: type[M], data: object) -> M:
    """`model.model_validate(data)`; the first error as a one-line `ValueOutOfRange` when it
    is a value out of range, else as a `ScopeError` (like `schemas.scope.parse_model`)."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        kind = ValueOutOfRange if is_out_of_range(exc) else ScopeError
        raise kind(first_error(exc)) from None


# --- whole numbers -------------------------------------------------------------------------


def json_number(value: object) -> object:
    """`value` if it is a number: JSON `true` is not the number 1, nor `"7"` the number 7
    (pydantic's lax mode would take both)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PydanticCustomError("number_type", "Input should be a number")
    return value


# Complete types: each carries all its constraints and takes JSON numbers only. Never add a
# constraint on top (`Count = Field(le=20)`): behind the before-validator pydantic would
# document it but not enforce it. A field with its own maximum states both bounds instead
# (`int = Field(ge=1, le=20)`).
Count = Annotated[int, Field(ge=1, le=INT64_MAX), BeforeValidator(json_number)]
"""A count or size: a whole number, at least 1 (a per-page count above its maximum is lowered
to it by the edge, see the field's description)."""
TokenCount = Annotated[int, Field(ge=0, le=INT64_MAX), BeforeValidator(json_number)]
"""A number of tokens: a whole number, at least 0."""
Ratio = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False), BeforeValidator(json_number)]
"""A confidence or rate, in [0, 1]."""
EpochMs = Annotated[int, Field(ge=MIN_TIME_MS, le=MAX_TIME_MS), BeforeValidator(json_number)]
"""A time in milliseconds since epoch, within `MIN_TIME_MS`..`MAX_TIME_MS`."""


def whole_count(value: object, name: str, *, minimum: int = 1) -> int:
    """`value` as a whole number of at least `minimum`: `ScopeError` (400) when it is not a
    number, `ValueOutOfRange` (422) when it is not finite, has a fraction or is too small.
    An integral float (`5.0`) is its integer."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ScopeError(f"{name} must be a whole number")
    if isinstance(value, float):
        if not value.is_integer():  # NaN and infinities included
            raise ValueOutOfRange(f"{name} must be a whole number, not {value}")
        value = int(value)
    if value < minimum:
        raise ValueOutOfRange(f"{name} must be at least {minimum}, not {value}")
    if value > INT64_MAX:  # MongoDB's integers are 64-bit
        raise ValueOutOfRange(f"{name} must be at most {INT64_MAX} (64 bits)")
    return value


# --- times ---------------------------------------------------------------------------------


class _NotATime(ValueError):
    pass


class _OutOfRange(ValueError):
    pass


def _ms_of(value: object) -> int:
    """Milliseconds since epoch of `value` (ms or ISO-8601; naive means UTC). `_NotATime`
    when it is neither, `_OutOfRange` when it is outside the time range."""
    if isinstance(value, bool):
        raise _NotATime(value)
    if isinstance(value, int | float):
        if isinstance(value, float) and not value.is_integer():  # NaN and infinities too
            raise _OutOfRange(value)
        if not MIN_TIME_MS <= value <= MAX_TIME_MS:
            raise _OutOfRange(value)
        return int(value)
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            raise _NotATime(value) from None
        return _aware_ms(parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC))
    raise _NotATime(value)


def _aware_ms(moment: datetime) -> int:
    """Milliseconds since epoch of an aware datetime; `_OutOfRange` outside the range
    (an offset can push a year-9999 or year-1 time past either end)."""
    try:
        ms = math.floor(moment.timestamp() * 1000)
    except (OverflowError, ValueError, OSError):
        raise _OutOfRange(moment) from None
    if not MIN_TIME_MS <= ms <= MAX_TIME_MS:
        raise _OutOfRange(moment)
    return ms


def epoch_ms(value: object, name: str) -> int | None:
    """The time `value` (ms since epoch or ISO-8601) in ms; None when it is None.
    `ScopeError` (400) when it is not a time, `ValueOutOfRange` (422) outside the range."""
    if value is None:
        return None
    try:
        return _ms_of(value)
    except _NotATime:
        raise ScopeError(f"{name} must be an ISO-8601 time or milliseconds") from None
    except _OutOfRange:
        raise ValueOutOfRange(f"{name} must be a time {TIME_RANGE}") from None


def _moment(value: object) -> object:
    try:
        ms = _ms_of(value)
    except _NotATime:
        raise PydanticCustomError(
            "time_type", "Input should be an ISO-8601 time or milliseconds since epoch"
        ) from None
    except _OutOfRange:
        raise out_of_range(f"must be a time {TIME_RANGE}") from None
    return ms if isinstance(value, float) else value


Moment = Annotated[EpochMs | str, BeforeValidator(_moment)]
"""A time as the callers send it: milliseconds since epoch or an ISO-8601 string (naive means
UTC), within the time range (checked before the union, so an error names the field alone)."""


def within_time_range(moment: datetime) -> datetime:
    """`moment` (aware) if it lies within the time range, else an `out_of_range` error: an
    event's `occurred_at` becomes the stored rows' millisecond timestamps."""
    try:
        _aware_ms(moment)
    except _OutOfRange:
        raise out_of_range(f"must be a time {TIME_RANGE}") from None
    return moment
