"""Evals on the real stack (MongoDB-wire server, Redis, local MiniLM): exact recall, a
precision recomputed by hand from what the layer search returned, the run stored and
readable only by its agent, and the `mnemostream eval` command."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from engine.adapters.local_embedder import LocalMiniLMEmbedder
from engine.errors import InputRejected
from schemas.inputs import memory_remembered
from schemas.requests import LayerSearchRequest
from services.endpoints import ENV_KAFKA, ENV_MONGO, ENV_REDIS, Endpoints
from services.groups.admin.evals import get_eval, list_evals, run_eval
from services.ops.cli import app
from services.runtime import Runtime, open_runtime
from tests.support.settings import make_settings

pytestmark = pytest.mark.integration

USER = "ursula"
FACTS = [
    "Ursula is allergic to peanuts.",
    "Ursula plays the cello in an amateur orchestra.",
    "Ursula moved to Lisbon in 2021.",
]


async def seed(rt: Runtime, agent: str, now: datetime) -> dict[str, str]:
    """Remember FACTS for (agent, USER), said on the days before `now`; their row ids by text."""
    ids: dict[str, str] = {}
    for i, fact in enumerate(FACTS):
        body = {"agentWallet": agent, "userAddress": USER, "content": fact}
        stored = await rt.rememberer.remember(
            memory_remembered(body, now=now - timedelta(days=i + 1))
        )
        ids[fact] = stored.vector_id
    return ids


@pytest.fixture
async def rt(stack: Endpoints, minilm: LocalMiniLMEmbedder, unique: Any) -> AsyncIterator[Runtime]:
    settings = make_settings(stack, unique("evals"))
    async with open_runtime(settings, minilm) as runtime:
        yield runtime
        await runtime.mongo.drop_database(settings.mongo.db)


async def test_scores_match_what_the_search_returned_and_the_run_is_stored(
    rt: Runtime, unique: Any, now: datetime, now_ms: int
) -> None:
    agent = unique("0xEvalAgent")
    ids = await seed(rt, agent, now)
    cello = ids["Ursula plays the cello in an amateur orchestra."]
    cases = [
        {"query": "Which nuts should I avoid eating?", "expected": "PEANUTS"},
        {"query": "What instrument does Ursula play?", "expectedMemoryId": cello},
        {"query": "What is the capital of Mongolia?", "expected": "Ulaanbaatar"},
        # the agent's wallet is in every returned item's JSON (agentWallet): the reference's
        # substring check over the JSON counted this as a hit (§16.28); it is not an answer
        {"query": "Which nuts should I avoid eating?", "expected": agent},
    ]
    body = {"agent_id": agent, "user_id": USER, "testCases": cases, "k": 3}
    run = await run_eval(rt, body, now_ms)

    assert run["status"] == "completed"
    assert run["evalRunId"].startswith("memeval_")
    assert (run["k"], run["layers"], run["createdAt"]) == (
        3,
        ["working", "scene", "graph", "patterns", "archives", "vectors"],
        now_ms,
    )
    assert run["scope"] == {"agentWallet": agent, "userAddress": USER}
    assert [r["hit"] for r in run["results"]] == [True, True, False, False]
    assert run["scores"]["recallAtK"] == 0.5
    assert run["scores"]["cases"] == 4

    # precision by hand: the same layer search (same scope, query, layers, k), each returned
    # item judged on its own content (or its id for expectedMemoryId)
    returned = relevant = 0
    per_case: list[float] = []
    for case, result in zip(cases, run["results"], strict=True):
        reply = await rt.search.layer_search(
            LayerSearchRequest.model_validate(
                {
                    "scope": {"agentWallet": agent, "userAddress": USER},
                    "query": case["query"],
                    "limit": 3,
                }
            ),
            now_ms,
        )
        items = [i for layer in run["layers"] for i in reply.layers.get(layer, [])]
        assert [i["id"] for i in result["items"]] == [
            i.get("id") or i.get("sessionId") or i.get("patternId") or i.get("archiveId")
            for i in items
        ]
        good = [
            i
            for i in items
            if i.get("id") == case.get("expectedMemoryId")
            or ("expected" in case and case["expected"].lower() in str(i.get("content")).lower())
        ]
        assert (result["returned"], result["relevant"]) == (len(items), len(good))
        returned += len(items)
        relevant += len(good)
        per_case.append(len(good) / len(items) if items else 0.0)
        if case.get("expected") == agent:
            assert items, "the decoy case must return something to be a decoy"
            assert agent in json.dumps(reply.layers)  # what the reference would have matched
    assert returned > 0
    assert run["scores"]["returned"] == returned
    assert run["scores"]["precisionAtK"] == pytest.approx(relevant / returned)
    assert run["scores"]["precisionAtK"] < 1.0
    assert run["scores"]["meanPrecision"] == pytest.approx(sum(per_case) / len(per_case))
    assert all(r["contextCharacters"] > 0 for r in run["results"] if r["returned"])
    assert run["scores"]["latencyP95Ms"] >= run["scores"]["latencyP50Ms"] > 0

    assert await get_eval(rt, run["evalRunId"], agent) == run
    assert [r["evalRunId"] for r in await list_evals(rt, agent, 10)] == [run["evalRunId"]]
    assert await get_eval(rt, run["evalRunId"], "0xSomeoneElse") is None
    assert await list_evals(rt, "0xSomeoneElse", 10) == []


async def test_runs_list_newest_first_per_agent(
    rt: Runtime, unique: Any, now: datetime, now_ms: int
) -> None:
    agent = unique("0xEvalAgent")
    await seed(rt, agent, now)
    body = {"agentWallet": agent, "testCases": [{"query": "nuts?", "expected": "peanuts"}]}
    first = await run_eval(rt, body, now_ms)
    second = await run_eval(rt, {**body, "layers": ["graph"]}, now_ms + 1000)
    listed = await list_evals(rt, agent, 10)
    assert [r["evalRunId"] for r in listed] == [second["evalRunId"], first["evalRunId"]]
    assert [r["evalRunId"] for r in await list_evals(rt, agent, 1)] == [second["evalRunId"]]


async def test_a_bad_body_is_rejected_and_nothing_is_stored(
    rt: Runtime, unique: Any, now_ms: int
) -> None:
    agent = unique("0xEvalAgent")
    with pytest.raises(InputRejected, match="cannot be scored"):
        await run_eval(rt, {"agentWallet": agent, "testCases": [{"query": "q"}]}, now_ms)
    with pytest.raises(InputRejected, match="agentWallet is required"):
        await run_eval(rt, {"testCases": [{"query": "q", "expected": "x"}]}, now_ms)
    assert await list_evals(rt, agent, 10) == []


def test_the_eval_command_runs_stores_and_prints(
    stack: Endpoints, minilm: LocalMiniLMEmbedder, unique: Any, tmp_path: Path, now: datetime
) -> None:
    settings = make_settings(stack, unique("evalcli"))
    agent = unique("0xEvalCli")

    async def prepare() -> None:
        async with open_runtime(settings, minilm) as runtime:
            await seed(runtime, agent, now)

    asyncio.run(prepare())
    cases = tmp_path / "cases.json"
    cases.write_text(
        json.dumps(
            [
                {"query": "Which nuts should I avoid eating?", "expected": "peanuts"},
                {"query": "What is the capital of Mongolia?", "expected": "Ulaanbaatar"},
            ]
        )
    )
    env = {
        ENV_KAFKA: stack.kafka_bootstrap,
        ENV_MONGO: stack.mongo_uri,
        ENV_REDIS: stack.redis_url,
        "MNEMOSTREAM_MONGO_DB": settings.mongo.db,
    }

    async def stored(run_id: str) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        async with open_runtime(settings, minilm) as runtime:
            return await get_eval(runtime, run_id, agent), await get_eval(
                runtime, run_id, "0xSomeoneElse"
            )

    async def drop() -> None:
        async with open_runtime(settings, minilm) as runtime:
            await runtime.mongo.drop_database(settings.mongo.db)

    try:
        result = CliRunner().invoke(
            app,
            ["eval", "--agent", agent, "--user", USER, "--k", "3", "--layer", "graph", str(cases)],
            env=env,
            terminal_width=200,
        )
        assert result.exit_code == 0, result.output
        assert "recallAtK" in result.output
        assert "0.500" in result.output
        [line] = [x for x in result.output.splitlines() if x.startswith("eval run memeval_")]
        mine, theirs = asyncio.run(stored(line.split()[2]))
        assert mine is not None
        assert (mine["k"], mine["layers"], mine["scores"]["recallAtK"]) == (3, ["graph"], 0.5)
        assert theirs is None

        missing = CliRunner().invoke(app, ["eval", "--agent", agent, str(tmp_path / "no.json")])
        assert missing.exit_code == 2
        assert "cannot read" in missing.output
        unlabelled = tmp_path / "unlabelled.json"
        unlabelled.write_text(json.dumps({"testCases": [{"query": "q"}]}))
        rejected = CliRunner().invoke(app, ["eval", "--agent", agent, str(unlabelled)], env=env)
        assert rejected.exit_code == 2
        assert "cannot be scored" in rejected.output
    finally:
        asyncio.run(drop())
