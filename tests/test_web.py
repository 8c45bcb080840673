"""The audit console over HTTP: login on every route, CSRF, escaping, pagination, filters, the turn
detail with its blocked draft, the daily summary, and server-sent events."""

from __future__ import annotations

import asyncio
import re
import time

import aiohttp
import pytest

from agent.audit import AuditFilter, AuditLog
from agent.trace import ToolTrace, TurnResult, TurnTrace, VerdictTrace
from db.audit_store import AuditStore
from handlers.web.app import build_web_app
from tests.fakes.local_http import serve

TOKEN = "console-token-1234"


def turn(answer: str, blocked: bool = False, latency: float = 12.0) -> TurnResult:
    verdicts = [VerdictTrace(False, ["WRONG_ROLE"], "remote", "足球售价108元。", "'108元' is the total for 1 unit")] \
        if blocked else []
    verdicts.append(VerdictTrace(True, [], "remote", answer))
    trace = TurnTrace(model="remote", model_calls=2, latency_ms=latency, verdicts=verdicts, citations=["product:001"],
                      evidence_ids=["product:001", "calc:001:1:regular"],
                      tool_calls=[ToolTrace("get_product_details", {"product_ids": ["001"]}, "verified", 1.5,
                                            ["product:001"])])
    return TurnResult(answer, "grounded", ["product:001"], trace=trace)


@pytest.fixture
async def console(tmp_path):
    store = AuditStore(tmp_path / "audit.db")
    audit = AuditLog(store)
    for n in range(58):
        audit.record(chat_id=str(100 + n % 3), user_id="u", message=f"问题{n}", result=turn(f"回答{n}"))
    audit.record(chat_id="7", user_id="u7", message="<script>alert(1)</script>足球多少钱",
                 result=turn("足球售价120元。", blocked=True), update_id=77)
    audit.event("feedback", "7", update_id=77, value="down")
    store.flush()
    runner, url = await serve(build_web_app(store, TOKEN))
    try:
        yield store, audit, url
    finally:
        await runner.cleanup()
        audit.close()


async def logged_in(url: str) -> aiohttp.ClientSession:
    session = aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))
    page = await (await session.get(f"{url}/login")).text()
    csrf = re.search(r'name="csrf" value="([^"]+)"', page).group(1)
    response = await session.post(f"{url}/login", data={"csrf": csrf, "token": TOKEN}, allow_redirects=False)
    assert response.status == 303 and response.headers["Location"] == "/"
    cookie = response.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    return session


@pytest.mark.parametrize("path", ["/", "/?chat=7", "/chat/7", "/turn/1", "/summary", "/events", "/nope"])
async def test_every_url_needs_the_login(console, path):
    _, _, url = console
    async with aiohttp.ClientSession() as session, session.get(url + path) as response:
        body = await response.text()
    assert response.status == 401 and 'id="login-form"' in body and "问题" not in body


async def test_a_wrong_token_or_a_missing_csrf_gets_the_login_page_again(console):
    _, _, url = console
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
        page = await (await session.get(f"{url}/login")).text()
        csrf = re.search(r'name="csrf" value="([^"]+)"', page).group(1)
        wrong = await session.post(f"{url}/login", data={"csrf": csrf, "token": "guess"}, allow_redirects=False)
        assert wrong.status == 401 and 'id="login-failed"' in await wrong.text()
        no_csrf = await session.post(f"{url}/login", data={"token": TOKEN}, allow_redirects=False)
        assert no_csrf.status == 401 and "kefu_session" not in no_csrf.headers.get("Set-Cookie", "")
        assert (await session.get(f"{url}/")).status == 401


async def test_the_feed_escapes_paginates_and_filters(console):
    _, _, url = console
    session = await logged_in(url)
    async with session:
        first = await (await session.get(f"{url}/")).text()
        assert "&lt;script&gt;alert(1)&lt;/script&gt;足球多少钱" in first and "<script>alert" not in first
        assert first.count('class="detail"') == 50 and 'id="older"' in first and "共 60 条" in first
        second = await (await session.get(f"{url}/?page=2")).text()
        assert second.count('class="detail"') == 10 and 'id="newer"' in second and 'id="live"' not in second
        only = await (await session.get(f"{url}/?chat=7")).text()
        assert only.count('class="detail"') == 2 and "共 2 条" in only and '<span class="flag">👎</span>' in only
        assert (await (await session.get(f"{url}/?code=WRONG_ROLE")).text()).count('class="detail"') == 1
        assert (await (await session.get(f"{url}/?flagged=1")).text()).count('class="detail"') == 1
        assert (await (await session.get(f"{url}/?q=问题57")).text()).count('class="detail"') == 1
        assert (await (await session.get(f"{url}/?kind=feedback")).text()).count('class="detail"') == 1
        thread = await (await session.get(f"{url}/chat/7")).text()
        assert thread.index("&lt;script&gt;") < thread.index("feedback")        # oldest first
        headers = (await session.get(f"{url}/")).headers
        assert "script-src 'self'" in headers["Content-Security-Policy"]


async def test_a_turn_shows_its_blocked_draft_beside_the_answer_sent(console):
    store, _, url = console
    (record,) = store.query(where=AuditFilter(chat_id="7", kind="turn"))
    session = await logged_in(url)
    async with session:
        page = await (await session.get(f"{url}/turn/{record['id']}")).text()
        assert "足球售价108元。" in page and "WRONG_ROLE" in page and "is the total for 1 unit" in page
        assert 'id="answer" class="released">足球售价120元。' in page and "get_product_details" in page
        assert "calc:001:1:regular" in page and 'id="evidence"' in page
        assert (await session.get(f"{url}/turn/999999")).status == 404
        summary = await (await session.get(f"{url}/summary")).text()
        assert "<svg" in summary and "WRONG_ROLE ×1" in summary


async def test_logout_needs_the_csrf_token(console):
    _, _, url = console
    session = await logged_in(url)
    async with session:
        page = await (await session.get(f"{url}/")).text()
        assert (await session.post(f"{url}/logout", data={}, allow_redirects=False)).status == 403
        csrf = re.search(r'name="csrf" value="([^"]+)"', page).group(1)
        out = await session.post(f"{url}/logout", data={"csrf": csrf}, allow_redirects=False)
        assert out.status == 303 and (await session.get(f"{url}/")).status == 401


async def test_server_sent_events_bring_a_new_turn_within_a_second(console):
    store, audit, url = console
    session = await logged_in(url)
    async with session, session.get(f"{url}/events?chat=9", timeout=aiohttp.ClientTimeout(total=10)) as stream:
        assert stream.headers["Content-Type"].startswith("text/event-stream")
        await stream.content.readline()                         # ": connected"
        audit.record(chat_id="8", user_id="u", message="别的会话", result=turn("不显示"))   # filtered out
        audit.record(chat_id="9", user_id="u", message="新问题", result=turn("新回答"))
        started = time.monotonic()
        lines = []
        while not any(line.startswith("data:") for line in lines):
            lines.append((await asyncio.wait_for(stream.content.readline(), 5)).decode())
        assert time.monotonic() - started < 1.0
        data = next(line for line in lines if line.startswith("data:"))
        assert '"message": "新问题"' in data and "别的会话" not in "".join(lines)


async def test_the_console_is_served_only_with_a_token(tmp_path, monkeypatch):
    import bot
    from handlers.web.app import audit_console

    monkeypatch.setenv("AUDIT_WEB_PORT", "18099")
    monkeypatch.delenv("AUDIT_WEB_TOKEN", raising=False)
    settings = bot.Settings()
    store = AuditLog(AuditStore(tmp_path / "a.db"))
    with pytest.raises(bot.StartupError, match="AUDIT_WEB_TOKEN"):
        async with audit_console(settings, store):
            pass
    store.close()


async def test_a_real_turn_shows_the_figures_its_evidence_holds(tmp_path, conn, search):
    from agent.turn import Agent

    store = AuditStore(tmp_path / "audit.db")
    audit = AuditLog(store)
    answer = await Agent(conn, search).answer("足球多少钱", user_id="5")
    assert any(f.startswith("price 120") for f in answer.trace.evidence_figures["product:001"])
    audit.record(chat_id="5", user_id="5", message="足球多少钱", result=answer)
    store.flush()
    runner, url = await serve(build_web_app(store, TOKEN))
    try:
        session = await logged_in(url)
        async with session:
            (record,) = store.query()
            page = await (await session.get(f"{url}/turn/{record['id']}")).text()
            assert "price 120" in page and "rate 0.9" in page
    finally:
        await runner.cleanup()
        audit.close()


def test_a_feed_row_of_an_old_record_and_of_an_event():
    from agent.audit_record import TurnRecord
    from handlers.web.app import row_of

    old = row_of(TurnRecord.from_row({"time": "2026-11-29T06:20:05+00:00", "chat_id": "3", "status": "grounded",
                                      "message": "足球多少钱", "verdicts": [{"ok": False, "codes": ["WRONG_ROLE"]}]}))
    assert (old["kind"], old["time"], old["codes"], old["flags"], old["latency_ms"]) == \
        ("turn", "2026-11-29 14:20:05", ["WRONG_ROLE"], ["blocked"], None)
    vote = row_of(TurnRecord.from_row({"time": "t", "kind": "feedback", "chat_id": "3", "value": "down", "id": 2}), "down")
    assert (vote["status"], vote["answer"], vote["flags"], vote["id"]) == ("feedback", "down", ["👎"], 2)
