"""schemathesis over the gateway's own OpenAPI document, served over real HTTP by the package's
gateway (real Kafka, MongoDB-wire server, Redis behind it): for every operation, generated
requests (valid ones and ones that break the schema) never get a 5xx, and every answer has
a documented status code, a documented content type and a body matching the documented
schema; and on the operations whose bodies carry numeric ranges (`minimum`, `maximum`,
`exclusiveMinimum` from `schemas.bounds` and `schemas.jobs`), every request that breaks the
document is refused. Bounded: `EXAMPLES` per operation and mode, a few minutes in all."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_schema_conformance,
    status_code_conformance,
)

from tests.gateway.conftest import Gateway

pytestmark = [
    pytest.mark.integration,
    pytest.mark.asyncio(loop_scope="package"),
    # schemathesis' own strategies use `random`; not ours to fix
    pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisDeprecationWarning"),
]

EXAMPLES = 50
"""Generated requests per operation and generation mode."""


@schemathesis.check
def not_a_server_error_but_a_waits_timeout(ctx: Any, response: Any, case: Any) -> bool | None:
    """`not_a_server_error`, except the documented 504 of a waited write that was not
    visible within the caller's `waitTimeout` (a fuzzed one can be 5e-324 s): the write was
    accepted, the answer says so, and nothing failed on the server."""
    waited = str((case.query or {}).get("wait", "")).lower() == "true"
    if waited and response.status_code == 504 and "not processed within" in response.text:
        return None
    return not_a_server_error(ctx, response, case)


CHECKS = [
    not_a_server_error_but_a_waits_timeout,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


AGENT = "0xschemathesis"
FILLED = {
    "agentWallet": AGENT,
    "threadId": "t1",
    "query": "coffee in lisbon",
    "userMessage": "I like coffee in Lisbon",
    "assistantMessage": "Noted",
    "content": "Ada likes coffee",
    "skillName": "brew",
    "resolution": "keep",
    "type": "consolidate",
    "testCases": [{"query": "coffee", "expected": "coffee"}],
}
"""Values for the keys the reference requires but the loose document cannot mark required
(aliases: `agentWallet` or `agent_id`): half the valid cases get the missing ones, so the
routes' real paths (202, 200 with rows) are exercised, not only their 400s."""


def filled(case: Any) -> Any:
    if isinstance(case.body, dict):
        for key, value in FILLED.items():
            case.body.setdefault(key, value)
    if case.method in ("GET", "DELETE") and isinstance(case.query, dict):
        case.query.setdefault("agentWallet", AGENT)
    return case


def harmless(case: Any) -> bool:
    """Leave out what would touch other tests' tenants: `cleanup` spans every tenant."""
    return not (isinstance(case.body, dict) and case.body.get("type") == "cleanup")


RANGED = {
    ("POST", "/api/memory/context/assemble"),
    ("POST", "/api/memory/turns/record"),
    ("POST", "/api/memory/remember"),
    ("POST", "/api/memory/layers/search"),
    ("POST", "/api/memory/search"),
    ("POST", "/api/memory/transcripts/index"),
    ("POST", "/api/memory/knowledge/documents"),
    ("POST", "/api/memory/workflows/checkpoints"),
    ("POST", "/api/memory/jobs"),
    ("POST", "/api/memory/rerank"),
    ("POST", "/api/memory/evals/runs"),
}
"""The operations whose bodies carry numeric ranges (counts, times, token counts, job
parameters). The GET routes' ranged query counts are in `test_gateway_strict.py`: here a
negative query string is as often a repeated or object-typed `agentWallet` (FastAPI takes the
last value), which says nothing about ranges."""


def refuse_negatives(url: str, api_key: str) -> tuple[list[str], Counter[int]]:
    """Requests that break the document (NEGATIVE mode: a count below its minimum, a time
    beyond its maximum, a string for a number, …) on the ranged operations, each checked to
    be refused (`negative_data_rejection`: a 4xx), never accepted."""
    schema = schemathesis.openapi.from_url(f"{url}/openapi.json", timeout=30)
    failures: list[str] = []
    statuses: Counter[int] = Counter()
    with requests.Session() as session:
        for result in schema.get_all_operations():
            operation = result.ok()
            if (operation.method.upper(), operation.path) not in RANGED:
                continue
            cases = operation.as_strategy(generation_mode=GenerationMode.NEGATIVE)

            @settings(
                max_examples=EXAMPLES,
                deadline=None,
                database=None,
                derandomize=True,
                phases=[Phase.explicit, Phase.generate],
                suppress_health_check=list(HealthCheck),
            )
            @given(case=cases.map(filled).filter(harmless))
            def check(case: Any) -> None:
                headers = {"X-API-Key": api_key}
                response = case.call(base_url=url, session=session, headers=headers, timeout=90)
                statuses[response.status_code] += 1
                case.validate_response(response, checks=[negative_data_rejection], headers=headers)

            try:
                check()
            except Unsatisfiable:
                continue
            except Exception as exc:  # noqa: BLE001 - collected and reported together
                failures.append(f"{operation.label}: {exc}")
    return failures, statuses


def fuzz(url: str, api_key: str) -> tuple[list[str], Counter[int]]:
    """Run every operation's examples (blocking: call it in a thread, the gateway is served
    by this test's event loop). Returns the failures, one paragraph each, and how many
    answers had each status code."""
    schema = schemathesis.openapi.from_url(f"{url}/openapi.json", timeout=30)
    failures: list[str] = []
    statuses: Counter[int] = Counter()
    with requests.Session() as session:
        for result in schema.get_all_operations():
            operation = result.ok()
            for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
                raw = operation.as_strategy(generation_mode=mode)
                if mode == GenerationMode.POSITIVE:
                    raw = st.one_of(raw, raw.map(filled))
                cases = raw.filter(harmless)

                @settings(
                    max_examples=EXAMPLES,
                    deadline=None,
                    database=None,
                    derandomize=True,
                    phases=[Phase.explicit, Phase.generate],
                    suppress_health_check=list(HealthCheck),
                )
                @given(case=cases)
                def check(case: Any) -> None:
                    headers = {"X-API-Key": api_key}
                    response = case.call(base_url=url, session=session, headers=headers, timeout=90)
                    statuses[response.status_code] += 1
                    case.validate_response(response, checks=CHECKS, headers=headers)

                try:
                    check()
                except Unsatisfiable:
                    continue  # nothing to break in this operation (e.g. GET /healthz)
                except Exception as exc:  # noqa: BLE001 - collected and reported together
                    failures.append(f"{operation.label} [{mode.value}]: {exc}")
    return failures, statuses


async def test_every_operation_conforms_to_the_openapi_document(gw: Gateway) -> None:
    failures, statuses = await asyncio.to_thread(fuzz, gw.url, gw.api_key)
    assert not failures, "\n\n".join(failures)
    # not vacuous: requests were served (200/202), rejected (400, 422) and missed (404)
    assert {200, 202, 400, 404, 422} <= set(statuses), statuses
    assert sum(statuses.values()) > 500, statuses


async def test_requests_breaking_a_documented_range_are_refused(gw: Gateway) -> None:
    failures, statuses = await asyncio.to_thread(refuse_negatives, gw.url, gw.api_key)
    assert not failures, "\n\n".join(failures)
    assert 422 in statuses, statuses


async def test_the_document_lists_every_route_with_its_error_codes(gw: Gateway) -> None:
    spec = (await gw.http.get("/openapi.json")).json()
    operations = [
        (path, method, op)
        for path, item in spec["paths"].items()
        for method, op in item.items()
        if path.startswith("/api/memory")
    ]
    assert len(operations) >= 20
    for path, method, op in operations:
        codes = set(op["responses"])
        assert {"400", "401", "403", "413", "422", "504"} <= codes, (method, path, codes)
        assert op["responses"]["422"]["content"]["application/json"]["schema"] == {
            "$ref": "#/components/schemas/ErrorBody"
        }


@pytest.mark.filterwarnings("ignore::pytest.PytestWarning")
def test_the_strategy_filter_drops_cleanup_jobs() -> None:
    class Case:
        def __init__(self, body: Any) -> None:
            self.body = body

    assert not harmless(Case({"type": "cleanup"}))
    assert harmless(Case({"type": "consolidate"}))
    assert harmless(Case(None))
