"""docs/configuration.md is the generator's output for the current settings model, so a setting
added, removed, renamed or given another default cannot leave the page behind."""

from __future__ import annotations

from pathlib import Path

from services.ops.config_doc import NOTES, render, rows
from services.settings import Settings

PAGE = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def test_the_committed_page_is_the_generators_output() -> None:
    assert PAGE.read_text() == render(), (
        "regenerate: python -m services.ops.config_doc > docs/configuration.md"
    )


def test_every_setting_has_a_row_and_a_description() -> None:
    listed = list(rows())
    variables = [row.variable for row in listed]
    assert len(variables) == len(set(variables)), "two settings read the same variable"
    assert len(variables) >= len(Settings.model_fields)
    assert all(v.startswith("MNEMOSTREAM_") for v in variables)
    assert [row.variable for row in listed if not row.description] == []


def test_every_note_belongs_to_a_setting() -> None:
    assert set(NOTES) - {row.variable for row in rows()} == set()


def test_the_rows_read_the_variables_pydantic_settings_reads(monkeypatch) -> None:
    """Each documented variable, set in the environment, changes its setting."""
    monkeypatch.setenv("MNEMOSTREAM_MONGO_DB", "from-the-environment")
    monkeypatch.setenv("MNEMOSTREAM_GATEWAY_PORT", "9999")
    dumped = str(Settings().model_dump())
    assert "from-the-environment" in dumped
    assert "9999" in dumped
    variables = {row.variable for row in rows()}
    assert {"MNEMOSTREAM_MONGO_DB", "MNEMOSTREAM_GATEWAY_PORT"} <= variables
