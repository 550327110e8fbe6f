"""A dead letter holds the failed value exactly (or says it does not) and always fits in one
message."""

from __future__ import annotations

import base64

import pytest

from schemas.limits import MAX_MESSAGE_BYTES
from services.stream.guard import RAW_CAP_BYTES, DeadLetter, dead_letter, undecodable


def letter(body: bytes, *, tombstone: bool = False) -> DeadLetter:
    return dead_letter(
        body,
        tombstone=tombstone,
        group="g",
        source_topic="memory.turns.v1",
        partition=1,
        offset=7,
        key="k",
        error="Invalid JSON:\n expected value",
        error_type="ValidationError",
        attempts=0,
    )


def test_a_small_value_is_kept_byte_for_byte_even_when_not_utf8() -> None:
    body = b'{"x": "caf\xc3("}'
    made = letter(body)
    assert made.value() == body
    assert base64.b64decode(made.raw) == body
    assert made.size == len(body)
    assert not made.partial
    assert made.error == "Invalid JSON: expected value"  # one line


def test_a_tombstone_redrives_as_a_tombstone() -> None:
    made = letter(b"", tombstone=True)
    assert made.tombstone
    assert made.value() is None
    assert letter(b"").value() == b""


def test_a_large_utf8_value_is_kept_whole_as_text() -> None:
    body = ('{"content": "' + "é" * (RAW_CAP_BYTES) + '"}').encode()
    made = letter(body)
    assert not made.partial
    assert made.value() == body
    assert len(base64.b64decode(made.raw)) == RAW_CAP_BYTES


def test_a_large_value_that_is_not_utf8_is_partial() -> None:
    body = b"\xff" * (RAW_CAP_BYTES + 1)
    made = letter(body)
    assert made.partial
    with pytest.raises(LookupError, match="partial"):
        made.value()


@pytest.mark.parametrize(
    ("fill", "size", "whole"),
    [
        ("x", 800_000, True),  # plain text is kept whole
        ("x", MAX_MESSAGE_BYTES, False),  # with its raw head it would not fit
        ('"', MAX_MESSAGE_BYTES, False),  # escaping doubles it
        ("\x00", MAX_MESSAGE_BYTES, False),  # escaping makes it six times longer
    ],
)
def test_the_letter_always_fits_in_one_message(fill: str, size: int, whole: bool) -> None:
    body = fill.encode() * size
    made = letter(body)
    assert len(made.model_dump_json().encode()) < 1_048_576  # the producer's default limit
    assert made.partial is not whole
    assert (made.payload == body.decode()) is whole


def test_undecodable_names_what_no_contract_can_accept() -> None:
    assert undecodable(b"", tombstone=True) == (
        "EmptyRecord",
        "the record has no value (a tombstone)",
    )
    assert undecodable(b"", tombstone=False) == ("EmptyRecord", "the record's value is empty")
    kind, reason = undecodable(b"x" * (MAX_MESSAGE_BYTES + 1), tombstone=False) or ("", "")
    assert kind == "MessageTooLarge"
    assert str(MAX_MESSAGE_BYTES) in reason
    assert undecodable(b"{}", tombstone=False) is None
