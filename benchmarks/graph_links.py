"""The graph layer alone on conversations nobody tuned it for: does it reach the evidence?

    python -m benchmarks.graph_links                  # split tune, with and without links
    python -m benchmarks.graph_links --split tune --json

Data: `benchmarks/data/handwritten.json` (see `benchmarks.handwritten`: hand-written
multi-session conversations between two named speakers, questions that share few words
with their evidence). Each message is one turn (its speaker named), recorded through the
pipeline's extraction step (`engine.ingest.extraction.turns.extract_turn`, the rule
extractor) and the fact writer into fresh in-memory stores, one conversation at a time;
then each question is asked with the graph layer only (5 hits, the local MiniLM embedder).
A question counts as *reached* when an evidence message's text (without its "Name: ")
appears in the graph layer's hits, whole (an entity's summary or a hydrated link's
evidence sentence). Reported twice: with the untyped links of issue 32
(`engine.ingest.extraction.links`), and with the extraction's own output only (the typed
relations of the rules: the graph before issue 32). The latency is the layer search per
question, embedding included, in-process (p50 / p95, milliseconds).

The `tune` split was read while the link finder's name rules were fixed (chat openers such
as "Congratulations!" are no names); `blind` belongs to `benchmarks.quality`, where it is to
be scored, not read.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Any

from benchmarks.handwritten import read
from engine.adapters.local_embedder import LocalMiniLMEmbedder
from engine.adapters.memory import (
    InMemoryArchiveStore,
    InMemoryMemoryStore,
    InMemoryPatternStore,
    InMemoryQueryCache,
    InMemoryRelationStore,
    InMemoryTranscriptStore,
    InMemoryWorkingStore,
)
from engine.ingest.extraction.links import find_links
from engine.ingest.extraction.rules import RuleBasedExtractor
from engine.ingest.extraction.types import Extraction, ExtractionPolicy, TurnText
from engine.ingest.facts import FactWriter
from engine.ingest.speakers import spoken
from engine.retrieval.search import MemorySearch
from engine.retrieval.vector_index import ExactVectorIndex
from schemas.events import EntityItem, FactItem, FactsExtracted, RelationItem
from schemas.ids import to_ms
from schemas.inputs import turn_recorded
from schemas.scope import Scope

HITS = 5


async def _extracted(body: dict[str, Any], at: datetime, links: bool) -> FactsExtracted | None:
    """What the extraction step stores for one message (`extract_turn`'s result, built here
    so the links can be left out for the "before" figures)."""
    event = turn_recorded(body, now=at)
    said = [spoken(m.role, m.content, m.name) for m in event.messages]
    messages = [TurnText(s.role, s.text, s.name) for s in said]
    found: Extraction = await RuleBasedExtractor().extract(messages, ExtractionPolicy())
    if links:
        found = find_links(messages, found)
    if not (found.facts or found.entities or found.relations):
        return None
    return FactsExtracted(
        occurred_at=event.occurred_at,
        scope=event.scope.model_copy(update={"thread_id": event.thread_id}),
        turn_id=event.turn_id,
        session_id=event.session_id,
        extractor="rules-v1",
        facts=[FactItem(text=f.text, type=f.type, confidence=f.confidence, slot=f.slot)
               for f in found.facts],
        entities=[EntityItem(name=e.name, type=e.type, summary=e.summary) for e in found.entities],
        relations=[RelationItem(source=r.source, type=r.type, target=r.target,
                                evidence=r.evidence) for r in found.relations],
    )  # fmt: skip


async def run_split(embedder: LocalMiniLMEmbedder, split: str, links: bool) -> dict[str, Any]:
    reached: Counter[str] = Counter()
    asked: Counter[str] = Counter()
    latencies: list[float] = []
    relations_stored = 0
    for conv in (c for c in read()["conversations"] if c["split"] == split):
        memory, relations = InMemoryMemoryStore(), InMemoryRelationStore()
        writer = FactWriter(memory, relations, embedder)
        roles = {name: role for role, name in conv["speakers"].items()}
        texts = {}
        last = datetime(1970, 1, 1, tzinfo=UTC)
        for session in conv["sessions"]:
            start = datetime.combine(date.fromisoformat(session["date"]), datetime.min.time())
            for i, m in enumerate(session["messages"]):
                texts[m["id"]] = m["text"]
                last = start.replace(tzinfo=UTC, hour=18) + timedelta(minutes=i)
                body = {
                    "agentWallet": "0xGraphBench",
                    "userAddress": conv["id"],
                    "threadId": session["id"],
                    "messages": [
                        {"role": roles[m["speaker"]], "content": m["text"], "name": m["speaker"]}
                    ],
                }
                found = await _extracted(body, last, links)
                if found is not None:
                    stored = await writer.store(found)
                    relations_stored += stored.relations_inserted
        search = MemorySearch(
            transcripts=InMemoryTranscriptStore(),
            working=InMemoryWorkingStore(),
            patterns=InMemoryPatternStore(),
            archives=InMemoryArchiveStore(),
            index=ExactVectorIndex(memory),
            embedder=embedder,
            cache=InMemoryQueryCache(),
            relations=relations,
        )
        scope = Scope.parse(
            {"agentWallet": "0xGraphBench", "userAddress": conv["id"], "threadId": "ask"}
        )
        now = to_ms(last + timedelta(days=1))
        for q in conv["questions"]:
            started = time.perf_counter()
            result = await search.search(scope, q["question"], ["graph"], HITS, now)
            latencies.append((time.perf_counter() - started) * 1000)
            shown = "\n".join(h.text for h in result.hits.get("graph", []))
            asked[q["category"]] += 1
            reached[q["category"]] += any(texts[i] in shown for i in q["evidence"])
    cuts = statistics.quantiles(latencies, n=20)
    return {
        "questions": sum(asked.values()),
        "reached": sum(reached.values()),
        "by_category": {c: f"{reached[c]}/{n}" for c, n in sorted(asked.items())},
        "relations_stored": relations_stored,
        "latency_ms": {"p50": round(statistics.median(latencies), 1), "p95": round(cuts[18], 1)},
    }


def main(argv: Sequence[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.graph_links")
    parser.add_argument("--split", choices=("tune", "blind"), default="tune")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = parser.parse_args(argv)
    embedder = LocalMiniLMEmbedder.load()
    figures = {
        "split": args.split,
        "with_links": asyncio.run(run_split(embedder, args.split, links=True)),
        "typed_only": asyncio.run(run_split(embedder, args.split, links=False)),
    }
    if args.json:
        print(json.dumps(figures))
        return
    print(f"graph layer alone on handwritten/{args.split} ({HITS} hits; evidence message shown)")
    for name in ("with_links", "typed_only"):
        f = figures[name]
        print(
            f"{name:<11} reached {f['reached']}/{f['questions']}  relations {f['relations_stored']}"
            f"  p50 {f['latency_ms']['p50']} ms  p95 {f['latency_ms']['p95']} ms  "
            + " ".join(f"{c} {v}" for c, v in f["by_category"].items())
        )


if __name__ == "__main__":
    main(sys.argv[1:])
