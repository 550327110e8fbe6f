"""`mnemostream mcp` refuses to start, with the reason on stderr and nothing on stdout (over
stdio, stdout is the protocol's), when nothing could make its tools safe: no agent over stdio,
an unusable id, or no gateway credential over HTTP. It refuses before connecting anywhere."""

from __future__ import annotations

import os

import pytest
from typer.testing import CliRunner

from services.ops.cli import app


@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    for name in list(os.environ):
        if name.upper().startswith("MNEMOSTREAM_") and name != "MNEMOSTREAM_STATE_DIR":
            monkeypatch.delenv(name)
    return CliRunner()


def test_stdio_needs_an_agent(runner: CliRunner) -> None:
    result = runner.invoke(app, ["mcp", "--user", "alice"], env={"COLUMNS": "200"})
    assert result.exit_code == 2
    assert "no agent configured" in result.stderr
    assert result.stdout == ""


def test_a_configured_id_must_be_usable(runner: CliRunner) -> None:
    result = runner.invoke(app, ["mcp", "--agent", " 0xA"], env={"COLUMNS": "200"})
    assert result.exit_code == 2
    assert "must not start or end with whitespace" in result.stderr


def test_http_needs_the_gateway_credentials(runner: CliRunner) -> None:
    result = runner.invoke(app, ["mcp", "--http", "8765", "--agent", "0xA"])
    assert result.exit_code == 2
    assert "refusing to start" in result.stderr
    assert "MNEMOSTREAM_GATEWAY_API_KEYS" in result.stderr
