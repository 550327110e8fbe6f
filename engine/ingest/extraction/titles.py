"""Titles in quotes: "just finished 'The Cartographer's Widow' by …" names one book, not a
"Cartographer". A quoted run of two to eight words in title case (each word capitalised,
but for small words such as "of", "the", "and") is one name, its inner "'s" included; the
name finder reads it as a single word (`names.names_in`)."""

from __future__ import annotations

import re

MAX_TITLE_WORDS = 8
_QUOTED = re.compile(r"(?<!\w)['‘\"“](?P<title>[A-Z][^\"“”‘\n]{0,100}?)['’\"”](?!\w)")
_SMALL = frozenset(
    {"a", "an", "the", "of", "and", "or", "in", "on", "at", "to", "for", "by", "with"}
    | {"from", "into", "de", "la", "le", "du"}
)
PLACEHOLDER = "Qtitle{}x"
"""What stands for the `n`th title while the sentence is read: one capitalised word that is
no word of any language."""


def quoted_titles(sentence: str) -> list[tuple[int, int, str]]:
    """(start, end, title) of each quoted title, in order; the span includes its quotes."""
    out: list[tuple[int, int, str]] = []
    for m in _QUOTED.finditer(sentence):
        title = " ".join(m.group("title").split())
        words = title.split()
        if 2 <= len(words) <= MAX_TITLE_WORDS and all(
            w[:1].isupper() or w.casefold() in _SMALL for w in words
        ):
            out.append((m.start(), m.end(), title))
    return out


def without_titles(sentence: str) -> tuple[str, dict[str, str]]:
    """The sentence with each quoted title replaced by a placeholder word, and placeholder →
    title."""
    titles = quoted_titles(sentence)
    kept: dict[str, str] = {}
    for n, (start, end, title) in reversed(list(enumerate(titles))):
        word = PLACEHOLDER.format(n)
        kept[word] = title
        sentence = f"{sentence[:start]}{word}{sentence[end:]}"
    return sentence, kept
