"""The wire form of an eval run: camelCase and JSON-able, what the HTTP/Kafka reply carries
and what the store keeps (`run_wire`), and back (`run_of`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.evals.records import (
    STATUS_COMPLETED,
    CaseResult,
    EvalCase,
    EvalRun,
    EvalScores,
    ItemVerdict,
)


def _scores_wire(s: EvalScores) -> dict[str, Any]:
    return {
        "recallAtK": s.recall_at_k,
        "precisionAtK": s.precision_at_k,
        "meanPrecision": s.mean_precision,
        "avgContextCharacters": s.avg_context_characters,
        "latencyP50Ms": s.latency_p50_ms,
        "latencyP95Ms": s.latency_p95_ms,
        "avgLatencyMs": s.avg_latency_ms,
        "cases": s.cases,
        "hits": s.hits,
        "returned": s.returned,
        "relevant": s.relevant,
    }


def _result_wire(r: CaseResult) -> dict[str, Any]:
    return {
        "query": r.case.query,
        "expected": r.case.expected,
        "expectedMemoryId": r.case.expected_memory_id,
        "hit": r.hit,
        "returned": r.returned,
        "relevant": r.relevant,
        "precision": r.precision,
        "contextCharacters": r.context_characters,
        "latencyMs": r.latency_ms,
        "cached": r.cached,
        "items": [{"layer": i.layer, "id": i.id, "relevant": i.relevant} for i in r.items],
    }


def run_wire(run: EvalRun) -> dict[str, Any]:
    """The run as a JSON-able camelCase dict (the HTTP/Kafka reply and the stored document)."""
    return {
        "evalRunId": run.eval_run_id,
        "status": run.status,
        "agentWallet": run.agent_wallet,
        "scope": dict(run.scope),
        "createdAt": run.created_at,
        "k": run.k,
        "layers": list(run.layers),
        "scores": _scores_wire(run.scores),
        "results": [_result_wire(r) for r in run.results],
    }


def run_of(doc: Mapping[str, Any]) -> EvalRun:
    """The inverse of `run_wire` (extra keys, such as a store's `_id`, are ignored)."""
    s = doc["scores"]
    return EvalRun(
        eval_run_id=str(doc["evalRunId"]),
        scope=dict(doc["scope"]),
        created_at=int(doc["createdAt"]),
        k=int(doc["k"]),
        layers=tuple(doc["layers"]),
        scores=EvalScores(
            recall_at_k=float(s["recallAtK"]),
            precision_at_k=float(s["precisionAtK"]),
            mean_precision=float(s["meanPrecision"]),
            avg_context_characters=float(s["avgContextCharacters"]),
            latency_p50_ms=float(s["latencyP50Ms"]),
            latency_p95_ms=float(s["latencyP95Ms"]),
            avg_latency_ms=float(s["avgLatencyMs"]),
            cases=int(s["cases"]),
            hits=int(s["hits"]),
            returned=int(s["returned"]),
            relevant=int(s["relevant"]),
        ),
        results=tuple(
            CaseResult(
                case=EvalCase(r["query"], r.get("expected"), r.get("expectedMemoryId")),
                items=tuple(
                    ItemVerdict(str(i["layer"]), str(i["id"]), bool(i["relevant"]))
                    for i in r["items"]
                ),
                context_characters=int(r["contextCharacters"]),
                latency_ms=float(r["latencyMs"]),
                cached=bool(r.get("cached", False)),
            )
            for r in doc["results"]
        ),
        status=str(doc.get("status", STATUS_COMPLETED)),
    )
