"""Archives of a tenant's older memory (reference §10.1–§10.2, fixing §16.6 and §16.30).

An archive holds the rows of **one agent and one user** (and one mode / hai) created in a
half-open window `[start, end)` (milliseconds since epoch). The reference archived every
user of an agent together, with full embeddings, and pinned it unencrypted to public IPFS
(§16.6); it also wrote empty archives for idle agents (§16.30). Here:

* rows of another tenant are refused (`InputRejected`), never mixed in;
* zero rows yield no archive (`None`);
* the payload carries no embeddings, only ids, texts, sources, times and a metadata subset;
* rows a user deleted (`metadata.status == "deleted"`) are left out: an archive must not
  keep what the user asked to forget;
* the archive id is a hash of the tenant, the window and the sorted row ids, so re-running
  the same job yields the same id (idempotent `ArchiveStore.insert_if_absent`; the job takes
  its window from its own time, never from the clock) and reveals neither the wallet nor the
  user (the reference's id embedded the agent wallet);
* the payload is sealed with AES-256-GCM before it leaves the process (`encrypt_payload`),
  and, with an archive key configured, the stored archive is sealed at rest too
  (`engine.upkeep.archive_seal`).

Stored content = base64(gzip(JSON)); gzip runs with `mtime=0` so equal inputs give
byte-identical content. Search reads only an archive's `summary` and `topics`
(`engine.retrieval.layers.procedural.search_archives`), so both are built to be findable: the topics
are the archive's most widespread content terms, the summary names counts, dates, topics and
the most representative facts.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import hashlib
import json
import re
import zlib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from engine.errors import InputRejected
from engine.ports import Embedder
from engine.records import INACTIVE_STATUSES, ArchiveRecord, MemoryRow, ScopeFields, Vector
from engine.retrieval.layers.procedural import archive_text
from engine.retrieval.lexical import all_terms, stem
from engine.upkeep.archive_seal import aes_open, aes_seal

TOPIC_COUNT = 8
KEY_FACT_COUNT = 3
KEY_FACT_CHARS = 160
MAX_ARCHIVE_BYTES = 64 * 1024 * 1024
"""Upper bound on a decompressed payload; a larger one is refused (gzip-bomb guard)."""

ENTRY_METADATA_KEYS = ("type", "factType", "slot", "status")
"""The only row metadata an archive keeps (no extractor internals, no embeddings)."""

# Words every memory of an agent repeats ("The user lives in …"); as topics they would
# make every archive look alike to search.
_GENERIC_TERMS = frozenset(
    stem(w) for w in ("user", "users", "assistant", "agent", "said", "says", "like", "likes")
)
_UNCOUNTABLE = frozenset({"knowledge", "working", "transcript"})
_WORDS = re.compile(r"[^\W_]+")
"""Words as `engine.retrieval.lexical` splits them, to remember each term's spelling."""

SummaryEmbedder = Callable[[str], tuple[Vector, str]]
"""A synchronous embedder of one text: (unit vector, model name)."""


@dataclass(frozen=True, slots=True)
class ArchivePayload:
    """A built archive: the record the stores and search see, and the stored content.

    Sizes are in bytes: `original_size` of the JSON, `compressed_size` of the stored
    (base64) content, as the reference measured them."""

    record: ArchiveRecord
    content: str
    original_size: int
    compressed_size: int

    @property
    def archive_id(self) -> str:
        return self.record.archive_id

    @property
    def entry_count(self) -> int:
        return self.record.entry_count


def build_archive(
    rows: Sequence[MemoryRow],
    *,
    scope: ScopeFields,
    start: int,
    end: int,
    created_at: int,
    embed_summary: SummaryEmbedder | None = None,
) -> ArchivePayload | None:
    """The archive of `rows`, or None when no row is left to archive.

    Every row must belong to `scope`'s agent, user, mode and hai id (the thread may differ:
    an archive spans threads, so its record carries no thread) and have
    `start <= created_at < end`; otherwise `InputRejected`. Deleted rows are skipped;
    duplicate ids count once. `embed_summary`, when given, embeds `archive_text(record)`
    (the text search matches on); with an async `Embedder` use `embed_archive` instead.
    """
    if not scope.agent_wallet:
        raise InputRejected("an archive needs an agent wallet")
    if start >= end:
        raise InputRejected(f"empty archive window [{start}, {end})")
    kept: dict[str, MemoryRow] = {}
    for row in rows:
        _check_row(row, scope, start, end)
        if row.status != "deleted":
            kept.setdefault(row.vector_id, row)
    if not kept:
        return None
    ordered = sorted(kept.values(), key=lambda r: (r.created_at, r.vector_id))
    archive_id = archive_id_for(scope, start, end, list(kept))
    document = {
        "archiveId": archive_id,
        "agentWallet": scope.agent_wallet,
        "userAddress": scope.user_address,
        "dateRange": {"start": start, "end": end},
        "entries": [_entry(r) for r in ordered],
    }
    raw = json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode()
    content = base64.b64encode(gzip.compress(raw, mtime=0)).decode("ascii")
    topics = top_topics(ordered)
    record = ArchiveRecord(
        archive_id=archive_id,
        scope=replace(scope, thread_id=None),
        summary=summarise(ordered, topics, start, end),
        topics=topics,
        entry_count=len(ordered),
        start=start,
        end=end,
        created_at=created_at,
        metadata={
            "compressed": True,
            "encoding": "base64+gzip+json",
            "originalSize": len(raw),
            "compressedSize": len(content),
        },
    )
    if embed_summary is not None:
        vector, model = embed_summary(archive_text(record))
        record = replace(record, embedding=vector, embedding_model=model)
    return ArchivePayload(record, content, len(raw), len(content))


async def embed_archive(payload: ArchivePayload, embedder: Embedder) -> ArchivePayload:
    """The payload with its record embedded (as a document) on the text search matches."""
    [vector] = await embedder.embed([archive_text(payload.record)], "document")
    record = replace(payload.record, embedding=vector, embedding_model=embedder.model)
    return replace(payload, record=record)


def tenant_groups(
    rows: Sequence[MemoryRow], start: int, end: int
) -> list[tuple[ScopeFields, list[MemoryRow]]]:
    """The rows created in `[start, end)`, grouped by full tenant — agent, user, mode and hai
    id (threads merged, the scopes carry no thread) — one group per archive to build.

    Every mode and hai id gets its own group: rows written under mode "global" or "local"
    are archived like rows without a mode, and two users' rows never share a group (§16.6).
    Groups come in a stable order (agent, user, mode, hai id; None first)."""
    groups: dict[ScopeFields, list[MemoryRow]] = {}
    for row in rows:
        if start <= row.created_at < end:
            s = row.scope
            key = ScopeFields(s.agent_wallet, s.user_address, None, s.mode, s.hai_id)
            groups.setdefault(key, []).append(row)
    return sorted(groups.items(), key=lambda item: _tenant_order(item[0]))


def archive_id_for(scope: ScopeFields, start: int, end: int, vector_ids: Sequence[str]) -> str:
    """`arc_` + 32 hex digits of SHA-256 over the tenant, the window and the sorted unique
    row ids: equal inputs give equal ids; the id reveals none of them."""
    key = [
        scope.agent_wallet,
        scope.user_address,
        scope.mode,
        scope.hai_id,
        start,
        end,
        sorted(set(vector_ids)),
    ]
    return "arc_" + hashlib.sha256(json.dumps(key).encode()).hexdigest()[:32]


def read_archive(content: str) -> dict[str, Any]:
    """The payload JSON of stored content (base64 of gzip). Malformed content, or content
    that inflates beyond `MAX_ARCHIVE_BYTES`, raises `InputRejected`."""
    try:
        compressed = base64.b64decode(content, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise InputRejected("archive content is not base64") from exc
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        raw = inflater.decompress(compressed, MAX_ARCHIVE_BYTES + 1)
    except zlib.error as exc:
        raise InputRejected("archive content is not gzip") from exc
    if len(raw) > MAX_ARCHIVE_BYTES or inflater.unconsumed_tail:
        raise InputRejected(f"archive inflates beyond {MAX_ARCHIVE_BYTES} bytes")
    if not inflater.eof:
        raise InputRejected("archive content is truncated")
    try:
        document = json.loads(raw)
    except ValueError as exc:  # json.JSONDecodeError and UnicodeDecodeError
        raise InputRejected("archive payload is not JSON") from exc
    if not isinstance(document, dict):
        raise InputRejected("archive payload is not a JSON object")
    return document


def encrypt_payload(content: bytes, key: bytes, *, archive_id: str) -> bytes:
    """AES-256-GCM: a fresh random 12-byte nonce, then ciphertext and 16-byte tag. The
    archive id is the associated data, so a blob only opens under the id it was sealed for.
    `key` must be 32 bytes."""
    return aes_seal(key, content, archive_id.encode())


def decrypt_payload(blob: bytes, key: bytes, *, archive_id: str) -> bytes:
    """The content sealed by `encrypt_payload`. A wrong key, a wrong archive id or a
    tampered or truncated blob raises `InputRejected` (retrying cannot help)."""
    return aes_open(key, blob, archive_id.encode(), "encrypted archive")


def top_topics(rows: Sequence[MemoryRow], limit: int = TOPIC_COUNT) -> list[str]:
    """The `limit` content terms found in the most rows (ties: more occurrences, then
    alphabetical), each shown in its most frequent spelling; numbers and words every
    memory repeats ("user") are left out."""
    spans: Counter[str] = Counter()
    totals: Counter[str] = Counter()
    spellings: dict[str, Counter[str]] = {}
    for row in rows:
        seen: set[str] = set()
        for word in _WORDS.findall(row.content.lower()):
            # all_terms of one word: its stem, or nothing for a stopword or a short word
            term = next(iter(all_terms(word)), None)
            if term is None or word.isdigit() or term in _GENERIC_TERMS:
                continue
            totals[term] += 1
            spellings.setdefault(term, Counter())[word] += 1
            if term not in seen:
                seen.add(term)
                spans[term] += 1
    ranked = sorted(spans, key=lambda t: (-spans[t], -totals[t], t))[:limit]
    return [min(spellings[t], key=lambda w: (-spellings[t][w], w)) for t in ranked]


def summarise(rows: Sequence[MemoryRow], topics: Sequence[str], start: int, end: int) -> str:
    """E.g. "Archive of 42 memories (sessions 30, facts 12) from 2026-03-01 to 2026-03-31
    about: lisbon, apartment, lease. Key facts: …". The last day shown is the day of
    `end - 1` (the window is half-open)."""
    counts = Counter(r.source for r in rows)
    parts = ", ".join(
        f"{_plural(source, n)} {n}" for source, n in sorted(counts.items(), key=_by_count)
    )
    noun = "memory" if len(rows) == 1 else "memories"
    text = f"Archive of {len(rows)} {noun} ({parts}) from {_day(start)} to {_day(end - 1)}"
    if topics:
        text += f" about: {', '.join(topics)}"
    facts = key_facts(rows)
    if facts:
        text += ". Key facts: " + "; ".join(facts)
    return text + "."


def key_facts(rows: Sequence[MemoryRow], limit: int = KEY_FACT_COUNT) -> list[str]:
    """Texts of the most representative current facts: highest `metadata.confidence`,
    then most recent; superseded facts are history, not representative."""
    facts = [r for r in rows if r.source == "fact" and r.status not in INACTIVE_STATUSES]
    facts.sort(key=lambda r: (-_confidence(r), -r.created_at, r.vector_id))
    return [_clip(r.content.strip().rstrip("."), KEY_FACT_CHARS) for r in facts[:limit]]


def _check_row(row: MemoryRow, scope: ScopeFields, start: int, end: int) -> None:
    mine = row.scope
    for name, theirs, ours in (
        ("agent", mine.agent_wallet, scope.agent_wallet),
        ("user", mine.user_address, scope.user_address),
        ("mode", mine.mode, scope.mode),
        ("hai", mine.hai_id, scope.hai_id),
    ):
        if theirs != ours:
            raise InputRejected(f"row {row.vector_id} belongs to another {name}; not archived")
    if not start <= row.created_at < end:
        raise InputRejected(f"row {row.vector_id} lies outside the window [{start}, {end})")


def _tenant_order(scope: ScopeFields) -> tuple[str, bool, str, bool, str, bool, str]:
    return (
        scope.agent_wallet,
        scope.user_address is not None,
        scope.user_address or "",
        scope.mode is not None,
        scope.mode or "",
        scope.hai_id is not None,
        scope.hai_id or "",
    )


def _entry(row: MemoryRow) -> dict[str, Any]:
    return {
        "vectorId": row.vector_id,
        "content": row.content,
        "source": row.source,
        "createdAt": row.created_at,
        "metadata": {k: row.metadata[k] for k in ENTRY_METADATA_KEYS if k in row.metadata},
    }


def _confidence(row: MemoryRow) -> float:
    value = row.metadata.get("confidence")
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def _by_count(item: tuple[str, int]) -> tuple[int, str]:
    return (-item[1], item[0])


def _plural(source: str, n: int) -> str:
    """ "facts", "entities", "sessions"; a count of one, or an uncountable source, as is."""
    if n == 1 or source in _UNCOUNTABLE or source.endswith("s"):
        return source
    if source.endswith("y") and source[-2:-1] not in ("a", "e", "i", "o", "u", ""):
        return source[:-1] + "ies"
    return source + "s"


def _day(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).date().isoformat()


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
