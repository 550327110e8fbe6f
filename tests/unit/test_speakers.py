"""Who said a message: a given name, a leading "Name: " in imported text, or only the role."""

from __future__ import annotations

import pytest

from engine.ingest.speakers import spoken
from engine.ingest.turns import compact_summary, turn_messages, working_lines
from schemas.inputs import turn_recorded


@pytest.mark.parametrize(
    ("content", "name", "text"),
    [
        ("Melanie: I went to a pottery workshop.", "Melanie", "I went to a pottery workshop."),
        ("Mary Jane: yes, on Sunday", "Mary Jane", "yes, on Sunday"),
        ("Note: buy milk", None, "Note: buy milk"),
        ("I said: hi", None, "I said: hi"),
        ("Time is 10:30 now", None, "Time is 10:30 now"),
        ("plain words", None, "plain words"),
    ],
)
def test_a_leading_name_names_the_speaker_and_leaves_the_words(
    content: str, name: str | None, text: str
) -> None:
    said = spoken("user", content)
    assert (said.name, said.text) == (name, text)
    assert said.speaker == (name or "user")


def test_a_given_name_wins_and_drops_its_own_prefix_only() -> None:
    assert spoken("assistant", "Caroline: sure", "Caroline").text == "sure"
    other = spoken("assistant", "Melanie: sure", "Caroline")
    assert (other.name, other.text) == ("Caroline", "Melanie: sure")


def test_a_message_name_reaches_the_turn_event_and_a_blank_one_is_refused() -> None:
    scope = {"agentWallet": "0xA", "userAddress": "alice", "threadId": "t"}
    messages = [{"role": "user", "content": "hello", "name": " Melanie "}]
    event = turn_recorded({**scope, "messages": messages})
    assert event.messages[0].name == "Melanie"
    with pytest.raises(ValueError, match=r"messages\[0\]\.name"):
        turn_recorded({**scope, "messages": [{**messages[0], "name": "  "}]})


def test_a_named_message_is_stored_and_shown_with_its_speaker() -> None:
    scope = {"agentWallet": "0xA", "userAddress": "alice", "threadId": "t"}
    messages = [
        {"role": "user", "content": "I read Charlotte's Web", "name": "Melanie"},
        {"role": "assistant", "content": "Caroline: Lovely book", "name": "Caroline"},
    ]
    stored = turn_messages(turn_recorded({**scope, "messages": messages}))
    assert [m.name for m in stored] == ["Melanie", "Caroline"]
    assert compact_summary(stored) == (
        "user: Melanie: I read Charlotte's Web\nassistant: Caroline: Lovely book"
    )
    assert working_lines(stored)[0] == "user: Melanie: I read Charlotte's Web"
