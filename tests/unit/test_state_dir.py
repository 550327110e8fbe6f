"""The local stack's state directory has one resolver (`services.settings.default_state_dir`),
per user rather than per working directory, used by `Settings` and the `infra` commands alike."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from services.ops.stack import infra_app
from services.settings import Settings, default_state_dir


@pytest.fixture
def no_state_setting(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No MNEMOSTREAM_STATE_DIR, and a home of this test (never the user's)."""
    monkeypatch.delenv("MNEMOSTREAM_STATE_DIR", raising=False)
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return tmp_path


def test_tests_never_use_the_users_state_dir() -> None:
    """The session fixture points every test (and its subprocesses) at a directory of its own."""
    assert Settings().state_dir != default_state_dir()
    assert "MNEMOSTREAM_STATE_DIR" in os.environ


def test_default_is_xdg_state_home(no_state_setting: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    xdg = no_state_setting / "xdg"
    monkeypatch.setenv("XDG_STATE_HOME", str(xdg))
    assert default_state_dir() == xdg / "mnemostream"
    assert Settings().state_dir == xdg / "mnemostream"


@pytest.mark.parametrize("xdg", ["", "relative/state"])
def test_without_an_absolute_xdg_state_home_it_is_under_the_home_directory(
    no_state_setting: Path, monkeypatch: pytest.MonkeyPatch, xdg: str
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", xdg)  # the XDG spec: a relative path is ignored
    expected = no_state_setting / "home" / ".local" / "state" / "mnemostream"
    assert default_state_dir() == expected
    assert Settings().state_dir == expected


def test_the_setting_wins(no_state_setting: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(no_state_setting / "xdg"))
    monkeypatch.setenv("MNEMOSTREAM_STATE_DIR", str(no_state_setting / "chosen"))
    assert Settings().state_dir == no_state_setting / "chosen"


@pytest.mark.parametrize("setting", [False, True])
def test_infra_commands_resolve_the_same_directory_as_settings(
    no_state_setting: Path, monkeypatch: pytest.MonkeyPatch, setting: bool
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(no_state_setting / "xdg"))
    if setting:
        monkeypatch.setenv("MNEMOSTREAM_STATE_DIR", str(no_state_setting / "chosen"))
    monkeypatch.chdir(no_state_setting)
    result = CliRunner().invoke(infra_app, ["status"])
    assert result.exit_code == 1
    assert f"no stack recorded in {Settings().state_dir}" in result.output


def test_a_stack_left_in_the_old_location_is_pointed_out(
    no_state_setting: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before, the state was `./.mnemostream`: `down` and `status` say where a stack recorded
    there is, so it can still be stopped."""
    monkeypatch.setenv("XDG_STATE_HOME", str(no_state_setting / "xdg"))
    old = no_state_setting / "checkout" / ".mnemostream"
    old.mkdir(parents=True)
    (old / "infra.json").write_text("{}")
    monkeypatch.chdir(old.parent)
    for command in ("down", "status"):
        result = CliRunner().invoke(infra_app, [command])
        assert f"a stack is recorded in {old} (the old default)" in result.output
        assert f"--state-dir {old}" in result.output
