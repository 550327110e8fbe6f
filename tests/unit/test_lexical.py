"""Term extraction and BM25 of `engine.retrieval.lexical`, with hand-computed numbers.

BM25 here: IDF(t) = ln(1 + (n − df + 0.5) / (df + 0.5)), k1 = 1.2, b = 0.75, and each score is
divided by what a document holding every query term once, at average length, would score
(that is, by the sum of the query terms' IDFs, a term absent from all documents counting with
the IDF of df = 1), then capped at 1.
"""

from __future__ import annotations

import math

import pytest

from engine.retrieval.lexical import BM25_B, BM25_K1, all_terms, bm25, lexical_score, stem, terms

# --- terms ----------------------------------------------------------------------------------


def test_terms_drop_stopwords() -> None:
    assert terms("What is the name of our dog?") == ["nam", "dog"]  # stems lose a final "e"


def test_terms_drop_words_of_two_characters_or_fewer() -> None:
    assert terms("go to AI ok it me") == []
    assert terms("an owl") == ["owl"]  # three characters is enough


def test_terms_are_lower_cased_and_split_on_punctuation_and_underscores() -> None:
    assert terms("Lisbon,PORTUGAL;search_flights") == ["lisbon", "portugal", "search", "flight"]


@pytest.mark.parametrize(
    ("word", "term"),
    [
        ("cities", "citi"),  # consonant + y and -ies meet at "i"
        ("studied", "studi"),
        ("dogs", "dog"),
        ("boxes", "box"),
        ("booked", "book"),
        ("booking", "book"),
        ("walked", "walk"),
    ],
)
def test_terms_stem_plurals_and_past_forms(word: str, term: str) -> None:
    assert terms(word) == [term]


@pytest.mark.parametrize(("a", "b"), [("city", "cities"), ("book", "booked"), ("dog", "dogs")])
def test_a_word_and_its_inflected_form_share_a_term(a: str, b: str) -> None:
    assert terms(a) == terms(b)


@pytest.mark.parametrize(("a", "b"), [("move", "moved"), ("house", "houses"), ("price", "prices")])
def test_a_word_ending_in_e_and_its_inflected_form_share_a_term(a: str, b: str) -> None:
    assert terms(a) == terms(b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("class", "classes"),
        ("address", "addresses"),
        ("movie", "movies"),
        ("agree", "agreed"),
        ("use", "used"),
    ],
)
def test_other_simple_plural_and_past_forms_share_a_term(a: str, b: str) -> None:
    assert terms(a) == terms(b)


def test_stem_keeps_short_words_whole() -> None:
    assert stem("ring") == "ring"  # "r" + "ing" would leave one character
    assert stem("bus") == "bus"
    assert stem("play") == "play"  # vowel + y stays
    assert stem("used") == stem("use") == "us"


def test_terms_are_unique_in_first_seen_order() -> None:
    assert terms("Dogs chase cats; the dog wants a cat and dogs") == ["dog", "chas", "cat", "want"]


def test_all_terms_keep_repetitions_for_term_frequency() -> None:
    assert all_terms("Dogs and dogs bark at the dog") == ["dog", "dog", "bark", "dog"]


def test_lexical_score_is_the_share_of_query_terms_present() -> None:
    query = terms("greyhound Juniper park")
    assert lexical_score(query, "We walked the greyhounds in the park") == pytest.approx(2 / 3)
    assert lexical_score(query, "nothing relevant") == 0.0
    assert lexical_score([], "greyhound") == 0.0


# --- bm25 -----------------------------------------------------------------------------------

# Four documents of four terms each (average length 4, so the length norm is exactly k1 and a
# term seen once contributes exactly its IDF). df(dog) = 3, df(park) = 2, n = 4.
SAME_LENGTH = [
    ["dog", "park", "walk", "rain"],
    ["dog", "cat", "nap", "sofa"],
    ["dog", "bone", "yard", "bark"],
    ["park", "bench", "tree", "lake"],
]
IDF_DOG = math.log(1 + (4 - 3 + 0.5) / (3 + 0.5))  # ln(10/7) ≈ 0.356675
IDF_PARK = math.log(1 + (4 - 2 + 0.5) / (2 + 0.5))  # ln 2 ≈ 0.693147
IDF_DF1 = math.log(1 + (4 - 1 + 0.5) / (1 + 0.5))  # ln(10/3) ≈ 1.203973


def test_bm25_constants_are_the_usual_k1_and_a_softer_length_norm() -> None:
    assert (BM25_K1, BM25_B) == (1.2, 0.5)


def test_a_fact_sentence_is_not_outscored_by_bare_entity_names() -> None:
    # one fact among short entity rows: its single matching term must still make it a hit
    docs = [all_terms("The user lives in Miteloge")] + [[f"nam{i}", "plac"] for i in range(14)]
    scores = bm25(terms("Where do I live now?"), docs)
    assert scores[0] >= 0.5
    assert max(scores[1:]) == 0.0


def test_bm25_idf_weights_the_rarer_term_more() -> None:
    scores = bm25(["dog", "park"], SAME_LENGTH)

    ideal = IDF_DOG + IDF_PARK  # ≈ 1.049822
    assert scores == pytest.approx([1.0, IDF_DOG / ideal, IDF_DOG / ideal, IDF_PARK / ideal])
    assert scores == pytest.approx([1.0, 0.339748, 0.339748, 0.660252], abs=1e-6)
    assert scores[3] > scores[1]  # "park" (df 2) outweighs "dog" (df 3)


def test_bm25_a_query_term_absent_from_every_document_lowers_every_score() -> None:
    with_absent = bm25(["dog", "park", "zebra"], SAME_LENGTH)
    without = bm25(["dog", "park"], SAME_LENGTH)

    # "zebra" is weighted like a term one document contains: IDF(df = 1), not IDF(df = 0).
    ideal = IDF_DOG + IDF_PARK + IDF_DF1  # ≈ 2.253795
    assert with_absent == pytest.approx(
        [(IDF_DOG + IDF_PARK) / ideal, IDF_DOG / ideal, IDF_DOG / ideal, IDF_PARK / ideal]
    )
    assert with_absent[0] == pytest.approx(0.465802, abs=1e-6)
    assert all(a < b for a, b in zip(with_absent, without, strict=True))
    assert [s > 0 for s in with_absent] == [True, True, True, True]


def test_bm25_a_longer_document_scores_lower_for_the_same_term_frequency() -> None:
    documents = [
        ["dog", "toy"],  # length 2
        ["dog", "toy", "ball", "rope", "bowl", "leash"],  # length 6
        ["park", "bench", "tree", "lake"],  # length 4; average length = 4
    ]
    scores = bm25(["dog", "park"], documents)

    idf_dog = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))  # ln 1.6 ≈ 0.470004
    idf_park = math.log(1 + (3 - 1 + 0.5) / (1 + 0.5))  # ln(8/3) ≈ 0.980829
    norm_short = 1.2 * (0.5 + 0.5 * 2 / 4)  # 0.9 (b = 0.5)
    norm_long = 1.2 * (0.5 + 0.5 * 6 / 4)  # 1.5
    ideal = idf_dog + idf_park
    assert scores[0] == pytest.approx(idf_dog * 2.2 / (1 + norm_short) / ideal)
    assert scores[1] == pytest.approx(idf_dog * 2.2 / (1 + norm_long) / ideal)
    assert scores[2] == pytest.approx(idf_park * 2.2 / (1 + 1.2) / ideal)  # ≈ 0.676047
    assert scores[0] > scores[1]


def test_bm25_term_frequency_counts_but_saturates() -> None:
    documents = [  # all of length 4 (the average), so the length norm is k1
        ["cat", "fox", "owl", "yak"],
        ["cat", "cat", "owl", "yak"],
        ["cat", "cat", "cat", "cat"],
        ["emu", "fox", "owl", "yak"],
    ]
    scores = bm25(["cat", "emu"], documents)

    ideal = IDF_DOG + IDF_DF1  # df(cat) = 3 like "dog" above, df(emu) = 1
    tf1, tf2, tf4 = (tf * 2.2 / (tf + 1.2) for tf in (1, 2, 4))  # 1.0, 1.375, ≈1.692
    assert scores[:3] == pytest.approx([IDF_DOG * tf / ideal for tf in (tf1, tf2, tf4)])
    assert scores[0] < scores[1] < scores[2]
    assert scores[1] / scores[0] == pytest.approx(1.375)  # twice the count, not twice the score


def test_bm25_is_zero_for_a_document_without_any_query_term() -> None:
    assert bm25(["dog"], [["cat", "nap"], ["dog"]])[0] == 0.0


def test_bm25_is_zero_for_every_document_when_there_are_no_query_terms() -> None:
    assert bm25([], SAME_LENGTH) == [0.0, 0.0, 0.0, 0.0]
    assert bm25(terms("what is the of"), SAME_LENGTH) == [0.0, 0.0, 0.0, 0.0]


def test_bm25_of_no_documents_is_empty() -> None:
    assert bm25(["dog"], []) == []


def test_bm25_scores_stay_in_the_unit_interval() -> None:
    documents = [["dog"], ["dog", "dog", "dog"], [], ["park", "dog", "park"]]
    for score in bm25(["dog", "park"], documents):
        assert 0.0 <= score <= 1.0
