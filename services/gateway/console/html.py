"""The console's HTML: every value reaches the page through `esc` (text and attribute values
alike: `&`, `<`, `>`, `"` and `'` escaped), so a stored string is shown, never run; the page
also forbids scripts outright (`SECURITY_HEADERS`: no `script-src` at all). No template
engine and nothing fetched from elsewhere: the stylesheet is served by the console itself."""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from urllib.parse import urlencode

SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    # "no-referrer" would make a browser send `Origin: null` with the forms' posts
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}
"""Sent with every console page: scripts of any origin are refused, so even a value that
escaped `esc` could not run."""

DASH = "—"


def esc(value: object) -> str:
    """`value` as HTML text or a quoted attribute value; None is a dash."""
    if value is None:
        return DASH
    return html.escape(str(value), quote=True)


def when(ms: object) -> str:
    """A time in ms since epoch as `YYYY-MM-DD HH:MM:SS UTC` (escaped); a dash for none."""
    if isinstance(ms, bool) or not isinstance(ms, int | float):
        return DASH
    try:
        moment = datetime.fromtimestamp(ms / 1000, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return esc(ms)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def number(value: object, digits: int = 3) -> str:
    """A score with `digits` decimals; a dash when it is not a number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return DASH
    return f"{value:.{digits}f}"


def compact(value: object, limit: int = 400) -> str:
    """A JSON value on one line, cut at `limit` characters, escaped."""
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return esc(text if len(text) <= limit else text[:limit] + "…")


def href(path: str, params: Mapping[str, str | None]) -> str:
    """`path?params` (the empty and None ones left out), escaped for an attribute."""
    kept = {k: v for k, v in params.items() if v}
    return esc(f"{path}?{urlencode(kept)}" if kept else path)


def table(head: Sequence[str], rows: Iterable[Sequence[str]], *, cls: str = "") -> str:
    """A table of already escaped cells (`head` is plain text, escaped here)."""
    cells = "".join(f"<th>{esc(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    if not body:
        body = f'<tr><td colspan="{len(head)}" class="empty">nothing here</td></tr>'
    klass = f' class="{esc(cls)}"' if cls else ""
    return f"<table{klass}><thead><tr>{cells}</tr></thead><tbody>{body}</tbody></table>"


def field(name: str, label: str, value: str | None, *, kind: str = "text", **attrs: str) -> str:
    """A labelled input; `attrs` are extra attributes (`readonly="readonly"`, …)."""
    extra = "".join(f' {esc(k)}="{esc(v)}"' for k, v in attrs.items())
    return (
        f'<label>{esc(label)} <input type="{esc(kind)}" name="{esc(name)}" '
        f'value="{esc(value or "")}"{extra}></label>'
    )


def hidden(values: Mapping[str, str | None]) -> str:
    """Hidden inputs carrying `values` (the chosen tenant) through a form; empty ones left
    out."""
    return "".join(
        f'<input type="hidden" name="{esc(k)}" value="{esc(v)}">' for k, v in values.items() if v
    )


NAV = (
    ("/console", "Tenant"),
    ("/console/memory", "Memory"),
    ("/console/facts", "Facts"),
    ("/console/graph", "Graph"),
    ("/console/playground", "Playground"),
    ("/console/ops", "Operations"),
)


HERE = ' class="here"'


def page(
    title: str,
    body: str,
    *,
    tenant: Mapping[str, str | None] | None = None,
    who: str | None = None,
    current: str = "",
) -> str:
    """A whole console page: for a signed-in caller (`who`) the navigation (keeping the
    chosen tenant in every link), who it is and a sign-out button; then `body` (already
    escaped HTML)."""
    chosen = dict(tenant or {})
    links = (
        ""
        if who is None
        else "".join(
            f'<a href="{href(path, chosen)}"{HERE if path == current else ""}>{esc(name)}</a>'
            for path, name in NAV
        )
    )
    scope = ""
    if chosen.get("agent"):
        user = chosen.get("user")
        whose = f" · user <b>{esc(user)}</b>" if user else " · no user (agent-level rows)"
        scope = f'<span class="scope">agent <b>{esc(chosen["agent"])}</b>{whose}</span>'
    account = ""
    if who is not None:
        account = (
            f'<form method="post" action="/console/logout" class="logout">'
            f'<span>{esc(who)}</span> <button type="submit">Sign out</button></form>'
        )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)} · mnemostream console</title>"
        '<link rel="stylesheet" href="/console/static/console.css"></head><body>'
        f'<header><span class="brand">mnemostream console</span><nav>{links}</nav>'
        f"{account}</header><main><h1>{esc(title)}</h1>{scope}{body}</main></body></html>"
    )


CSS = """
:root { color-scheme: light; --ink: #1d2330; --muted: #5b6475; --line: #d9dde5;
  --accent: #2756c5; --soft: #f4f6fa; --warn: #a23b15; --ok: #1c7a3e; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif;
  color: var(--ink); background: #fff; }
header { display: flex; align-items: center; gap: 1.5rem; padding: .6rem 1.2rem;
  background: var(--ink); color: #fff; flex-wrap: wrap; }
header .brand { font-weight: 700; letter-spacing: .02em; }
header nav a { color: #cfd6e6; margin-right: 1rem; text-decoration: none; }
header nav a.here, header nav a:hover { color: #fff; border-bottom: 2px solid #fff; }
header .logout { margin-left: auto; color: #cfd6e6; }
main { padding: 1rem 1.2rem 3rem; max-width: 1400px; }
h1 { font-size: 1.35rem; margin: .2rem 0 .6rem; }
h2 { font-size: 1.05rem; margin: 1.4rem 0 .5rem; }
.scope { display: block; margin-bottom: .8rem; color: var(--muted); }
table { border-collapse: collapse; width: 100%; margin: .4rem 0 1rem; }
th, td { border-bottom: 1px solid var(--line); padding: .35rem .5rem; text-align: left;
  vertical-align: top; }
th { background: var(--soft); font-weight: 600; white-space: nowrap; }
td.empty { color: var(--muted); font-style: italic; }
td .text, .text { white-space: pre-wrap; word-break: break-word; }
table.rows td:nth-child(2), table.facts td:first-child, table.packed td:nth-child(7) {
  min-width: 20rem; }
code, pre, .mono { font-family: ui-monospace, "SFMono-Regular", Menlo, monospace;
  font-size: 12.5px; }
pre { background: var(--soft); border: 1px solid var(--line); padding: .7rem;
  white-space: pre-wrap; word-break: break-word; }
form.inline { display: inline; }
form.pick, form.query { display: flex; gap: .8rem; flex-wrap: wrap; align-items: end;
  background: var(--soft); padding: .7rem; border: 1px solid var(--line); margin-bottom: 1rem; }
label { display: flex; flex-direction: column; font-size: 12px; color: var(--muted); gap: .2rem; }
input[type=text], input[type=password], input[type=number], select {
  font: inherit; padding: .35rem .45rem; border: 1px solid #b9c0cd; border-radius: 3px;
  min-width: 14rem; color: var(--ink); }
input[readonly] { background: #eceff4; }
button { font: inherit; padding: .38rem .9rem; border: 0; border-radius: 3px;
  background: var(--accent); color: #fff; cursor: pointer; }
header button { background: #3a4356; }
.badge { display: inline-block; padding: 0 .4rem; border-radius: 3px; font-size: 12px;
  background: var(--soft); border: 1px solid var(--line); }
.badge.current, .badge.packed, .badge.ok { color: var(--ok); border-color: #9fd3b0; }
.badge.superseded, .badge.replaced, .badge.lag, .badge.error { color: var(--warn);
  border-color: #e6b7a5; }
.notice { padding: .6rem .8rem; border: 1px solid var(--line); background: var(--soft);
  margin: .6rem 0 1rem; }
.notice.error { border-color: #e6b7a5; color: var(--warn); }
.cards { display: flex; gap: .8rem; flex-wrap: wrap; margin: .4rem 0 1rem; }
.card { border: 1px solid var(--line); padding: .5rem .8rem; min-width: 9rem; }
.card b { display: block; font-size: 1.2rem; }
svg.graph { border: 1px solid var(--line); background: #fbfcfe; max-width: 100%;
  height: auto; }
svg.graph text { font: 12px system-ui, sans-serif; fill: var(--ink); }
.login { max-width: 28rem; margin: 3rem auto; }
.login form { display: flex; flex-direction: column; gap: .8rem; }
.muted { color: var(--muted); }
"""
"""The console's stylesheet (served at `/console/static/console.css`)."""
