"""The audit console in a real browser: Debian's headless Chromium driven by selenium (chromedriver from
the same Debian package; nothing is downloaded). The real bot answers through the fake Bot API with a
scripted model whose first draft is blocked; the page shows the turn live, its blocked draft and reason
code, and filters by chat."""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

from tests.fakes.bot_process import free_port
from tests.fakes.openai_server import tool_call
from tests.fakes.remote_bot import remote_bot

TOKEN = "browser-test-token-42"
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"


@pytest.fixture
def browser():
    if not (Path(CHROMIUM).exists() and shutil.which(CHROMEDRIVER)):
        pytest.fail("Debian's chromium and chromium-driver are needed (.ci/run installs them)")
    options = Options()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1000",
                     "--lang=zh-CN"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.implicitly_wait(0)
    try:
        yield driver
    finally:
        driver.quit()


async def until(condition, within: float = 20.0, what: str = "the page"):
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        value = await asyncio.to_thread(condition)
        if value:
            return value
        await asyncio.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def blocked_then_true(body: dict) -> dict:
    """Looks the product up, submits a price that is really the discounted total (blocked), then the price."""
    results = [m for m in body["messages"] if m["role"] == "tool"]
    if not results:
        return {"tool_calls": [tool_call("search_products", {"query": "足球", "top_k": 3})]}
    answer = "足球售价108元。" if len(results) == 1 else "足球售价120元。"
    return {"tool_calls": [tool_call("submit_answer", {"answer": answer, "citation_ids": ["product:001"],
                                                       "status": "grounded"}, f"call_{len(results)}")]}


def rows_text(driver) -> list[str]:
    return [row.text for row in driver.find_elements(By.CSS_SELECTOR, "#rows tr")]


async def test_a_turn_appears_live_with_its_blocked_draft(tmp_path, browser):
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    async with remote_bot(tmp_path, blocked_then_true, AUDIT_WEB_PORT=str(port), AUDIT_WEB_TOKEN=TOKEN) as world:
        await asyncio.to_thread(browser.get, base + "/")
        assert browser.find_element(By.ID, "login-form")
        browser.find_element(By.ID, "token").send_keys(TOKEN)
        await asyncio.to_thread(browser.find_element(By.ID, "login-button").click)
        await until(lambda: browser.find_elements(By.ID, "live"), what="the live feed")

        await world.telegram.say(31, "足球多少钱")
        await world.telegram.say(32, "篮球多少钱")
        (reply,) = await world.telegram.wait_replies(31, 1)
        assert "120元" in reply and "108" not in reply
        await until(lambda: any("足球多少钱" in t for t in rows_text(browser)), what="the turn in the live feed")
        await until(lambda: any("篮球多少钱" in t for t in rows_text(browser)), what="the second turn")
        row = next(r for r in browser.find_elements(By.CSS_SELECTOR, "#rows tr") if "足球多少钱" in r.text)
        (code,) = [c.text for c in row.find_elements(By.CSS_SELECTOR, ".code")]   # why the first draft was blocked
        assert code.startswith(("UNVERIFIED_", "WRONG_ROLE")) and "有拦截" in row.text

        await asyncio.to_thread(row.find_element(By.CSS_SELECTOR, "a.detail").click)
        await until(lambda: browser.find_elements(By.CSS_SELECTOR, "section.verdict.blocked"), what="the detail")
        blocked = browser.find_element(By.CSS_SELECTOR, "section.verdict.blocked")
        assert "足球售价108元。" in blocked.text and code in blocked.text
        assert "足球售价120元。" in browser.find_element(By.ID, "answer").text

        await asyncio.to_thread(browser.get, base + "/")
        chat = browser.find_element(By.NAME, "chat")
        chat.send_keys("32")
        await asyncio.to_thread(browser.find_element(By.ID, "apply").click)
        await until(lambda: "chat=32" in browser.current_url and "共 1 条" in browser.page_source,
                    what="the filtered view")
        texts = rows_text(browser)
        assert texts and all("篮球多少钱" in t for t in texts) and not any("足球多少钱" in t for t in texts)
        shot = tmp_path / "audit-console.png"
        assert await asyncio.to_thread(browser.save_screenshot, str(shot)) and shot.stat().st_size > 10_000


async def test_without_the_token_every_url_shows_the_login_page(tmp_path, browser):
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    async with remote_bot(tmp_path, blocked_then_true, AUDIT_WEB_PORT=str(port), AUDIT_WEB_TOKEN=TOKEN):
        for path in ["/", "/?chat=1", "/chat/1", "/turn/1", "/summary", "/events"]:
            await asyncio.to_thread(browser.get, base + path)
            assert browser.find_elements(By.ID, "login-form"), path
        browser.find_element(By.ID, "token").send_keys("not-the-token")
        await asyncio.to_thread(browser.find_element(By.ID, "login-button").click)
        await until(lambda: browser.find_elements(By.ID, "login-failed"), what="the refused login")   # a new page
        assert browser.find_elements(By.ID, "login-form")
