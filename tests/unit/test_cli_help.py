"""Every help text of the `mnemostream` CLI shows its bracketed words as written (issue 30:
`mnemostream mcp --help` printed "pip install 'mnemostream'", the `[mcp]` taken for console
markup and dropped). Walks every command and group, renders its `--help` as a terminal shows
it, and looks for each `[word]` of its help, its options' help and its arguments' help."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from services.ops.cli import app

BRACKETED = re.compile(r"\[[^\]\s]+\]")


def commands(group: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """The path of `group` and of every command under it (Typer's own click, so by duck
    typing: a group is what has `commands`)."""
    yield path
    if hasattr(group, "commands"):
        for name, command in group.commands.items():
            if not command.hidden:
                yield from commands(command, (*path, name))


ROOT = typer.main.get_command(app)
PATHS = list(commands(ROOT))


def command_at(path: tuple[str, ...]) -> Any:
    command: Any = ROOT
    for name in path:
        command = command.commands[name]
    return command


def texts(command: Any) -> list[str]:
    found = [command.help or "", command.short_help or "", command.epilog or ""]
    found += [getattr(p, "help", None) or "" for p in command.params]
    return found


def test_the_walk_reaches_every_command() -> None:
    assert ("mcp",) in PATHS
    assert len(PATHS) > 10


@pytest.mark.parametrize("path", PATHS, ids=lambda p: " ".join(p) or "mnemostream")
def test_every_bracketed_word_of_a_help_text_is_shown(path: tuple[str, ...]) -> None:
    command = command_at(path)
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    shown = " ".join(result.output.split())  # a wrapped line is one text again
    wanted = {w for text in texts(command) for w in BRACKETED.findall(text)}
    assert {w for w in wanted if w not in shown} == set()


def test_mcp_help_names_its_extra() -> None:
    result = CliRunner().invoke(app, ["mcp", "--help"], env={"COLUMNS": "200"})
    assert "pip install 'mnemostream[mcp]'" in " ".join(result.output.split())


def test_the_missing_extra_message_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "services.mcp.server", None)  # importing it fails
    result = CliRunner().invoke(app, ["mcp", "--agent", "0xA"], env={"COLUMNS": "200"})
    assert result.exit_code == 2
    assert "pip install 'mnemostream[mcp]'" in result.stderr
