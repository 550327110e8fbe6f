"""Keep the README true: every setting is documented, CI runs the README's test command, and
every reference bug it lists as fixed has a test named after it (`..._fixes_16_N`)."""

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


def test_every_reference_bug_listed_as_fixed_has_a_test_named_after_it() -> None:
    listed = README.split("## Reference bugs fixed so far", 1)[1].split("\n## ", 1)[0]
    fixed = {int(n) for n in re.findall(r"^\* §16\.(\d+) ", listed, flags=re.MULTILINE)}
    sources = "\n".join(p.read_text() for p in (ROOT / "tests").rglob("test_*.py"))
    named = {int(n) for n in re.findall(r"def test_\w*?fixes_16_(\d+)\b", sources)}
    assert len(fixed) >= 25
    assert fixed - named == set(), "a bug the README says is fixed has no test named after it"


def test_run_help_names_every_registered_group() -> None:
    from typer.testing import CliRunner

    from services.app import GROUPS
    from services.cli import app

    result = CliRunner().invoke(app, ["run", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    listed = result.output.split("Consumer groups:", 1)[1].split("; or all", 1)[0]
    assert re.findall(r"[a-z]+", listed) == list(GROUPS)
