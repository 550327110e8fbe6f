"""The model's work per stored turn with message units (stop 42), A/B in one process.

The turn rows of a quality dataset are stored as ingest stores them (`TurnRecorder`, vectors
pending, so their text is exactly a row's `content`); then the same rows are embedded, in
chunks of the `embeddings` group's size, two ways:

* `turn+messages` (`engine.ingest.turns.embed_units`, since c036c7e): the whole turn text and
  each message's text, one call a chunk (`dict.fromkeys` of both);
* `messages`: each message's text once, the turn's vector to be their mean (tried in stop 42,
  81c1f31, and not kept: it lost multi-hop evidence; the mean itself costs no model time).

For each: texts and tokens the model is given (tokens after the model's 256-token cut), and
`--rounds` timed passes alternating between the two (process CPU seconds and wall seconds,
turns/s), so both see the same load. The local MiniLM embedder with no vector store: every
text runs the model.

    python -m benchmarks.unit_embedding --dataset handwritten --rounds 3
    python -m benchmarks.unit_embedding --dataset long --rounds 1 --json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from collections.abc import Sequence

from benchmarks import handwritten
from benchmarks.long_conversations import generate
from benchmarks.long_report import to_dataset
from benchmarks.quality import turns
from engine.adapters.local_embedder import MAX_TOKENS, LocalMiniLMEmbedder
from engine.adapters.memory import (
    HashingEmbedder,
    InMemoryMemoryStore,
    InMemoryTranscriptStore,
    InMemoryWorkingStore,
)
from engine.ingest.message_units import unit_texts
from engine.ingest.turns import TurnRecorder
from schemas.inputs import turn_recorded
from services.groups.embeddings import CHUNK

SCHEMES = ("turn+messages", "messages")


async def turn_texts(dataset: str) -> list[str]:
    """The turn rows' texts of the `tune` split of `dataset` ("handwritten", "long", "both"),
    stored as `benchmarks.quality` ingests them (a turn per user message and its replies)."""
    names = ("handwritten", "long") if dataset == "both" else (dataset,)
    out: list[str] = []
    for name in names:
        data = (
            handwritten.load("tune")
            if name == "handwritten"
            else to_dataset("tune", generate("tune"))[0]
        )
        recorder = TurnRecorder(
            InMemoryTranscriptStore(),
            InMemoryWorkingStore(),
            InMemoryMemoryStore(),
            HashingEmbedder(),  # never called: the rows are stored pending
            deferred=True,
        )
        for conv in data.conversations:
            for session in conv.sessions:
                for n, turn in enumerate(turns(session.messages)):
                    body = {
                        "agentWallet": "0xunits",
                        "userAddress": f"user-{conv.id}",
                        "threadId": session.id,
                        "turnId": f"{conv.id}:{session.id}:{n}",
                        "occurredAt": turn[-1].timestamp_ms,
                        "messages": [
                            {"role": m.role, "content": m.content, "timestamp": m.timestamp_ms}
                            for m in turn
                        ],
                    }
                    [stored] = await recorder.record_many([turn_recorded(body)])
                    out.append(stored.content)
    return out


def model_texts(scheme: str, chunk: Sequence[str]) -> list[str]:
    """What the model is given for one chunk of turn texts under `scheme`."""
    units = [u for t in chunk for u in unit_texts(t)]
    return list(dict.fromkeys([*chunk, *units] if scheme == "turn+messages" else units))


async def timed(
    embedder: LocalMiniLMEmbedder, scheme: str, texts: Sequence[str]
) -> tuple[float, float]:
    """(CPU seconds, wall seconds) to embed `texts` chunk by chunk under `scheme`."""
    cpu, wall = time.process_time(), time.perf_counter()
    for start in range(0, len(texts), CHUNK):
        await embedder.embed(model_texts(scheme, texts[start : start + CHUNK]), "document")
    return time.process_time() - cpu, time.perf_counter() - wall


async def main(argv: Sequence[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", choices=("handwritten", "long", "both"), default="both")
    parser.add_argument("--rounds", type=int, default=2, help="timed passes of each scheme")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    texts = await turn_texts(args.dataset)
    embedder = LocalMiniLMEmbedder.load()
    tokenizer = embedder._tokenizer
    out: dict[str, object] = {
        "command": "python -m benchmarks.unit_embedding " + " ".join(argv),
        "turns": len(texts),
        "load_before": os.getloadavg()[0],
    }
    for scheme in SCHEMES:
        given = [
            t
            for s in range(0, len(texts), CHUNK)
            for t in model_texts(scheme, texts[s : s + CHUNK])
        ]
        tokens = sum(min(sum(e.attention_mask), MAX_TOKENS) for e in tokenizer.encode_batch(given))
        out[scheme] = {"texts": len(given), "tokens": tokens, "cpu_s": [], "wall_s": []}
    await embedder.embed(texts[:32], "document")  # warm-up
    for _ in range(args.rounds):
        for scheme in SCHEMES:
            cpu, wall = await timed(embedder, scheme, texts)
            figures = out[scheme]
            assert isinstance(figures, dict)
            figures["cpu_s"].append(round(cpu, 2))
            figures["wall_s"].append(round(wall, 2))
    for scheme in SCHEMES:
        figures = out[scheme]
        assert isinstance(figures, dict)
        figures["turns_per_s"] = round(len(texts) / statistics.median(figures["wall_s"]), 1)
        figures["turns_per_cpu_s"] = round(len(texts) / statistics.median(figures["cpu_s"]), 1)
    out["load_after"] = os.getloadavg()[0]
    if args.json:
        print(json.dumps(out))
        return
    print(
        f"{out['command']}: {len(texts)} turn rows; "
        f"load {out['load_before']:.1f} -> {out['load_after']:.1f}"
    )
    for scheme in SCHEMES:
        f = out[scheme]
        assert isinstance(f, dict)
        print(
            f"{scheme:>14}: {f['texts']} texts, {f['tokens']} tokens; CPU s {f['cpu_s']}, wall s "
            f"{f['wall_s']}; {f['turns_per_s']} turns/s, {f['turns_per_cpu_s']} turns per CPU s"
        )


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
