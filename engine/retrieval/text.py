"""Text helpers for prompt packing: sanitise, truncate, query terms, dedupe fingerprints.

Pure string functions (reference §6.2–6.4). Every length is counted in Python `str`
characters (code points), the same unit the packer's character budget uses.
"""

from __future__ import annotations

import re

# "your-deployment", "your-server" and "your-mcp" from the reference list are all covered by
# "your-"; they are kept so the list reads the same as reference §6.2.
_PLACEHOLDER_MARKERS = (
    "your-",
    "your_",
    "localhost",
    "127.0.0.1",
    "0.0.0.0",  # noqa: S104 - a substring to look for, not an address we bind
    "example.com",
    "placeholder",
    "your-deployment",
    "your-server",
    "your-mcp",
)

FEEDBACK_SENTENCE = "Feedback is available through sdk.feedback.*"
"""Replaces a placeholder markdown link whose label mentions feedback (reference §6.2)."""

_MARKDOWN_LINK = re.compile(r"\[([^\]]+)\]\((https?://[^)\s]+)\)", re.IGNORECASE)
_BARE_URL = re.compile(r"https?://[^\s)]+", re.IGNORECASE)
_LINE_BREAK = re.compile(r"\r\n?")
_SPACE_RUN = re.compile(r"[ \t]{2,}")
_NEWLINE_RUN = re.compile(r"\n{3,}")

_ANY_URL = re.compile(r"https?://\S+")
# `\w` is Unicode letters, numbers and "_"; together with the other kept characters this is
# the reference's `[^\p{L}\p{N}\s:._-]`.
_NOT_FINGERPRINT_CHAR = re.compile(r"[^\w\s:.\-]")
_WHITESPACE = re.compile(r"\s+")
# The first block that opens a line with "user:", up to the next line opening with a role (or
# the end). `\Z` rather than `$`: Python's `$` would also stop before a final newline.
_USER_TURN = re.compile(
    r"(?:^|\n)\s*user:\s*([\s\S]*?)(?=\n\s*(?:assistant|ai|tool|system|user):|\Z)",
    re.IGNORECASE,
)

USER_TURN_MIN_CHARS = 24
"""A normalised user turn shorter than this is too generic to dedupe on; use the whole text."""
USER_TURN_FINGERPRINT_CHARS = 360
TEXT_FINGERPRINT_CHARS = 480
_ELLIPSIS = "..."


def _is_placeholder_url(url: str) -> bool:
    lower = url.lower()
    return any(marker in lower for marker in _PLACEHOLDER_MARKERS)


def _replace_link(match: re.Match[str]) -> str:
    label, url = match.group(1), match.group(2)
    if not _is_placeholder_url(url):
        return match.group(0)
    return FEEDBACK_SENTENCE if "feedback" in label.lower() else label


def _drop_placeholder_url(match: re.Match[str]) -> str:
    return "" if _is_placeholder_url(match.group(0)) else match.group(0)


def sanitize(text: str) -> str:
    """Clean one memory text for a prompt (reference §6.2, step 1).

    Markdown links to placeholder URLs (localhost, example.com, "your-…", …) become their
    label, or `FEEDBACK_SENTENCE` when the label mentions feedback; bare placeholder URLs are
    deleted; real URLs are kept. Then runs of two or more spaces/tabs become one space, three
    or more newlines become two, and the result is stripped.
    """
    # Links are handled before bare URLs, otherwise the bare-URL pass would eat the link
    # target and leave "[label]()" behind.
    cleaned = _MARKDOWN_LINK.sub(_replace_link, text)
    cleaned = _BARE_URL.sub(_drop_placeholder_url, cleaned)
    # CRLF would otherwise hide blank-line runs from the newline collapse below.
    cleaned = _LINE_BREAK.sub("\n", cleaned)
    cleaned = _SPACE_RUN.sub(" ", cleaned)
    cleaned = _NEWLINE_RUN.sub("\n\n", cleaned)
    return cleaned.strip()


def truncate(text: str, max_chars: int) -> str:
    """`text` cut to at most `max_chars` characters (never more).

    Text that fits is returned unchanged. Longer text keeps its first `max_chars − 3`
    characters followed by "..." . When `max_chars` < 3 there is no room for the ellipsis and
    the text is cut hard; `max_chars` <= 0 gives "".
    """
    if len(text) <= max_chars:
        return text
    if max_chars < len(_ELLIPSIS):
        return text[: max(0, max_chars)]
    return text[: max_chars - len(_ELLIPSIS)] + _ELLIPSIS


def query_terms(query: str) -> list[str]:
    """Unique lower-cased whitespace-separated terms longer than 2 characters, first-seen order."""
    # dict keeps insertion order, so it dedupes without reordering.
    return list(dict.fromkeys(term for term in query.lower().split() if len(term) > 2))


def _normalise(text: str) -> str:
    lowered = _ANY_URL.sub("", text.lower())
    return _WHITESPACE.sub(" ", _NOT_FINGERPRINT_CHAR.sub(" ", lowered)).strip()


def fingerprint(text: str) -> str:
    """Dedupe key for a packed text (reference §6.4).

    Normalisation: lower-case, drop http(s) URLs, turn every character other than a letter,
    number, whitespace, ":", ".", "_" or "-" into a space, collapse whitespace, strip.

    If a line starts with "user:" (case-insensitive) and the block after it (up to the next
    line starting with "assistant:", "ai:", "tool:", "system:" or "user:") normalises to at
    least 24 characters, the key is "user:" + its first 360 characters, so transcript-like
    rows that open with the same user message collide across layers. Otherwise the key is
    "text:" + the first 480 characters of the normalised whole text.
    """
    match = _USER_TURN.search(text)
    if match is not None:
        turn = _normalise(match.group(1))
        if len(turn) >= USER_TURN_MIN_CHARS:
            return "user:" + turn[:USER_TURN_FINGERPRINT_CHARS]
    return "text:" + _normalise(text)[:TEXT_FINGERPRINT_CHARS]
