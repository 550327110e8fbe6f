"""In-memory `EvalStore` (unit tests, the contract suite's twin)."""

from __future__ import annotations

import builtins

from engine.evals.records import EvalRun


class InMemoryEvalStore:
    def __init__(self) -> None:
        self._runs: dict[str, EvalRun] = {}

    async def save(self, run: EvalRun) -> None:
        self._runs[run.eval_run_id] = run

    async def get(self, run_id: str, agent_wallet: str) -> EvalRun | None:
        run = self._runs.get(run_id)
        return run if run is not None and run.agent_wallet == agent_wallet else None

    async def list(self, agent_wallet: str, limit: int) -> builtins.list[EvalRun]:
        runs = [r for r in self._runs.values() if r.agent_wallet == agent_wallet]
        runs.sort(key=lambda r: (r.created_at, r.eval_run_id), reverse=True)
        return runs[: max(0, limit)]
