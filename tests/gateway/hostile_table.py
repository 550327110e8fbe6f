"""The strict-input table (issue 13, part 3): hostile numbers and times per route, each with
the field its 422 must name and a valid neighbour value the route must still accept.

A case is one route, one field, one hostile value and one neighbour. `body` cases merge
`bad`/`good` into the route's valid base body; `raw` cases send the base body with one JSON
literal spliced in as text (`NaN`, `Infinity`, `-Infinity` are not JSON, but Python's parser
takes them); `query` cases add `bad`/`good` to the query string."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Any

import httpx

from tests.gateway.conftest import PREFIX

TIME = 1_700_000_000_000
"""A valid time in ms (2023-11-14)."""
HUGE = 2**70
"""Beyond int64 milliseconds (the issue's example)."""


def _bases(wallet: str) -> dict[str, dict[str, Any]]:
    """A valid body (or query string) per route, for one tenant."""
    turn = {"agentWallet": wallet, "threadId": "t", "userMessage": "hi", "assistantMessage": "ok"}
    return {
        "POST /context/assemble": {"agentWallet": wallet, "query": "tea"},
        "POST /loop": {"step": "pre_turn", "agentWallet": wallet, "query": "tea"},
        "POST /layers/search": {"agentWallet": wallet, "query": "tea"},
        "POST /items/search": {"agentWallet": wallet, "query": "tea"},
        "POST /search": {"agentWallet": wallet, "query": "tea"},
        "POST /turns/record": turn,
        "POST /remember": {"agentWallet": wallet, "content": "Ada likes green tea."},
        "POST /knowledge/documents": {"agentWallet": wallet, "content": "Opens at nine."},
        "POST /workflows/checkpoints": {
            "agentWallet": wallet,
            "runId": "r1",
            "agent": "planner",
            "type": "step_learning",
            "goal": "book a table",
        },
        "POST /transcripts/index": {
            "agentWallet": wallet,
            "threadId": "t",
            "sessionId": "s",
            "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}],
        },
        "POST /rerank": {"query": "tea", "documents": [{"content": "green tea"}]},
        "POST /evals/runs": {
            "agentWallet": wallet,
            "testCases": [{"query": "tea", "expected": "tea"}],
        },
        "PATCH /items/fact_none": {"agentWallet": wallet},
        "GET /patterns": {"agentWallet": wallet},
        "GET /skills": {"agentWallet": wallet},
        "GET /evals/runs": {"agentWallet": wallet},
        "GET /workflows/reliability": {"agentWallet": wallet, "agent": "planner"},
        f"GET /{wallet}": {},
        "POST /jobs consolidate": {"type": "consolidate", "agentWallet": wallet},
        "POST /jobs decay_update": {"type": "decay_update", "agentWallet": wallet},
        "POST /jobs cleanup": {"type": "cleanup"},
        "POST /jobs patterns_extract": {"type": "patterns_extract", "agentWallet": wallet},
        "POST /jobs archive_create": {
            "type": "archive_create",
            "agentWallet": wallet,
            "syncToIpfs": False,
        },
    }


@dataclass(frozen=True)
class Case:
    category: str
    route: str
    """`METHOD /path` (`/{wallet}` is the listing route), or `POST /jobs <type>`."""
    field: str
    """What the error message must name."""
    bad: Any
    good: Any
    kind: str = "body"
    """`body` (merged into the JSON body), `raw` (a JSON literal spliced in), `query`."""
    ok: frozenset[int] = frozenset({200, 202})
    """The neighbour's expected statuses (a PATCH of a missing item is 404, after
    validation)."""

    @property
    def label(self) -> str:
        return f"{self.category}: {self.route} {self.field}={self.bad!r}"


def _counts() -> list[Case]:
    routes = [
        "POST /context/assemble",
        "POST /loop",
        "POST /layers/search",
        "POST /items/search",
        "POST /search",
    ]
    cases = [Case("negative count", r, "limit", {"limit": -1}, {"limit": 1}) for r in routes]
    cases += [Case("negative count", r, "limit", {"limit": 0}, {"limit": 20}) for r in routes[:2]]
    cases += [
        Case("negative count", r, "limit", {"limit": 2.5}, {"limit": 2.0}) for r in routes[:1]
    ]
    for name, good in (("maxItems", 1), ("maxItemChars", 1)):
        cases += [Case("negative count", r, name, {name: -1}, {name: good}) for r in routes[:2]]
    for route in ("GET /patterns", "GET /skills", "GET /evals/runs", "GET /{wallet}"):
        cases += [
            Case("negative count", route, "limit", {"limit": -1}, {"limit": 1}, "query"),
            Case("negative count", route, "limit", {"limit": 0}, {"limit": 1}, "query"),
        ]
    cases += [
        Case(
            "negative count",
            "GET /workflows/reliability",
            "last",
            {"last": v},
            {"last": 1},
            "query",
        )
        for v in (-1, 0)
    ]
    cases += [
        Case("negative count", "POST /rerank", "topK", {"topK": -1}, {"topK": 1}),
        Case("negative count", "POST /evals/runs", "k", {"k": -1}, {"k": 1}),
        Case("negative count", "POST /evals/runs", "limit", {"limit": -1}, {"limit": 1}),
    ]
    return cases


def _budgets() -> list[Case]:
    cases: list[Case] = []
    for route in ("POST /context/assemble", "POST /loop"):
        for value in (-100, 0):
            cases.append(
                Case(
                    "budget",
                    route,
                    "budget.maxCharacters",
                    {"budget": {"maxCharacters": value}},
                    {"budget": {"maxCharacters": 1}},
                )
            )
    cases += [
        Case(
            "budget",
            "POST /context/assemble",
            "budget.max_chars",
            {"budget": {"max_chars": -1}},
            {"budget": {"max_chars": 1}},
        ),
        Case(
            "budget",
            "POST /context/assemble",
            "maxContextCharacters",
            {"maxContextCharacters": 0},
            {"maxContextCharacters": 900},
        ),
        Case(
            "budget",
            "POST /context/assemble",
            "max_context_chars",
            {"max_context_chars": -5},
            {"max_context_chars": 900},
        ),
    ]
    return cases


NON_FINITE = ("NaN", "Infinity", "-Infinity")


def _non_finite() -> list[Case]:
    """(route, field path, where to splice the literal, the neighbour literal)."""
    spots = [
        ("POST /remember", "metadata.a", {"metadata": {"a": "@"}}, "1.5"),
        ("POST /remember", "confidence", {"confidence": "@"}, "0.5"),
        ("POST /context/assemble", "limit", {"limit": "@"}, "3"),
        ("POST /context/assemble", "budget.maxCharacters", {"budget": {"maxCharacters": "@"}}, "9"),
        (
            "POST /context/assemble",
            "filters.metadata.score",
            {"filters": {"metadata.score": "@"}},
            "1",
        ),
        ("POST /loop", "maxItems", {"maxItems": "@"}, "2"),
        ("POST /layers/search", "limit", {"limit": "@"}, "2"),
        ("POST /search", "limit", {"limit": "@"}, "2"),
        ("POST /turns/record", "totalTokens", {"totalTokens": "@"}, "12"),
        ("POST /turns/record", "metadata.cost", {"metadata": {"cost": "@"}}, "0.25"),
        ("POST /transcripts/index", "totalTokens", {"totalTokens": "@"}, "12"),
        (
            "POST /rerank",
            "documents[0].score",
            {"documents": [{"content": "tea", "score": "@"}]},
            "0.5",
        ),
        ("POST /workflows/checkpoints", "qualityScore", {"qualityScore": "@"}, "0.8"),
        ("POST /knowledge/documents", "embedding[0]", {"embedding": ["@"]}, "0.1"),
        ("POST /evals/runs", "k", {"k": "@"}, "3"),
        ("PATCH /items/fact_none", "confidence", {"confidence": "@"}, "0.5"),
        ("POST /jobs patterns_extract", "windowDays", {"windowDays": "@"}, "1"),
    ]
    cases: list[Case] = []
    for route, name, spot, good in spots:
        for literal in NON_FINITE:
            ok = frozenset({404}) if route.startswith("PATCH") else frozenset({200, 202})
            cases.append(Case("non-finite", route, name, (spot, literal), (spot, good), "raw", ok))
    return cases


def _times() -> list[Case]:
    cases: list[Case] = []
    writes = ("POST /turns/record", "POST /remember", "POST /knowledge/documents")
    writes += ("POST /workflows/checkpoints",)
    for route in writes:
        for bad in (HUGE, -1, 1e300, "0001-01-01T00:00:00Z"):
            cases.append(
                Case("time range", route, "occurredAt", {"occurredAt": bad}, {"occurredAt": TIME})
            )
    for bad in (HUGE, -1):
        cases.append(
            Case("time range", "POST /context/assemble", "asOf", {"asOf": bad}, {"asOf": TIME})
        )
    message = {"role": "user", "content": "hi"}
    answer = {"role": "assistant", "content": "ok"}
    for route in ("POST /turns/record", "POST /transcripts/index"):
        for bad in (-1, HUGE):
            cases.append(
                Case(
                    "time range",
                    route,
                    "messages[0].timestamp",
                    {"messages": [{**message, "timestamp": bad}, answer]},
                    {"messages": [{**message, "timestamp": TIME}, answer]},
                )
            )
    cases.append(
        Case(
            "time range",
            "POST /turns/record",
            "toolEvents[0].timestamp",
            {"toolEvents": [{"name": "search", "timestamp": -1}]},
            {"toolEvents": [{"name": "search", "timestamp": TIME}]},
        )
    )
    return cases


def _tokens() -> list[Case]:
    cases = [
        Case("negative tokens", r, name, {name: -1}, {name: 0})
        for r in ("POST /turns/record", "POST /transcripts/index")
        for name in ("totalTokens", "tokenCount")
    ]
    cases.append(
        Case(
            "negative tokens",
            "POST /turns/record",
            "contextWindow",
            {"contextWindow": -1},
            {"contextWindow": 8192},
        )
    )
    return cases


def _jobs() -> list[Case]:
    def job(kind: str, name: str, bad: Any, good: Any) -> Case:
        return Case("job params", f"POST /jobs {kind}", name, {name: bad}, {name: good})

    cases: list[Case] = []
    for kind in ("patterns_extract", "archive_create"):
        cases += [job(kind, "windowDays", v, 1) for v in (-1, 0, 1e9)]
        cases += [
            job(kind, "dateRange", {"start": HUGE, "end": HUGE + 1}, {"start": 0, "end": 1000}),
            job(kind, "timeRange", {"start": 5000, "end": 1000}, {"start": 1000, "end": 5000}),
        ]
    for kind in ("consolidate", "decay_update"):
        cases += [job(kind, "batchSize", v, 1) for v in (-1, 0, 10_001, 2.5)]
    cases += [job("decay_update", "halfLifeDays", v, 30) for v in (-1, 0, 1e9)]
    cases += [job("cleanup", "olderThanDays", v, 36_500) for v in (-1, 0, 1e9)]
    return cases


def cases() -> list[Case]:
    """Every case: the issue's categories × the routes that take them."""
    return _counts() + _budgets() + _non_finite() + _times() + _tokens() + _jobs()


def _splice(base: dict[str, Any], spot: dict[str, Any], literal: str) -> str:
    """`base` merged with `spot` as JSON text, its `"@"` placeholder replaced by `literal`."""
    text = json.dumps({**base, **spot})
    assert text.count('"@"') == 1
    return text.replace('"@"', literal)


async def send(
    http: httpx.AsyncClient, case: Case, wallet: str, *, hostile: bool
) -> httpx.Response:
    """Send the case's hostile value (or its neighbour) for tenant `wallet`."""
    bases = _bases(wallet)
    route = case.route.replace("/{wallet}", f"/{wallet}")
    base = bases[route]
    method, path = route.split(" ")[:2]
    value = case.bad if hostile else case.good
    url = f"{PREFIX}{path}"
    if case.kind == "query":
        return await http.request(method, url, params={**base, **value})
    if case.kind == "raw":
        spot, literal = value
        content = _splice(base, spot, literal).encode()
        headers = {"Content-Type": "application/json"}
        return await http.request(method, url, content=content, headers=headers)
    return await http.request(method, url, json={**base, **value})


def verdict(case: Case, response: httpx.Response) -> str:
    """`clear` (422 naming the field), `silent` (accepted: 2xx) or `unclear` (anything else)."""
    if response.status_code == 422 and case.field in response.json().get("error", ""):
        return "clear"
    if 200 <= response.status_code < 300:
        return "silent"
    return "unclear"


def tally(verdicts: list[tuple[Case, str]]) -> str:
    """The census as text: overall and per category."""
    total = Counter(v for _, v in verdicts)
    lines = [
        f"hostile inputs tried: {len(verdicts)}; clear 422 errors: {total['clear']}; "
        f"silent accepts: {total['silent']}; other answers: {total['unclear']}"
    ]
    categories = sorted({c.category for c, _ in verdicts})
    for category in categories:
        mine = Counter(v for c, v in verdicts if c.category == category)
        routes = len({c.route for c, _ in verdicts if c.category == category})
        lines.append(
            f"  {category:16} tried {sum(mine.values()):3} over {routes:2} routes: "
            f"clear {mine['clear']:3}, silent {mine['silent']:3}, other {mine['unclear']:3}"
        )
    return "\n".join(lines)
