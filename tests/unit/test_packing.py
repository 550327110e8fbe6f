"""Prompt packing: score formula, dedupe, ranking and the exact budget (reference §6.3–6.6)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.retrieval.hits import Hit
from engine.retrieval.packing import HEADER, SEPARATOR, Packed, pack, packing_score

NOW = 1_700_000_000_000
DAY = 86_400_000
ALL_LAYERS = ("working", "scene", "graph", "patterns", "archives", "vectors")


def make_hit(layer: str = "vectors", id: str = "h", text: str = "some memory", **kw: Any) -> Hit:
    return Hit(layer=layer, id=id, text=text, **kw)


def run(
    layers: Mapping[str, Sequence[Hit]],
    query: str = "",
    layer_order: Sequence[str] = ALL_LAYERS,
    **kw: Any,
) -> Packed:
    return pack(query, layers, layer_order=layer_order, now_ms=NOW, **kw)


# --- packing_score (§6.3) -----------------------------------------------------------------


def test_reference_worked_example_scores_1_74193() -> None:
    hit = make_hit(score=0.8, created_at=NOW, access_count=3)
    # 1.02 + 0.45·0.8 + 0.35·0.5 + 0.12·0.5 + 0.08·0.5 + 0.08·1 + 0.04·ln(4)/8
    score = packing_score(hit, ["coffee", "morning"], "I drink Coffee daily", NOW)
    assert score == pytest.approx(1.74193, abs=1e-5)


def test_worked_example_through_pack() -> None:
    hit = make_hit(text="I drink Coffee daily", score=0.8, created_at=NOW, access_count=3)
    packed = run({"vectors": [hit]}, query="coffee morning")
    assert packed.items[0].packing_score == pytest.approx(1.74193, abs=1e-5)
    assert packed.items[0].score == 0.8


def test_thirty_days_old_gives_half_the_recency_weight() -> None:
    old = make_hit(created_at=NOW - 30 * DAY)
    undated = make_hit(created_at=None)
    assert packing_score(old, [], "x", NOW) - packing_score(undated, [], "x", NOW) == (
        pytest.approx(0.08 * 0.5)
    )


def test_created_at_zero_counts_as_missing_and_future_as_now() -> None:
    assert packing_score(make_hit(created_at=0), [], "x", NOW) == packing_score(
        make_hit(created_at=None), [], "x", NOW
    )
    assert packing_score(make_hit(created_at=NOW + DAY), [], "x", NOW) == packing_score(
        make_hit(created_at=NOW), [], "x", NOW
    )


def test_missing_signals_are_neutral_and_unknown_layer_prior_is_0_9() -> None:
    # 0.9 + 0.45·0.5 + 0 + 0.12·0.5 + 0.08·0.5 + 0 + 0
    assert packing_score(make_hit(layer="mystery"), [], "x", NOW) == pytest.approx(1.225)


def test_graph_hits_use_their_own_signals_fixes_16_8() -> None:
    hit = make_hit(
        layer="graph", score=0.9, confidence=1.0, importance=0.9, created_at=NOW, access_count=10
    )
    expected = 1.08 + 0.45 * 0.9 + 0.12 * 1.0 + 0.08 * 0.9 + 0.08 * 1.0 + 0.04 * math.log(11) / 8
    assert packing_score(hit, [], "x", NOW) == pytest.approx(expected)
    assert packing_score(hit, [], "x", NOW) != pytest.approx(1.405)


def test_query_score_is_fraction_of_terms_found_as_substrings() -> None:
    base = packing_score(make_hit(), [], "x", NOW)
    terms = ["green", "tea", "sugar", "milk"]
    assert packing_score(make_hit(), terms, "Greenish TEA", NOW) - base == pytest.approx(0.35 / 2)


def test_access_term_is_capped_at_0_04() -> None:
    busy = packing_score(make_hit(access_count=10**9), [], "x", NOW)
    idle = packing_score(make_hit(access_count=0), [], "x", NOW)
    assert busy - idle == pytest.approx(0.04)


# --- dedupe (§6.4) ------------------------------------------------------------------------


def kept_id(p: Hit, c: Hit) -> str:
    packed = run({"vectors": [p, c]})
    assert len(packed.items) == 1
    assert packed.omitted == {"vectors": 1}
    return packed.items[0].id


def test_dedupe_higher_score_by_more_than_0_02_wins_even_if_older() -> None:
    p = make_hit(id="p", text="Likes green tea", score=0.5, created_at=NOW - 2 * DAY)
    c = make_hit(id="c", text="LIKES GREEN TEA!!!", score=0.6, created_at=NOW - 5 * DAY)
    assert packing_score(c, [], c.text, NOW) > packing_score(p, [], p.text, NOW) + 0.02
    assert kept_id(p, c) == "c"
    assert kept_id(c, p) == "c"


def test_dedupe_within_0_02_newer_wins() -> None:
    older = make_hit(id="older", text="Likes green tea", score=0.5, created_at=NOW - 10 * DAY)
    newer = make_hit(id="newer", text="likes GREEN tea!", score=0.47, created_at=NOW - 9 * DAY)
    gap = packing_score(older, [], older.text, NOW) - packing_score(newer, [], newer.text, NOW)
    assert 0 < gap <= 0.02
    assert kept_id(older, newer) == "newer"
    assert kept_id(newer, older) == "newer"


def test_dedupe_same_score_and_time_fewer_characters_wins() -> None:
    short = make_hit(id="short", text="Likes green tea", score=0.5, created_at=NOW)
    long = make_hit(id="long", text="LIKES GREEN TEA!!!", score=0.5, created_at=NOW)
    assert kept_id(long, short) == "short"
    assert kept_id(short, long) == "short"


def test_dedupe_full_tie_keeps_the_first() -> None:
    first = make_hit(id="first", text="Likes green tea", score=0.5, created_at=NOW)
    second = make_hit(id="second", text="Likes green tea", score=0.5, created_at=NOW)
    assert kept_id(first, second) == "first"


def test_repeated_user_turn_collapses_across_working_scene_vectors() -> None:
    question = "How do I reset my router password?"
    layers: dict[str, Sequence[Hit]] = {
        "working": [make_hit("working", "w", f"user: {question}\nassistant: Hold reset.")],
        "scene": [make_hit("scene", "s", f"User: {question.lower()}\nAssistant: Admin page.")],
        "vectors": [make_hit("vectors", "v", f"user: {question}??", score=0.9)],
        "graph": [make_hit("graph", "g", "User owns a Fritz!Box router", score=0.7)],
    }
    packed = run(layers, query="reset router password")
    ids = [item.id for item in packed.items]
    assert len(ids) == 2
    assert "g" in ids
    assert sum(i in ids for i in ("w", "s", "v")) == 1
    assert sum(packed.omitted.values()) == 2


# --- ranking, selection, output (§6.5–6.6) ------------------------------------------------


def test_prompt_is_header_then_items_separated_by_blank_lines() -> None:
    layers: dict[str, Sequence[Hit]] = {
        "working": [make_hit("working", "w", "user: hi\nassistant: hello")],
        "graph": [make_hit("graph", "g", "Name is   Ada", score=0.1)],
    }
    packed = run(layers)
    assert packed.prompt == (
        HEADER + "\n\n[WORKING] user: hi\nassistant: hello\n\n[GRAPH] Name is Ada"
    )
    assert packed.prompt.splitlines()[0] == HEADER
    assert packed.characters == len(packed.prompt)
    assert [item.layer for item in packed.items] == ["working", "graph"]


def test_ranked_by_packing_score_then_order_and_max_items_respected() -> None:
    hits = [make_hit(id=f"v{i}", text=f"memory number {i}", score=i / 10) for i in range(10)]
    packed = run({"vectors": hits}, max_items=3)
    assert [item.id for item in packed.items] == ["v9", "v8", "v7"]
    assert packed.omitted == {"vectors": 7}
    same = [make_hit(id=f"t{i}", text=f"tied memory {i}") for i in range(4)]
    assert [item.id for item in run({"vectors": same}).items] == ["t0", "t1", "t2", "t3"]


def test_260_char_budget_excludes_a_2kb_item_but_packs_smaller_ones() -> None:
    layers: dict[str, Sequence[Hit]] = {
        "vectors": [make_hit("vectors", "v", "User prefers tea over coffee.", score=0.9)],
        "archives": [make_hit("archives", "a", "archive line. " * 150, score=1.0)],
        "scene": [make_hit("scene", "s", "Last session: planned a trip to Rome.", score=0.0)],
    }
    packed = run(layers, budget_chars=260, max_item_chars=2000)
    assert [item.id for item in packed.items] == ["v", "s"]  # the archive ranks second
    assert packed.prompt is not None
    assert len(packed.prompt) <= 260
    assert packed.omitted == {"vectors": 0, "archives": 1, "scene": 0}
    assert packed.budget_characters == 260


def test_oversized_top_item_is_truncated_to_fill_the_budget_exactly() -> None:
    layers: dict[str, Sequence[Hit]] = {"vectors": [make_hit(text="z" * 500)]}
    packed = run(layers, budget_chars=200)
    assert packed.prompt is not None
    assert len(packed.prompt) == 200
    assert packed.items[0].text.endswith("...")


def test_no_120_char_floor_overshoot_fixes_16_23() -> None:
    budget = len(HEADER) + len(SEPARATOR) + len("[VECTORS] ") + 25
    packed = run({"vectors": [make_hit(text="z" * 500)]}, budget_chars=budget)
    assert packed.prompt is not None
    assert len(packed.prompt) == budget
    assert packed.items[0].text == "z" * 22 + "..."


def test_budget_too_small_for_header_or_20_chars_of_text_gives_no_prompt() -> None:
    hit = make_hit(text="z" * 500)
    almost = len(HEADER) + len(SEPARATOR) + len("[VECTORS] ") + 19
    for budget in (1, len(HEADER), almost):
        packed = run({"vectors": [hit]}, budget_chars=budget)
        assert packed.prompt is None
        assert packed.items == []
        assert packed.characters == 0
        assert packed.omitted == {"vectors": 1}


def test_prompt_is_none_when_every_total_is_zero() -> None:
    packed = run({"working": [], "graph": []})
    assert packed.prompt is None
    assert packed.items == []
    assert packed.totals == {"working": 0, "graph": 0}
    assert packed.omitted == {"working": 0, "graph": 0}
    assert (packed.characters, packed.raw_characters, packed.saved_characters_vs_raw) == (0, 0, 0)


def test_failed_layer_is_absent_from_totals_and_omitted() -> None:
    packed = run({"vectors": [make_hit()]})
    assert packed.totals == {"vectors": 1}
    assert packed.omitted == {"vectors": 0}


def test_empty_after_sanitising_is_skipped_but_counted() -> None:
    layers: dict[str, Sequence[Hit]] = {
        "vectors": [make_hit(id="blank", text="  http://localhost:3000  "), make_hit(id="ok")]
    }
    packed = run(layers)
    assert [item.id for item in packed.items] == ["ok"]
    assert packed.totals == {"vectors": 2}
    assert packed.omitted == {"vectors": 1}


def test_layer_outside_layer_order_is_not_packed_but_counted() -> None:
    layers: dict[str, Sequence[Hit]] = {
        "vectors": [make_hit()],
        "graph": [make_hit("graph", "g", "other")],
    }
    packed = run(layers, layer_order=["vectors"])
    assert [item.layer for item in packed.items] == ["vectors"]
    assert packed.omitted == {"vectors": 0, "graph": 1}


def test_item_text_is_sanitised_and_truncated_to_max_item_chars() -> None:
    hit = make_hit(text="See [docs](http://localhost:1/x)   " + "w" * 100)
    packed = run({"vectors": [hit]}, max_item_chars=20)
    assert packed.items[0].text == "See docs " + "w" * 8 + "..."


def test_raw_and_saved_characters() -> None:
    raw = {"content": "x" * 300, "id": "v1", "score": 0.8}
    hits = [make_hit(id="v1", text="short fact", raw=raw), make_hit(id="v2", text="other")]
    packed = run({"vectors": hits})
    raw_json = [json.dumps(raw, sort_keys=True), json.dumps({}, sort_keys=True)]
    assert packed.raw_characters == len(HEADER + "\n\n" + "\n\n".join(raw_json))
    assert packed.saved_characters_vs_raw == packed.raw_characters - packed.characters > 0
    tiny = run({"vectors": [make_hit(text="a long memory " * 20)]})
    assert tiny.saved_characters_vs_raw == 0


# --- property: the budget is exact --------------------------------------------------------

_TEXT = st.one_of(
    st.text(max_size=700),
    st.sampled_from(["user: same question about the router?\nassistant: x", "Likes tea"]),
    st.builds(lambda n: "long memory text " * n, st.integers(0, 200)),
)
_HIT = st.builds(
    Hit,
    layer=st.sampled_from([*ALL_LAYERS, "custom"]),
    id=st.text(max_size=5),
    text=_TEXT,
    score=st.none() | st.floats(0, 1),
    created_at=st.none() | st.integers(0, NOW + DAY),
    confidence=st.none() | st.floats(0, 1),
    access_count=st.integers(0, 1000),
)


def _group(hits: list[Hit]) -> dict[str, list[Hit]]:
    layers: dict[str, list[Hit]] = {}
    for hit in hits:
        layers.setdefault(hit.layer, []).append(hit)
    return layers


@settings(max_examples=300, deadline=None)
@given(
    hits=st.lists(_HIT, max_size=30),
    # Half the budgets sit near the header length, where off-by-separator bugs live.
    budget=st.integers(1, 3000) | st.integers(len(HEADER) - 2, len(HEADER) + 60),
    max_items=st.integers(1, 24),
    max_item_chars=st.integers(1, 2000),
    query=st.text(max_size=40),
)
def test_budget_is_exact_including_header_and_separators_fixes_16_23(
    hits: list[Hit], budget: int, max_items: int, max_item_chars: int, query: str
) -> None:
    layers = _group(hits)
    packed = run(
        layers,
        query=query,
        layer_order=[*ALL_LAYERS, "custom"],
        budget_chars=budget,
        max_items=max_items,
        max_item_chars=max_item_chars,
    )
    if packed.prompt is None:
        assert packed.items == []
        assert packed.characters == 0
    else:
        assert len(packed.prompt) <= budget
        assert packed.characters <= budget
        rendered = [label(item.layer, item.created_at) + item.text for item in packed.items]
        assert packed.prompt == HEADER + SEPARATOR + SEPARATOR.join(rendered)
    assert 0 <= len(packed.items) <= max_items
    assert sum(packed.omitted.values()) + len(packed.items) == len(hits)
    assert packed.totals == {layer: len(layer_hits) for layer, layer_hits in layers.items()}


def label(layer: str, created_at: int | None) -> str:
    """What a packed line starts with: the layer and, when the hit has a time, its UTC date."""
    if not created_at:
        return f"[{layer.upper()}] "
    day = datetime.fromtimestamp(created_at / 1000, tz=UTC).date().isoformat()
    return f"[{layer.upper()} {day}] "


def test_every_line_carries_the_date_of_its_event_issue_16() -> None:
    may_7 = int(datetime(2023, 5, 7, 18, 30, tzinfo=UTC).timestamp() * 1000)
    layers: dict[str, Sequence[Hit]] = {
        "vectors": [
            make_hit("vectors", "v", "Caroline went to a pottery workshop", created_at=may_7)
        ],
        "graph": [make_hit("graph", "g", "Caroline likes clay", created_at=None)],
    }
    packed = run(layers)
    assert packed.prompt is not None
    assert "[VECTORS 2023-05-07] Caroline went to a pottery workshop" in packed.prompt
    assert "[GRAPH] Caroline likes clay" in packed.prompt  # no time, no date


def test_a_dated_label_counts_against_the_budget() -> None:
    at = int(datetime(2023, 5, 7, tzinfo=UTC).timestamp() * 1000)
    text = "z" * 40
    exact = len(HEADER) + len(SEPARATOR) + len("[VECTORS 2023-05-07] ") + len(text)
    fits = run({"vectors": [make_hit(text=text, created_at=at)]}, budget_chars=exact)
    assert fits.prompt is not None
    assert len(fits.prompt) == exact
    assert fits.items[0].text == text
    short = run({"vectors": [make_hit(text=text, created_at=at)]}, budget_chars=exact - 1)
    assert short.prompt is not None
    assert short.items[0].text != text  # truncated to fit


def test_an_old_history_keeps_its_recency_shape_issue_16() -> None:
    # an imported conversation two years old: recency is measured from its newest event, so
    # the newer of two equally relevant memories still packs first (against the wall clock
    # both decayed to nothing and the order was left to chance)
    newest = NOW - 730 * DAY
    older = newest - 60 * DAY
    hits = [
        make_hit("vectors", "old", "We moved to Lisbon", score=0.6, created_at=older),
        make_hit("vectors", "new", "We moved to Porto", score=0.6, created_at=newest),
    ]
    packed = run({"vectors": hits})
    assert [i.id for i in packed.items] == ["new", "old"]
    assert packed.items[0].packing_score - packed.items[1].packing_score > 0.05


def test_with_room_in_the_budget_more_items_are_taken_until_it_is_full() -> None:
    hits = [make_hit("vectors", f"v{n}", f"memory number {n} " + "x" * 80) for n in range(60)]
    budget = 1_800
    packed = run({"vectors": hits}, budget_chars=budget, max_items=200)
    assert packed.prompt is not None
    assert len(packed.prompt) >= 0.9 * budget
    assert len(packed.items) > 8  # the reference's default cap no longer shapes it
