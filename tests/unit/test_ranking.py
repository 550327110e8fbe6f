"""Ranking: decay, rerank skip rules and merge, MMR (reference §5; fixes §16.7 and §16.17)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.decay import MS_PER_DAY, decay_multiplier
from engine.retrieval.hits import Hit
from engine.retrieval.ranking import (
    MMR_EXACT_LIMIT,
    apply_decay,
    merge_rerank,
    mmr,
    should_rerank,
    text_similarity,
)

NOW = 1_750_000_000_000


def days_ago(days: float) -> int:
    return NOW - round(days * MS_PER_DAY)


def hit(hit_id: str, score: float | None, text: str = "", created_at: int | None = None) -> Hit:
    return Hit(layer="vectors", id=hit_id, text=text or hit_id, score=score, created_at=created_at)


def ids(hits: list[Hit]) -> list[str]:
    return [h.id for h in hits]


def by_score(hits: list[Hit]) -> list[Hit]:
    return sorted(hits, key=lambda h: h.score or 0.0, reverse=True)


# --- decay ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("age_days", "expected"),
    [(0, 1.0), (30, 0.5), (60, 0.25), (69.66, 0.2), (90, 0.125)],
)
def test_decay_multiplier_reference_values(age_days: float, expected: float) -> None:
    assert decay_multiplier(days_ago(age_days), NOW) == pytest.approx(expected, abs=1e-4)


def test_decay_multiplier_other_half_life() -> None:
    assert decay_multiplier(days_ago(7), NOW, half_life_days=7) == pytest.approx(0.5)


@pytest.mark.parametrize("half_life", [0.0, -5.0, math.inf, math.nan])
def test_decay_is_off_for_a_non_positive_or_non_finite_half_life(half_life: float) -> None:
    assert decay_multiplier(days_ago(90), NOW, half_life) == 1.0


def test_decay_without_created_at_or_in_the_future_is_one() -> None:
    assert decay_multiplier(None, NOW) == 1.0
    assert decay_multiplier(NOW + 10 * MS_PER_DAY, NOW) == 1.0


def test_apply_decay_rescales_and_reorders() -> None:
    hits = [
        hit("old", 0.9, created_at=days_ago(60)),  # 0.9 × 0.25 = 0.225
        hit("fresh", 0.6, created_at=NOW),
        hit("unscored", None, created_at=NOW),
        hit("undated", 0.3),
    ]
    decayed = apply_decay(hits, NOW, 30.0)
    assert ids(decayed) == ["fresh", "undated", "old", "unscored"]
    assert [h.score for h in decayed] == pytest.approx([0.6, 0.3, 0.225, None])
    assert hits[0].score == 0.9  # inputs are frozen and untouched


def test_apply_decay_is_stable_for_equal_scores() -> None:
    hits = [hit(f"h{i}", 0.5, created_at=NOW) for i in range(5)]
    assert ids(apply_decay(hits, NOW, 30.0)) == ["h0", "h1", "h2", "h3", "h4"]


# --- rerank skip rules ------------------------------------------------------------------------


def test_two_candidates_are_skipped_by_default() -> None:
    reason = should_rerank([hit("a", 0.50), hit("b", 0.49)])
    assert reason is not None
    assert "too few" in reason


def test_min_candidates_is_floored_at_two() -> None:
    assert should_rerank([hit("a", 0.5)], min_candidates=1) is not None
    assert should_rerank([hit("a", 0.50), hit("b", 0.49)], min_candidates=1) is None


@pytest.mark.parametrize(
    ("top1", "top2"),
    [(0.80, 0.75), (0.30, 0.25), (0.95, 0.10)],  # 0.30 - 0.25 is 0.04999… in binary floats
)
def test_a_dominant_top_hit_is_skipped(top1: float, top2: float) -> None:
    # the gap rule at a delta of 0.05 (the default is 0.1 since issue 32's calibrated scale)
    reason = should_rerank([hit("b", top2), hit("a", top1), hit("c", 0.1)], dominance_delta=0.05)
    assert reason is not None
    assert "dominates" in reason


def test_a_gap_just_below_the_delta_is_reranked() -> None:
    assert (
        should_rerank([hit("a", 0.80), hit("b", 0.751), hit("c", 0.1)], dominance_delta=0.05)
        is None
    )


# --- merging reranker scores ------------------------------------------------------------------


def test_merge_by_id_gives_identical_texts_their_own_scores_fixes_16_17() -> None:
    hits = [
        hit("a", 0.70, text="the user lives in Lisbon", created_at=NOW),
        hit("b", 0.69, text="the user lives in Lisbon", created_at=NOW),
        hit("c", 0.68, text="the user likes tea", created_at=NOW),
    ]
    merged = merge_rerank(hits, {"a": 0.2, "b": 0.9, "c": 0.5}, NOW, 30.0)
    assert ids(merged) == ["b", "c", "a"]
    assert [h.score for h in merged] == pytest.approx([0.9, 0.5, 0.2])


def test_merge_keeps_decay_so_a_fresh_hit_beats_an_old_more_relevant_one() -> None:
    hits = [hit("old", 0.9, created_at=days_ago(60)), hit("fresh", 0.8, created_at=NOW)]
    merged = merge_rerank(hits, {"old": 0.9, "fresh": 0.8}, NOW, 30.0)
    assert ids(merged) == ["fresh", "old"]
    assert [h.score for h in merged] == pytest.approx([0.8, 0.9 * 0.25])


def test_merge_clamps_and_unscored_hits_keep_their_score() -> None:
    hits = [
        hit("hi", 0.1, created_at=NOW),
        hit("lo", 0.9, created_at=NOW),
        hit("nan", 0.4, created_at=NOW),
        hit("missing", 0.3, created_at=NOW),
    ]
    merged = merge_rerank(hits, {"hi": 7.0, "lo": -2.0, "nan": math.nan, "other": 1.0}, NOW, 30.0)
    assert ids(merged) == ["hi", "nan", "missing", "lo"]
    assert [h.score for h in merged] == pytest.approx([1.0, 0.4, 0.3, 0.0])


# --- MMR --------------------------------------------------------------------------------------

FOUR = [
    hit("A", 1.0, "Paris trip booked for June flights"),
    hit("B", 0.9, "Paris trip booked for June flights confirmed"),  # near-duplicate of A
    hit("C", 0.7, "User prefers vegetarian restaurants nearby"),
    hit("D", 0.2, "Meeting notes about quarterly budget review"),
]


def test_mmr_changes_the_returned_order_fixes_16_7() -> None:
    # Scores are on [0, 1], so relevance = score: A 1, B 0.9, C 0.7, D 0.2; sim(A, B) = 6/7.
    # λ = 0.7. Pick 1: A (0.7). Pick 2: B = 0.63 − 0.3·6/7 = 0.3729 < C = 0.49 ⇒ C.
    # Pick 3: B (0.3729) over D (0.14). Pick 4: D.
    # Scores (value / λ): A 1.0; C 0.7; B 0.5327; D 0.2.
    assert text_similarity(FOUR[0], FOUR[1]) == pytest.approx(6 / 7)
    ranked = mmr(FOUR, 0.7)
    assert ids(by_score(list(FOUR))) == ["A", "B", "C", "D"]
    assert ids(ranked) == ["A", "C", "B", "D"]
    b_score = (0.7 * 0.9 - 0.3 * 6 / 7) / 0.7
    assert [h.score for h in ranked] == pytest.approx([1.0, 0.7, b_score, 0.2])
    # the near-duplicate now scores below the novel hit, so a later sort keeps MMR's order
    assert ids(by_score(ranked)) == ["A", "C", "B", "D"]


def test_mmr_with_lambda_one_is_a_plain_sort() -> None:
    shuffled = [FOUR[2], FOUR[0], FOUR[3], FOUR[1]]
    ranked = mmr(shuffled, 1.0)
    assert ids(ranked) == ["A", "B", "C", "D"]
    assert [h.score for h in ranked] == [1.0, 0.9, 0.7, 0.2]
    assert ids(mmr(shuffled, 3.0)) == ["A", "B", "C", "D"]  # λ clamped to 1


def test_mmr_lambda_is_clamped_below_and_must_be_finite() -> None:
    assert ids(mmr(FOUR, -1.0)) == ids(mmr(FOUR, 0.0))
    with pytest.raises(ValueError, match="finite"):
        mmr(FOUR, math.nan)


def test_mmr_equal_scores_ties_go_to_input_order_and_duplicates_drop() -> None:
    hits = [
        hit("x", 0.5, "alpha beta gamma"),
        hit("y", 0.5, "alpha beta gamma"),
        hit("z", 0.5, "delta epsilon zeta"),
    ]
    ranked = mmr(hits, 0.7)
    # All relevance 0.5. Pick 1: x (first wins the tie). Pick 2: z 0.35 vs y 0.35 − 0.3.
    assert ids(ranked) == ["x", "z", "y"]
    assert [h.score for h in ranked] == pytest.approx([0.5, 0.5, 0.05 / 0.7])
    assert ids(by_score(ranked)) == ["x", "z", "y"]


def test_mmr_distinct_texts_with_equal_scores_keep_their_order() -> None:
    hits = [hit(f"h{i}", 0.4, f"unique{i} words{i} here{i}") for i in range(4)]
    ranked = mmr(hits)
    assert ids(ranked) == ["h0", "h1", "h2", "h3"]
    assert [h.score for h in ranked] == pytest.approx([0.4] * 4)


def test_mmr_empty_and_single() -> None:
    assert mmr([]) == []
    only = hit("only", None)
    assert mmr([only]) == [only]


def test_mmr_with_vectors_uses_cosine_instead_of_text() -> None:
    same = "identical text for every hit"
    hits = [hit("A", 1.0, same), hit("B", 0.9, same), hit("C", 0.85, same)]
    # By text every pair is a duplicate: C's lower relevance keeps it last.
    assert ids(mmr(hits, 0.7)) == ["A", "B", "C"]
    vectors = {
        "A": np.array([1.0, 0.0], dtype=np.float32),
        "B": np.array([0.99, 0.14], dtype=np.float32),  # cos(A, B) ≈ 0.99
        "C": np.array([0.0, 2.0], dtype=np.float32),  # orthogonal to A (norm ignored)
    }
    ranked = mmr(hits, 0.7, vectors=vectors)
    assert ids(ranked) == ["A", "C", "B"]
    assert ids(by_score(ranked)) == ["A", "C", "B"]
    assert ranked[1].score is not None
    assert ranked[2].score is not None
    assert ranked[1].score >= ranked[2].score


def test_mmr_accepts_a_custom_similarity() -> None:
    def same_layer_prefix(a: Hit, b: Hit) -> float:
        return 1.0 if a.id[0] == b.id[0] else 0.0

    hits = [hit("a1", 1.0, "x"), hit("a2", 0.95, "y"), hit("b1", 0.9, "z"), hit("b2", 0.0, "w")]
    assert ids(mmr(hits, 0.5, same_layer_prefix)) == ["a1", "b1", "a2", "b2"]


def test_mmr_over_the_exact_limit_is_bounded_and_consistent() -> None:
    n = MMR_EXACT_LIMIT + 50
    hits = [hit(f"h{i:03d}", 1.0 - i / n, f"topic{i % 7} shared words") for i in range(n)]
    ranked = mmr(hits, 0.7)
    assert sorted(ids(ranked)) == sorted(ids(hits))
    assert set(ids(ranked[:MMR_EXACT_LIMIT])) == set(ids(hits[:MMR_EXACT_LIMIT]))
    scores = [h.score for h in ranked]
    assert all(a is not None and b is not None and a >= b for a, b in itertools.pairwise(scores))


texts = st.sampled_from(["alpha beta", "alpha beta gamma", "delta", "", "gamma delta eps"])
hit_lists = st.lists(st.tuples(st.floats(0, 1), texts), min_size=0, max_size=12)


@given(hit_lists, st.floats(0, 1))
def test_mmr_is_a_permutation_whose_scores_follow_its_order(
    items: list[tuple[float, str]], lam: float
) -> None:
    hits = [hit(f"h{i}", score, text) for i, (score, text) in enumerate(items)]
    ranked = mmr(hits, lam)
    assert sorted(ids(ranked)) == sorted(ids(hits))
    assert ids(by_score(ranked)) == ids(ranked)
    if hits:
        lo = min(h.score or 0.0 for h in hits)
        hi = max(h.score or 0.0 for h in hits)
        assert all(min(lo, 0.0) - 1e-12 <= (h.score or 0.0) <= hi + 1e-12 for h in ranked)


@given(
    st.lists(st.floats(0.0, 1.0), min_size=0, max_size=30),
    st.integers(0, 35),
    st.sampled_from([0.0, 0.5, 0.7, 1.0]),
)
def test_mmr_keep_is_the_head_of_the_full_order(scores: list[float], keep: int, lam: float) -> None:
    """`keep` only spares rescoring the hits a layer drops: the kept ones are the first
    `keep` of the full MMR order, scores included."""
    hits = [hit(f"h{i}", s, text=f"text {i % 4} words {i}") for i, s in enumerate(scores)]
    assert mmr(hits, lam, keep=keep) == mmr(hits, lam)[:keep]


@given(
    st.lists(
        st.tuples(
            st.floats(0.0, 1.0),
            texts,
            st.none() | st.tuples(st.floats(-1, 1), st.floats(-1, 1), st.floats(-1, 1)),
        ),
        min_size=0,
        max_size=20,
    ),
    st.integers(0, 25),
    st.sampled_from([0.0, 0.3, 0.7]),
)
def test_mmr_keep_stops_early_with_vectors_and_vectorless_hits_alike(
    items: list[tuple[float, str, tuple[float, float, float] | None]], keep: int, lam: float
) -> None:
    """The greedy stops after `keep` picks and reads only the picked hits' similarities
    (cosine between two vectors, words otherwise, as a pending row without its vector):
    the same picks and scores as the full order's head."""
    hits = [hit(f"h{i}", score, text) for i, (score, text, _) in enumerate(items)]
    vectors = {
        f"h{i}": np.array(vector, dtype=np.float32)
        for i, (_, _, vector) in enumerate(items)
        if vector is not None
    }
    assert mmr(hits, lam, vectors=vectors, keep=keep) == mmr(hits, lam, vectors=vectors)[:keep]
