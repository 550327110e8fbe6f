"""Errors in one line (issue 33): every refused setting names its variable and what is wrong
in one line, and the `mnemostream` command turns a refused setting or command-line value into
`error: …` on stderr with exit code 2 and no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from services.ops.cli import main
from services.ops.config_doc import rows
from services.settings import Settings, settings_problem

ROOT = Path(__file__).resolve().parents[2]


def bad_value(kind: str) -> str | None:
    """A value the setting's type refuses, or None when any text is accepted."""
    if kind.startswith(("int", "float")):
        return "twelve"
    if kind == "bool":
        return "perhaps"
    if kind.startswith("`"):  # one of a list of words
        return "none-of-these"
    if kind.startswith("list of {"):  # a JSON list of objects (a plain list takes any text)
        return "barekey"
    return None


WALKED = [(r.variable, v) for r in rows() if (v := bad_value(r.type)) is not None]


def test_the_walk_covers_the_typed_settings() -> None:
    assert len(WALKED) >= 60


@pytest.mark.parametrize(("variable", "value"), WALKED)
def test_every_refused_setting_is_one_line_naming_its_variable(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ValidationError) as caught:
        Settings()
    line = settings_problem(caught.value)
    assert "\n" not in line
    assert variable in line


def mnemostream(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[object, str]:
    """`mnemostream ARGS` in this process: its exit code and what it wrote on stderr."""
    monkeypatch.setattr(sys, "argv", ["mnemostream", *args])
    with pytest.raises(SystemExit) as exited:
        main()
    return exited.value.code, capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "env", "said"),
    [
        (
            ["token", "mint", "--agent", "A"],
            {"MNEMOSTREAM_GATEWAY_JWT_SECRET": "short"},
            "MNEMOSTREAM_GATEWAY_JWT_SECRET must be at least 32 bytes",
        ),
        (
            ["token", "mint", "--agent", "A"],
            {"MNEMOSTREAM_GATEWAY_API_KEYS": "barekey"},
            "MNEMOSTREAM_GATEWAY_API_KEYS",
        ),
        (
            ["topics", "create"],
            {"MNEMOSTREAM_SOURCE_RETENTION_MS": "-5"},
            "MNEMOSTREAM_SOURCE_RETENTION_MS: Input should be greater than or equal to -1",
        ),
        (["topics", "create"], {"MNEMOSTREAM_MAX_ATTEMPTS": "twelve"}, "MNEMOSTREAM_MAX_ATTEMPTS"),
        (
            ["jobs", "run", "patterns_extract", "--agent", "A", "--window-days", "abc"],
            None,
            "Invalid value for '--window-days'",
        ),
        # the gateway refuses this agent, so the CLI does: nothing is published (issue 33)
        (
            ["jobs", "run", "consolidate", "--agent", " x"],
            None,
            "agentWallets.0: must not start or end with whitespace",
        ),
        (["no-such-command"], None, "No such command"),
    ],
)
def test_a_refused_setting_or_value_is_one_line_and_exit_2(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    env: dict[str, str] | None,
    said: str,
) -> None:
    for name in [k for k in os.environ if k.startswith("MNEMOSTREAM_")]:
        monkeypatch.delenv(name)
    for name, value in (env or {}).items():
        monkeypatch.setenv(name, value)
    code, err = mnemostream(monkeypatch, capsys, *args)
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ")
    assert said in lines[0]


def test_the_installed_command_prints_no_traceback() -> None:
    """The same through a new interpreter, as an operator runs it."""
    done = subprocess.run(
        [sys.executable, "-m", "services", "token", "mint", "--agent", "A"],
        cwd=ROOT,
        env={**os.environ, "MNEMOSTREAM_GATEWAY_JWT_SECRET": "short"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "error: invalid setting: MNEMOSTREAM_GATEWAY_JWT_SECRET must be at least 32 bytes for "
        "HS256\n"
    )
