"""Messages as retrieval units (issue 16): a turn is judged by its best message, shown as
it, and shown whole when the budget has room for its neighbours."""

from __future__ import annotations

from engine.retrieval.hits import Hit
from engine.retrieval.lexical import terms
from engine.retrieval.packing import HEADER, pack
from engine.retrieval.units import messages_of, shown_units

NOW = 1_700_000_000_000
OMAR = "user: Nate: Have you read anything good?\nassistant: Omar: I started The Overstory"
NATE = "user: Nate: Omar, I finished reading The Vanishing Half\nassistant: Omar: Nice!"


def test_a_turn_splits_into_its_messages_and_continuation_lines_stay_with_theirs() -> None:
    text = "user: first line\nstill the user\nassistant: the answer\ntool: search status:ok"
    assert messages_of(text) == [
        "user: first line\nstill the user",
        "assistant: the answer",
        "tool: search status:ok",
    ]
    assert messages_of("A remembered fact.") == ["A remembered fact."]
    assert messages_of("preface\nuser: hi") == ["preface", "user: hi"]


def test_a_name_counts_in_the_speakers_message_not_in_every_turn_naming_both() -> None:
    # "Omar" is in both turns, but only in Nate's turn do "Omar" and "read" share a message
    rows = [OMAR, NATE]
    shown = shown_units(terms("What has Omar been reading?"), rows)
    assert shown[1].lexical > shown[0].lexical
    assert shown[1].text == "user: Nate: Omar, I finished reading The Vanishing Half"
    assert shown[1].context == NATE


def test_a_tie_between_messages_or_no_match_shows_the_whole_turn() -> None:
    [none] = shown_units(terms("holiday plans"), [OMAR])
    assert (none.lexical, none.text, none.context) == (0.0, OMAR, None)
    both = "user: Nate: the Overstory\nassistant: Omar: the Overstory"
    [tie] = shown_units(terms("Overstory"), [both])
    assert tie.text == both
    assert tie.context is None


def _hit(hid: str, text: str, context: str | None, score: float) -> Hit:
    return Hit(layer="vectors", id=hid, text=text, context=context, score=score, created_at=NOW)


def test_with_room_left_a_message_is_shown_with_its_turn_and_never_past_the_budget() -> None:
    unit = "user: Nate: Omar, I finished reading The Vanishing Half"
    hits = {"vectors": [_hit("a", unit, NATE, 0.9)]}
    roomy = pack("reading", hits, layer_order=["vectors"], budget_chars=2_000, now_ms=NOW)
    assert roomy.prompt is not None
    assert NATE in roomy.prompt
    tight_budget = len(HEADER) + 2 + len("[VECTORS 2023-11-14] ") + len(unit) + 5
    tight = pack("reading", hits, layer_order=["vectors"], budget_chars=tight_budget, now_ms=NOW)
    assert tight.prompt is not None
    assert unit in tight.prompt
    assert "Nice!" not in tight.prompt
    assert len(tight.prompt) <= tight_budget


def test_a_small_budget_holds_more_distinct_memories_as_messages_than_as_turns() -> None:
    filler = " and then some more words about the weather that day" * 2
    turns = [
        f"user: Nate: news number {i}{filler}\nassistant: Omar: reading note {i}" for i in range(8)
    ]
    as_units = {
        "vectors": [
            _hit(str(i), f"assistant: Omar: reading note {i}", t, 0.9 - i / 100)
            for i, t in enumerate(turns)
        ]
    }
    as_turns = {"vectors": [_hit(str(i), t, None, 0.9 - i / 100) for i, t in enumerate(turns)]}
    kwargs = {"layer_order": ["vectors"], "budget_chars": 600, "now_ms": NOW}
    units = pack("reading note", as_units, **kwargs)  # type: ignore[arg-type]
    whole = pack("reading note", as_turns, **kwargs)  # type: ignore[arg-type]
    assert len(units.items) > len(whole.items)


def test_without_a_budget_a_turn_is_shown_whole_as_before() -> None:
    unit = "user: Nate: Omar, I finished reading The Vanishing Half"
    packed = pack(
        "reading", {"vectors": [_hit("a", unit, NATE, 0.9)]}, layer_order=["vectors"], now_ms=NOW
    )
    assert [i.text for i in packed.items] == [NATE]


def test_a_message_is_not_shown_alone_for_its_speakers_name_issue_32() -> None:
    # the question names Caroline; her line in this turn says nothing the question asks,
    # the other speaker's does (by meaning): the turn is shown whole, and it still counts
    # the name toward its relevance (a question about what Caroline said finds her turns)
    turn = "user: Caroline: Only if Abba is banned.\nassistant: Maya: Swimming is kind to knees."
    [shown] = shown_units(terms("What exercise suits Caroline?"), [turn])
    assert shown.text == turn
    assert shown.context is None
    assert shown.lexical > 0
    # a match on what a message says still shows it alone
    [said] = shown_units(terms("Caroline and Abba"), [turn])
    assert said.text == "user: Caroline: Only if Abba is banned."
