"""Eval scoring (engine.evals.harness): the reference §16.28 fixes, parsing, and a run over the
in-memory ports."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

import pytest

from engine.adapters.memory import HashingEmbedder
from engine.errors import InputRejected
from engine.evals.harness import (
    DEFAULT_K,
    EvalRequest,
    evaluate,
    is_relevant,
    layer_searcher,
    parse_request,
    percentile,
    retrieved_of,
)
from engine.evals.records import EvalCase, Retrieved, ReturnedItem
from engine.evals.wire import run_of, run_wire
from engine.ingest.remember import Rememberer
from engine.retrieval.hits import Hit
from schemas.ids import to_ms
from schemas.inputs import memory_remembered
from schemas.requests import ALL_LAYERS
from schemas.scope import Scope
from tests.support.engine import InMemoryPorts

AGENT = "0xEvalAgent"
NOW_MS = 1_700_000_000_000
SCOPE = Scope.parse({"agentWallet": AGENT})


def item(text: str, id: str = "x", layer: str = "vectors") -> ReturnedItem:
    return ReturnedItem(layer=layer, id=id, text=text)


def scripted(answers: dict[str, Sequence[ReturnedItem]], chars: int = 0) -> Any:
    async def search(query: str) -> Retrieved:
        return Retrieved(items=list(answers[query]), context_characters=chars)

    return search


def ticking(*latencies_ms: float) -> Any:
    """A clock (seconds) whose successive intervals are the given latencies."""
    times: list[float] = [0.0]
    for ms in latencies_ms:
        times += [times[-1], times[-1] + ms / 1000]
    ticks: Iterator[float] = iter(times[1:])
    return lambda: next(ticks)


def request(*cases: EvalCase, k: int = DEFAULT_K) -> EvalRequest:
    return EvalRequest(scope=SCOPE, cases=cases, k=k)


# --- §16.28: precision and hits ---------------------------------------------------------------


async def test_precision_is_share_of_returned_items_that_are_relevant_not_hits_over_returned() -> (
    None
):
    answers = {
        "dog": [item("Juniper the greyhound"), item("groceries"), item("juniper"), item("knee")],
        "nuts": [item("allergic to peanuts")],
    }
    cases = (EvalCase("dog", expected="Juniper"), EvalCase("nuts", expected="peanuts"))
    run = await evaluate(scripted(answers), request(*cases), NOW_MS)
    s = run.scores
    assert (s.cases, s.hits, s.returned, s.relevant) == (2, 2, 5, 3)
    assert s.recall_at_k == 1.0
    assert s.precision_at_k == pytest.approx(3 / 5)  # the reference reported hits/returned = 2/5
    assert s.mean_precision == pytest.approx((2 / 4 + 1 / 1) / 2)
    assert [r.precision for r in run.results] == [0.5, 1.0]


async def test_a_returned_item_that_holds_nothing_expected_lowers_precision_not_recall() -> None:
    answers = {"q": [item("the answer"), *(item(f"noise {i}") for i in range(9))]}
    run = await evaluate(scripted(answers), request(EvalCase("q", expected="answer")), NOW_MS)
    assert run.scores.recall_at_k == 1.0
    assert run.scores.precision_at_k == pytest.approx(0.1)


def test_id_or_metadata_substring_does_not_count_as_hit_fixes_16_28() -> None:
    hit = Hit(
        layer="vectors",
        id="fact_peanuts_0001",
        text="Ursula likes jazz.",
        raw={"id": "fact_peanuts_0001", "metadata": {"note": "peanuts"}, "content": "jazz"},
    )
    retrieved = retrieved_of("what to avoid", {"vectors": [hit]}, ["vectors"], NOW_MS)
    [returned] = retrieved.items
    assert not is_relevant(EvalCase("q", expected="peanuts"), returned)
    assert not is_relevant(EvalCase("q", expected="0001"), returned)
    assert is_relevant(EvalCase("q", expected="JAZZ"), returned)


def test_expected_memory_id_matches_the_whole_id_only() -> None:
    returned = item("unrelated text", id="fact_abc123")
    assert is_relevant(EvalCase("q", expected_memory_id="fact_abc123"), returned)
    assert not is_relevant(EvalCase("q", expected_memory_id="fact_abc"), returned)
    assert not is_relevant(EvalCase("q", expected_memory_id="FACT_ABC123"), returned)


def test_either_label_makes_an_item_relevant() -> None:
    case = EvalCase("q", expected="lisbon", expected_memory_id="fact_1")
    assert is_relevant(case, item("moved to Lisbon", id="other"))
    assert is_relevant(case, item("nothing", id="fact_1"))
    assert not is_relevant(case, item("Porto", id="fact_2"))


async def test_returning_nothing_is_a_miss_with_zero_precision() -> None:
    answers: dict[str, list[ReturnedItem]] = {"q": [], "r": []}
    cases = (EvalCase("q", expected="a"), EvalCase("r", expected_memory_id="b"))
    run = await evaluate(scripted(answers), request(*cases), NOW_MS)
    assert (run.scores.recall_at_k, run.scores.precision_at_k, run.scores.mean_precision) == (
        0.0,
        0.0,
        0.0,
    )
    assert [r.hit for r in run.results] == [False, False]


def test_an_unlabelled_case_is_rejected_because_it_cannot_be_scored() -> None:
    body = {"agentWallet": AGENT, "testCases": [{"query": "anything at all?"}]}
    with pytest.raises(InputRejected, match=r"testCases\[0\] needs expected or expectedMemoryId"):
        parse_request(body)
    with pytest.raises(InputRejected, match="cannot be scored"):
        EvalCase("q")


# --- latency, context characters ------------------------------------------------------------


def test_percentiles_are_nearest_rank() -> None:
    values = [float(v) for v in range(1, 21)]  # 1..20
    assert percentile(values, 50) == 10.0
    assert percentile(values, 95) == 19.0
    assert percentile([7.0], 95) == 7.0
    assert percentile([], 50) == 0.0


async def test_latency_and_context_characters_are_measured_per_case() -> None:
    answers = {f"q{i}": [item("x")] for i in range(4)}
    cases = tuple(EvalCase(f"q{i}", expected="x") for i in range(4))
    run = await evaluate(
        scripted(answers, chars=120), request(*cases), NOW_MS, clock=ticking(40, 10, 30, 20)
    )
    assert [r.latency_ms for r in run.results] == pytest.approx([40, 10, 30, 20])
    assert run.scores.latency_p50_ms == pytest.approx(20)
    assert run.scores.latency_p95_ms == pytest.approx(40)
    assert run.scores.avg_latency_ms == pytest.approx(25)
    assert run.scores.avg_context_characters == 120


# --- parsing ----------------------------------------------------------------------------------


def test_cases_parse_camel_and_snake_case() -> None:
    parsed = parse_request(
        {
            "agent_id": AGENT,
            "test_cases": [
                {"query": " dog? ", "expected": " Juniper "},
                {"query": "nuts", "expected_memory_id": "fact_1"},
                {"query": "nuts", "expectedMemoryId": "fact_2", "expected": ""},
            ],
        }
    )
    assert parsed.cases == (
        EvalCase("dog?", expected="Juniper"),
        EvalCase("nuts", expected_memory_id="fact_1"),
        EvalCase("nuts", expected_memory_id="fact_2"),
    )
    assert (parsed.k, parsed.layers) == (5, ALL_LAYERS)


def test_scope_aliases_are_normalised_like_other_requests() -> None:
    parsed = parse_request(
        {
            "agent_id": AGENT,
            "user_id": "ursula",
            "thread_id": "home",
            "mode": "nonsense",
            "testCases": [{"query": "q", "expected": "x"}],
        }
    )
    assert parsed.scope.wire() == {
        "agentWallet": AGENT,
        "userAddress": "ursula",
        "threadId": "home",
    }


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ([], "body must be an object"),
        ({"testCases": [{"query": "q", "expected": "x"}]}, "agentWallet is required"),
        ({"agentWallet": AGENT}, "testCases is required"),
        ({"agentWallet": AGENT, "testCases": []}, "testCases is required"),
        ({"agentWallet": AGENT, "testCases": ["q"]}, r"testCases\[0\] must be an object"),
        (
            {"agentWallet": AGENT, "testCases": [{"query": "q", "expected": "x"}, {"query": " "}]},
            r"testCases\[1\]\.query is required",
        ),
        (
            {"agentWallet": AGENT, "testCases": [{"query": "q", "expected": "x"}], "k": 0},
            "k must be an integer from 1 to 20",
        ),
        (
            {"agentWallet": AGENT, "testCases": [{"query": "q", "expected": "x"}], "k": "5"},
            "k must be an integer",
        ),
        (
            {"agentWallet": AGENT, "testCases": [{"query": "q", "expected": "x"}], "layers": ["x"]},
            r"layers\[0\] must be one of",
        ),
        (
            {"agentWallet": AGENT, "mode": "local", "testCases": [{"query": "q", "expected": "x"}]},
            "haiId is required when mode is local",
        ),
    ],
)
def test_bad_bodies_are_rejected_with_a_clear_message(body: Any, message: str) -> None:
    with pytest.raises(InputRejected, match=message):
        parse_request(body)


def test_k_and_layers_are_read() -> None:
    parsed = parse_request(
        {
            "agentWallet": AGENT,
            "testCases": [{"query": "q", "expected": "x"}],
            "limit": 3,
            "layers": ["graph", "vectors", "graph"],
        }
    )
    assert (parsed.k, parsed.layers) == (3, ("graph", "vectors"))


# --- run records ----------------------------------------------------------------------------


async def test_run_id_is_stable_and_the_wire_form_round_trips() -> None:
    answers = {"q": [item("x", id="a"), item("y", id="b", layer="graph")]}
    req = request(EvalCase("q", expected="x"))
    first = await evaluate(scripted(answers, chars=42), req, NOW_MS)
    again = await evaluate(scripted(answers, chars=42), req, NOW_MS)
    later = await evaluate(scripted(answers, chars=42), req, NOW_MS + 1)
    assert first.eval_run_id == again.eval_run_id != later.eval_run_id
    assert first.eval_run_id.startswith("memeval_")
    wire = run_wire(first)
    assert wire["status"] == "completed"
    assert wire["agentWallet"] == AGENT
    assert wire["createdAt"] == NOW_MS
    assert wire["results"][0]["items"] == [
        {"layer": "vectors", "id": "a", "relevant": True},
        {"layer": "graph", "id": "b", "relevant": False},
    ]
    assert set(wire["scores"]) >= {
        "recallAtK",
        "precisionAtK",
        "meanPrecision",
        "avgContextCharacters",
        "latencyP50Ms",
        "latencyP95Ms",
        "cases",
    }
    assert run_of(wire) == first


# --- over the in-memory ports ---------------------------------------------------------------


async def test_a_run_over_the_in_memory_search() -> None:
    ports = InMemoryPorts(HashingEmbedder())
    rememberer = Rememberer(ports.memory, ports.embedder)
    said = datetime(2023, 11, 14, tzinfo=UTC)
    stored = {}
    for fact in ["Ursula is allergic to peanuts.", "Ursula plays the cello on Sundays."]:
        body = {"agentWallet": AGENT, "userAddress": "ursula", "content": fact}
        stored[fact] = (await rememberer.remember(memory_remembered(body, now=said))).vector_id
    parsed = parse_request(
        {
            "agentWallet": AGENT,
            "userAddress": "ursula",
            "layers": ["vectors"],
            "testCases": [
                {"query": "allergic to peanuts", "expected": "peanuts"},
                {
                    "query": "plays the cello",
                    "expectedMemoryId": stored["Ursula plays the cello on Sundays."],
                },
                {"query": "which car does Ursula drive", "expected": "Tesla"},
            ],
        }
    )
    now_ms = to_ms(said) + 1000
    search = layer_searcher(ports.search(), parsed.scope, parsed.layers, parsed.k, now_ms)
    run = await evaluate(search, parsed, now_ms)
    assert [r.hit for r in run.results] == [True, True, False]
    assert run.scores.recall_at_k == pytest.approx(2 / 3)
    returned = sum(r.returned for r in run.results)
    relevant = sum(r.relevant for r in run.results)
    assert run.scores.precision_at_k == pytest.approx(relevant / returned)
    assert all(r.context_characters > 0 for r in run.results if r.returned)
