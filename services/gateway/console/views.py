"""The console's memory pages as HTML, from the answers of the memory service: pure
functions of plain data (rows are the JSON of `services.groups.admin.browse`; a layer hit is
the `raw` object of its layer). Every stored value is escaped (`html.esc`)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from services.gateway.console.html import (
    compact,
    esc,
    field,
    hidden,
    number,
    table,
    when,
)

Row = Mapping[str, Any]

ID_KEYS = ("id", "vectorId", "patternId", "archiveId", "turnId", "sessionId")
TEXT_KEYS = ("content", "summary", "context", "text")
SOURCES = ("fact", "entity", "session", "knowledge", "archive")
"""The sources the memory page offers as filters (any other is listed under every source)."""


def _badge(text: str, kind: str = "") -> str:
    return f'<span class="badge {esc(kind)}">{esc(text)}</span>'


def _text(value: object, limit: int = 600) -> str:
    text = "" if value is None else str(value)
    cut = text if len(text) <= limit else text[:limit] + "…"
    return f'<span class="text">{esc(cut)}</span>'


def _status(row: Row) -> str:
    status = str(row.get("status") or "active")
    return _badge(status, "superseded" if status == "superseded" else "current")


def tenant_form(agent: str | None, user: str | None, *, agent_fixed: bool, user_fixed: bool) -> str:
    """The tenant picker (a confined credential's own agent and user are fixed)."""
    agent_attrs = {"readonly": "readonly"} if agent_fixed else {}
    user_attrs = {"readonly": "readonly"} if user_fixed else {}
    return (
        '<form class="pick" method="get" action="/console">'
        + field("agent", "agentWallet", agent, required="required", **agent_attrs)
        + field("user", "userAddress (empty: agent-level rows)", user, **user_attrs)
        + '<button type="submit">Open</button></form>'
    )


def stats_cards(stats: Row) -> str:
    """Counts of the agent's active rows by source (`stats`)."""
    by_type = stats.get("byType") or {}
    cards = [
        ("rows", stats.get("totalVectors")),
        ("transcripts", stats.get("totalTranscripts")),
        ("mean decay score", number(stats.get("avgDecayScore"))),
        ("oldest", when(stats.get("oldestVector"))),
        ("newest", when(stats.get("newestVector"))),
    ]
    cards += [(f"source {name}", count) for name, count in sorted(by_type.items())]
    return (
        '<div class="cards">'
        + "".join(
            f'<div class="card"><span class="muted">{esc(k)}</span><b>{esc(v)}</b></div>'
            for k, v in cards
        )
        + "</div>"
    )


def rows_table(rows: Sequence[Row]) -> str:
    """Stored rows: source, text, decay score, confidence, accesses, dates, validity."""
    body = [
        [
            _badge(str(r.get("source"))),
            _text(r.get("content")),
            number(r.get("decayScore")),
            number((r.get("metadata") or {}).get("confidence"), 2),
            esc(r.get("accessCount")),
            when(r.get("createdAt")),
            _status(r),
            f'<span class="mono">{esc(r.get("id"))}</span>',
        ]
        for r in rows
    ]
    head = ["source", "content", "decay score", "confidence", "accesses", "created", "status"]
    return table([*head, "id"], body, cls="rows")


def source_filter(source: str | None, q: str | None, tenant: Mapping[str, str | None]) -> str:
    """The memory page's filters: one source, and a query for a layer search."""
    options = "".join(
        f'<option value="{esc(s)}"{" selected" if s == source else ""}>{esc(s or "every source")}'
        "</option>"
        for s in ("", *SOURCES)
    )
    return (
        f'<form class="query" method="get" action="/console/memory">{hidden(tenant)}'
        f'<label>source <select name="source">{options}</select></label>'
        + field("q", "search the layers (scores per layer)", q)
        + '<button type="submit">Show</button></form>'
    )


def memory_view(rows: Sequence[Row], source: str | None, search: str) -> str:
    """The memory page: counts of the rows shown by source, the rows, and `search` (the
    layer search's HTML, empty without a query)."""
    counts = Counter(str(r.get("source")) for r in rows)
    cards = (
        '<div class="cards">'
        + "".join(
            f'<div class="card"><span class="muted">{esc(name)}</span><b>{esc(n)}</b></div>'
            for name, n in sorted(counts.items())
        )
        + "</div>"
    )
    what = f"rows of source {esc(source)}" if source else "rows of every source"
    return f"{search}<h2>Stored {what}, newest first ({len(rows)})</h2>{cards}{rows_table(rows)}"


def hit_id(hit: Row) -> str | None:
    for key in ID_KEYS:
        value = hit.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def hit_text(hit: Row) -> object:
    for key in TEXT_KEYS:
        value = hit.get(key)
        if isinstance(value, str) and value:
            return value
        if isinstance(value, list) and value:
            return "\n".join(str(v) for v in value)
    return compact(hit)


def hit_time(hit: Row) -> object:
    for key in ("createdAt", "timestamp", "lastAccessedAt", "lastExecuted", "updatedAt"):
        if hit.get(key) is not None:
            return hit.get(key)
    return None


def layer_hits(
    layers: Mapping[str, Sequence[Row]], packed: set[tuple[str, str]] | None = None
) -> str:
    """Each layer's hits with their score and date; with `packed` ((layer, id) pairs),
    whether pre_turn packed each one from that layer (a memory two layers found is packed
    once, from one of them)."""
    empty = [layer for layer, hits in layers.items() if not hits]
    parts = []
    if empty:
        parts.append(f'<p class="muted">No hits in: {esc(", ".join(empty))}.</p>')
    elif not layers:
        parts.append('<p class="muted">No layer answered.</p>')
    for layer, hits in layers.items():
        if not hits:
            continue
        rows = []
        for hit in hits:
            ident = hit_id(hit)
            row = [number(hit.get("score")), when(hit_time(hit)), _text(hit_text(hit), 400)]
            if packed is not None:
                chosen = ident is not None and (layer, ident) in packed
                mark = _badge("packed", "packed") if chosen else _badge("not packed")
                row.insert(0, mark)
            rows.append([*row, f'<span class="mono">{esc(ident)}</span>'])
        head = ["score", "date", "text", "id"]
        parts.append(
            f"<h2>Layer {esc(layer)} ({len(hits)})</h2>"
            + table(["packed?", *head] if packed is not None else head, rows)
        )
    return "".join(parts)


def facts_view(rows: Sequence[Row]) -> str:
    """Facts with their validity: valid from (stated), until (`invalidAt`), replaced by."""
    by_id = {r.get("id"): r for r in rows}
    body = []
    for r in rows:
        meta = r.get("metadata") or {}
        replaced_by = r.get("supersededBy")
        successor = by_id.get(replaced_by)
        by = f'<span class="mono">{esc(replaced_by)}</span>' if replaced_by else esc(None)
        if successor is not None:
            by += f"<br>{_text(successor.get('content'), 160)}"
        body.append(
            [
                _text(r.get("content")),
                esc(meta.get("slot")),
                esc(meta.get("type")),
                number(meta.get("confidence"), 2),
                when(r.get("createdAt")),
                when(r.get("invalidAt")),
                by,
                _status(r),
                f'<span class="mono">{esc(r.get("id"))}</span>',
            ]
        )
    head = ["fact", "slot", "type", "confidence", "valid from", "invalidAt", "supersededBy"]
    current = sum(1 for r in rows if r.get("invalidAt") is None)
    return f"<p>{current} current, {len(rows) - current} replaced (newest first).</p>" + table(
        [*head, "status", "id"], body, cls="facts"
    )


def _entity_name(row: Row) -> str:
    content = str(row.get("content") or "")
    return content.split(" (", 1)[0] or str(row.get("id"))


def graph_svg(entities: Sequence[Row], relations: Sequence[Row], *, size: int = 640) -> str:
    """The entities on a circle and their relations as arrows (a dashed one was replaced);
    every label escaped. At most 40 entities are drawn."""
    drawn = list(entities[:40])
    if not drawn:
        return ""
    centre, radius = size / 2, size / 2 - 90
    at: dict[str, tuple[float, float]] = {}
    for n, entity in enumerate(drawn):
        angle = 2 * math.pi * n / len(drawn) - math.pi / 2
        at[str(entity.get("id"))] = (
            centre + radius * math.cos(angle),
            centre + radius * math.sin(angle),
        )
    lines = []
    for rel in relations:
        a, b = at.get(str(rel.get("sourceId"))), at.get(str(rel.get("targetId")))
        if a is None or b is None:
            continue
        dash = "" if rel.get("current") else ' stroke-dasharray="5 4"'
        mx, my = (a[0] + b[0]) / 2, (a[1] + b[1]) / 2
        lines.append(
            f'<line x1="{a[0]:.1f}" y1="{a[1]:.1f}" x2="{b[0]:.1f}" y2="{b[1]:.1f}" '
            f'stroke="#7d8aa5" stroke-width="1.5" marker-end="url(#arrow)"{dash}>'
            f"<title>{esc(rel.get('type'))}</title></line>"
            f'<text x="{mx:.1f}" y="{my - 4:.1f}" text-anchor="middle" fill="#5b6475">'
            f"{esc(rel.get('type'))}</text>"
        )
    nodes = [
        f'<g><circle cx="{x:.1f}" cy="{y:.1f}" r="9" fill="#2756c5"/>'
        f'<text x="{x:.1f}" y="{y + 24:.1f}" text-anchor="middle">'
        f"{esc(_entity_name(e))}</text></g>"
        for e in drawn
        for x, y in [at[str(e.get("id"))]]
    ]
    return (
        f'<svg class="graph" xmlns="http://www.w3.org/2000/svg" width="{size}" height="{size}" '
        f'viewBox="0 0 {size} {size}" role="img" aria-label="entity graph">'
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="19" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" '
        'fill="#7d8aa5"/></marker></defs>' + "".join(lines) + "".join(nodes) + "</svg>"
    )


def graph_view(entities: Sequence[Row], relations: Sequence[Row]) -> str:
    """The entity graph: a drawing, the entities and the relations (current and replaced)."""
    names = {str(e.get("id")): _entity_name(e) for e in entities}
    entity_rows = [
        [
            esc(_entity_name(e)),
            _text(e.get("content"), 300),
            when(e.get("createdAt")),
            f'<span class="mono">{esc(e.get("id"))}</span>',
        ]
        for e in entities
    ]
    relation_rows = [
        [
            esc(r.get("sourceName") or names.get(str(r.get("sourceId")))),
            f"<b>{esc(r.get('type'))}</b>",
            esc(r.get("targetName") or names.get(str(r.get("targetId")))),
            when(r.get("createdAt")),
            when(r.get("invalidAt")),
            _badge("current", "current") if r.get("current") else _badge("replaced", "replaced"),
        ]
        for r in relations
    ]
    return (
        graph_svg(entities, relations)
        + f"<h2>Relations ({len(relations)})</h2>"
        + table(["from", "type", "to", "since", "invalidAt", "state"], relation_rows)
        + f"<h2>Entities ({len(entities)})</h2>"
        + table(["name", "row", "created", "id"], entity_rows)
    )
