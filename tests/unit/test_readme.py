"""Keep the README and docs/ true: the README stays short, every relative link resolves, CI
runs the README's test command, every setting is documented, every command and option the
pages show exists, the group lists match the app, and every reference bug listed as fixed has a
test named after it (`..._fixes_16_N`)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from services.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
README_PATH = ROOT / "README.md"
README = README_PATH.read_text()
DOCS = {path.name: path.read_text() for path in sorted((ROOT / "docs").glob("*.md"))}
PAGES = {"README.md": README, **{f"docs/{name}": text for name, text in DOCS.items()}}
README_MAX_BYTES = 12 * 1024


def test_the_readme_is_at_most_12_kb() -> None:
    assert len(README.encode()) <= README_MAX_BYTES, "move the detail into docs/"


def test_the_readme_links_every_docs_page() -> None:
    linked = set(re.findall(r"\]\(docs/([^)#]+)", README))
    assert set(DOCS) - linked == set(), "a docs/ page the README does not link"


def _links(text: str) -> list[str]:
    """The targets of the Markdown links of a page, outside code blocks and code spans."""
    prose = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    prose = re.sub(r"`[^`\n]*`", "", prose)
    return re.findall(r"\]\(([^)\s]+)\)", prose)


def test_every_relative_link_resolves_to_a_file() -> None:
    checked = 0
    for name, text in PAGES.items():
        base = (ROOT / name).parent
        for target in _links(text):
            if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                continue  # an absolute URL, or an anchor of the same page
            path = target.split("#", 1)[0]
            assert (base / path).is_file(), f"{name}: link to {target} resolves to no file"
            checked += 1
    assert checked >= 20


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_every_link_to_a_section_names_a_heading_of_that_page() -> None:
    for name, text in PAGES.items():
        base = (ROOT / name).parent
        for target in _links(text):
            if "#" not in target or re.match(r"[a-z][a-z0-9+.-]*:", target):
                continue
            path, anchor = target.split("#", 1)
            page = (base / path).resolve() if path else (ROOT / name).resolve()
            headings = re.findall(r"^#+ (.+)$", page.read_text(), flags=re.MULTILINE)
            assert anchor in {_anchor(h) for h in headings}, f"{name}: no section {target}"


def test_every_setting_is_in_the_configuration_page() -> None:
    from services.ops.config_doc import rows

    page = DOCS["configuration.md"]
    documented = set(re.findall(r"^\| `(MNEMOSTREAM_[A-Z_]+)`", page, flags=re.MULTILINE))
    expected = {row.variable for row in rows()}
    assert len(expected) >= len(Settings.model_fields)
    assert expected - documented == set()
    assert documented - expected == set()


def test_ci_runs_exactly_the_readme_test_command() -> None:
    commands = re.findall(r"```bash\n(python3 -m venv[^\n]+)\n```", README)
    assert len(commands) == 2, "the quickstart has two commands: run it, test it"
    test_command = commands[1]
    ci_lines = (ROOT / ".ci" / "run").read_text().strip().splitlines()
    assert ci_lines[-1] == test_command


def test_the_readme_shows_the_fast_subset_and_the_full_suite() -> None:
    assert '.venv/bin/python -m pytest -m "not integration"' in README
    assert ".venv/bin/python -m pytest -q" in README


def _fixed_bugs() -> set[int]:
    """The §16 bugs docs/reference.md lists as fixed (`* §16.N ...` under its heading)."""
    listed = DOCS["reference.md"].split("\n## Reference bugs fixed so far", 1)[1]
    listed = listed.split("\n## ", 1)[0]
    return {int(n) for n in re.findall(r"^\* §16\.(\d+) ", listed, flags=re.MULTILINE)}


def test_every_reference_bug_listed_as_fixed_has_a_test_named_after_it() -> None:
    fixed = _fixed_bugs()
    sources = "\n".join(p.read_text() for p in (ROOT / "tests").rglob("test_*.py"))
    named = {int(n) for n in re.findall(r"def test_\w*?fixes_16_(\d+)\b", sources)}
    assert len(fixed) >= 25
    assert fixed - named == set(), "a bug listed as fixed has no test named after it"


def test_every_cited_reference_section_is_in_the_reference_page() -> None:
    """Every "reference §N" of the code names a section of docs/reference.md."""
    cited: set[str] = set()
    for folder in ("engine", "schemas", "services", "tests", "benchmarks"):
        for path in (ROOT / folder).rglob("*.py"):
            cited |= set(re.findall(r"reference §(\d+(?:\.\d+)?)", path.read_text()))
    headings = set(re.findall(r"^#{2,3} (\d+(?:\.\d+)?)\.? ", DOCS["reference.md"], re.MULTILINE))
    assert len(cited) >= 40
    assert cited - headings == set(), "cited sections missing from docs/reference.md"


# --- the commands the pages show -------------------------------------------------------------

ACTIVATE = ". .venv/bin/activate"
AFTER_QUICKSTART = README.split("\n## How it works", 1)[1]


def _bash_blocks(text: str) -> list[list[str]]:
    """The lines of every ```bash block (indented blocks in lists included)."""
    blocks = re.findall(r"^( *)```bash\n(.*?)^\1```", text, flags=re.DOTALL | re.MULTILINE)
    return [[line[len(indent) :] for line in body.splitlines()] for indent, body in blocks]


def _commands() -> list[str]:
    """Every `mnemostream ...` command of the README and docs/: the lines of their bash blocks
    (comments and shell around it cut off) and their inline code spans."""
    found: list[str] = []
    for text in PAGES.values():
        for block in _bash_blocks(text):
            for line in block:
                code = re.split(r"\s#", f" {line}", maxsplit=1)[0]
                for match in re.finditer(r"(?:^|[\s(/])mnemostream\s+([^&;)\"|>]*)", code):
                    found.append(match.group(1))
        spans = re.findall(r"`mnemostream\s([^`]*)`", text)
        found += [" ".join(span.split()) for span in spans]
    return found


def _needs_the_venv(block: list[str]) -> bool:
    """A block that calls `mnemostream` or `python` by name (not through .venv/bin/)."""
    code = " ".join(re.split(r"\s#", f" {line}", maxsplit=1)[0] for line in block)
    return re.search(r"(?:^|[\s(])(?:mnemostream|python)\s", code) is not None


def test_every_command_block_after_the_quickstart_activates_the_venv() -> None:
    """The quickstart leaves `mnemostream` in .venv/bin, not on the PATH: each later block that
    calls it by name activates the venv first, so it runs as written in a new shell."""
    blocks = _bash_blocks(AFTER_QUICKSTART)
    for text in DOCS.values():
        blocks += _bash_blocks(text)
    needing = [block for block in blocks if _needs_the_venv(block)]
    assert len(needing) >= 3  # infra, gateway, replay
    for block in needing:
        assert block[0].split("#")[0].strip() == ACTIVATE, block
    operations = DOCS["operations.md"]
    assert f"`{ACTIVATE}`" in operations.split("```bash", 1)[0]  # and said before them


def test_every_documented_command_and_option_exists() -> None:
    """`mnemostream <command> [<subcommand>] --option` in the README or docs/ names a real
    command and real options of it (placeholders such as `<ref>` or `NAME` are not checked)."""
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


def _documented_run_groups() -> list[str]:
    listed = re.search(r"or some of them: run ([^\n]*(?:\n +#[^\n]*)*)", DOCS["operations.md"])
    assert listed is not None, "the `run` example of docs/operations.md lists the groups"
    return [name.strip() for name in listed.group(1).replace("#", " ").split("|")]


def test_the_run_example_lists_every_registered_group() -> None:
    from services.groups.app import GROUPS

    assert _documented_run_groups() == list(GROUPS)


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
    step = DOCS["gateway.md"].split("\n## Running it\n", 1)[1].split("\n## ", 1)[0]
    from services.ops.config_doc import rows

    defaults = {row.variable: row.default.strip("`") for row in rows()}
    address = f"{defaults['MNEMOSTREAM_GATEWAY_HOST']}:{defaults['MNEMOSTREAM_GATEWAY_PORT']}"
    assert f"`{address}`" in step
    urls = re.findall(r"http://([\d.]+:\d+)/", step)
    assert urls
    assert set(urls) == {address}
    for setting in ("KAFKA_BOOTSTRAP", "GATEWAY_HOST", "GATEWAY_PORT", "GATEWAY_API_KEYS"):
        assert f"MNEMOSTREAM_{setting}" in step
    assert "[security.md](security.md)" in step
