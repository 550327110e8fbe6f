"""The array-wide BM25 and turn judging (issue 29: a scene of 1,000 turns is scored on
every request) give exactly what the plain loops over the documents give: the loops below
are the formulas as written before they were vectorised, and the scores must be equal to
the last bit, not close."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.retrieval.lexical import BM25_B, BM25_K1, all_terms, bm25, bm25_ids, term_ids
from engine.retrieval.units import Shown, message_scores, messages_of, said, shown_units

WORDS = ["dog", "park", "canal", "cycle", "rosa", "kim", "office", "berlin", "knee", "tea"]


def loop_bm25(query_terms: list[str], documents: list[list[str]]) -> list[float]:
    if not query_terms or not documents:
        return [0.0] * len(documents)
    n = len(documents)
    lengths = [len(d) for d in documents]
    avg_len = sum(lengths) / n or 1.0
    freqs = {t: [d.count(t) for d in documents] for t in dict.fromkeys(query_terms)}
    rare = math.log(1 + (n - 1 + 0.5) / (1 + 0.5))
    idf = {}
    for t, tfs in freqs.items():
        df = n - tfs.count(0)
        idf[t] = math.log(1 + (n - df + 0.5) / (df + 0.5)) if df else rare
    ideal = sum(idf[t] for t in query_terms)
    norms = [BM25_K1 * (1 - BM25_B + BM25_B * length / avg_len) for length in lengths]
    totals = [0.0] * n
    for t in query_terms:
        weight = idf[t] * (BM25_K1 + 1)
        for i, tf in enumerate(freqs[t]):
            if tf:
                totals[i] += weight * tf / (tf + norms[i])
    return [min(1.0, total / ideal) if ideal > 0 else 0.0 for total in totals]


def loop_shown(query_terms: list[str], texts: list[str]) -> list[Shown]:
    split = [[(u, all_terms(u), all_terms(said(u))) for u in messages_of(text)] for text in texts]
    scores = loop_bm25(query_terms, [u[1] for units in split for u in units])
    several = [u[2] for units in split if len(units) > 1 for u in units]
    saying = iter(loop_bm25(query_terms, several) if several else [])
    out, i = [], 0
    for text, units in zip(texts, split, strict=True):
        own = scores[i : i + len(units)]
        i += len(units)
        if not units:
            out.append(Shown(0.0, text, None))
            continue
        top = max(own)
        if len(units) == 1:
            out.append(Shown(top, text, None))
            continue
        says = [next(saying) for _ in units]
        best = max(says)
        if best > 0 and says.count(best) == 1:
            out.append(Shown(top, units[says.index(best)][0], text))
        else:
            out.append(Shown(top, text, None))
    return out


documents = st.lists(st.lists(st.sampled_from(WORDS), max_size=12), max_size=30)
queries = st.lists(st.sampled_from([*WORDS, "zebra"]), max_size=5)


@given(queries, documents)
@settings(max_examples=300, deadline=None)
def test_bm25_is_the_loop_to_the_last_bit(query: list[str], docs: list[list[str]]) -> None:
    assert bm25(query, docs) == loop_bm25(query, docs)


@given(queries, documents)
@settings(max_examples=100, deadline=None)
def test_bm25_ids_takes_lists_and_tuples_alike(query: list[str], docs: list[list[str]]) -> None:
    from_lists = bm25_ids(query, [term_ids(d) for d in docs]).tolist()
    assert from_lists == bm25_ids(query, [term_ids(tuple(d)) for d in docs]).tolist()
    assert len(from_lists) == len(docs)


def test_bm25_of_no_documents_or_no_query_is_empty_or_zero() -> None:
    assert bm25(["dog"], []) == []
    assert bm25([], [["dog"], []]) == [0.0, 0.0]
    assert bm25_ids(["dog"], []).tolist() == []


message = st.builds(
    lambda role, name, words: f"{role}: {name + ': ' if name else ''}{' '.join(words)}",
    st.sampled_from(["user", "assistant"]),
    st.sampled_from(["", "Rosa", "Kim"]),
    st.lists(st.sampled_from([*WORDS, "the", "and"]), max_size=8),
)
turn_texts = st.lists(st.lists(message, max_size=3).map("\n".join), max_size=25)


@given(queries, turn_texts)
@settings(max_examples=300, deadline=None)
def test_shown_units_is_the_loop(query: list[str], texts: list[str]) -> None:
    """Turns of no, one and several messages, speakers named or not, ties and no match."""
    assert shown_units(query, texts) == loop_shown(query, texts)


@given(queries, turn_texts)
@settings(max_examples=100, deadline=None)
def test_message_scores_are_the_loop_over_every_message(query: list[str], texts: list[str]) -> None:
    units = [messages_of(t) for t in texts]
    flat = loop_bm25(query, [all_terms(u) for us in units for u in us])
    got = message_scores(query, texts)
    assert [m for ms in got for m, _ in ms] == [u for us in units for u in us]
    assert [s for ms in got for _, s in ms] == flat


def test_a_turn_is_shown_as_the_message_that_alone_says_the_query() -> None:
    texts = ["user: Rosa: I cycle along the canal\nassistant: Nice, how far?", "user: hi"]
    shown = shown_units(["canal"], texts)
    assert shown[0] == Shown(shown[0].lexical, "user: Rosa: I cycle along the canal", texts[0])
    assert shown[0].lexical > 0
    assert shown[1] == Shown(0.0, "user: hi", None)
