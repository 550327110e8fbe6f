"""Plain retrieval baselines of `benchmarks.quality`: the user's turn rows ranked by cosine
or by BM25 alone, joined with blank lines until the character budget (no header)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from engine.ports import Embedder
from engine.records import MemoryRow
from engine.retrieval.lexical import all_terms, bm25, terms


async def top_turns(
    rows: Sequence[MemoryRow],
    matrix: npt.NDArray[np.float32],
    embedder: Embedder,
    query: str,
    budget: int,
    *,
    lexical: bool,
    cap: int | None,
) -> str | None:
    """The best `cap` rows (None: as many as fit) by cosine to the query, or by BM25 over the
    rows' terms; the text that crosses the budget is cut there and joining stops."""
    if not rows:
        return None
    if lexical:
        scores = np.array(bm25(terms(query), [all_terms(r.content) for r in rows]))
    else:
        [vector] = await embedder.embed([query], "query")
        scores = matrix @ vector
    prompt = ""
    for i in np.argsort(-scores, kind="stable")[:cap]:
        piece = ("\n\n" if prompt else "") + rows[int(i)].content
        if len(prompt) + len(piece) > budget:
            prompt += piece[: budget - len(prompt)]
            break
        prompt += piece
    return prompt or None
