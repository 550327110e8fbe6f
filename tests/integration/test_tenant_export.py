"""Export and import of a tenant (issue 31) on the real stack: a tenant's turns, remembered
facts and edited items exported, imported into a fresh deployment (its own database and its
own broker, its groups running), compared layer by layer with the source; the target's own
log rebuilds the tenant (the import went through the log); importing twice changes nothing;
another agent's or user's rows never leave with the export; an unknown format is refused."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from engine.adapters.local_embedder import LocalMiniLMEmbedder
from engine.adapters.mongo.export import KINDS, MongoTenantExport, parse_line
from engine.ingest.remember import fact_hash
from services.endpoints import Endpoints
from services.ops.export import export_lines
from services.ops.replay import replay
from services.ops.stack.servers import HOST, free_port, launch_spec
from services.ops.tenant_import import import_tenant, read_export
from services.ops.verify import COMPARED, differences
from services.sdk.client import MemoryClient
from services.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
GROUPS = ["transcripts", "embeddings", "extraction", "facts", "patterns", "items", "invalidation"]
VOLATILE = {kind: COMPARED.get(name, frozenset()) for kind, name in KINDS.items()}
"""Fields that change without an event (`services.ops.verify.COMPARED`), by export kind."""
CITIES = ("Porto", "Lisbon", "Oslo")
HEADER = '{"format": "mnemostream.tenant-export", "version": 1}'


@contextlib.contextmanager
def own_broker(directory: Path) -> Iterator[str]:
    """A second Kafka-protocol broker (the target deployment's), stopped by its PID."""
    port = free_port()
    spec = launch_spec("kafka", port, directory)
    with (directory / f"kafka-{port}.log").open("ab") as log:
        proc = subprocess.Popen(
            spec.argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=directory,
            env=spec.env,
        )
    try:
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(OSError), socket.create_connection((HOST, port), 0.5):
                break
            assert proc.poll() is None, "the broker exited"
            assert time.monotonic() < deadline, "the broker did not start"
            time.sleep(0.05)
        yield spec.endpoint
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def exported(settings: Settings, agent: str, user: str | None) -> list[str]:
    return [text async for text in export_lines(settings, agent, user)]


def by_kind(lines: list[str]) -> dict[str, dict[str, dict[str, Any]]]:
    """The rows of an export, by kind and `_id`, without the fields that change without an
    event."""
    found: dict[str, dict[str, dict[str, Any]]] = {kind: {} for kind in KINDS}
    assert parse_line(lines[-1]) == {"end": True, "rows": len(lines) - 2}
    for text in lines[1:-1]:
        item = parse_line(text)
        row = {k: v for k, v in item["row"].items() if k not in VOLATILE[item["kind"]]}
        found[item["kind"]][str(row["_id"])] = row
    return found


def layer_differences(
    source: Mapping[str, Mapping[str, Any]], target: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any]:
    """Per kind: ids missing, ids extra, and the fields that differ (`verify.differences`)."""
    found: dict[str, Any] = {}
    for kind in KINDS:
        a, b = source.get(kind, {}), target.get(kind, {})
        changed = {i: differences(a[i], b[i]) for i in set(a) & set(b)}
        problems = {
            "missing": sorted(set(a) - set(b)),
            "extra": sorted(set(b) - set(a)),
            "changed": {i: d for i, d in changed.items() if d},
        }
        if any(problems.values()):
            found[kind] = problems
    return found


async def record_tenant(
    client: MemoryClient, agent: str, user: str, now_ms: int, *, turns: int = 4
) -> dict[str, str]:
    """Turns (with tool events), remembered facts, one edited and one deleted item of one
    tenant; the remembered facts' ids by their text."""
    for n in range(turns):
        await client.record_turn(
            {
                "agentWallet": agent,
                "userAddress": user,
                "threadId": f"thread{n % 2}",
                "turnId": f"turn-{n}",
                "userMessage": f"I live in {CITIES[n % len(CITIES)]}. Plan day {n} please.",
                "assistantMessage": f"Day {n} is planned around the harbour.",
                "toolEvents": [
                    {"name": "search_flights", "status": "success", "timestamp": now_ms + n}
                ],
                "occurredAt": now_ms - (turns - n) * 60_000,
            },
            wait=True,
        )
    await client.wait_processed("turn-" + str(turns - 1), ["facts", "patterns"], timeout=60)
    ids: dict[str, str] = {}
    for text in ("Prefers seat 4A.", "Is allergic to peanuts.", "Drinks green tea."):
        await client.remember(
            {"agentWallet": agent, "userAddress": user, "content": text}, wait=True
        )
        ids[text] = "fact_" + fact_hash(agent, user, text)
    scope = {"agentWallet": agent, "userAddress": user}
    edited = await client.item("update", ids["Prefers seat 4A."], scope, content="Prefers 2C.")
    assert not edited.error
    assert not edited.not_found
    deleted = await client.item("delete", ids["Drinks green tea."], scope)
    assert not deleted.error
    assert not deleted.not_found
    return ids


async def test_round_trip_into_a_fresh_deployment_through_its_own_log(
    stack: Endpoints,
    minilm: LocalMiniLMEmbedder,
    unique: Callable[[str], str],
    now_ms: int,
    tmp_path: Path,
) -> None:
    from tests.support.pipeline import groups_running

    agent, other_agent = f"0xexp{uuid.uuid4().hex[:10]}", f"0xoth{uuid.uuid4().hex[:10]}"
    user = "alice"
    async with groups_running(
        stack, minilm, "exportsrc", GROUPS, extractor="rules", only_agents=[agent, other_agent]
    ) as (src, client):
        await record_tenant(client, agent, user, now_ms)
        for who, said in ((agent, "bob"), (other_agent, user)):  # must never leave with alice
            await client.record_turn(
                {
                    "agentWallet": who,
                    "userAddress": said,
                    "threadId": "thread0",
                    "userMessage": "My secret is CANARY-ELSEWHERE.",
                    "assistantMessage": "Noted.",
                },
                wait=True,
            )
            await client.remember(
                {"agentWallet": who, "userAddress": said, "content": "CANARY-ELSEWHERE fact."},
                wait=True,
            )
        lines = await exported(src.settings, agent, user)
        agent_wide = await exported(src.settings, agent, None)

    header = json.loads(lines[0])
    assert (header["format"], header["version"]) == ("mnemostream.tenant-export", 1)
    assert header["scope"] == {"agentWallet": agent, "userAddress": user}
    source = by_kind(lines)
    for kind in ("transcripts", "transcript_turns", "working", "memory", "patterns", "history"):
        assert source[kind], f"the export holds no {kind}"
    rows = [r for kind in source.values() for r in kind.values()]
    assert all((r["agentWallet"], r.get("userAddress")) == (agent, user) for r in rows)
    assert "CANARY-ELSEWHERE" not in "\n".join(lines)
    assert "CANARY-ELSEWHERE" in "\n".join(agent_wide)  # bob's rows are the agent's
    assert all(parse_line(t)["row"]["agentWallet"] == agent for t in agent_wide[1:-1])

    with own_broker(tmp_path) as bootstrap:
        fresh = Endpoints(bootstrap, stack.mongo_uri, stack.redis_url)
        async with groups_running(
            fresh,
            minilm,
            "exportdst",
            [*GROUPS, "search"],
            extractor="rules",
            from_start=True,
            only_agents=[agent],
        ) as (dst, dst_client):
            report = await import_tenant(dst.settings, read_export(lines), wait_seconds=90)
            assert (report.turns, report.remembers, report.skipped) == (4, 2, 0)  # not the deleted
            target = by_kind(await exported(dst.settings, agent, user))
            assert layer_differences(source, target) == {}
            reply = await dst_client.context(
                "Where do I live?", {"agentWallet": agent, "userAddress": user}
            )
            assert any("Porto" in item.text for item in reply.items), reply.items

            # the target's own log holds the tenant: a replay of it rebuilds the turns and
            # the remembered facts (not item edits: they are not events, docs/operations.md)
            rebuilt = unique("exportrebuilt")
            await replay(dst.settings, rebuilt, fresh=True, agents=[agent], embedder=minilm)
            again = by_kind(await exported(dst.settings.with_values(mongo_db=rebuilt), agent, user))
            await dst.mongo.drop_database(rebuilt)
    for kind in ("transcripts", "transcript_turns"):
        assert layer_differences({kind: source[kind]}, {kind: again[kind]}) == {}
    remembered = {
        i
        for i, r in source["memory"].items()
        if r["metadata"].get("extractor") == "explicit" and r["metadata"]["status"] != "deleted"
    }
    assert len(remembered) == 2
    assert remembered <= set(again["memory"])


async def test_importing_twice_changes_nothing(
    stack: Endpoints, minilm: LocalMiniLMEmbedder, now: datetime, now_ms: int
) -> None:
    from tests.support.pipeline import groups_running

    agent, user = f"0xidem{uuid.uuid4().hex[:10]}", "carol"
    async with groups_running(
        stack, minilm, "exportsrc2", GROUPS, extractor="rules", only_agents=[agent]
    ) as (src, client):
        await record_tenant(client, agent, user, now_ms, turns=2)
        lines = await exported(src.settings, agent, user)
        # pages of three rows, each from the cursor of the one before, give the same lines
        reader, cursor, paged = MongoTenantExport(src.mongo[src.settings.mongo.db]), None, []
        while True:
            page = await reader.page(agent, user, cursor, exported_at=now, max_rows=3)
            assert len(page.lines) <= 3 or page.next is None
            paged += page.lines
            if page.next is None:
                break
            cursor = json.loads(json.dumps(page.next))  # as a request carries it
        assert paged[1:] == lines[1:]
    async with groups_running(
        stack, minilm, "exportdst2", GROUPS, extractor="rules", only_agents=[agent]
    ) as (dst, _):
        export = read_export(lines)
        await import_tenant(dst.settings, export, wait_seconds=90)
        first = by_kind(await exported(dst.settings, agent, user))
        counts = {
            name: await dst.mongo[dst.settings.mongo.db][name].count_documents({})
            for name in KINDS.values()
        }
        await import_tenant(dst.settings, export, wait_seconds=90)
        second = by_kind(await exported(dst.settings, agent, user))
        assert layer_differences(first, second) == {}
        for name, count in counts.items():
            assert await dst.mongo[dst.settings.mongo.db][name].count_documents({}) == count
        assert layer_differences(by_kind(lines), second) == {}


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (
            '{"format": "mnemostream.tenant-export", "version": 2}\n',
            "unknown export format version 2",
        ),
        ("not json\n", "not JSON"),
        (f"{HEADER}\n", "cut short"),
        (f'{HEADER}\n{{"end": true, "rows": 3}}\n', "says 3 rows and holds 0"),
        ("", "empty"),
    ],
)
def test_import_refuses_an_unknown_format_in_one_line(
    tmp_path: Path, content: str, said: str
) -> None:
    path = tmp_path / "tenant.jsonl"
    path.write_text(content, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "services", "import", str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "MNEMOSTREAM_KAFKA_BOOTSTRAP": "127.0.0.1:1"},
    )
    assert done.returncode == 2
    assert said in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
