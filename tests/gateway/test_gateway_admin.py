"""Patterns, skills, jobs, stats and evals over HTTP (request-reply on `memory.admin.v1`)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.gateway.conftest import BACKLOG_TIMEOUT, PREFIX, Gateway, agent, until
from tests.gateway.test_gateway_loop import remember

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="package")]


def tool_turn(wallet: str, n: int) -> dict[str, Any]:
    return {
        "agentWallet": wallet,
        "userAddress": "ivy",
        "threadId": f"t{n}",
        "turnId": f"turn-{wallet}-{n}",
        "userMessage": f"Find me a flight, please ({n}).",
        "assistantMessage": "Booked.",
        "toolEvents": [
            {"name": "search_flights", "status": "completed", "timestamp": 1_000 + n},
            {"name": "book_ticket", "status": "completed", "timestamp": 1_001 + n},
        ],
    }


async def test_patterns_and_skills_from_recorded_turns(gw: Gateway) -> None:
    wallet = agent()
    for n in range(3):
        r = await gw.http.post(f"{PREFIX}/turns/record", json=tool_turn(wallet, n))
        assert r.status_code == 202, r.text
    scope = {"agentWallet": wallet, "userAddress": "ivy"}
    listed = await until(
        lambda: gw.http.get(f"{PREFIX}/patterns", params=scope),
        lambda r: (
            r.status_code == 200 and [p["executionCount"] for p in r.json()["patterns"]] == [3]
        ),
        "the tool sequence to be counted three times",
        timeout=BACKLOG_TIMEOUT,
    )
    pattern = listed.json()["patterns"][0]
    assert [s["action"] for s in pattern["steps"]] == ["search_flights", "book_ticket"]
    assert pattern["successRate"] == 1.0
    pid = pattern["patternId"]

    filtered = await gw.http.get(
        f"{PREFIX}/patterns", params={**scope, "minSuccessRate": 0.5, "patternType": "other"}
    )
    assert filtered.json() == {"patterns": []}
    one = await gw.http.get(f"{PREFIX}/patterns/{pid}", params=scope)
    assert one.status_code == 200
    assert one.json()["pattern"]["patternId"] == pid
    assert (
        await gw.http.get(f"{PREFIX}/patterns/{pid}", params={"agentWallet": wallet})
    ).status_code == 404

    check = await gw.http.post(f"{PREFIX}/patterns/{pid}/validate", json=scope)
    assert check.status_code == 200
    assert check.json()["valid"] is True
    assert check.json()["occurrences"] == 3
    assert check.json()["toolSequence"] == ["search_flights", "book_ticket"]

    promoted = await gw.http.post(
        f"{PREFIX}/patterns/{pid}/promote",
        json={**scope, "skillName": "Book a flight", "validationData": {"valid": False}},
    )
    assert promoted.status_code == 200, promoted.text
    assert promoted.json()["promoted"] is True
    skill_id = promoted.json()["skillId"]
    again = await gw.http.post(
        f"{PREFIX}/patterns/{pid}/promote", json={**scope, "skillName": "Book a flight"}
    )
    assert again.json()["status"] == "already_promoted"
    assert again.json()["skillId"] == skill_id

    skills = await gw.http.get(f"{PREFIX}/skills", params={**scope, "category": "learned"})
    assert [s["skillId"] for s in skills.json()["skills"]] == [skill_id]
    skill = await gw.http.get(f"{PREFIX}/skills/{skill_id}", params=scope)
    assert skill.status_code == 200
    assert skill.json()["skill"]["name"] == "Book a flight"
    # issue 17: a skill promoted at a caller's request was tagged "auto-promoted"
    assert skill.json()["skill"]["tags"] == ["pattern", "promoted", "manual"]
    assert (skill.json()["skill"]["promotion"], skill.json()["skill"]["creator"]) == (
        "manual",
        "caller",
    )
    assert skill.json()["skill"]["spawnConfig"]["tools"] == ["search_flights", "book_ticket"]
    assert (await gw.http.get(f"{PREFIX}/skills/skill_nope", params=scope)).status_code == 404


async def test_unknown_patterns_are_404_and_bad_input_400(gw: Gateway) -> None:
    scope = {"agentWallet": agent()}
    assert (await gw.http.get(f"{PREFIX}/patterns/pat_nope", params=scope)).status_code == 404
    validate = await gw.http.post(f"{PREFIX}/patterns/pat_nope/validate", json=scope)
    assert validate.status_code == 404
    assert validate.json()["error"]
    no_name = await gw.http.post(f"{PREFIX}/patterns/pat_nope/promote", json=scope)
    assert no_name.status_code == 400
    assert no_name.json()["error"] == "skillName is required"
    promote = await gw.http.post(
        f"{PREFIX}/patterns/pat_nope/promote", json={**scope, "skillName": "x"}
    )
    assert promote.status_code == 404
    for path, params, status in (
        ("/patterns", {}, 400),
        ("/patterns", {**scope, "minSuccessRate": 3}, 422),  # out of its range
        ("/patterns", {**scope, "limit": "many"}, 400),
        ("/skills", {}, 400),
        ("/skills/x", {}, 400),
        ("/patterns/x", {}, 400),
    ):
        r = await gw.http.get(f"{PREFIX}{path}", params=params)
        assert r.status_code == status, (path, params, r.text)
        assert r.json()["error"]
    bad_validate = await gw.http.post(f"{PREFIX}/patterns/x/validate", json={})
    assert bad_validate.status_code == 400
    assert bad_validate.json()["error"] == "agentWallet is required"


async def test_jobs_are_queued_then_recorded(gw: Gateway) -> None:
    wallet = agent()
    await remember(gw, {"agentWallet": wallet, "content": "Jay's desk is by the window."})
    r = await gw.http.post(f"{PREFIX}/jobs", json={"type": "decay_update", "agentWallet": wallet})
    assert r.status_code == 202, r.text
    queued = r.json()
    assert (queued["status"], queued["type"], queued["agentWallet"]) == (
        "queued",
        "decay_update",
        wallet,
    )
    done = await until(
        lambda: gw.http.get(f"{PREFIX}/jobs/{queued['jobId']}"),
        lambda resp: resp.status_code == 200 and resp.json()["status"] == "completed",
        "the decay job to complete",
    )
    assert done.json()["data"]["updated"] >= 1
    mine = await gw.http.get(f"{PREFIX}/jobs/{queued['jobId']}", params={"agentWallet": wallet})
    assert mine.status_code == 200
    other = await gw.http.get(f"{PREFIX}/jobs/{queued['jobId']}", params={"agentWallet": agent()})
    assert other.status_code == 404
    assert (await gw.http.get(f"{PREFIX}/jobs/memjob_nope")).status_code == 404

    bad = await gw.http.post(f"{PREFIX}/jobs", json={"type": "explode"})
    assert bad.status_code == 400
    assert bad.json()["error"].startswith("type must be one of consolidate")
    wrong = await gw.http.post(f"{PREFIX}/jobs", json={"type": "consolidate", "agentWallets": "x"})
    assert wrong.status_code == 400
    assert "agentWallets" in wrong.json()["error"]


async def test_stats_count_the_agents_memory(gw: Gateway) -> None:
    wallet = agent()
    await remember(gw, {"agentWallet": wallet, "userAddress": "kim", "content": "Kim is vegan."})
    await remember(
        gw, {"agentWallet": wallet, "userAddress": "lee", "content": "Lee is allergic to nuts."}
    )
    r = await gw.http.get(f"{PREFIX}/stats/{wallet}")
    assert r.status_code == 200, r.text
    stats = r.json()
    assert (stats["totalVectors"], stats["byType"], stats["totalTranscripts"]) == (
        2,
        {"fact": 2},
        0,
    )
    assert stats["avgDecayScore"] == 1.0
    assert stats["oldestVector"] <= stats["newestVector"]
    kim = await gw.http.get(f"{PREFIX}/stats/{wallet}", params={"userAddress": "kim"})
    assert kim.json()["totalVectors"] == 1
    empty = await gw.http.get(f"{PREFIX}/stats/{agent()}")
    assert empty.json()["totalVectors"] == 0
    assert empty.json()["oldestVector"] is None
    bad = await gw.http.get(f"{PREFIX}/stats/{wallet}", params={"userAddress": "u" * 300})
    assert bad.status_code == 400
    assert "userAddress" in bad.json()["error"]


async def test_evals_run_store_and_list(gw: Gateway) -> None:
    wallet = agent()
    fact = await remember(
        gw, {"agentWallet": wallet, "userAddress": "max", "content": "Max's cat is called Pixel."}
    )
    r = await gw.http.post(
        f"{PREFIX}/evals/runs",
        json={
            "agent_id": wallet,
            "user_id": "max",
            "testCases": [
                {"query": "What is the name of Max's cat?", "expected": "Pixel"},
                {"query": "Max's cat", "expectedMemoryId": fact["memory"]["id"]},
            ],
        },
    )
    assert r.status_code == 200, r.text
    run = r.json()
    assert run["status"] == "completed"
    assert run["scores"]["recallAtK"] == 1.0
    assert len(run["results"]) == 2
    got = await gw.http.get(
        f"{PREFIX}/evals/runs/{run['evalRunId']}", params={"agentWallet": wallet}
    )
    assert got.status_code == 200
    assert got.json()["evalRunId"] == run["evalRunId"]
    listed = await gw.http.get(f"{PREFIX}/evals/runs", params={"agentWallet": wallet})
    assert [x["evalRunId"] for x in listed.json()["runs"]] == [run["evalRunId"]]
    other = await gw.http.get(
        f"{PREFIX}/evals/runs/{run['evalRunId']}", params={"agentWallet": agent()}
    )
    assert other.status_code == 404

    no_cases = await gw.http.post(f"{PREFIX}/evals/runs", json={"agentWallet": wallet})
    assert no_cases.status_code == 400
    assert "testCases" in no_cases.json()["error"]
    no_agent = await gw.http.get(f"{PREFIX}/evals/runs")
    assert no_agent.status_code == 400
    assert no_agent.json()["error"] == "agentWallet is required"
