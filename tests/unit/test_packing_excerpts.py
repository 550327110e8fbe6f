"""With a budget, a long item is shown as the part that answers the query, not its head
(issue 17 §4): a knowledge chunk of 1,400 characters found for a sentence deep inside lost
that sentence to the default 500-character item cap."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.retrieval.excerpts import ELLIPSIS, excerpt, sentence_spans
from engine.retrieval.hits import Hit
from engine.retrieval.lexical import terms
from engine.retrieval.packing import HEADER, pack
from engine.retrieval.text import truncate
from schemas.search_defaults import MAX_ITEM_CHARS

NOW = 1_700_000_000_000
QUERY = "What is the gate code of the north yard?"
ANSWER = "The gate code of the north yard is 4471."
FILLER = [
    f"Step {i}: the night crew walks the perimeter, checks each lamp and signs the log."
    for i in range(24)
]
CHUNK = " ".join([*FILLER[:11], ANSWER, *FILLER[11:16]])
"""A chunk of about 1,400 characters (a knowledge chunk's size) whose answer starts past
character 800."""


def packed_text(text: str, budget_chars: int | None = None) -> str:
    hit = Hit(layer="vectors", id="kn_1", text=text, score=0.6, source="knowledge")
    packed = pack(
        QUERY, {"vectors": [hit]}, layer_order=["vectors"], now_ms=NOW, budget_chars=budget_chars
    )
    assert packed.prompt is not None
    assert len(packed.items) == 1
    assert budget_chars is None or len(packed.prompt) <= budget_chars
    return packed.items[0].text


def test_a_budget_packs_the_window_of_a_long_chunk_that_answers() -> None:
    assert 1_300 < len(CHUNK) <= 1_400
    assert CHUNK.index(ANSWER) > 800
    shown = packed_text(CHUNK, budget_chars=1_800)
    assert "4471" in shown
    assert ANSWER in shown  # the whole sentence, not a slice of it
    assert len(shown) <= MAX_ITEM_CHARS  # the item cap still holds
    assert shown.startswith(ELLIPSIS)
    assert shown.endswith(ELLIPSIS)
    assert shown.removeprefix(ELLIPSIS).removesuffix(ELLIPSIS) in CHUNK
    # without a budget the reference's head cut is kept, and so it is for an answer that
    # opens the text
    assert packed_text(CHUNK) == truncate(CHUNK, MAX_ITEM_CHARS)
    opening = " ".join([ANSWER, *FILLER])
    assert packed_text(opening, budget_chars=1_800) == truncate(opening, MAX_ITEM_CHARS)


def test_an_item_cut_to_the_budget_room_still_holds_the_answer() -> None:
    budget = len(HEADER) + 2 + len("[VECTORS] ") + 120
    shown = packed_text(CHUNK, budget_chars=budget)
    assert "4471" in shown
    assert len(shown) <= 120


def test_the_rarest_query_words_choose_the_sentence() -> None:
    # "yard" is in every sentence; "gate" and "code" only in the answer
    text = " ".join([*(f"The north yard has bay {i} and lamp {i}." for i in range(30)), ANSWER])
    cut = excerpt(text, terms(QUERY), 200)
    assert ANSWER in cut
    assert len(cut) <= 200


def test_an_answer_inside_one_overlong_sentence_is_windowed_around_its_words() -> None:
    text = "Intro. " + "the crew signs the log and " * 40 + "the gate code is 4471 " + "z " * 300
    cut = excerpt(text, terms("gate code"), 100)
    assert "gate code is 4471" in cut
    assert len(cut) == 100


_WORDS = st.sampled_from(["gate", "code", "yard", "lamp", "crew", "4471", "log", "north"])
_SENTENCES = st.lists(st.lists(_WORDS, min_size=1, max_size=30).map(" ".join), max_size=20)


@settings(max_examples=300, deadline=None)
@given(
    sentences=_SENTENCES,
    separator=st.sampled_from([". ", "\n", "! ", "; "]),
    query=st.lists(_WORDS, max_size=4).map(" ".join),
    cap=st.integers(0, 400),
)
def test_an_excerpt_never_exceeds_the_cap_and_quotes_the_text(
    sentences: list[str], separator: str, query: str, cap: int
) -> None:
    text = separator.join(sentences)
    cut = excerpt(text, terms(query), cap)
    assert len(cut) <= max(cap, 0)
    if len(text) <= cap:
        assert cut == text
    elif cut != truncate(text, cap):
        inner = cut.removeprefix(ELLIPSIS).removesuffix(ELLIPSIS)
        assert inner in text
        # a cut side is marked: an unmarked side is the text's own start or end (the
        # excerpt's words may also occur elsewhere, so only that direction is certain)
        if not cut.startswith(ELLIPSIS):
            assert text.startswith(inner)
        if not cut.endswith(ELLIPSIS):
            assert text.endswith(inner)
        assert cut.startswith(ELLIPSIS) or cut.endswith(ELLIPSIS)  # something was cut


def test_sentence_spans_are_stripped_slices_in_order() -> None:
    text = "  One. Two!\nThree?  Four; five\n\n"
    spans = sentence_spans(text)
    assert [text[a:b] for a, b in spans] == ["One.", "Two!", "Three?", "Four;", "five"]


def test_a_later_item_too_long_for_the_room_left_is_excerpted_not_dropped_issue_32() -> None:
    now = 1_700_000_000_000
    first = Hit(layer="vectors", id="a", text="Ana lives in Porto.", score=0.9, created_at=now)
    filler = " ".join(f"Sentence {i} is about nothing in particular." for i in range(8))
    long_text = f"{filler} The ferry to the island leaves at nine. {filler}"
    second = Hit(layer="vectors", id="b", text=long_text, score=0.5, created_at=now)
    budget = len(HEADER) + 2 + len("[VECTORS 2023-11-14] ") + len(first.text) + 260
    packed = pack(
        "When does the ferry leave?",
        {"vectors": [first, second]},
        layer_order=["vectors"],
        budget_chars=budget,
        now_ms=now,
    )
    assert packed.prompt is not None
    assert len(packed.prompt) <= budget
    assert "Ana lives in Porto." in packed.prompt
    assert "The ferry to the island leaves at nine." in packed.prompt
