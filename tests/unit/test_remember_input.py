"""The remember body as one model (`schemas.remember_input.RememberInput`, issue 33)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from schemas import inputs
from schemas.bounds import ValueOutOfRange
from schemas.remember_input import RememberInput
from schemas.scope import ScopeError

NOW = datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)


def fact(**extra: Any) -> dict[str, Any]:
    return {"agentWallet": "0xA", "content": "likes tea", **extra}


def test_memory_remembered_is_the_model_s_event() -> None:
    body = fact(content=" ", fact=" likes tea ", conflict_policy="keep", scope="user")
    event = inputs.memory_remembered(body, now=NOW)
    made = RememberInput.model_validate(body).remembered(now=NOW)
    assert event == made.model_copy(update={"event_id": event.event_id})
    assert (event.content, event.conflict_policy, event.memory_scope) == (
        "likes tea",
        "keep",
        "user",
    )


@pytest.mark.parametrize(
    ("extra", "kind", "message"),
    [  # the gateway refused the first three; the SDK ignored them (issue 33: one parser)
        ({"retention": 5}, ScopeError, r"^retention: Input should be a valid string"),
        ({"scope": ["user"]}, ScopeError, r"^scope: Input should be a valid string"),
        ({"metadata": "x"}, ScopeError, r"^metadata: Input should be a valid dictionary"),
        ({"confidence": True}, ScopeError, r"^confidence must be a number from 0 to 1$"),
        ({"confidence": 1.5}, ValueOutOfRange, r"^confidence must be a number from 0 to 1, not"),
        ({"confidence": 10**400}, ValueOutOfRange, r"^confidence must be a number from 0 to 1"),
        ({"type": "$where"}, ScopeError, r"^type: must be one word"),
    ],
)
def test_refusals(extra: dict[str, Any], kind: type[ScopeError], message: str) -> None:
    with pytest.raises(kind, match=message) as refused:
        inputs.memory_remembered(fact(**extra), now=NOW)
    assert type(refused.value) is kind
