"""The audit console over HTTP: login on every route, CSRF, escaping, pagination, filters, the turn
detail with its blocked draft, the daily summary, and server-sent events; and its hardening: limited and
delayed wrong logins, strong tokens, idle sessions, security headers and no-store on every response,
Secure cookies behind a trusted HTTPS proxy, 4xx for malformed requests."""

from __future__ import annotations

import asyncio
import logging
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
        assert "数字是真的，但用错了含义" in page and "已核实" in page                 # the reason, in Chinese
        shown = re.sub(r"<details>.*?</details>", "", page, flags=re.S)              # all but the raw record
        assert "is the total for 1 unit" not in shown and "grounded" not in shown
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
    assert any(f.startswith("单价 ¥120.00") for f in answer.trace.evidence_figures["product:001"])
    audit.record(chat_id="5", user_id="5", message="足球多少钱", result=answer)
    store.flush()
    runner, url = await serve(build_web_app(store, TOKEN))
    try:
        session = await logged_in(url)
        async with session:
            (record,) = store.query()
            page = await (await session.get(f"{url}/turn/{record['id']}")).text()
            assert "单价 ¥120.00" in page and "折扣 9折" in page
    finally:
        await runner.cleanup()
        audit.close()


def test_a_feed_row_of_an_old_record_and_of_an_event():
    from agent.audit_record import TurnRecord
    from handlers.web.app import row_of

    old = row_of(TurnRecord.from_row({"time": "2026-11-29T06:20:05+00:00", "chat_id": "3", "status": "grounded",
                                      "message": "足球多少钱", "verdicts": [{"ok": False, "codes": ["WRONG_ROLE"]}]}))
    assert (old["kind"], old["time"], old["codes"], old["flags"], old["latency_ms"]) == \
        ("turn", "2026-11-29 14:20:05", ["WRONG_ROLE"], ["有拦截"], None)
    assert old["status"] == "已核实" and old["reasons"] == ["数字是真的，但用错了含义（如把下单额说成销售额、把均价说成总额）（WRONG_ROLE）"]
    vote = row_of(TurnRecord.from_row({"time": "t", "kind": "feedback", "chat_id": "3", "value": "down", "id": 2}), "down")
    assert (vote["status"], vote["answer"], vote["flags"], vote["id"]) == ("反馈", "👎", ["👎"], 2)
    relay = row_of(TurnRecord.from_row({"time": "t", "kind": "relay", "chat_id": "3", "direction": "to_customer"}))
    assert (relay["status"], relay["answer"]) == ("转发", "客服 → 顾客")


# --- hardening: login limits, sessions, headers, bad requests (issue 22) -------------------------------

class FakeClock:
    """Seconds that move only when told to, or by a delay the console sleeps (recorded, not waited)."""

    def __init__(self) -> None:
        self.now, self.slept = 1000.0, []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


@pytest.fixture
async def clocked(tmp_path):
    store = AuditStore(tmp_path / "audit.db")
    audit = AuditLog(store)
    audit.record(chat_id="7", user_id="u", message="问题", result=turn("回答"), update_id=77)
    store.flush()
    clock = FakeClock()
    app = build_web_app(store, TOKEN, clock=clock, sleep=clock.sleep)
    runner, url = await serve(app)
    try:
        yield app, clock, url
    finally:
        await runner.cleanup()
        audit.close()


async def try_login(session: aiohttp.ClientSession, url: str, token: str, **headers: str) -> aiohttp.ClientResponse:
    page = await (await session.get(f"{url}/login", headers=headers)).text()
    csrf = re.search(r'name="csrf" value="([^"]+)"', page).group(1)
    if "X-Forwarded-Proto" in headers:   # the login cookie is Secure then: the client would not send it over http
        headers = {**headers, "Cookie": f"kefu_login_csrf={csrf}"}
    return await session.post(f"{url}/login", data={"csrf": csrf, "token": token}, headers=headers,
                              allow_redirects=False)


async def test_200_wrong_logins_are_delayed_then_refused_and_the_token_works_after_the_window(clocked, caplog):
    from handlers.web.app import LoginGuard

    app, clock, url = clocked
    caplog.set_level(logging.INFO)
    guard = LoginGuard()
    wrong = "wrong-guess-Zq81"
    statuses = []
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
        for _ in range(200):
            statuses.append((await try_login(session, url, wrong)).status)
        assert statuses[:guard.per_address] == [401] * guard.per_address
        assert set(statuses[guard.per_address:]) == {429}
        # the delay grows: none for the first few failures, then doubling
        assert clock.slept[:guard.free] == [0.0] * guard.free and clock.slept[guard.free] > 0
        assert clock.slept == sorted(clock.slept) and clock.slept[-1] > clock.slept[guard.free]
        locked = await try_login(session, url, TOKEN)           # the right token, while locked: refused unread
        assert locked.status == 429 and int(locked.headers["Retry-After"]) > 0
        assert 'id="login-limited"' in await locked.text()
        clock.now += guard.window + 1
        good = await try_login(session, url, TOKEN)
        assert good.status == 303 and (await session.get(f"{url}/")).status == 200
    failures = [r for r in caplog.records if "failed login from 127.0.0.1" in r.getMessage()]
    assert len(failures) == guard.per_address
    assert wrong not in caplog.text and TOKEN not in caplog.text


async def test_wrong_logins_from_many_addresses_hit_the_overall_limit(clocked):
    from handlers.web.app import LoginGuard

    _, clock, url = clocked
    guard = LoginGuard()
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
        for n in range(guard.overall):      # each from another address (as a proxy on this host forwards them)
            response = await try_login(session, url, "wrong-guess-Zq81", **{"X-Forwarded-For": f"10.0.{n // 250}.{n % 250}"})
            assert response.status == 401
        fresh = await try_login(session, url, TOKEN, **{"X-Forwarded-For": "10.9.9.9"})
        assert fresh.status == 429
        clock.now += guard.window + 1
        assert (await try_login(session, url, TOKEN, **{"X-Forwarded-For": "10.9.9.9"})).status == 303


@pytest.mark.parametrize("request_", [
    ("GET", "/?page=99999999999999999999"), ("GET", "/?page=abc"), ("GET", "/?page=0"),
    ("GET", "/chat/7?page=99999999999999999999"), ("GET", "/turn/99999999999999999999"), ("GET", "/turn/abc"),
    ("GET", "/?since=0001-01-01"), ("GET", "/?until=9999-12-31"), ("GET", "/?since=yesterday"),
    ("GET", "/events?after=99999999999999999999"), ("GET", "/events?after=x"),
    ("POST", "/logout", {"csrf": "é"}), ("POST", "/logout", {"csrf": "\u00ff" * 40}),
    ("POST", "/logout", b"--x\r\n", "multipart/form-data; boundary=zz"),
    ("POST", "/login", {"csrf": "é", "token": "x"}), ("POST", "/login", {"csrf": "ok", "token": "é"}),
], ids=lambda r: " ".join(str(p)[:40] for p in r[:2]))
async def test_a_malformed_request_gets_a_4xx_and_no_traceback(console, caplog, request_):
    _, _, url = console
    method, path, *body = request_
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
        assert (await try_login(session, url, TOKEN)).status == 303
        session.cookie_jar.update_cookies({"kefu_login_csrf": "ok"})
        kwargs = {"data": body[0]} if body else {}
        if len(body) > 1:
            kwargs["headers"] = {"Content-Type": body[1]}
        async with session.request(method, url + path, allow_redirects=False, **kwargs) as response:
            assert 400 <= response.status < 500, (path, response.status)
            assert "frame-ancestors 'none'" in response.headers["Content-Security-Policy"]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]


async def test_every_response_has_the_security_headers_and_no_store(console, monkeypatch):
    store, _, url = console
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
        login_page = await session.get(f"{url}/login")
        assert (await try_login(session, url, TOKEN)).status == 303
        responses = {"login": login_page, "feed": await session.get(f"{url}/"),
                     "404": await session.get(f"{url}/nope"), "static 404": await session.get(f"{url}/static/nope"),
                     "400": await session.get(f"{url}/?page=x"),
                     "403": await session.post(f"{url}/logout", data={}, allow_redirects=False)}
        monkeypatch.setattr(store, "count", lambda *a: 1 / 0)
        responses["500"] = await session.get(f"{url}/")
    assert [r.status for r in responses.values()] == [200, 200, 404, 404, 400, 403, 500]
    for name, response in responses.items():
        csp = response.headers.get("Content-Security-Policy", "")
        for directive in ("default-src 'self'", "frame-ancestors 'none'", "base-uri 'none'", "form-action 'self'",
                          "object-src 'none'"):
            assert directive in csp, (name, directive)
        assert response.headers.get("X-Content-Type-Options") == "nosniff", name
        assert response.headers.get("X-Frame-Options") == "DENY", name
        if name != "static 404":
            assert response.headers.get("Cache-Control") == "no-store", name
    assert "ZeroDivisionError" not in await responses["500"].text()


async def test_the_session_cookie_is_secure_behind_a_trusted_proxy_saying_https(tmp_path, console):
    _, _, url = console
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
        plain = await try_login(session, url, TOKEN)
        assert plain.status == 303 and "Secure" not in plain.headers["Set-Cookie"]
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
        proxied = await try_login(session, url, TOKEN, **{"X-Forwarded-Proto": "https"})
        cookies = proxied.headers.getall("Set-Cookie")
        assert proxied.status == 303 and all("Secure" in c for c in cookies)
        assert any(c.startswith("kefu_session=") for c in cookies)
    store = AuditStore(tmp_path / "other.db")
    runner, other = await serve(build_web_app(store, TOKEN, trusted_proxies=frozenset()))
    try:    # a peer that is not a trusted proxy is not believed
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
            spoofed = await try_login(session, other, TOKEN, **{"X-Forwarded-Proto": "https"})
            assert spoofed.status == 303 and "Secure" not in spoofed.headers["Set-Cookie"]
    finally:
        await runner.cleanup()
        store.close()


async def test_a_session_ends_after_its_idle_time_and_ended_sessions_are_purged(clocked):
    from handlers.web.app import IDLE_SECONDS, SESSION_SECONDS, SESSIONS

    app, clock, url = clocked
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as left, \
            aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as used:
        assert (await try_login(left, url, TOKEN)).status == 303
        assert (await try_login(used, url, TOKEN)).status == 303
        assert len(app[SESSIONS]) == 2
        for _ in range(3):                     # in use: lives past the idle time
            clock.now += IDLE_SECONDS - 60
            assert (await used.get(f"{url}/")).status == 200
        assert len(app[SESSIONS]) == 1         # the one left idle was purged without being asked for
        assert (await left.get(f"{url}/")).status == 401
        while clock.now < 1000.0 + SESSION_SECONDS:          # in use, but past its whole life
            clock.now += IDLE_SECONDS - 60
            await used.get(f"{url}/")
        assert (await used.get(f"{url}/")).status == 401 and not app[SESSIONS]


@pytest.mark.parametrize("token", [" " * 12, "a" * 12, "a" * 24, "ab" * 10, "short-token-12", "          abcdefgh"[:15]])
async def test_a_weak_token_is_refused_at_start(tmp_path, monkeypatch, token):
    import bot
    from handlers.web.app import audit_console
    from tests.fakes.bot_process import free_port

    monkeypatch.setenv("AUDIT_WEB_PORT", str(free_port()))
    monkeypatch.setenv("AUDIT_WEB_TOKEN", token)
    store = AuditLog(AuditStore(tmp_path / "a.db"))
    try:
        with pytest.raises(bot.StartupError, match="AUDIT_WEB_TOKEN of at least 16 characters") as refused:
            async with audit_console(bot.Settings(), store):
                pass
        assert token not in str(refused.value) and "\n" not in str(refused.value)
        monkeypatch.setenv("AUDIT_WEB_TOKEN", TOKEN)          # a strong one starts
        async with audit_console(bot.Settings(), store):
            pass
    finally:
        store.close()


async def test_a_degraded_turn_says_why_in_chinese_with_the_models_own_words_beside(tmp_path):
    from agent.analytics.labels import degraded_reason
    from agent.breaker import Breaker

    breaker = Breaker("chat", 2, 30)
    breaker.reached()
    for _ in range(2):
        breaker.unreachable()
    reasons = ["turn budget spent", "the chat model timed out", "the chat model answered HTTP 503",
               "the chat model failed: APIConnectionError", "the chat model returned no choices",
               "the model kept answering without submit_answer", "answer rejected 3 times (WRONG_ROLE)",
               "no releasable answer within 6 model calls", breaker.why_skipped()]
    for text in reasons:   # every reason the turn can record (agent/turn.py, openai_model.py, loop.py, breaker.py)
        shown = degraded_reason(text)
        assert shown.endswith(f"（{text}）") and re.match(r"[\u4e00-\u9fff]", shown), shown
        assert not shown.startswith("模型没有给出可发送的答案"), text    # each has its own explanation
    assert degraded_reason(None) == "" and degraded_reason("something new").startswith("模型没有给出可发送的答案")

    store = AuditStore(tmp_path / "audit.db")
    audit = AuditLog(store)
    result = turn("足球售价120元。")
    result.trace.degraded, result.trace.degraded_reason = True, "turn budget spent"
    audit.record(chat_id="9", user_id="u9", message="足球多少钱", result=result)
    store.flush()
    (record,) = store.query(where=AuditFilter(chat_id="9", kind="turn"))
    runner, url = await serve(build_web_app(store, TOKEN))
    try:
        async with await logged_in(url) as session:
            page = await (await session.get(f"{url}/turn/{record['id']}")).text()
        assert "降级原因：本轮时限用尽（turn budget spent）" in page
    finally:
        await runner.cleanup()
        audit.close()
