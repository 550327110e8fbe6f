"""The HTTP/JSON form of a contract: the same fields under camelCase keys.

A contract (`schemas.events`, `schemas.requests`) is written once, in snake_case, which is
its Kafka form. Its HTTP form is a subclass that only changes the configuration (`CAMEL`):
every field, type, bound and default is inherited, and keys are camelCase both ways
(`budget_characters` ↔ `budgetCharacters`). A subclass redeclares a field only to swap a
nested contract for that contract's own camelCase view.

Why a subclass and not aliases on the contract itself: FastStream encodes a subscriber's
reply with `pydantic_core.to_jsonable_python`, which serialises by alias, and it documents
every payload with `model_json_schema()`, also by alias; aliased contracts would put
camelCase keys on Kafka and into `docs/asyncapi.json`.

`camel_view` turns a contract (a Kafka reply, say) into its view, field for field.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

V = TypeVar("V", bound=BaseModel)

CAMEL = ConfigDict(
    alias_generator=to_camel,
    validate_by_alias=True,
    validate_by_name=False,
    serialize_by_alias=True,
    json_schema_serialization_defaults_required=True,
)
"""HTTP bodies in and out use the camelCase keys only (a snake_case key is an unknown key);
an answer always holds every field, so its schema lists each one as required."""


def camel_view(view: type[V], contract: BaseModel, **extra: Any) -> V:
    """`contract`'s values as a `view` (a `CAMEL` subclass of its class, or one with the
    same fields), plus `extra` fields the view adds (keyword names are field names)."""
    return view.model_validate({**contract.model_dump(), **extra}, by_name=True)
