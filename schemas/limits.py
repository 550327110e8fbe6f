"""Size limits of everything that crosses a process boundary, and the bounded JSON object.

A hostile or broken producer must never make the gateway, a consumer or a store fail with
anything but a validation error. So:

* every string and list field of a contract has a maximum length (on the field itself);
* every integer that is stored is within MongoDB's 64-bit range (`INT64_MAX`);
* every free-form object (`metadata`, `filters`, tool `args`, job `params`, an admin `body`)
  is a `JsonObject`: plain JSON values only (no NaN/infinity, no lone surrogates), at most
  `MAX_JSON_DEPTH` levels, `MAX_JSON_NODES` keys + items and `MAX_JSON_BYTES` of UTF-8 JSON,
  keys of at most `MAX_KEY_CHARS` without control characters; a stored object's keys (a
  `DocumentObject`) also must not be empty, start with `$` or contain `.` (MongoDB field names);
* a whole message is at most `MAX_MESSAGE_BYTES` on the wire: the edge refuses to publish a
  bigger event, the gateway answers 413 to a bigger body, consumers dead-letter a bigger record.
"""

from __future__ import annotations

import json
import math
from typing import Annotated, Any

from pydantic import AfterValidator, ValidationInfo
from pydantic_core import PydanticCustomError

MAX_MESSAGE_BYTES = 1_000_000
"""Largest message, in bytes of UTF-8 JSON: a Kafka record's value or a gateway request body.
Below the Kafka producer's default `max_request_size` (1 MiB), so what the edge accepts can
be published."""
MAX_JSON_DEPTH = 8
"""Nesting levels of a free-form object (the object itself is level 1)."""
MAX_JSON_NODES = 1_000
"""Keys plus list items in one free-form object, all levels counted."""
MAX_JSON_BYTES = 64 * 1024
"""UTF-8 JSON bytes of one free-form object."""
MAX_KEY_CHARS = 256
"""Characters of one key of a free-form object."""
MAX_JSON_STRING_CHARS = 32_000
"""Characters of one string value inside a free-form object."""
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
"""MongoDB stores integers as 64-bit: a larger one would fail the write, not the validation."""
OUT_OF_RANGE = "out_of_range"
"""The pydantic error type of a number or time outside its range (see `schemas.bounds`)."""


class NumberOutOfRange(ValueError):
    """A number of a free-form object that is not finite or does not fit in 64 bits."""


def utf8_size(text: str) -> int:
    """Bytes of `text` as UTF-8; `ValueError` when it holds a lone surrogate (no UTF-8 form)."""
    try:
        return len(text.encode("utf-8"))
    except UnicodeEncodeError:
        raise ValueError("text must be valid Unicode (no lone surrogates)") from None


def _where(path: list[str]) -> str:
    return "".join(path)


def _check_key(key: object, path: list[str], document: bool) -> str:
    if not isinstance(key, str):
        raise ValueError(f"{_where(path)}: keys must be strings")
    utf8_size(key)
    if len(key) > MAX_KEY_CHARS:
        raise ValueError(f"{_where(path)}: a key is longer than {MAX_KEY_CHARS} characters")
    if any(ord(ch) < 32 for ch in key):
        raise ValueError(f"{_where(path)}: keys must not contain control characters")
    if document and (not key or key.startswith("$") or "." in key):
        raise ValueError(
            f"{_where(path)}: key {key[:40]!r} is not allowed (keys are non-empty, "
            "do not start with '$' and contain no '.')"
        )
    return key


def _check_leaf(value: object, path: list[str]) -> None:
    if value is None or isinstance(value, bool):
        return
    if isinstance(value, int):
        if not INT64_MIN <= value <= INT64_MAX:
            raise NumberOutOfRange(f"{_where(path)}: integers must fit in 64 bits")
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise NumberOutOfRange(f"{_where(path)}: numbers must be finite")
        return
    if isinstance(value, str):
        utf8_size(value)
        if len(value) > MAX_JSON_STRING_CHARS:
            raise ValueError(
                f"{_where(path)}: a string is longer than {MAX_JSON_STRING_CHARS} characters"
            )
        return
    raise ValueError(f"{_where(path)}: {type(value).__name__} is not a JSON value")


def check_json_object(
    value: dict[str, Any],
    name: str,
    *,
    document: bool,
    max_bytes: int = MAX_JSON_BYTES,
    max_nodes: int = MAX_JSON_NODES,
) -> dict[str, Any]:
    """`value` if it is a bounded JSON object (see the module docstring), else `ValueError`
    naming the offending path (`metadata.a[2]: ...`; `NumberOutOfRange` for a number that is
    not finite or beyond 64 bits). Walks iteratively: no recursion."""
    if not value:  # most events carry an empty one: nothing to walk or measure
        return value
    nodes = 0
    stack: list[tuple[object, list[str], int]] = [(value, [name], 1)]
    while stack:
        node, path, depth = stack.pop()
        if isinstance(node, dict | list | tuple):
            if depth > MAX_JSON_DEPTH:
                raise ValueError(f"{_where(path)}: nested deeper than {MAX_JSON_DEPTH} levels")
            nodes += len(node)
            if nodes > max_nodes:
                raise ValueError(f"{name}: more than {max_nodes} keys and items in all")
            if isinstance(node, dict):
                for key, item in node.items():
                    key = _check_key(key, path, document)
                    stack.append((item, [*path, f".{key}"], depth + 1))
            else:
                stack.extend((item, [*path, f"[{i}]"], depth + 1) for i, item in enumerate(node))
        else:
            _check_leaf(node, path)
    size = len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    if size > max_bytes:
        raise ValueError(f"{name}: {size} bytes of JSON, more than {max_bytes}")
    return value


def _object_validator(
    *, document: bool, max_bytes: int = MAX_JSON_BYTES, max_nodes: int = MAX_JSON_NODES
) -> AfterValidator:
    def check(value: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        try:
            return check_json_object(
                value,
                info.field_name or "object",
                document=document,
                max_bytes=max_bytes,
                max_nodes=max_nodes,
            )
        except NumberOutOfRange as exc:  # a 422 at the gateway, like every number out of range
            raise PydanticCustomError(OUT_OF_RANGE, "{reason}", {"reason": str(exc)}) from None

    return AfterValidator(check)


JsonObject = Annotated[dict[str, Any], _object_validator(document=False)]
"""A bounded free-form JSON object (caller `filters`: their keys are paths, see
`engine.filters`)."""
DocumentObject = Annotated[dict[str, Any], _object_validator(document=True)]
"""A bounded JSON object stored as (part of) a MongoDB document: keys are field names."""
LargeJsonObject = Annotated[
    dict[str, Any],
    _object_validator(document=False, max_bytes=MAX_MESSAGE_BYTES // 2, max_nodes=20_000),
]
"""A bounded JSON object that may be large (an eval run's body with up to 500 test cases)."""
