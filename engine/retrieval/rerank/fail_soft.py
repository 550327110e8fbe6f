"""The fail-soft rerank step of pre_turn (reference §5.2, fixed per §16.17).

A reranker (a cross-encoder behind an HTTP API) scores how relevant each candidate text is to
the query. The step is optional and fail-soft: when it is disabled, skipped or failing, the
decayed order is returned unchanged and the outcome says why.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence

from engine.errors import DependencyFailed
from engine.ports import Reranker
from engine.retrieval.defaults import (
    DEFAULT_DOMINANCE_DELTA,
    DEFAULT_HALF_LIFE_DAYS,
    DEFAULT_MIN_CANDIDATES,
)
from engine.retrieval.hits import Hit
from engine.retrieval.ranking import (
    apply_decay,
    merge_rerank,
    should_rerank,
)

logger = logging.getLogger(__name__)


async def rerank_fail_soft(
    reranker: Reranker | None,
    query: str,
    hits: Sequence[Hit],
    *,
    now_ms: int,
    half_life_days: float = DEFAULT_HALF_LIFE_DAYS,
    min_candidates: int = DEFAULT_MIN_CANDIDATES,
    dominance_delta: float = DEFAULT_DOMINANCE_DELTA,
    log: logging.Logger | None = None,
) -> tuple[list[Hit], str]:
    """Decay, then rerank when worthwhile; never raises for a reranker failure.

    `hits` carry their layer scores *before* decay (this function applies `apply_decay`; do
    not decay them first). The skip rules (`should_rerank`) are evaluated on the decayed
    scores. Returns the hits sorted by score descending and the outcome:

    - `"disabled"`: no reranker configured; the decayed order;
    - `"skipped: <reason>"`: too few candidates, a dominant top hit or an empty query;
      the decayed order;
    - `"reranked"`: provider scores merged by id with decay kept (`merge_rerank`);
    - `"failed: <error>"`: the reranker raised `DependencyFailed` or returned no score for
      any candidate; logged at WARNING, the decayed order.
    """
    log = log if log is not None else logger
    decayed = apply_decay(hits, now_ms, half_life_days)
    if reranker is None:
        return decayed, "disabled"
    reason = should_rerank(decayed, min_candidates=min_candidates, dominance_delta=dominance_delta)
    if reason is None and not query.strip():
        reason = "empty query"
    if reason is not None:
        log.debug("rerank skipped: %s", reason, extra={"reranker": reranker.name})
        return decayed, f"skipped: {reason}"

    try:
        scores = await reranker.rerank(query, [(h.id, h.text) for h in decayed])
    except DependencyFailed as exc:
        error = str(exc) or type(exc).__name__
        log.warning(
            "rerank failed, keeping the decayed order: %s", error, extra={"reranker": reranker.name}
        )
        return decayed, f"failed: {error}"

    ids = {h.id for h in decayed}
    usable = {k: v for k, v in scores.items() if k in ids and math.isfinite(v)}
    if not usable:
        error = "no usable scores"
        log.warning(
            "rerank failed, keeping the decayed order: %s", error, extra={"reranker": reranker.name}
        )
        return decayed, f"failed: {error}"
    return merge_rerank(decayed, usable, now_ms, half_life_days), "reranked"
