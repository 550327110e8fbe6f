"""Keep the README true: every setting is documented and CI runs the README's test command."""

from __future__ import annotations

import re
from pathlib import Path

from services.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def test_every_setting_is_in_the_configuration_table() -> None:
    documented = set(re.findall(r"`(MNEMOSTREAM_[A-Z_]+)`", README))
    expected = {f"MNEMOSTREAM_{name.upper()}" for name in Settings.model_fields}
    assert expected - documented == set()
    assert documented - expected == set()


def test_ci_runs_exactly_the_readme_test_command() -> None:
    commands = re.findall(r"```bash\n(python3 -m venv[^\n]+)\n```", README)
    assert len(commands) == 2, "the quickstart has two commands: run it, test it"
    test_command = commands[1]
    ci_lines = (ROOT / ".ci" / "run").read_text().strip().splitlines()
    assert ci_lines[-1] == test_command
