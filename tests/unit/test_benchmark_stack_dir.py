"""A benchmark that starts its own local stack removes the stack's directory when it ends
well (a throughput run's store is ~100 MB, and every run used to leave one in the temp
directory), and keeps it, saying where, when the run fails: its logs tell why."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import pipeline
from services.endpoints import ENV_KAFKA, ENV_MONGO, ENV_REDIS, Endpoints


@pytest.fixture
def stack(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[Path]:
    """The stack's start and stop replaced: records the state directory and writes a log."""
    for name in (ENV_KAFKA, ENV_MONGO, ENV_REDIS):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(pipeline.tempfile, "tempdir", str(tmp_path))
    states: list[Path] = []

    def start(state: Path) -> Endpoints:
        states.append(state)
        (state / "mongo.log").write_text("started\n")
        return Endpoints("127.0.0.1:1", "mongodb://127.0.0.1:2", "redis://127.0.0.1:3")

    stopped: list[Path] = []
    monkeypatch.setattr(pipeline, "start_stack", start)
    monkeypatch.setattr(pipeline, "stop_stack", stopped.append)
    return states


def test_a_finished_run_leaves_no_stack_directory(stack: list[Path]) -> None:
    with pipeline.endpoints() as ends:
        assert ends.kafka_bootstrap == "127.0.0.1:1"
        assert stack[0].is_dir()
    assert not stack[0].exists()


def test_a_failed_run_keeps_its_stack_directory_and_says_where(
    stack: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(RuntimeError, match="boom"), pipeline.endpoints():
        raise RuntimeError("boom")
    assert (stack[0] / "mongo.log").read_text() == "started\n"
    assert str(stack[0]) in capsys.readouterr().err
