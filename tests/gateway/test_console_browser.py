"""The memory console in a real headless browser: Playwright driving Debian's Chromium
(`apt-get install chromium`; no browser is downloaded) signs in with the login form, picks
the seeded tenant, browses its memory, facts and graph, packs a context in the playground
and reads a dead letter's reason. Stored markup must stay text: the page never runs it.

Skipped, saying why, only when no Chromium binary is installed. With
`MNEMOSTREAM_CONSOLE_SCREENSHOTS=DIR` each page's screenshot is also saved to DIR (the ones
in docs/console/ were made so)."""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from playwright.async_api import Browser, Page, async_playwright, expect

from tests.gateway.console_support import LETTER_ERROR, LOCKER, Console, console

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="package")]
__all__ = ["console"]  # the fixture, imported to be found here

CANDIDATES = ("chromium", "chromium-browser", "google-chrome")


def chromium_binary() -> str | None:
    """`MNEMOSTREAM_CHROMIUM`, else the first Chromium on PATH, else None."""
    given = os.environ.get("MNEMOSTREAM_CHROMIUM")
    if given:
        return given
    return next((found for name in CANDIDATES if (found := shutil.which(name))), None)


@pytest_asyncio.fixture(loop_scope="package")
async def browser() -> AsyncIterator[Browser]:
    binary = chromium_binary()
    if binary is None:
        pytest.skip(
            "no Chromium binary: install Debian's (`apt-get install -y chromium`) or set "
            "MNEMOSTREAM_CHROMIUM to one; .ci/run installs it"
        )
    async with async_playwright() as p:
        launched = await p.chromium.launch(executable_path=binary, headless=True)
        try:
            yield launched
        finally:
            await launched.close()


class Shots:
    """Each page's screenshot: in the test's directory, and `MNEMOSTREAM_CONSOLE_SCREENSHOTS`."""

    def __init__(self, where: Path) -> None:
        self.where = where
        extra = os.environ.get("MNEMOSTREAM_CONSOLE_SCREENSHOTS")
        self.extra = Path(extra) if extra else None

    async def take(self, page: Page, name: str) -> None:
        path = self.where / f"{name}.png"
        await page.screenshot(path=str(path), full_page=True)
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        if self.extra is not None:
            self.extra.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, self.extra / path.name)


async def test_an_operator_browses_a_tenant_packs_a_context_and_reads_a_dead_letter(
    console: Console, browser: Browser, tmp_path: Path
) -> None:
    shots = Shots(tmp_path)
    context = await browser.new_context(viewport={"width": 1360, "height": 900})
    page = await context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        await page.goto(f"{console.url}/console/memory")
        await expect(page).to_have_url(f"{console.url}/console/login")
        await shots.take(page, "login")
        await page.fill("input[name=credential]", console.operator_key)
        await page.click("button[type=submit]")
        await expect(page).to_have_url(f"{console.url}/console")

        await page.fill("input[name=agent]", console.agent)
        await page.fill("input[name=user]", "ana")
        await page.click("form.pick button")
        await expect(page.locator(".scope")).to_contain_text(console.agent)
        await expect(page.locator(".cards")).to_contain_text("source fact")
        await shots.take(page, "tenant")

        await page.click("nav >> text=Memory")
        rows = page.locator("table.rows")
        await expect(rows).to_contain_text(LOCKER)  # the markup, shown as text
        await expect(rows).to_contain_text("Ana lives in Porto.")
        assert await page.evaluate("typeof window.__pwned") == "undefined"
        assert await page.locator("main script, main img").count() == 0
        await shots.take(page, "memory")

        await page.click("nav >> text=Facts")
        lisbon = page.locator("table.facts tr", has_text="Ana lives in Lisbon.")
        await expect(lisbon).to_contain_text("superseded")
        await expect(lisbon).to_contain_text("2026-03-10 12:00:00 UTC")
        await shots.take(page, "facts")

        await page.click("nav >> text=Graph")
        await expect(page.locator("svg.graph text", has_text="Porto")).to_have_count(1)
        await expect(page.locator("main")).to_contain_text("LIVES_IN")
        await shots.take(page, "graph")

        await page.click("nav >> text=Playground")
        await page.fill("input[name=query]", "What are we planning in Porto?")
        await page.fill("input[name=budget]", "600")
        await page.fill("input[name=thread]", "trip")
        await page.click("form.query button")
        packed = page.locator("table.packed .packed-line")
        await expect(packed.first).to_be_visible()
        lines = await packed.all_inner_texts()
        assert any("Ana lives in Porto." in line for line in lines), lines
        await expect(page.locator("pre.prompt")).to_contain_text("Ana lives in Porto.")
        await expect(page.locator("pre.prompt")).to_contain_text("weekend in Porto")  # working
        await shots.take(page, "playground")

        await page.click("nav >> text=Operations")
        await page.fill("input[name=group]", f"{console.group_prefix}.facts.remember")
        await page.click("form.query button")
        letter = page.locator("table.letters tr", has_text=console.letter_marker)
        await expect(letter).to_contain_text(LETTER_ERROR)
        await expect(letter.locator("button", has_text="Replay")).to_be_visible()
        await expect(page.locator("main")).to_contain_text(f"{console.group_prefix}.facts")
        await shots.take(page, "operations")
    finally:
        await context.close()
    assert errors == []
