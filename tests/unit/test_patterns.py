"""Pure pattern rules (sequence, id, validation, summary) and the in-memory counter/skills."""

from __future__ import annotations

import pytest

from engine.adapters.memory import InMemoryPatternStore
from engine.adapters.memory.pattern_counts import InMemoryPatternCounter, InMemorySkillStore
from engine.errors import InputRejected, NotFound
from engine.ingest.outcomes import recorded_call
from engine.ingest.patterns import (
    PatternSeed,
    PatternState,
    ToolStep,
    describe,
    executions_from_transcript,
    observe,
    pattern_id,
    record_turn,
    to_record,
    tool_sequence,
    validate,
    validate_counts,
)
from engine.ingest.skill_view import skill_view
from engine.ingest.skills import promote, skill_id
from engine.records import ScopeFields, StoredMessage, Transcript
from engine.scoping import TenantFilter
from schemas.events import Message, ToolEvent, TurnRecorded
from schemas.scope import Scope

T0 = 1_600_000_000_000
FLIGHT = ("search_flights", "compare_fares", "book_ticket")


def turn(
    turn_id: str,
    tools: list[tuple[str, str, int]],
    *,
    agent: str = "0xAgent",
    user: str | None = "0xUser",
    thread: str = "th1",
) -> TurnRecorded:
    return TurnRecorded(
        scope=Scope(agent_wallet=agent, user_address=user, mode="global", thread_id=thread),
        session_id=f"s-{thread}",
        thread_id=thread,
        turn_id=turn_id,
        messages=[Message(role="user", content="book me a flight", timestamp=T0)],
        tool_events=[ToolEvent(name=n, status=s, timestamp=T0 + t) for n, s, t in tools],
    )


def flight_turn(turn_id: str, status: str = "completed", **kw: str) -> TurnRecorded:
    return turn(turn_id, [(n, status, i) for i, n in enumerate(FLIGHT)], **kw)


WHERE = TenantFilter(agent_wallet="0xAgent", user_address="0xUser", mode="global")


# --- pure rules -----------------------------------------------------------------------


def test_sequence_is_ordered_by_timestamp_with_outcomes() -> None:
    event = turn("t1", [("b", "failed", 20), ("a", "ok", 10), ("c", "Timeout", 30)])
    assert tool_sequence(event) == [
        ToolStep("a", True),
        ToolStep("b", False),
        ToolStep("c", False),
    ]


@pytest.mark.parametrize(
    ("status", "ok"),
    [
        ("completed", True),
        ("success", True),
        ("OK", True),
        ("failed", False),
        ("error", False),
        ("timeout", False),
        ("pending", False),
        ("unknown", None),
        ("Unknown ", None),
    ],
)
def test_status_words(status: str, ok: bool | None) -> None:
    assert tool_sequence(turn("t", [("x", status, 0)])) == [ToolStep("x", ok)]


def test_no_tools_means_no_pattern() -> None:
    assert tool_sequence(turn("t", [])) == []
    assert observe(turn("t", [])) is None


def test_observe_takes_tenant_without_thread_and_last_time() -> None:
    a = observe(flight_turn("t1", thread="th1"))
    b = observe(flight_turn("t2", thread="th2"))
    assert a is not None
    assert b is not None
    assert a.seed == b.seed
    assert a.seed.scope.thread_id is None
    assert a.seed.steps == FLIGHT
    assert a.at == T0 + 2
    assert a.succeeded
    failed = observe(turn("t3", [("a", "ok", 0), ("b", "error", 1)]))
    assert failed is not None
    assert not failed.succeeded


# issue 17: a tool event reported without a status counted as a success before; each test
# below failed on that code


def test_a_turn_with_an_unknown_outcome_and_no_failure_is_unknown() -> None:
    unknown = observe(turn("t1", [("a", "ok", 0), ("b", "unknown", 1)]))
    assert unknown is not None
    assert unknown.succeeded is None
    failed = observe(turn("t2", [("a", "unknown", 0), ("b", "error", 1)]))
    assert failed is not None
    assert failed.succeeded is False  # a known failure outweighs an unknown outcome
    [step] = tool_sequence(turn("t3", [("a", ToolEvent(name="a", timestamp=T0).status, 0)]))
    assert step == ToolStep("a", None)  # the contract's default status


def test_unknown_outcomes_count_runs_but_move_no_success_rate() -> None:
    seed = PatternSeed.of(ScopeFields("a", "u", None, "global", None), FLIGHT)
    state = PatternState(seed.pattern_id, seed.scope, seed.steps, 5, 2, T0, T0, unknown=2)
    assert state.known == 3
    assert state.success_rate == pytest.approx(2 / 3)
    assert to_record(state).unknown_count == 2
    assert to_record(state).success_rate == pytest.approx(2 / 3)
    nothing_known = PatternState(seed.pattern_id, seed.scope, seed.steps, 4, 0, T0, T0, unknown=4)
    assert nothing_known.success_rate == 0.0


def test_validation_weighs_only_runs_with_a_known_outcome() -> None:
    seed = PatternSeed.of(ScopeFields("a", "u", None, "global", None), FLIGHT)
    # one success and nine unreported runs: one known run is not a pattern
    state = PatternState(seed.pattern_id, seed.scope, seed.steps, 10, 1, T0, T0, unknown=9)
    check = validate(state)
    assert not check.valid
    assert check.confidence == pytest.approx(0.1)
    assert check.occurrences == 10
    assert check.success_rate == 1.0


def test_summary_says_how_many_outcomes_are_unknown() -> None:
    assert describe(FLIGHT, 5, 2, 2) == (
        "Tool sequence: search_flights -> compare_fares -> book_ticket "
        "(used 5 times, 67% successful, 2 outcomes unknown). Starts with search_flights."
    )
    assert "(used 4 times, 100% successful, 1 outcome unknown)" in describe(("a",), 4, 3, 1)
    assert "(used 1 time, outcome unknown)" in describe(("a",), 1, 0, 1)
    assert "(used 3 times, outcomes unknown)" in describe(("a",), 3, 0, 3)


def stored(turn_id: str, name: str, content: str, at: int) -> StoredMessage:
    return StoredMessage(
        role="tool",
        content=content,
        timestamp=at,
        tool_calls=[{"name": name, "args": {}}],
        turn_id=turn_id,
    )


def test_a_stored_tool_message_without_a_status_is_an_unknown_outcome() -> None:
    scope = ScopeFields("a", "u", None, "global", None)
    transcript = Transcript(
        session_id="s",
        scope=scope,
        messages=[
            StoredMessage(role="user", content="book it", timestamp=T0, turn_id="t1"),
            stored("t1", "search_flights", "tool:search_flights status:completed", T0 + 1),
            stored("t1", "book_flight", "tool:book_flight", T0 + 2),  # legacy: no status
            stored("t2", "search_flights", "tool:search_flights status:ok result:3", T0 + 3),
            stored("t2", "book_flight", "booked, status:ok", T0 + 4),  # another shape
            stored("t3", "search_flights", "tool:search_flights status:ok", T0 + 5),
            stored("t3", "book_flight", "tool:book_flight status:failed result:status:ok", T0 + 6),
            stored("t4", "search_flights", "tool:search_flights status:done", T0 + 7),
            stored("t4", "book_flight", "tool:book_flight status:completed", T0 + 8),
        ],
        summary=None,
        token_count=0,
        created_at=T0,
        updated_at=T0,
    )
    runs = {r.turn_id: r for r in executions_from_transcript(transcript)}
    assert {t: r.succeeded for t, r in runs.items()} == {
        "t1": None,
        "t2": None,
        "t3": False,
        "t4": True,
    }
    assert runs["t1"].seed.steps == ("search_flights", "book_flight")
    assert recorded_call(transcript.messages[2]) == ("book_flight", "unknown")
    assert recorded_call(transcript.messages[0]) is None  # not a tool call


def test_pattern_id_covers_full_tenant_and_sequence() -> None:
    base = ScopeFields("0xAAAAAAAAAA1", "u", None, "global", None)
    same_prefix = ScopeFields("0xAAAAAAAAAA2", "u", None, "global", None)
    ids = {
        pattern_id(base, FLIGHT),
        pattern_id(same_prefix, FLIGHT),  # §16.19: the wallet slice [2:10] collided here
        pattern_id(ScopeFields("0xAAAAAAAAAA1", "v", None, "global", None), FLIGHT),
        pattern_id(ScopeFields("0xAAAAAAAAAA1", "u", None, "local", "h"), FLIGHT),
        pattern_id(ScopeFields("0xAAAAAAAAAA1", None, None, "global", None), FLIGHT),
        pattern_id(base, FLIGHT[:2]),
        pattern_id(base, tuple(reversed(FLIGHT))),
    }
    assert len(ids) == 7
    assert pattern_id(base, FLIGHT) == pattern_id(base, list(FLIGHT))
    assert pattern_id(base, FLIGHT).startswith("pat_")
    assert len(pattern_id(base, FLIGHT)) == 4 + 32


@pytest.mark.parametrize(
    ("count", "rate", "confidence", "valid"),
    [
        (2, 0.60, 0.12, False),
        (3, 0.65, 0.195, False),
        (4, 0.70, 0.28, True),
        (7, 0.85, 0.595, True),
        (10, 0.99, 0.99, True),
        (25, 0.99, 1.0, True),
    ],
)
def test_validation_table_of_reference_9_2(
    count: int, rate: float, confidence: float, valid: bool
) -> None:
    got_valid, got_confidence = validate_counts(count, rate)
    assert got_confidence == pytest.approx(confidence)
    assert got_valid is valid


def test_validation_thresholds() -> None:
    assert validate_counts(1, 1.0) == (False, 0.1)  # one run is not a pattern
    assert not validate_counts(10, 0.5)[0]  # rate below 0.55
    assert validate_counts(10, 0.55)[0]


def test_unknown_pattern_validates_to_zero() -> None:
    v = validate(None)
    assert (v.valid, v.confidence, v.occurrences, v.success_rate, v.tool_sequence) == (
        False,
        0.0,
        0,
        0.0,
        (),
    )


def test_summary_is_searchable() -> None:
    assert describe(FLIGHT, 6, 5) == (
        "Tool sequence: search_flights -> compare_fares -> book_ticket "
        "(used 6 times, 83% successful). Starts with search_flights."
    )
    assert "(used 1 time, 0% successful)" in describe(("a",), 1, 0)
    assert "13% successful" in describe(("a",), 8, 1)  # 12.5 rounds half up


def test_to_record_feeds_the_patterns_layer() -> None:
    seed = PatternSeed.of(ScopeFields("a", "u", "th", "global", None), FLIGHT)
    state = PatternState(seed.pattern_id, seed.scope, seed.steps, 4, 3, T0 + 9, T0)
    record = to_record(state)
    assert record.pattern_type == "tool_sequence"
    assert (record.trigger_type, record.trigger_value) == ("context", "search_flights")
    assert record.steps == list(FLIGHT)
    assert record.success_rate == 0.75
    assert record.execution_count == 4
    assert (record.last_executed, record.created_at) == (T0 + 9, T0)
    assert record.summary == state.summary
    assert record.scope.thread_id is None


def test_seed_needs_steps() -> None:
    with pytest.raises(InputRejected):
        PatternSeed.of(ScopeFields("a", None, None, None, None), [])


# --- in-memory counter and skills -----------------------------------------------------


async def test_pattern_emerges_from_repeated_successes() -> None:
    layer = InMemoryPatternStore()
    counter = InMemoryPatternCounter(mirror=layer)
    for i in range(4):
        assert await record_turn(counter, flight_turn(f"t{i}", thread=f"th{i % 2}"))
    seed = observe(flight_turn("x"))
    assert seed is not None
    state = await counter.get(WHERE, seed.seed.pattern_id)
    assert state is not None
    assert (state.executions, state.successes, state.success_rate) == (4, 4, 1.0)
    check = validate(state)
    assert check.valid
    assert check.confidence == pytest.approx(0.4)
    assert check.tool_sequence == FLIGHT
    [record] = await layer.active(WHERE, 10)
    assert record.execution_count == 4
    assert record.success_rate == 1.0


async def test_turns_without_statuses_do_not_make_a_pattern_reliable() -> None:
    counter = InMemoryPatternCounter()
    await record_turn(counter, flight_turn("ok"))
    await record_turn(counter, flight_turn("failed", status="failed"))
    for i in range(3):  # reported without a status: the contract's default
        tools = [ToolEvent(name=n, timestamp=T0 + j) for j, n in enumerate(FLIGHT)]
        await record_turn(counter, flight_turn(f"u{i}").model_copy(update={"tool_events": tools}))
    [state] = await counter.list(WHERE, 10)
    assert (state.executions, state.successes, state.unknown) == (5, 1, 3)
    assert state.success_rate == 0.5  # not 4/5: an unknown outcome is not a success
    assert not validate(state).valid
    assert "3 outcomes unknown" in state.summary


async def test_failing_sequence_does_not_validate() -> None:
    counter = InMemoryPatternCounter()
    for i in range(10):
        await record_turn(counter, flight_turn(f"t{i}", status="failed"))
    [state] = await counter.list(WHERE, 10)
    assert (state.executions, state.successes) == (10, 0)
    assert not validate(state).valid


async def test_redelivered_turn_counts_once() -> None:
    counter = InMemoryPatternCounter()
    assert await record_turn(counter, flight_turn("t1"))
    assert not await record_turn(counter, flight_turn("t1"))
    [state] = await counter.list(WHERE, 10)
    assert state.executions == 1


async def test_counter_reads_are_tenant_scoped() -> None:
    counter = InMemoryPatternCounter()
    await record_turn(counter, flight_turn("t1", user="0xOther"))
    assert await counter.list(WHERE, 10) == []
    execution = observe(flight_turn("t1", user="0xOther"))
    assert execution is not None
    assert await counter.get(WHERE, execution.seed.pattern_id) is None


async def test_promotion_is_idempotent() -> None:
    counter, skills = InMemoryPatternCounter(), InMemorySkillStore()
    for i in range(4):
        await record_turn(counter, flight_turn(f"t{i}"))
    [state] = await counter.list(WHERE, 10)
    first = await promote(counter, skills, WHERE, state.pattern_id, "book a flight", at=T0)
    assert first.status == "promoted"
    assert first.promoted
    assert first.skill is not None
    assert first.skill.skill_id == skill_id(state.pattern_id)
    assert first.skill.tools == FLIGHT
    assert first.skill.max_steps == 3
    again = await promote(counter, skills, WHERE, state.pattern_id, "other name", at=T0 + 1)
    assert again.status == "already_promoted"
    assert again.skill == first.skill
    assert await skills.list(WHERE, 10) == [first.skill]


async def test_a_skill_says_how_it_was_promoted() -> None:
    # issue 17: a skill promoted at a caller's request was tagged "auto-promoted"
    counter, skills = InMemoryPatternCounter(), InMemorySkillStore()
    for i in range(4):
        await record_turn(counter, flight_turn(f"t{i}"))
    [state] = await counter.list(WHERE, 10)
    done = await promote(counter, skills, WHERE, state.pattern_id, "book a flight", at=T0)
    assert done.skill is not None
    assert done.skill.promotion == "manual"
    assert done.skill.tags == ("pattern", "promoted", "manual")
    assert done.skill.creator == "caller"
    view = skill_view(done.skill)
    assert view["tags"] == ["pattern", "promoted", "manual"]
    assert (view["promotion"], view["creator"]) == ("manual", "caller")
    assert "auto-promoted" not in str(view)
    other = InMemorySkillStore()
    auto = await promote(counter, other, WHERE, state.pattern_id, "x", at=T0, how="automatic")
    assert auto.skill is not None
    assert (auto.skill.tags, auto.skill.creator) == (("pattern", "promoted", "automatic"), "system")


async def test_promotion_of_invalid_pattern_is_refused() -> None:
    counter, skills = InMemoryPatternCounter(), InMemorySkillStore()
    await record_turn(counter, flight_turn("t1"))  # one execution: not a pattern yet
    [state] = await counter.list(WHERE, 10)
    result = await promote(counter, skills, WHERE, state.pattern_id, "book", at=T0)
    assert result.status == "invalid"
    assert result.skill is None
    assert not result.validation.valid
    assert await skills.list(WHERE, 10) == []


async def test_promotion_of_unknown_or_foreign_pattern_is_not_found() -> None:
    counter, skills = InMemoryPatternCounter(), InMemorySkillStore()
    for i in range(4):
        await record_turn(counter, flight_turn(f"t{i}", user="0xOther"))
    [foreign] = await counter.list(TenantFilter("0xAgent", "0xOther", "global"), 10)
    with pytest.raises(NotFound):
        await promote(counter, skills, WHERE, foreign.pattern_id, "steal", at=T0)
    with pytest.raises(NotFound):
        await promote(counter, skills, WHERE, "pat_missing", "x", at=T0)
    with pytest.raises(InputRejected):
        await promote(counter, skills, WHERE, foreign.pattern_id, "  ", at=T0)
