"""Term matching for the text layers (working, scene). Replaces the reference's
whole-query substring test (reference §16.10), which almost never matches a natural question.

A text's lexical score is the share of the query's content terms it contains, in [0, 1]
(higher is more relevant). Terms are lower-cased alphanumeric words longer than 2 characters,
minus common English stopwords; a term also matches its simple plural/verb forms
("city" ~ "cities", "move" ~ "moved").
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

Ids = npt.NDArray[np.int64]
"""A document's terms as ids (`term_ids`)."""
Scores = npt.NDArray[np.float64]
"""Relevance per document (`bm25_ids`)."""

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
        # time and degree words carry no topic: "where do I live now?" is about living
        "now",
        "today",
        "currently",
        "usually",
        "ever",
        "still",
        "just",
        "really",
        "actually",
        "maybe",
    ]
)


def stem(word: str) -> str:
    """A light suffix stripper for plural and past forms of English words: "move", "moved"
    and "moves" share one term, as do "city"/"cities", "class"/"classes", "use"/"used"."""
    vowels = "aeiou"
    if len(word) >= 5 and word.endswith(("ies", "ied")):
        return word[:-3] + "i"
    for suffix, shortest in (("ing", 3), ("ed", 2), ("es", 3)):
        if word.endswith(suffix) and len(word) - len(suffix) >= shortest:
            return word[: -len(suffix)]
    if word.endswith("s") and not word.endswith("ss") and len(word) >= 4:
        return _base(word[:-1], vowels)
    return _base(word, vowels)


def _base(word: str, vowels: str) -> str:
    """The uninflected form's base: a final "e" goes, a final consonant + "y" becomes "i"."""
    if len(word) > 2 and word.endswith("e"):
        return word[:-1]
    if len(word) > 2 and word.endswith("y") and word[-2] not in vowels:
        return word[:-1] + "i"
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


BM25_K1 = 1.2
BM25_B = 0.5
"""Length normalisation, softer than the usual 0.75: memory texts are short, and a fact
should not lose to a bare entity name merely for being a sentence."""


def bm25(query_terms: Sequence[str], documents: Sequence[Sequence[str]]) -> list[float]:
    """BM25 relevance of each document (a sequence of terms) to the query, in [0, 1].

    Normalised by what a document holding every query term once (at average length) would
    score, so a value reads like an IDF-weighted share of the query's terms. A query term no
    candidate contains is weighted like a term one candidate contains (not by its larger
    IDF), so it lowers every score without dwarfing the terms that do occur.

    Statistics (IDF, average length) come from the candidate documents themselves, which is
    what a per-scope search has: the tenant's own rows. Higher is more relevant; 0 when no
    query term occurs.
    """
    scores: list[float] = bm25_ids(query_terms, [term_ids(d) for d in documents]).tolist()
    return scores


def bm25_ids(query_terms: Sequence[str], documents: Sequence[Ids]) -> Scores:
    """`bm25` over documents given as `term_ids`, as an array of scores in order.

    Vectorised over the pool (issue 29: a 1,000-turn scene is 2,000 message units a
    request): one array of every document's term ids, and per query term its frequency in
    each document by one `bincount`. The arithmetic is the textbook loop's, operation for
    operation, so the scores are the ones a loop over the documents gives
    (`tests/unit/test_lexical_arrays.py` checks it against one)."""
    n = len(documents)
    if not query_terms or not n:
        return np.zeros(n)
    counts = np.fromiter(map(len, documents), dtype=np.int64, count=n)
    avg_len = int(counts.sum()) / n or 1.0
    pool = np.concatenate(documents)
    owner = np.repeat(np.arange(n), counts)
    freqs = {
        t: np.bincount(owner[pool == hash(t)], minlength=n) for t in dict.fromkeys(query_terms)
    }
    rare = math.log(1 + (n - 1 + 0.5) / (1 + 0.5))
    idf: dict[str, float] = {}
    for t, tfs in freqs.items():
        df = int(np.count_nonzero(tfs))
        idf[t] = math.log(1 + (n - df + 0.5) / (df + 0.5)) if df else rare
    ideal = sum(idf[t] for t in query_terms)
    if ideal <= 0:
        return np.zeros(n)
    norms = BM25_K1 * (1 - BM25_B + BM25_B * counts.astype(np.float64) / avg_len)
    totals = np.zeros(n)
    for t in query_terms:  # a repeated query term counts again, as in the ideal
        totals += idf[t] * (BM25_K1 + 1) * freqs[t] / (freqs[t] + norms)
    scores: Scores = np.minimum(1.0, totals / ideal)
    return scores


def term_ids(terms: Sequence[str]) -> Ids:
    """A document's terms as `bm25_ids` takes them (memoised for a tuple)."""
    return _term_ids(terms if isinstance(terms, tuple) else tuple(terms))


@functools.lru_cache(maxsize=65536)
def _term_ids(terms: tuple[str, ...]) -> Ids:
    """Each term's `hash` (64 bits, stable within a process): no vocabulary grows with
    every term a process has seen. Two different terms of one pool that share a hash (odds
    about V² / 2⁶⁵ for V distinct terms) would count as one."""
    return np.fromiter(map(hash, terms), dtype=np.int64, count=len(terms))


def all_terms(text: str) -> list[str]:
    """Every content term of a text with repetitions (BM25 needs term frequencies)."""
    return list(_all_terms(text))


@functools.lru_cache(maxsize=8192)
def _all_terms(text: str) -> tuple[str, ...]:
    # memoised: a tenant's rows are scored against query after query, and tokenising and
    # stemming the same candidate texts again was most of a request's lexical cost once the
    # candidate pool stopped shrinking with `limit` (issue 16)
    return tuple(stem(w) for w in _WORD.findall(text.lower()) if len(w) > 2 and w not in STOPWORDS)
