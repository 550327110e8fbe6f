"""The framework adapters' pure parts (issue 18 §2, §3): how a LangGraph item is named and
filtered (`store_records`) and how an Agents SDK item is said as a message
(`session_items`)."""

from __future__ import annotations

import json

import pytest

from services.integrations import session_items as items
from services.integrations.store_records import anchor, matches, namespace_matches, prefix_tag


def test_an_items_anchor_names_namespace_and_key_exactly() -> None:
    """The fact hash lowercases its text: the anchor must still tell case apart."""
    names = {
        anchor(("a",), "k"),
        anchor(("a",), "K"),
        anchor(("A",), "k"),
        anchor(("a", "k"), ""),
        anchor(("a",), "k "),
    }
    assert len(names) == 5
    digests = [name.removeprefix("LangGraph store item ") for name in names]
    assert all(d == d.lower() and len(d) == 64 for d in digests)  # no case left to lose
    assert prefix_tag(()) != prefix_tag(("",)) != prefix_tag(("a",))
    assert len(prefix_tag(["x" * 10_000])) <= 512  # a filter value's limit


@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        ({"kind": "fact"}, True),
        ({"kind": "habit"}, False),
        ({"n": {"$gt": 2, "$lte": 3}}, True),
        ({"n": {"$lt": 3}}, False),
        ({"n": {"$ne": 3}}, False),
        ({"missing": {"$gt": 0}}, False),  # outside every range, never a TypeError
        ({"kind": {"$gt": 0}}, False),
        ({"nested": {"a": 1}}, True),
        ({"nested": {"a": 2}}, False),
        ({"tags": ["x", "y"]}, True),
        ({"tags": ["x"]}, False),
        ({"missing": None}, True),
        (None, True),
    ],
)
def test_filters_follow_langgraphs_semantics(flt: dict[str, object] | None, expected: bool) -> None:
    value = {"kind": "fact", "n": 3, "nested": {"a": 1, "b": 2}, "tags": ["x", "y"]}
    assert matches(value, flt) is expected


def test_an_unknown_filter_operator_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match=r"\$regex"):
        matches({"a": "b"}, {"a": {"$regex": "b"}})


def test_namespace_conditions_match_prefixes_suffixes_and_wildcards() -> None:
    ns = ("a", "b", "c")
    assert namespace_matches("prefix", ("a", "*"), ns)
    assert namespace_matches("suffix", ("*", "c"), ns)
    assert namespace_matches("suffix", (), ns)
    assert not namespace_matches("prefix", ("b",), ns)
    assert not namespace_matches("suffix", ("a", "b", "c", "d"), ns)


def test_agents_items_are_said_readably() -> None:
    assert items.said({"role": "user", "content": "Hi"}) == ("user", "Hi")
    assert items.said({"role": "developer", "content": "Be brief."}) == ("system", "Be brief.")
    output = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "Done."}, {"type": "refusal"}],
    }
    assert items.said(output) == ("assistant", "Done.")
    call = {"type": "function_call", "call_id": "c", "name": "f", "arguments": '{"x": 1}'}
    assert items.said(call) == ("assistant", '[tool call] f({"x": 1})')
    result = {"type": "function_call_output", "call_id": "c", "output": [{"type": "text"}]}
    assert items.said(result) == ("tool", '[tool result] [{"type": "text"}]')
    assert items.said({"type": "reasoning", "summary": []}) == ("assistant", "[reasoning]")
    assert items.said({"role": "user", "content": []}) == ("user", "(no text)")


def test_a_function_call_answered_among_the_items_is_a_tool_event() -> None:
    given = [
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": '{"x": 1}'},
        {"type": "function_call", "call_id": "c2", "name": "g", "arguments": "not json"},
        {"type": "function_call_output", "call_id": "c1", "output": "ok"},
        {"type": "function_call_output", "call_id": "c3", "output": "orphan"},
        {"type": "function_call", "call_id": "c4", "name": "h", "arguments": '{"a.b": 1}'},
        {"type": "function_call_output", "call_id": "c4", "output": "fine"},
    ]
    events = items.tool_events(given, [10, 11, 12, 13, 14, 15])
    assert events == [
        {"name": "f", "args": {"x": 1}, "status": "completed", "result": "ok", "timestamp": 12},
        # arguments that cannot be stored as a document are left out, never refused
        {"name": "h", "args": {}, "status": "completed", "result": "fine", "timestamp": 15},
    ]


def test_turns_are_split_by_count_and_size() -> None:
    raws = ["r"] * 250
    assert [len(r) for r in items.chunks(raws, [""] * 250)] == [100, 100, 50]
    big = ["x" * 150_000] * 5
    assert [len(r) for r in items.chunks(big, [""] * 5)] == [2, 2, 1]
    assert items.chunks([], []) == []


def test_only_this_sessions_envelope_is_read_as_an_item() -> None:
    assert items.envelope(json.dumps({items.ENVELOPE: 1, "item": {"a": 1}})) == {
        items.ENVELOPE: 1,
        "item": {"a": 1},
    }
    for other in (
        None,
        "not json",
        "[1]",
        json.dumps({"role": "user"}),
        json.dumps({items.ENVELOPE: 2}),
    ):
        assert items.envelope(other) is None
