"""The console's playground and operations pages as HTML: what pre_turn packed and why
(`ContextReply`), each consumer group's lag (`services.stream.lag`), and the dead letters
(`services.stream.dead_letters`) with a replay button each. Pure functions; every value
escaped."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from schemas.requests import ContextReply
from services.gateway.console.html import esc, field, hidden, number, table, when
from services.gateway.console.views import layer_hits
from services.stream.dead_letters import Letter
from services.stream.lag import GroupLag

PAYLOAD_SHOWN = 1_000
"""Characters of a dead letter's payload shown (`mnemostream dlq show REF` prints it all)."""


def playground_form(
    query: str | None, budget: str | None, thread: str | None, tenant: Mapping[str, str | None]
) -> str:
    """The playground's form (the chosen tenant rides along hidden)."""
    return (
        f'<form class="query" method="post" action="/console/playground">{hidden(tenant)}'
        + field("query", "query (what the user is about to ask)", query, required="required")
        + field("budget", "budget (characters)", budget, kind="number", min="1")
        + field("thread", "threadId (optional)", thread)
        + '<button type="submit">Pack</button></form>'
    )


def playground_view(reply: ContextReply, budget: int | None) -> str:
    """Exactly what pre_turn would pack: the usage against the budget, each packed item
    (layer, score, date, source, characters), per layer how many hits were found, packed
    and left out, the candidates of every layer, and the prompt as the model gets it."""
    usage = reply.context_usage
    cards = [
        ("characters used", usage.characters if usage else 0),
        ("budget", budget if budget is not None else "none"),
        ("candidates' characters", usage.raw_characters if usage else 0),
        ("items packed", len(reply.items)),
        ("answered from cache", "yes" if reply.cached else "no"),
    ]
    summary = (
        '<div class="cards">'
        + "".join(
            f'<div class="card"><span class="muted">{esc(k)}</span><b>{esc(v)}</b></div>'
            for k, v in cards
        )
        + "</div>"
    )
    packed_rows = [
        [
            esc(n),
            f'<span class="badge">{esc(item.layer)}</span>',
            number(item.score),
            when(item.created_at),
            esc(item.source),
            esc(len(item.text)),
            f'<span class="text packed-line">{esc(item.text)}</span>',
            f'<span class="mono">{esc(item.id)}</span>',
        ]
        for n, item in enumerate(reply.items, start=1)
    ]
    packed = table(
        ["#", "layer", "score", "date", "source", "chars", "packed text", "id"],
        packed_rows,
        cls="packed",
    )
    per_layer = packed_per_layer(reply)
    why_rows = [
        [
            esc(layer),
            esc(reply.totals.get(layer, 0)),
            esc(per_layer.get(layer, 0)),
            esc(reply.omitted.get(layer, 0)),
        ]
        for layer in sorted(set(reply.totals) | set(reply.omitted) | set(per_layer))
    ]
    why = table(
        ["layer", "hits found", "packed", "left out (budget, rank, duplicates, limits)"], why_rows
    )
    chosen = {(item.layer, item.id) for item in reply.items if item.id}
    candidates = layer_hits(reply.raw or {}, packed=chosen)
    prompt = reply.prompt or ""
    return (
        summary
        + f"<h2>Packed items ({len(reply.items)}), in the order the prompt shows them</h2>"
        + packed
        + "<h2>Why: per layer</h2>"
        + why
        + '<h2>The prompt, exactly</h2><pre class="prompt">'
        + (esc(prompt) if prompt else '<span class="muted">(empty: nothing to pack)</span>')
        + "</pre><h2>Every layer's candidates</h2>"
        + candidates
    )


def packed_per_layer(reply: ContextReply) -> dict[str, int]:
    """Packed items per layer."""
    counts: dict[str, int] = {}
    for item in reply.items:
        counts[item.layer] = counts.get(item.layer, 0) + 1
    return counts


def lag_view(lags: Sequence[GroupLag]) -> str:
    """One row per consumer group: messages behind, and where per partition."""
    rows = []
    for group in lags:
        behind = [p for p in group.partitions if p.lag]
        where = ", ".join(f"{p.topic}[{p.partition}] {p.lag}" for p in behind[:8])
        if len(behind) > 8:
            where += f", … {len(behind) - 8} more"
        state = (
            '<span class="badge lag">behind</span>'
            if group.total
            else '<span class="badge ok">caught up</span>'
        )
        if not group.committed:
            state = '<span class="badge">no commits yet</span>'
        topics = sorted({p.topic for p in group.partitions})
        rows.append(
            [
                f'<span class="mono">{esc(group.group)}</span>',
                esc(", ".join(topics)),
                f"<b>{esc(group.total)}</b>",
                state,
                esc(where or None),
            ]
        )
    return table(["consumer group", "topics", "lag", "state", "partitions behind"], rows)


def letters_view(letters: Sequence[Letter]) -> str:
    """The dead letters, newest first: why each failed, where it came from, its payload's
    head, and a button that re-publishes it to its source topic."""
    rows = []
    for item in reversed(letters):
        letter = item.letter
        cut = letter.payload[:PAYLOAD_SHOWN]
        head = cut + ("…" if len(letter.payload) > PAYLOAD_SHOWN else "")
        replay = (
            '<form class="inline" method="post" action="/console/ops/replay">'
            f'<input type="hidden" name="ref" value="{esc(item.ref)}">'
            '<button type="submit">Replay</button></form>'
        )
        rows.append(
            [
                f'<span class="mono">{esc(item.ref)}</span>',
                esc(letter.failed_at.strftime("%Y-%m-%d %H:%M:%S UTC")),
                f'<span class="mono">{esc(letter.group)}</span>',
                esc(f"{letter.source_topic}[{letter.partition}]@{letter.offset}"),
                f'<span class="badge error">{esc(letter.error_type)}</span> '
                f'<span class="text reason">{esc(letter.error)}</span>',
                esc(letter.attempts),
                f'<span class="text mono">{esc(head)}</span>',
                replay,
            ]
        )
    return table(
        ["ref", "failed at", "group", "source", "reason", "attempts", "payload", ""],
        rows,
        cls="letters",
    )


def group_filter(group: str | None) -> str:
    return (
        '<form class="query" method="get" action="/console/ops">'
        + field("group", "only the dead letters of group", group)
        + '<button type="submit">Filter</button></form>'
    )
