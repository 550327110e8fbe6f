"""Scope normalisation and the edge's input validation (reference §1.1-§1.2, §1.5, §6.1, §7.1)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from schemas import inputs
from schemas.bounds import MAX_TIME_MS, ValueOutOfRange
from schemas.events import ToolEvent, TurnRecorded
from schemas.ids import thread_session_id, to_ms
from schemas.requests import ALL_LAYERS
from schemas.scope import Scope, ScopeError
from schemas.search_defaults import BUDGET_MAX_ITEMS

NOW = datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)
NOW_MS = 1_704_164_645_000


def turn_body(**extra: Any) -> dict[str, Any]:
    return {"agentWallet": "0xAgent", "threadId": "T1", **extra}


def pair(**extra: Any) -> dict[str, Any]:
    return turn_body(userMessage="hello", assistantMessage="hi there", **extra)


# --- Scope aliases and normalisation (§1.1) ------------------------------------------------


def test_snake_case_aliases_fill_the_canonical_fields() -> None:
    scope = Scope.parse(
        {"agent_id": "A", "user_id": "U", "thread_id": "T", "hai_id": "H", "mode": "local"}
    )
    assert scope.wire() == {
        "agentWallet": "A",
        "userAddress": "U",
        "threadId": "T",
        "haiId": "H",
        "mode": "local",
    }


@pytest.mark.parametrize("key", ["threadId", "thread_id", "runId", "run_id"])
def test_every_thread_alias_sets_thread_id(key: str) -> None:
    assert Scope.parse({"agentWallet": "A", key: "T9"}).thread_id == "T9"


def test_first_present_alias_wins_when_several_are_given() -> None:
    scope = Scope.parse(
        {
            "agentWallet": "A1",
            "agent_id": "A2",
            "userAddress": "U1",
            "user_id": "U2",
            "threadId": "T1",
            "thread_id": "T2",
            "runId": "T3",
            "run_id": "T4",
            "haiId": "H1",
            "hai_id": "H2",
        }
    )
    assert (scope.agent_wallet, scope.user_address, scope.thread_id, scope.hai_id) == (
        "A1",
        "U1",
        "T1",
        "H1",
    )


def test_later_thread_alias_wins_when_the_earlier_ones_are_absent() -> None:
    assert Scope.parse({"agentWallet": "A", "runId": "R", "run_id": "r2"}).thread_id == "R"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"agentWallet": "  A  "}, "agentWallet: must not start or end with whitespace"),
        ({"agentWallet": "A", "userAddress": "alice "}, "userAddress: must not start or end"),
        ({"agentWallet": "A", "user_id": "\talice"}, "user_id: must not start or end"),
        ({"agentWallet": "A", "threadId": " T"}, "threadId: must not start or end"),
        ({"agentWallet": "A", "runId": "r\n"}, "runId: must not start or end"),
        ({"agentWallet": "A", "mode": "local", "haiId": "H\u00a0"}, "haiId: must not start"),
        ({"agentWallet": "A", "mode": " local", "haiId": "H"}, "mode: must not start or end"),
        ({"agentWallet": "   "}, "agentWallet: must not start or end with whitespace"),
        ({"agentWallet": "A", "userAddress": "  "}, "userAddress: must not start or end"),
        ({"agentWallet": "A", "userAddress": "al\x7fice"}, "userAddress: must not contain"),
        ({"agentWallet": "A", "haiId": "h\x85h"}, "haiId: must not contain control characters"),
    ],
)
def test_ids_are_never_trimmed_surrounding_whitespace_is_rejected(
    body: dict[str, Any], message: str
) -> None:
    """Users match exactly: `"alice "` must not silently read alice's memory."""
    with pytest.raises(ScopeError, match=f"^{message}"):
        Scope.parse(body)


def test_inner_spaces_and_format_characters_are_kept_exactly() -> None:
    scope = Scope.parse({"agentWallet": "0x A", "userAddress": "ali ce\u200f"})
    assert (scope.agent_wallet, scope.user_address) == ("0x A", "ali ce\u200f")


def test_empty_alias_counts_as_absent_so_the_next_alias_is_used() -> None:
    scope = Scope.parse({"agentWallet": "", "agent_id": "A", "userAddress": "", "user_id": "U"})
    assert (scope.agent_wallet, scope.user_address) == ("A", "U")


def test_empty_and_non_string_optional_fields_are_absent() -> None:
    scope = Scope.parse({"agentWallet": "A", "userAddress": "", "threadId": 42, "haiId": None})
    assert scope.user_address is None
    assert scope.thread_id is None
    assert scope.hai_id is None


def test_ids_keep_their_case() -> None:
    scope = Scope.parse({"agentWallet": "0xAbC", "userAddress": "UsEr"})
    assert (scope.agent_wallet, scope.user_address) == ("0xAbC", "UsEr")


@pytest.mark.parametrize("mode", ["GLOBAL", "Local", "private", "", 1, None])
def test_invalid_mode_is_dropped_silently(mode: object) -> None:
    assert Scope.parse({"agentWallet": "A", "mode": mode}).mode is None


def test_invalid_mode_does_not_trigger_the_local_hai_rule() -> None:
    assert Scope.parse({"agentWallet": "A", "mode": "LOCAL"}).mode is None


@pytest.mark.parametrize("mode", ["global", "local"])
def test_exact_modes_are_kept(mode: str) -> None:
    assert Scope.parse({"agentWallet": "A", "mode": mode, "haiId": "H"}).mode == mode


def test_non_object_filters_and_metadata_are_absent() -> None:
    scope = Scope.parse({"agentWallet": "A", "filters": [1], "metadata": "x"})
    assert (scope.filters, scope.metadata) == (None, None)


def test_parse_ignores_non_scope_keys() -> None:
    assert Scope.parse({"agentWallet": "A", "query": "q", "limit": 3}).wire() == {
        "agentWallet": "A"
    }


# --- Scope errors (§1.2) -------------------------------------------------------------------


@pytest.mark.parametrize("body", [{}, {"agentWallet": ""}, {"agent_id": ""}, {"userAddress": "U"}])
def test_missing_agent_is_rejected(body: dict[str, Any]) -> None:
    with pytest.raises(ScopeError, match=r"^agentWallet is required$"):
        Scope.parse(body)


@pytest.mark.parametrize(
    "body",
    [{"agentWallet": "A", "mode": "local"}, {"agentWallet": "A", "mode": "local", "hai_id": ""}],
)
def test_local_mode_without_hai_is_rejected(body: dict[str, Any]) -> None:
    with pytest.raises(ScopeError, match=r"^haiId is required when mode is local$"):
        Scope.parse(body)


@pytest.mark.parametrize("body", ["A", ["agentWallet"], None, 3])
def test_non_object_scope_is_rejected(body: object) -> None:
    with pytest.raises(ScopeError, match=r"^scope must be an object$"):
        Scope.parse(body)


def test_control_characters_in_ids_are_rejected() -> None:
    with pytest.raises(ScopeError, match="control characters"):
        Scope.parse({"agentWallet": "A\x00B"})


def test_scope_is_frozen() -> None:
    scope = Scope.parse({"agentWallet": "A"})
    with pytest.raises(ValueError, match="frozen"):
        scope.agent_wallet = "B"  # type: ignore[misc]


# --- context_request counts (§6.1, strict: issue 13) ----------------------------------------


def ctx(**extra: Any) -> Any:
    return inputs.context_request({"agentWallet": "A", "query": "where do I live", **extra})


def test_context_request_defaults() -> None:
    request = ctx()
    assert request.layers == list(ALL_LAYERS)
    assert (request.limit, request.max_items, request.max_item_chars) == (None, None, 500)
    assert request.shape() == (5, 8)  # reference §6.1 without a budget
    assert request.budget_chars is None
    assert request.include_raw is False


@pytest.mark.parametrize(("limit", "expected"), [(None, 5), (1, 1), (3.0, 3), (20, 20), (100, 20)])
def test_limit_defaults_to_5_and_is_lowered_to_20(limit: object, expected: int) -> None:
    assert ctx(limit=limit).shape()[0] == expected


@pytest.mark.parametrize(("value", "expected"), [(None, 8), (100, 24), (1, 1), (12, 12)])
def test_max_items_defaults_to_8_and_is_lowered_to_24(value: object, expected: int) -> None:
    assert ctx(maxItems=value).shape()[1] == expected


@pytest.mark.parametrize(
    ("budget", "limit"), [(100, 5), (900, 15), (1_800, 30), (4_000, 60), (1_000_000, 60)]
)
def test_with_only_a_budget_the_budget_shapes_the_context(budget: int, limit: int) -> None:
    # issue 16: one hit per layer per 60 budget characters (5 to 60, past the 20 a caller
    # may ask for), and items until the budget is full (BUDGET_MAX_ITEMS caps a runaway one)
    assert ctx(budget={"maxCharacters": budget}).shape() == (limit, BUDGET_MAX_ITEMS)


def test_counts_given_with_a_budget_are_kept_as_caps() -> None:
    request = ctx(budget={"maxCharacters": 4_000}, limit=3, maxItems=4)
    assert request.shape() == (3, 4)
    assert ctx(budget={"maxCharacters": 4_000}, maxItems=4).shape() == (60, 4)


@pytest.mark.parametrize(("value", "expected"), [(None, 500), (5000, 2000), (1, 1), (120, 120)])
def test_max_item_chars_defaults_to_500_and_is_lowered_to_2000(
    value: object, expected: int
) -> None:
    assert ctx(maxItemChars=value).max_item_chars == expected


@pytest.mark.parametrize("name", ["limit", "maxItems", "max_items", "maxItemChars"])
@pytest.mark.parametrize(
    ("value", "message"),
    [
        (0, "must be at least 1, not 0"),
        (-3, "must be at least 1, not -3"),
        (3.9, "must be a whole number, not 3.9"),
        (float("nan"), "must be a whole number"),
        (float("-inf"), "must be a whole number"),
    ],
)
def test_a_count_below_one_or_not_whole_is_out_of_range(
    name: str, value: object, message: str
) -> None:
    with pytest.raises(ValueOutOfRange, match=f"^{name} {message}"):
        ctx(**{name: value})


@pytest.mark.parametrize("value", ["7", True, [3], {"n": 3}])
def test_a_count_that_is_not_a_number_is_refused(value: object) -> None:
    with pytest.raises(ScopeError, match=r"^limit must be a whole number$") as refused:
        ctx(limit=value)
    assert not isinstance(refused.value, ValueOutOfRange)  # the wrong type: a 400


@pytest.mark.parametrize(
    "extra",
    [
        {"budget": {"maxCharacters": 900}},
        {"budget": {"max_chars": 900}},
        {"maxContextCharacters": 900},
        {"max_context_chars": 900},
        {"budget": {"maxCharacters": 900.0}},
    ],
)
def test_every_budget_alias_is_read(extra: dict[str, Any]) -> None:
    assert ctx(**extra).budget_chars == 900


def test_a_budget_of_one_is_one_character() -> None:
    assert ctx(budget={"maxCharacters": 1}).budget_chars == 1


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"budget": {"maxCharacters": 0}}, "budget.maxCharacters must be at least 1, not 0"),
        ({"budget": {"maxCharacters": -100}}, "budget.maxCharacters must be at least 1"),
        ({"budget": {"max_chars": 0.4}}, "budget.max_chars must be a whole number"),
        ({"max_context_chars": 0}, "max_context_chars must be at least 1"),
        ({"maxContextCharacters": -1}, "maxContextCharacters must be at least 1"),
    ],
)
def test_a_budget_below_one_is_out_of_range_not_no_budget(
    extra: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueOutOfRange, match=message):
        ctx(**extra)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"budget": "900"}, "budget must be an object"),
        ({"budget": {"max_chars": "9"}}, "max_chars"),
    ],
)
def test_a_budget_of_the_wrong_type_is_refused(extra: dict[str, Any], message: str) -> None:
    with pytest.raises(ScopeError, match=message):
        ctx(**extra)


def test_unknown_layers_are_dropped_and_caller_order_kept() -> None:
    assert ctx(layers=["vectors", "nope", "working", "vectors"]).layers == ["vectors", "working"]


@pytest.mark.parametrize("layers", [["nope", "WORKING"], [], "working"])
def test_no_known_layer_left_means_all_six(layers: object) -> None:
    assert ctx(layers=layers).layers == list(ALL_LAYERS)


@pytest.mark.parametrize(("value", "expected"), [(True, True), ("true", False), (1, False)])
def test_include_raw_only_for_literal_true(value: object, expected: bool) -> None:
    assert ctx(includeRaw=value).include_raw is expected


@pytest.mark.parametrize("query", [None, "", "   ", 3])
def test_missing_query_is_rejected(query: object) -> None:
    body: dict[str, Any] = {"agentWallet": "A"}
    if query is not None:
        body["query"] = query
    with pytest.raises(ScopeError, match=r"^query is required$"):
        inputs.context_request(body)


def test_context_request_on_a_non_object_is_rejected() -> None:
    with pytest.raises(ScopeError, match=r"^body must be an object$"):
        inputs.context_request("where")


def test_context_request_scope_errors_come_first() -> None:
    with pytest.raises(ScopeError, match=r"^agentWallet is required$"):
        inputs.context_request({"query": "q"})


# --- turn_recorded validation (§1.2, §7.1) -------------------------------------------------


@pytest.mark.parametrize(
    ("messages", "message"),
    [
        (["hi"], r"^messages\[0\] must be an object$"),
        (
            [{"role": "user", "content": "a"}, {"role": "robot", "content": "b"}],
            r"^messages\[1\]\.role is invalid$",
        ),
        ([{"role": "user", "content": "   "}], r"^messages\[0\]\.content is required$"),
        ([{"role": "user"}], r"^messages\[0\]\.content is required$"),
    ],
)
def test_invalid_messages_are_rejected_with_their_index(messages: list[Any], message: str) -> None:
    with pytest.raises(ScopeError, match=message):
        inputs.turn_recorded(turn_body(messages=messages), now=NOW)


@pytest.mark.parametrize(
    "extra",
    [
        {},
        {"userMessage": "hello"},
        {"assistantMessage": "hi"},
        {"userMessage": " ", "assistantMessage": "x"},
    ],
)
def test_missing_messages_and_pair_is_rejected(extra: dict[str, Any]) -> None:
    with pytest.raises(
        ScopeError, match=r"^messages or userMessage plus assistantMessage are required$"
    ):
        inputs.turn_recorded(turn_body(**extra), now=NOW)


@pytest.mark.parametrize("event", [{}, {"name": "  "}, {"status": "ok"}])
def test_tool_event_without_name_is_rejected(event: dict[str, Any]) -> None:
    with pytest.raises(ScopeError, match=r"^toolEvents\[0\]\.name is required$"):
        inputs.turn_recorded(pair(toolEvents=[event]), now=NOW)


@pytest.mark.parametrize("key", ["name", "toolName", "tool"])
def test_tool_event_name_aliases(key: str) -> None:
    event = inputs.turn_recorded(pair(toolEvents=[{key: "search"}]), now=NOW)
    assert event.tool_events[0].name == "search"
    assert event.tool_events[0].status == "unknown"
    assert event.tool_events[0].timestamp == NOW_MS


# issue 17: each of these failed before — an object was dropped silently, a missing or blank
# status read as "completed", args of the wrong type became {}


@pytest.mark.parametrize(
    ("tools", "kind"),
    [
        ({"name": "search_flights", "status": "completed"}, "an object"),
        ("search_flights", "a string"),
        (3, "a number"),
        (True, "a boolean"),
    ],
)
def test_tool_events_that_are_not_a_list_are_refused(tools: object, kind: str) -> None:
    with pytest.raises(
        ScopeError, match=rf"^toolEvents must be a list of tool events, not {kind}$"
    ):
        inputs.turn_recorded(pair(toolEvents=tools), now=NOW)
    with pytest.raises(ScopeError, match=r"^tool_events must be a list"):
        inputs.turn_recorded(pair(tool_events=tools), now=NOW)


def test_absent_or_null_tool_events_are_none() -> None:
    assert inputs.turn_recorded(pair(), now=NOW).tool_events == []
    assert inputs.turn_recorded(pair(toolEvents=None), now=NOW).tool_events == []
    assert inputs.turn_recorded(pair(toolEvents=[]), now=NOW).tool_events == []


@pytest.mark.parametrize("status", [None, "", "   "])
def test_a_tool_event_without_a_status_is_unknown(status: str | None) -> None:
    tool: dict[str, Any] = {"name": "search_flights"}
    if status is not None:
        tool["status"] = status
    [event] = inputs.turn_recorded(pair(toolEvents=[tool]), now=NOW).tool_events
    assert event.status == "unknown"
    assert ToolEvent(name="t", timestamp=NOW_MS).status == "unknown"  # the contract's default


@pytest.mark.parametrize(
    ("tool", "message"),
    [
        ({"name": "t", "args": ["Lisbon"]}, r"^toolEvents\[0\]\.args must be an object$"),
        ({"name": "t", "input": "Lisbon"}, r"^toolEvents\[0\]\.input must be an object$"),
        ({"name": "t", "status": True}, r"^toolEvents\[0\]\.status must be a string$"),
        ({"name": "t", "status": {"ok": 1}}, r"^toolEvents\[0\]\.status must be a string$"),
    ],
)
def test_a_tool_event_field_of_the_wrong_type_is_refused(
    tool: dict[str, Any], message: str
) -> None:
    with pytest.raises(ScopeError, match=message):
        inputs.turn_recorded(pair(toolEvents=[tool]), now=NOW)


def test_tool_event_result_is_cut_to_2000_chars() -> None:
    event = inputs.turn_recorded(pair(toolEvents=[{"name": "t", "output": "x" * 2500}]), now=NOW)
    assert event.tool_events[0].result == "x" * 2000


def test_missing_thread_and_session_is_rejected() -> None:
    with pytest.raises(ScopeError, match=r"^threadId or sessionId is required$"):
        inputs.turn_recorded(
            {"agentWallet": "A", "userMessage": "a", "assistantMessage": "b"}, now=NOW
        )


def test_turn_recorded_on_a_non_object_is_rejected() -> None:
    with pytest.raises(ScopeError, match=r"^body must be an object$"):
        inputs.turn_recorded(["x"], now=NOW)


# --- session ids (§1.5) --------------------------------------------------------------------


def test_global_session_id() -> None:
    event = inputs.turn_recorded(pair(mode="global"), now=NOW)
    assert (event.session_id, event.thread_id) == ("session:global:0xAgent:T1", "T1")


def test_session_id_without_mode_is_global() -> None:
    assert inputs.turn_recorded(pair(), now=NOW).session_id == "session:global:0xAgent:T1"


def test_local_session_id_uses_the_hai() -> None:
    event = inputs.turn_recorded(pair(mode="local", hai_id="hai-7"), now=NOW)
    assert event.session_id == "session:local:hai-7:T1"


def test_explicit_session_without_thread_becomes_the_thread() -> None:
    body = {"agentWallet": "A", "sessionId": "S-1", "userMessage": "a", "assistantMessage": "b"}
    event = inputs.turn_recorded(body, now=NOW)
    assert (event.session_id, event.thread_id) == ("S-1", "S-1")


@pytest.mark.parametrize("key", ["sessionId", "turnId", "contextId"])
def test_turn_ids_with_surrounding_whitespace_are_rejected(key: str) -> None:
    with pytest.raises(ScopeError, match=f"^{key}: must not start or end with whitespace$"):
        inputs.turn_recorded(pair(**{key: " S-1 "}), now=NOW)


def test_explicit_session_with_thread_keeps_both() -> None:
    event = inputs.turn_recorded(pair(sessionId="S-1"), now=NOW)
    assert (event.session_id, event.thread_id) == ("S-1", "T1")


def test_thread_session_id_defaults_to_main() -> None:
    scope = Scope.parse({"agentWallet": "A"})
    assert thread_session_id(scope) == "session:global:A:main"


# --- turn ids and timestamps ---------------------------------------------------------------


def test_same_body_and_occurred_at_give_the_same_turn_id() -> None:
    body = pair(occurredAt=1_700_000_000_000)
    first, second = inputs.turn_recorded(body), inputs.turn_recorded(dict(body))
    assert first.turn_id == second.turn_id
    assert first.turn_id.startswith("turn_")
    assert first.event_id != second.event_id


def test_different_occurred_at_gives_a_different_turn_id() -> None:
    first = inputs.turn_recorded(pair(), now=NOW)
    second = inputs.turn_recorded(pair(), now=NOW + timedelta(milliseconds=1))
    assert first.turn_id != second.turn_id


def test_two_different_turns_in_the_same_millisecond_get_different_ids() -> None:
    # the reference's sessionId|threadId|now made them one turn: the second was dropped as
    # a redelivery by the idempotent writers
    first = inputs.turn_recorded(turn_body(userMessage="Volcano.", assistantMessage="Ok."), now=NOW)
    second = inputs.turn_recorded(
        turn_body(userMessage="Pastries.", assistantMessage="Ok."), now=NOW
    )
    assert first.turn_id != second.turn_id


def test_explicit_turn_id_is_kept() -> None:
    assert inputs.turn_recorded(pair(turnId="t-42"), now=NOW).turn_id == "t-42"


def test_occurred_at_accepts_ms_and_iso() -> None:
    from_ms = inputs.turn_recorded(pair(occurredAt=NOW_MS))
    from_iso = inputs.turn_recorded(pair(occurredAt="2024-01-02T03:04:05"))
    assert from_ms.occurred_at == from_iso.occurred_at == NOW


def test_bad_occurred_at_is_rejected() -> None:
    with pytest.raises(ScopeError, match="occurredAt must be"):
        inputs.turn_recorded(pair(occurredAt="yesterday"))


def test_user_and_assistant_messages_are_stamped_now_and_now_plus_1() -> None:
    event = inputs.turn_recorded(pair(), now=NOW)
    assert [(m.role, m.content, m.timestamp) for m in event.messages] == [
        ("user", "hello", NOW_MS),
        ("assistant", "hi there", NOW_MS + 1),
    ]


def test_messages_without_timestamp_get_now_plus_index() -> None:
    messages = [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b", "timestamp": 5},
        {"role": "system", "content": "c"},
    ]
    event = inputs.turn_recorded(turn_body(messages=messages), now=NOW)
    assert [m.timestamp for m in event.messages] == [NOW_MS, 5, NOW_MS + 2]


@pytest.mark.parametrize("stamp", [-1, 2**70, MAX_TIME_MS + 1, 1.5, float("nan")])
def test_a_message_timestamp_out_of_range_is_refused_not_replaced(stamp: object) -> None:
    messages = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    messages[1]["timestamp"] = stamp  # type: ignore[assignment]
    with pytest.raises(ValueOutOfRange, match=r"^messages\[1\]\.timestamp must be a time"):
        inputs.turn_recorded(turn_body(messages=messages), now=NOW)
    tools = [{"name": "t", "timestamp": stamp}]
    with pytest.raises(ValueOutOfRange, match=r"^toolEvents\[0\]\.timestamp must be a time"):
        inputs.turn_recorded(pair(toolEvents=tools), now=NOW)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"occurredAt": 2**70}, "occurredAt must be a time"),
        ({"occurredAt": -1}, "occurredAt must be a time"),
        ({"occurred_at": "0001-01-01T00:00:00Z"}, "occurred_at must be a time"),
        ({"occurredAt": "9999-12-31T23:59:59-14:00"}, "occurredAt must be a time"),
        ({"totalTokens": -1}, "totalTokens must be at least 0"),
        ({"tokenCount": -5}, "tokenCount must be at least 0"),
        ({"contextWindow": -1}, "contextWindow must be at least 0"),
    ],
)
def test_turn_numbers_out_of_range_are_refused_not_ignored(
    extra: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueOutOfRange, match=f"^{message}"):
        inputs.turn_recorded(pair(**extra), now=NOW)


def test_the_ends_of_the_time_range_are_times() -> None:
    first = inputs.turn_recorded(pair(occurredAt=0))
    assert first.occurred_at == datetime(1970, 1, 1, tzinfo=UTC)
    late = MAX_TIME_MS - 1  # the answer is stamped 1 ms after the question
    last = inputs.turn_recorded(pair(occurredAt=late))
    assert to_ms(last.occurred_at) == late
    assert TurnRecorded.model_validate_json(last.model_dump_json()) == last


def test_turn_defaults() -> None:
    event = inputs.turn_recorded(pair(), now=NOW)
    assert (event.total_tokens, event.model_used, event.context_window) == (0, "external", 0)
    assert event.metadata == {}
    assert event.summary is None


def test_token_and_model_aliases() -> None:
    event = inputs.turn_recorded(pair(tokenCount=12, model="m-1", metadata={"k": 1}), now=NOW)
    assert (event.total_tokens, event.model_used, event.metadata) == (12, "m-1", {"k": 1})


# --- memory_remembered (§7.4) --------------------------------------------------------------


@pytest.mark.parametrize("key", ["content", "fact"])
def test_remember_takes_content_or_fact(key: str) -> None:
    event = inputs.memory_remembered({"agentWallet": "A", key: "  likes tea "}, now=NOW)
    assert event.content == "likes tea"
    assert (event.type, event.confidence) == ("explicit_save", 1.0)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({}, r"^content is required$"),
        ({"content": "  "}, r"^content is required$"),
        # issue 33: one model, the gateway's types: a number is not text (it was ignored)
        ({"fact": 3}, r"^fact: Input should be a valid string"),
    ],
)
def test_remember_without_content_is_rejected(extra: dict[str, Any], message: str) -> None:
    with pytest.raises(ScopeError, match=message):
        inputs.memory_remembered({"agentWallet": "A", **extra}, now=NOW)


def test_remember_validates_scope_first() -> None:
    with pytest.raises(ScopeError, match=r"^agentWallet is required$"):
        inputs.memory_remembered({"content": "x"}, now=NOW)
