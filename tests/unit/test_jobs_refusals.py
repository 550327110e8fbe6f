"""`mnemostream jobs` refuses bad input at once (issue 17 §6): one line on stderr, exit code 2,
no traceback, before any server is reached — the tests run the real command tree with no
server configured, so a command that tried to connect would answer "no Kafka/MongoDB/Redis
configured" (exit 1) instead. Reading records needs the admin group:
tests/integration/test_jobs_cli.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import Result
from typer.testing import CliRunner

from schemas.jobs import JOB_TYPES
from services.endpoints import ENV_KAFKA, ENV_MONGO, ENV_REDIS
from services.ops.cli import app


@pytest.fixture(autouse=True)
def no_servers(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No server URL and an empty state directory: nothing to connect to."""
    for name in (ENV_KAFKA, ENV_MONGO, ENV_REDIS):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MNEMOSTREAM_STATE_DIR", str(tmp_path))


def jobs(*args: str) -> Result:
    # a narrow terminal: a refusal longer than it must still be one line
    return CliRunner().invoke(app, ["jobs", *args], env={"COLUMNS": "40"})


def refused(result: Result, code: int = 2) -> str:
    """The one stderr line of a refusal (nothing on stdout, no traceback)."""
    assert result.exit_code == code, (result.exit_code, result.output, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    assert "Traceback" not in result.stderr
    return lines[0]


def test_an_unknown_job_is_one_line_listing_the_jobs() -> None:
    line = refused(jobs("run", "nonsense_job"))
    assert "unknown job 'nonsense_job'" in line
    assert line.endswith(", ".join(JOB_TYPES))


@pytest.mark.parametrize("job_type", ["consolidate", "patterns_extract", "archive_create"])
def test_a_job_for_an_agent_without_one_is_refused(job_type: str) -> None:
    line = refused(jobs("run", job_type, "--window-days", "2"))
    assert f"{job_type} runs for an agent: give --agent" in line


@pytest.mark.parametrize(
    ("args", "message"),
    [
        # issue 17 reported these as accepted by consolidate; each is its schema's refusal
        (["consolidate", "--param", "batchSize=-5"], "batchSize: Input should be greater"),
        (["consolidate", "--param", "batchSize=0"], "batchSize: Input should be greater"),
        (["consolidate", "--param", "batchSize=abc"], "batchSize: Input should be a number"),
        (["decay_update", "--param", "halfLifeDays=-1"], "halfLifeDays: Input should be greater"),
        (["cleanup", "--param", "olderThanDays=1e9"], "olderThanDays: Input should be less"),
        (["archive_create", "--param", "note=weekly"], "does not take note"),
        (["cleanup", "--param", "olderThanDays"], "--param takes NAME=VALUE"),
    ],
)
def test_a_bad_parameter_is_one_line_naming_it(args: list[str], message: str) -> None:
    job_type, *rest = args
    line = refused(jobs("run", job_type, "--agent", "0xCli", *rest))
    assert message in line


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["list", "--status", "lost"], "--status must be one of running, completed, failed"),
        (["list", "--limit", "0"], "--limit must be from 1 to 100"),
        (["list", "--agent", " 0xA"], "--agent: agentWallet: must not start or end with"),
        (["list", "--agent", "0x" + "a" * 300], "--agent: agentWallet: "),
        (["status", "memjob_1 "], "JOB_ID: must not start or end with whitespace"),
        (["status", "j" * 201], "JOB_ID: must be 1 to 200 characters"),
        (["status", "memjob_1", "--agent", "0xA\x07"], "--agent: agentWallet: must not contain"),
    ],
)
def test_bad_options_of_the_readers_are_refused(args: list[str], message: str) -> None:
    assert message in refused(jobs(*args))


@pytest.mark.parametrize(
    "args", [["status", "memjob_1"], ["list"], ["run", "decay_update", "--agent", "0xCli"]]
)
def test_no_server_is_one_line_and_exit_1(args: list[str]) -> None:
    line = refused(jobs(*args), code=1)
    assert "no Kafka/MongoDB/Redis configured" in line
