"""How a layer turns semantic and lexical evidence into one relevance in [0, 1].

relevance = w·cos⁺ + (1 − w)·lexical, with w = 0.7 by default (cos⁺ = cosine clipped at 0).
A candidate is a hit on its own when its cosine reaches `min_cosine` or its lexical score
reaches `min_lexical`: paraphrases are found by meaning, names and rare words by their
letters. Without a vector (another embedding model, or none stored) only the lexical test
applies.

A layer judges its candidates as a pool (`pool_relevance`, issue 32): the fixed cut-offs
dropped paraphrases whose cosine sat at 0.2-0.3 (MiniLM rarely gives a paraphrase more), so
a question was answered by two hits and half its budget left empty. Once one candidate of
the pool is a hit on its own (the pool is *anchored*: the query is about something the
tenant holds), the candidates whose cosine reaches a share of the best one (`relative_cosine`)
are hits too, above a noise floor (`noise_cosine`). Their relevance is the same formula, so
they rank below the strong hits of every layer and only fill room the strong ones leave;
an unanchored pool (a question about nothing stored) still answers nothing.

A pool's relevance is calibrated: the cosine is mapped from [`noise_cosine`,
`calibrated_cosine`] onto [0, 1] before the weighting, the same for every layer, so the
packer's semantic term separates a paraphrase from noise by more than its recency term. A
reciprocal rank fusion of the cosine and lexical ranks (`fused`) can reorder a layer's hits
on top of it; measured, it did not help, and it is off by default (`FUSION_SPREAD`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from engine.retrieval.defaults import (
    DEFAULT_MIN_COSINE,
    DEFAULT_MIN_LEXICAL,
    DEFAULT_SEMANTIC_WEIGHT,
)

RELATIVE_COSINE = 0.5
"""In an anchored pool, a candidate whose cosine reaches this share of the pool's best is a
hit (measured on the `tune` split of `benchmarks.quality --dataset handwritten`)."""
NOISE_COSINE = 0.15
"""Below this cosine a candidate is never a hit by meaning: two unrelated sentences of one
conversation (shared names, shared small talk) score about this with MiniLM."""
CALIBRATED_COSINE = 0.65
"""The cosine a pool's relevance counts as certain: MiniLM scores a question and the
sentence that answers it 0.3-0.6, rarely more (more is a near copy). `pool_relevance` maps
[`noise_cosine`, this] onto [0, 1], so the packer's semantic term (0.45 of a [0, 1] score)
tells a 0.3 paraphrase from 0.16 noise by more than the recency term (0.08) can undo."""
FUSION_K = 10
"""k of the reciprocal rank fusion 1/(k + rank): small, as a layer's pool is tens of
candidates, not the thousands RRF's usual k = 60 was set for."""
FUSION_SPREAD = 0.0
"""Share of a hit's relevance its fused rank decides (the pool's best keeps its relevance, a
hit far down both rankings keeps 1 - this share of it). Off by default: measured on the tune
splits (`benchmarks.quality --split tune`, mnemostream/budget at 900 / 1,800 characters),
0.5 gave handwritten 0.57 / 0.80 and long 0.83 / 0.92, 0.25 gave 0.57 / 0.80 and 0.85 / 0.91,
0 gives 0.56 / 0.80 and 0.87 / 0.92: the calibrated relevance alone ranks as well."""


@dataclass(frozen=True, slots=True)
class RelevancePolicy:
    semantic_weight: float = DEFAULT_SEMANTIC_WEIGHT
    min_cosine: float = DEFAULT_MIN_COSINE
    min_lexical: float = DEFAULT_MIN_LEXICAL
    relative_cosine: float = RELATIVE_COSINE
    """Share of an anchored pool's best cosine a candidate needs; 1.0 turns the relative
    floor off (only the fixed cut-offs decide, as before issue 32)."""
    noise_cosine: float = NOISE_COSINE
    calibrated_cosine: float = CALIBRATED_COSINE
    fusion_k: int = FUSION_K
    fusion_spread: float = FUSION_SPREAD
    """0 turns the fused ranking off (a hit's relevance is its combined score alone)."""


def combined(cosine: float, lexical: float, policy: RelevancePolicy) -> float:
    """w·cos⁺ + (1 − w)·lexical in [0, 1], whether or not the candidate is a hit."""
    w = policy.semantic_weight
    return w * max(0.0, min(1.0, cosine)) + (1 - w) * lexical


def relevance(cosine: float | None, lexical: float, policy: RelevancePolicy) -> float | None:
    """The combined relevance, or None when the candidate is not a hit on its own."""
    if cosine is None:
        return lexical if lexical >= policy.min_lexical else None
    if cosine < policy.min_cosine and lexical < policy.min_lexical:
        return None
    return combined(cosine, lexical, policy)


def calibrated(cosine: float, lexical: float, policy: RelevancePolicy) -> float:
    """`combined` with the cosine mapped from [noise, calibrated] onto [0, 1] (clipped)."""
    span = max(1e-6, policy.calibrated_cosine - policy.noise_cosine)
    scaled = (cosine - policy.noise_cosine) / span
    return combined(max(0.0, min(1.0, scaled)), lexical, policy)


def pool_relevance(
    cosines: Sequence[float | None],
    lexicals: Sequence[float],
    policy: RelevancePolicy,
    keep: Collection[int] = (),
) -> list[float | None]:
    """The relevance of each candidate of one layer's pool (None: not a hit), in order.

    A candidate that is a hit on its own (`relevance`) is a hit. When at least one is, a
    candidate with a cosine ≥ max(`noise_cosine`, `relative_cosine` × the pool's best
    cosine) is a hit too. The candidates at the positions `keep` (the layer's pick: what
    plain cosine top-k would show, `top_cosines`) are hits whether or not the pool is
    anchored, once its best cosine reaches `noise_cosine` (the query is about something the
    tenant holds): the floors never drop what plain cosine would show (issue 32: 'Can Marcus
    top up his car's battery at home?' has no hit on its own, and its answer is cosine's
    tenth). Otherwise, without any hit on its own, nothing is. A hit's relevance is
    `calibrated` (the lexical score alone without a cosine), then `fused`."""
    hits = [relevance(c, x, policy) is not None for c, x in zip(cosines, lexicals, strict=True)]
    best = max((c for c in cosines if c is not None), default=None)
    if policy.relative_cosine < 1.0 and any(hits) and best is not None:
        floor = max(policy.noise_cosine, policy.relative_cosine * best)
        hits = [h or (c is not None and c >= floor) for h, c in zip(hits, cosines, strict=True)]
    if keep and best is not None and best >= policy.noise_cosine:
        for i in keep:
            hits[i] = True
    scores = [
        None if not h else x if c is None else calibrated(c, x, policy)
        for h, c, x in zip(hits, cosines, lexicals, strict=True)
    ]
    return fused(scores, cosines, lexicals, policy)


def top_cosines(cosines: Sequence[float | None], k: int) -> list[int]:
    """Positions of the (at most `k`) highest cosines, best first."""
    ranked = sorted(
        (i for i, c in enumerate(cosines) if c is not None),
        key=lambda i: -(cosines[i] or 0.0),
    )
    return ranked[:k]


def _ranks(values: Sequence[float | None]) -> list[int | None]:
    """1-based rank of each value, highest first (ties share the better rank); None and
    values ≤ 0 are unranked (the signal did not find the candidate)."""
    order = sorted((v for v in values if v is not None and v > 0), reverse=True)
    first: dict[float, int] = {}
    for i, v in enumerate(order):
        first.setdefault(v, i + 1)
    return [first[v] if v is not None and v > 0 else None for v in values]


def fused(
    scores: Sequence[float | None],
    cosines: Sequence[float | None],
    lexicals: Sequence[float],
    policy: RelevancePolicy,
) -> list[float | None]:
    """Hits' relevance reordered by the reciprocal rank fusion of the pool's cosine and
    lexical rankings, and kept calibrated across layers (issue 32).

    fusion = w/(k + cosine rank) + (1 − w)/(k + lexical rank) over the whole pool (a signal
    that did not find a candidate adds nothing), w the semantic weight. A hit's relevance is
    multiplied by 1 − spread + spread · fusion / (the best hit's fusion): the layer's best
    hit keeps its own relevance (a lone weak hit is not lifted above another layer's strong
    one), and a hit that both rankings put far down loses up to `fusion_spread` of it, so a
    layer's order is decided by where both signals rank it, not by a few hundredths of
    cosine. None stays None; the result is in [0, 1]."""
    if policy.fusion_spread <= 0:
        return list(scores)
    w, k = policy.semantic_weight, policy.fusion_k
    by_cosine, by_lexical = _ranks(cosines), _ranks(lexicals)
    fusion = [
        (w / (k + rc) if rc is not None else 0.0) + ((1 - w) / (k + rl) if rl is not None else 0.0)
        for rc, rl in zip(by_cosine, by_lexical, strict=True)
    ]
    best = max((f for f, s in zip(fusion, scores, strict=True) if s is not None), default=0.0)
    if best <= 0:
        return list(scores)
    spread = policy.fusion_spread
    return [
        None if s is None else s * (1 - spread + spread * f / best)
        for s, f in zip(scores, fusion, strict=True)
    ]
