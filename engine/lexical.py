"""Term matching for the text layers (working, scene). Replaces the reference's
whole-query substring test (REFERENCE §16.10), which almost never matches a natural question.

A text's lexical score is the share of the query's content terms it contains, in [0, 1]
(higher is more relevant). Terms are lower-cased alphanumeric words longer than 2 characters,
minus common English stopwords; a term also matches its simple plural/verb forms
("city" ~ "cities", "move" ~ "moved").
"""

from __future__ import annotations

import re

_WORD = re.compile(r"[^\W_]+", re.UNICODE)

STOPWORDS = frozenset(
    [
        "the",
        "and",
        "for",
        "are",
        "but",
        "not",
        "you",
        "your",
        "yours",
        "with",
        "this",
        "that",
        "these",
        "those",
        "from",
        "have",
        "has",
        "had",
        "was",
        "were",
        "will",
        "would",
        "can",
        "could",
        "should",
        "about",
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "when",
        "where",
        "why",
        "how",
        "all",
        "any",
        "both",
        "each",
        "few",
        "more",
        "most",
        "other",
        "some",
        "such",
        "only",
        "own",
        "same",
        "than",
        "too",
        "very",
        "just",
        "also",
        "into",
        "over",
        "under",
        "again",
        "then",
        "once",
        "here",
        "there",
        "them",
        "they",
        "their",
        "our",
        "ours",
        "out",
        "off",
        "its",
        "it's",
        "did",
        "does",
        "doing",
        "done",
        "been",
        "being",
        "any",
        "is",
        "am",
        "an",
        "a",
        "of",
        "to",
        "in",
        "on",
        "at",
        "by",
        "as",
        "or",
        "if",
        "so",
        "do",
        "me",
        "my",
        "mine",
        "we",
        "us",
        "he",
        "him",
        "his",
        "she",
        "her",
        "hers",
        "i",
        "said",
        "say",
        "tell",
        "told",
        "know",
        "like",
        "please",
        "thanks",
        "thank",
    ]
)


def stem(word: str) -> str:
    """A light suffix stripper: enough for plural and past forms of English words."""
    for suffix, replacement in (
        ("ies", "y"),
        ("ied", "y"),
        ("ing", ""),
        ("ed", ""),
        ("es", ""),
        ("s", ""),
    ):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)] + replacement
    return word


def terms(text: str) -> list[str]:
    """Unique content terms of a text (stemmed), in first-seen order."""
    out: list[str] = []
    for word in _WORD.findall(text.lower()):
        if len(word) <= 2 or word in STOPWORDS:
            continue
        term = stem(word)
        if term not in out:
            out.append(term)
    return out


def lexical_score(query_terms: list[str], text: str) -> float:
    """Share of `query_terms` present among the text's terms, in [0, 1]; 0 if no terms."""
    if not query_terms:
        return 0.0
    present = set(terms(text))
    return sum(1 for term in query_terms if term in present) / len(query_terms)
