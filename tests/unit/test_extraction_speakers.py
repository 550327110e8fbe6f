"""Facts about anyone (issues 16 and 17 §1): a named speaker's facts are about that speaker,
an unnamed assistant is still never read, and third parties (organisations, other people,
books) get their own facts and relations."""

from __future__ import annotations

from engine.ingest.extraction.rules import extract_sync
from engine.ingest.extraction.types import ExtractionPolicy, TurnText

POLICY = ExtractionPolicy()


def _read(*messages: TurnText) -> tuple[list[str], set[tuple[str, str, str]], dict[str, str]]:
    found = extract_sync(messages, POLICY)
    return (
        [f.text for f in found.facts],
        {(r.source, r.type, r.target) for r in found.relations},
        {e.name: e.type for e in found.entities},
    )


def test_a_named_speaker_on_the_assistant_side_states_facts_about_themselves() -> None:
    texts, relations, entities = _read(
        TurnText("user", "How was your week?", "Caroline"),
        TurnText("assistant", "I live in Porto with my dog Juniper", "Melanie"),
    )
    assert texts == ["Melanie lives in Porto", "Melanie has a dog named Juniper"]
    assert relations == {("Melanie", "LIVES_IN", "Porto"), ("Juniper", "PET_OF", "Melanie")}
    assert entities["Melanie"] == "person"  # the other speaker is a node of their own


def test_the_other_speakers_slot_is_their_own() -> None:
    found = extract_sync(
        [
            TurnText("user", "I live in Lisbon", "Caroline"),
            TurnText("assistant", "I live in Porto", "Melanie"),
        ],
        POLICY,
    )
    slots = {f.text: f.slot for f in found.facts}
    # one speaker's home must never supersede the other's
    assert slots == {
        "Caroline lives in Lisbon": "residence",
        "Melanie lives in Porto": "residence@melanie",
    }


def test_a_named_user_keeps_the_user_node_and_is_named_in_the_text() -> None:
    texts, relations, entities = _read(TurnText("user", "I work at Acme Corp", "Caroline"))
    assert texts == ["Caroline works at Acme Corp"]
    assert relations == {("user", "WORKS_AT", "Acme Corp")}
    assert "Caroline" not in entities


def test_an_unnamed_assistant_is_still_never_read() -> None:
    texts, relations, _ = _read(
        TurnText("user", "Any tapas near me?"),
        TurnText("assistant", "I live in the cloud and I love jazz. My sister Ana lives in Rome."),
    )
    assert texts == []
    assert relations == set()


def test_an_organisation_is_based_somewhere() -> None:
    texts, relations, entities = _read(
        TurnText("user", "I work at Acme Corp. Acme Corp is based in Berlin.")
    )
    assert relations == {("user", "WORKS_AT", "Acme Corp"), ("Acme Corp", "BASED_IN", "Berlin")}
    assert entities == {"Acme Corp": "organisation", "Berlin": "place"}
    assert "Acme Corp is based in Berlin" in texts


def test_a_manager_in_any_word_order() -> None:
    for said in (
        "My manager is Dana.",
        "Dana is my manager",
        "I report to Dana",
        "my boss is Dana",
    ):
        _, relations, entities = _read(TurnText("user", said))
        assert relations == {("Dana", "MANAGER_OF", "user")}, said
        assert entities == {"Dana": "person"}, said
    _, relations, _ = _read(TurnText("user", "My boss is Dana Smith"))
    assert relations == {("Dana Smith", "MANAGER_OF", "user")}


def test_a_named_relative_and_where_they_live() -> None:
    texts, relations, entities = _read(TurnText("user", "My sister Maria lives in Madrid"))
    assert relations == {("Maria", "SISTER_OF", "user"), ("Maria", "LIVES_IN", "Madrid")}
    assert entities == {"Maria": "person", "Madrid": "place"}
    assert "Maria lives in Madrid" in texts


def test_another_person_at_the_start_of_a_clause() -> None:
    _, relations, _ = _read(TurnText("user", "Dana works at Globex and loves hiking"))
    assert relations == {("Dana", "WORKS_AT", "Globex")}


def test_books_read_and_being_read() -> None:
    texts, relations, entities = _read(TurnText("user", "I just finished Circe by Madeline Miller"))
    assert texts == ["The user read Circe"]
    assert relations == {("user", "READ", "Circe")}
    assert entities == {"Circe": "book"}
    texts, _, _ = _read(TurnText("user", "I'm reading The Overstory right now"))
    assert texts == ["The user is reading The Overstory"]


def test_pronouns_nationalities_and_common_nouns_are_not_people() -> None:
    for said in (
        "This is my manager",
        "My wife is Italian",
        "He works at Google",
        "I read the news every morning",
        "Everyone lives in fear",
    ):
        _, relations, _ = _read(TurnText("user", said))
        assert relations == set(), said


def test_third_parties_linked_to_each_other() -> None:
    cases = {
        "Marcus works at Tidewater Labs, which is based in Boston": {
            ("Marcus", "WORKS_AT", "Tidewater Labs"),
            ("Tidewater Labs", "BASED_IN", "Boston"),
        },
        "Fatima manages Jonah on the design team": {("Fatima", "MANAGER_OF", "Jonah")},
        "Sunita's husband Raj is lovely": {("Raj", "SPOUSE_OF", "Sunita")},
        "My dad Hector grew up in Seville": {
            ("Hector", "FATHER_OF", "user"),
            ("Hector", "FROM", "Seville"),
        },
        "Helga uses Ableton for her music": {("Helga", "USES", "Ableton")},
        "Pancake, my corgi, just turned 4 today": {("Pancake", "PET_OF", "user")},
        "Hyun-woo, a colleague of mine, runs marathons": {("Hyun-woo", "COLLEAGUE_OF", "user")},
        "I've been friends with Leah since primary school": {("Leah", "FRIEND_OF", "user")},
    }
    for said, expected in cases.items():
        _, relations, _ = _read(TurnText("user", said))
        assert relations == expected, said


def test_a_named_user_naming_themselves_is_the_user_node() -> None:
    _, relations, entities = _read(TurnText("user", "and Ola's mum Jadwiga makes pierogi", "Ola"))
    assert relations == {("Jadwiga", "MOTHER_OF", "user")}
    assert "Ola" not in entities


def test_a_place_is_its_capitalised_words_only() -> None:
    _, relations, _ = _read(TurnText("user", "Back when I lived in Osaka I ate ramen every day"))
    assert relations == {("user", "LIVED_IN", "Osaka")}
    _, relations, _ = _read(TurnText("user", "I moved to Gothenburg in June", "Sven"))
    assert relations == {("user", "LIVES_IN", "Gothenburg")}
