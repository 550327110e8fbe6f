"""Keep the README true: every setting is documented, CI runs the README's test command, and
every reference bug it lists as fixed has a test named after it (`..._fixes_16_N`)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

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


# --- the commands after the quickstart ------------------------------------------------------

AFTER_QUICKSTART = README.split("\n## How it works", 1)[1]
ACTIVATE = ". .venv/bin/activate"


def _bash_blocks(text: str) -> list[list[str]]:
    """The lines of every ```bash block (indented blocks in lists included)."""
    blocks = re.findall(r"^( *)```bash\n(.*?)^\1```", text, flags=re.DOTALL | re.MULTILINE)
    return [[line[len(indent) :] for line in body.splitlines()] for indent, body in blocks]


def _commands() -> list[str]:
    """Every `mnemostream ...` command of the README: the lines of its bash blocks (comments
    and shell around it cut off) and its inline code spans."""
    found: list[str] = []
    for block in _bash_blocks(README):
        for line in block:
            code = re.split(r"\s#", f" {line}", maxsplit=1)[0]
            for match in re.finditer(r"(?:^|[\s(/])mnemostream\s+([^&;)\"|>]*)", code):
                found.append(match.group(1))
    spans = re.findall(r"`mnemostream\s([^`]*)`", README)
    found += [" ".join(span.split()) for span in spans]
    return found


def test_every_command_block_after_the_quickstart_activates_the_venv() -> None:
    """The quickstart leaves `mnemostream` in .venv/bin, not on the PATH: each later block
    activates the venv first, so it runs as written in a new shell."""
    blocks = _bash_blocks(AFTER_QUICKSTART)
    assert len(blocks) >= 3  # infra, gateway, replay
    for block in blocks:
        assert block[0].split("#")[0].strip() == ACTIVATE, block
    assert f"`{ACTIVATE}`" in AFTER_QUICKSTART.split("```bash", 1)[0]  # and said before them


def test_every_readme_command_and_option_exists() -> None:
    """`mnemostream <command> [<subcommand>] --option` in the README names a real command and
    real options of it (placeholders such as `<ref>` or `NAME` are not checked)."""
    import typer

    from services.ops.cli import app

    root = typer.main.get_command(app)
    commands = _commands()
    assert len(commands) >= 20
    for command in commands:
        words = command.split()
        node: Any = root  # typer's vendored click objects: a group has `commands`
        path = ["mnemostream"]
        while hasattr(node, "commands") and words and words[0] in node.commands:
            node = node.commands[words[0]]
            path.append(words.pop(0))
        assert not hasattr(node, "commands"), f"`mnemostream {command}`: no such command"
        known = {opt for param in node.params for opt in (*param.opts, *param.secondary_opts)}
        for word in words:
            option = word.strip("[]()…,").split("=", 1)[0]
            if option.startswith("--") and option != "--":
                assert option in known | {"--help"}, f"{' '.join(path)} has no {option}"


def _readme_run_groups() -> list[str]:
    listed = re.search(r"or some of them: run ([^\n]*(?:\n +#[^\n]*)*)", AFTER_QUICKSTART)
    assert listed is not None, "the `run` example lists the groups"
    return [name.strip() for name in listed.group(1).replace("#", " ").split("|")]


def test_the_run_example_lists_every_registered_group() -> None:
    from services.groups.app import GROUPS

    assert _readme_run_groups() == list(GROUPS)


def test_run_help_names_every_registered_group() -> None:
    from typer.testing import CliRunner

    from services.groups.app import GROUPS
    from services.ops.cli import app

    result = CliRunner().invoke(app, ["run", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    listed = result.output.split("Consumer groups:", 1)[1].split("; or all", 1)[0]
    assert re.findall(r"[a-z]+", listed) == list(GROUPS)


def test_the_gateway_step_uses_the_gateway_defaults() -> None:
    """The gateway step curls the address `mnemostream gateway` binds by default and names
    the settings it needs (tests/integration/test_infra.py starts it that way)."""
    step = AFTER_QUICKSTART.split("\n### The HTTP gateway\n", 1)[1].split("\n### ", 1)[0]
    fields = Settings.model_fields
    address = f"{fields['gateway_host'].default}:{fields['gateway_port'].default}"
    assert f"`{address}`" in step
    urls = re.findall(r"http://([\d.]+:\d+)/", step)
    assert urls
    assert set(urls) == {address}
    for setting in ("KAFKA_BOOTSTRAP", "GATEWAY_HOST", "GATEWAY_PORT", "GATEWAY_API_KEYS"):
        assert f"MNEMOSTREAM_{setting}" in step
    assert "[Security](#security)" in step
