"""The audit console: a read-only web page over the audit store, served by the bot's own aiohttp server.
A login form (AUDIT_WEB_TOKEN, constant-time comparison) sets an HttpOnly, SameSite=Strict session
cookie; every POST carries a CSRF token; every page escapes what it shows (Jinja2 autoescape; the live
feed's script builds rows with textContent). Live updates by server-sent events."""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import aiohttp_jinja2
import jinja2
from aiohttp import web

from agent.analytics.stats import combine, from_counts
from agent.audit import AuditFilter, AuditLog, TurnRecord
from agent.clock import SHANGHAI, now_shanghai, start_of_day
from agent.settings import Settings, StartupError

HERE = Path(__file__).resolve().parent
log = logging.getLogger(__name__)
SESSION_COOKIE, CSRF_COOKIE = "kefu_session", "kefu_login_csrf"
SESSION_SECONDS = 12 * 3600
PAGE_SIZE = 50
SSE_POLL_SECONDS = 0.3
READER = web.AppKey("reader", object)
SESSIONS = web.AppKey("sessions", dict)
TOKEN = web.AppKey("token", str)
SESSION = web.RequestKey("session", dict)
CLOSING = web.AppKey("closing", asyncio.Event)


def local_time(iso: str | None) -> str:
    """UTC ISO → Asia/Shanghai "2026-11-29 14:20:05"."""
    if not iso:
        return ""
    try:
        return datetime.fromisoformat(iso).astimezone(SHANGHAI).strftime("%Y-%m-%d %H:%M:%S")
    except ValueError:
        return iso


VOTE = {"up": "👍", "down": "👎"}


def row_of(record: TurnRecord, vote: str | None = None) -> dict[str, Any]:
    """What the feed shows of a record (also sent by the live stream, and rendered there as text)."""
    return {"id": record.id, "time": local_time(record.time), "kind": record.kind,
            "chat_id": record.chat_id, "user_id": record.user_id,
            "message": record.message or record.text or "",
            "answer": record.answer or record.value or record.direction or "",
            "status": record.status or record.kind, "latency_ms": record.latency_ms,
            "model_calls": record.model_calls, "flags": [*record.marks, *([VOTE[vote]] if vote in VOTE else [])],
            "codes": list(record.blocked_codes)}


def _parse_day(text: str | None, end: bool = False) -> datetime | None:
    if not text:
        return None
    try:
        day = datetime.fromisoformat(text).replace(tzinfo=SHANGHAI)
    except ValueError:
        return None
    return day + timedelta(days=1) if end and len(text) <= 10 else day


def filter_of(query: dict[str, str]) -> AuditFilter:
    """A filter from the URL (so a filtered view is a link to share)."""
    return AuditFilter(
        since=_parse_day(query.get("since")), until=_parse_day(query.get("until"), end=True),
        chat_id=query.get("chat") or None, user_id=query.get("user") or None, status=query.get("status") or None,
        kind=query.get("kind") or None, code=query.get("code") or None,
        blocked_only=query.get("flagged") == "1", text=query.get("q") or None)


# --- sessions and protection --------------------------------------------------------------------------

def _session(request: web.Request) -> dict[str, Any] | None:
    sid = request.cookies.get(SESSION_COOKIE, "")
    session = request.app[SESSIONS].get(sid)
    if session is None or session["expires"] < time.time():
        return None
    return session


@web.middleware
async def require_login(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]):
    """Every URL but the login form and the static files needs a session; without one, the login page."""
    if request.path in ("/login",) or request.path.startswith("/static/"):
        return await handler(request)
    session = _session(request)
    if session is None:
        return await _login_page(request)
    request[SESSION] = session
    if request.method == "POST" and not hmac.compare_digest(
            (await request.post()).get("csrf", ""), session["csrf"]):
        raise web.HTTPForbidden(text="CSRF token missing or wrong")
    return await handler(request)


@web.middleware
async def security_headers(request: web.Request, handler):
    response = await handler(request)
    response.headers.setdefault("Content-Security-Policy",
                                "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'")
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    response.headers.setdefault("Referrer-Policy", "same-origin")
    response.headers.setdefault("X-Frame-Options", "DENY")
    return response


async def _login_page(request: web.Request, failed: bool = False) -> web.Response:
    """The login form. Its CSRF token is kept in a cookie for /login (reused while it lasts: a browser's
    own requests, such as the favicon, must not replace the token of the form on screen)."""
    csrf = request.cookies.get(CSRF_COOKIE) or secrets.token_urlsafe(24)
    response = aiohttp_jinja2.render_template("login.html", request, {"login_csrf": csrf, "failed": failed},
                                              status=401 if failed or request.path != "/login" else 200)
    if request.cookies.get(CSRF_COOKIE) != csrf:
        response.set_cookie(CSRF_COOKIE, csrf, httponly=True, samesite="Strict", path="/", max_age=3600)
    return response


async def login(request: web.Request) -> web.Response:
    if request.method == "GET":
        return await _login_page(request)
    form = await request.post()
    cookie = request.cookies.get(CSRF_COOKIE, "")
    ok_csrf = bool(cookie) and hmac.compare_digest(str(form.get("csrf", "")), cookie)
    ok_token = hmac.compare_digest(str(form.get("token", "")).encode(), request.app[TOKEN].encode())
    if not (ok_csrf and ok_token):
        return await _login_page(request, failed=True)
    sid = secrets.token_urlsafe(32)
    request.app[SESSIONS][sid] = {"csrf": secrets.token_urlsafe(24), "expires": time.time() + SESSION_SECONDS}
    response = web.Response(status=303, headers={"Location": "/"})
    response.set_cookie(SESSION_COOKIE, sid, httponly=True, samesite="Strict", path="/", max_age=SESSION_SECONDS)
    return response


async def logout(request: web.Request) -> web.Response:
    request.app[SESSIONS].pop(request.cookies.get(SESSION_COOKIE, ""), None)
    response = web.Response(status=303, headers={"Location": "/login"})
    response.del_cookie(SESSION_COOKIE, path="/")
    return response


# --- views ------------------------------------------------------------------------------------------------

def _page(request: web.Request) -> int:
    try:
        return max(1, int(request.query.get("page", "1")))
    except ValueError:
        return 1


def _link(request: web.Request, **changes: Any) -> str:
    params = {k: v for k, v in {**request.query, **{k: str(v) for k, v in changes.items()}}.items() if v}
    return f"{request.path}?{urlencode(params)}" if params else request.path


async def _read(request: web.Request, method: str, *args: Any) -> Any:
    return await asyncio.to_thread(getattr(request.app[READER], method), *args)


async def _records(request: web.Request, *args: Any) -> list[TurnRecord]:
    """The reader's `query`, each row typed once (in the same thread, off the event loop)."""
    reader = request.app[READER]
    return await asyncio.to_thread(lambda: [TurnRecord.from_row(row) for row in reader.query(*args)])


async def feed(request: web.Request) -> web.Response:
    where, page = filter_of(dict(request.query)), _page(request)
    records = await _records(request, where, PAGE_SIZE, (page - 1) * PAGE_SIZE)
    total = await _read(request, "count", where)
    latest = await _read(request, "latest_id")
    votes = await _read(request, "feedback_for", [r.update_id for r in records if r.is_turn])
    return aiohttp_jinja2.render_template("feed.html", request, {
        "rows": [row_of(r, votes.get(r.update_id)) for r in records], "query": dict(request.query), "page": page, "total": total,
        "pages": max(1, -(-total // PAGE_SIZE)), "newer": _link(request, page=page - 1) if page > 1 else None,
        "older": _link(request, page=page + 1) if page * PAGE_SIZE < total else None, "latest": latest,
        "live": page == 1, "stream": "/events?" + urlencode({k: v for k, v in request.query.items() if v}),
        "csrf": request[SESSION]["csrf"]})


async def thread(request: web.Request) -> web.Response:
    chat, page = request.match_info["chat_id"], _page(request)
    where = AuditFilter(chat_id=chat)
    records = await _records(request, where, PAGE_SIZE, (page - 1) * PAGE_SIZE, False)
    total = await _read(request, "count", where)
    return aiohttp_jinja2.render_template("thread.html", request, {
        "chat": chat, "rows": [row_of(r) for r in records], "page": page, "total": total,
        "older": _link(request, page=page - 1) if page > 1 else None,
        "newer": _link(request, page=page + 1) if page * PAGE_SIZE < total else None,
        "csrf": request[SESSION]["csrf"]})


async def turn(request: web.Request) -> web.Response:
    try:
        stored = await _read(request, "get", int(request.match_info["record_id"]))
    except ValueError:
        stored = None
    if stored is None:
        raise web.HTTPNotFound(text="no such record")
    record = TurnRecord.from_row(stored)
    return aiohttp_jinja2.render_template("turn.html", request, {
        "r": record, "row": row_of(record), "raw": json.dumps(stored, ensure_ascii=False, indent=1),
        "csrf": request[SESSION]["csrf"]})


async def summary(request: web.Request) -> web.Response:
    try:
        days = min(max(int(request.query.get("days", "14")), 1), 90)
    except ValueError:
        days = 14
    today = start_of_day(now_shanghai())
    start = today - timedelta(days=days - 1)
    counted = {d["day"]: d for d in await _read(request, "daily", start)}
    rows = []
    for n in range(days):
        day = (start + timedelta(days=n)).strftime("%Y-%m-%d")
        stats = from_counts(counted.get(day, {}))
        blocked = int(counted.get(day, {}).get("blocked") or 0)
        rows.append({"day": day, "stats": stats, "blocked": blocked,
                     "block_rate": blocked / stats.turns if stats.turns else 0.0})
    return aiohttp_jinja2.render_template("summary.html", request, {
        "rows": rows, "days": days, "total": from_counts(combine(list(counted.values()))), "chart": _chart(rows),
        "csrf": request[SESSION]["csrf"]})


def _chart(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Bars of turns per day and a line of the block rate, as SVG coordinates (drawn by the template)."""
    width, height, pad = 720, 220, 30
    most = max((r["stats"].turns for r in rows), default=0) or 1
    step = (width - 2 * pad) / max(len(rows), 1)
    bars, points = [], []
    for i, r in enumerate(rows):
        h = (height - 2 * pad) * r["stats"].turns / most
        x = pad + i * step
        bars.append({"x": round(x + step * 0.15, 1), "y": round(height - pad - h, 1), "w": round(step * 0.7, 1),
                     "h": round(h, 1), "label": r["day"][5:], "turns": r["stats"].turns})
        points.append(f"{x + step / 2:.1f},{height - pad - (height - 2 * pad) * r['block_rate']:.1f}")
    return {"width": width, "height": height, "bars": bars, "line": " ".join(points), "pad": pad}


async def events(request: web.Request) -> web.StreamResponse:
    """Server-sent events: every new record matching the page's filter, as JSON rows."""
    where = filter_of(dict(request.query))
    try:
        last = int(request.headers.get("Last-Event-ID") or request.query.get("after") or 0)
    except ValueError:
        last = 0
    if not last:
        last = await _read(request, "latest_id")
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache",
                                           "X-Accel-Buffering": "no"})
    await response.prepare(request)
    await response.write(b": connected\n\n")
    closing = request.app[CLOSING]
    try:
        while not closing.is_set() and request.transport is not None and not request.transport.is_closing():
            for record in await _records(request, where, 200, 0, False, last):
                last = record.id
                data = json.dumps(row_of(record), ensure_ascii=False)
                await response.write(f"id: {last}\nevent: record\ndata: {data}\n\n".encode())
            try:   # wake at once on shutdown instead of holding the server open
                await asyncio.wait_for(closing.wait(), SSE_POLL_SECONDS)
            except TimeoutError:
                pass
    except ConnectionResetError:
        pass
    return response


def build_web_app(reader: Any, token: str) -> web.Application:
    """The console over an audit reader (AuditReader / AuditStore); `token` is AUDIT_WEB_TOKEN."""
    app = web.Application(middlewares=[security_headers, require_login])
    app[READER], app[SESSIONS], app[TOKEN], app[CLOSING] = reader, {}, token, asyncio.Event()

    async def stop_streams(app: web.Application) -> None:
        app[CLOSING].set()

    app.on_shutdown.append(stop_streams)
    env = aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(HERE / "templates"), autoescape=True)
    env.filters["pretty_json"] = lambda v: json.dumps(v, ensure_ascii=False, indent=1)
    app.router.add_route("*", "/login", login)
    app.router.add_post("/logout", logout)
    app.router.add_get("/", feed)
    app.router.add_get("/chat/{chat_id}", thread)
    app.router.add_get("/turn/{record_id}", turn)
    app.router.add_get("/summary", summary)
    app.router.add_get("/events", events)
    app.router.add_static("/static/", HERE / "static")
    return app


@asynccontextmanager
async def audit_console(settings: Settings, audit: AuditLog) -> AsyncIterator[None]:
    """The web audit console on AUDIT_WEB_PORT while the bot runs (nothing when the port is unset)."""
    if settings.audit_web_port is None:
        yield
        return
    if settings.audit_web_token is None or len(settings.audit_web_token.get_secret_value()) < 12:
        raise StartupError("AUDIT_WEB_PORT needs AUDIT_WEB_TOKEN (at least 12 characters) for the login")
    runner = web.AppRunner(build_web_app(audit.store, settings.audit_web_token.get_secret_value()))
    await runner.setup()
    try:
        await web.TCPSite(runner, settings.audit_web_host, settings.audit_web_port).start()
    except OSError as exc:
        await runner.cleanup()
        raise StartupError(f"AUDIT_WEB_PORT: cannot listen on {settings.audit_web_host}:{settings.audit_web_port} "
                           f"({exc.strerror})") from None
    log.info("audit console on http://%s:%d/", settings.audit_web_host, settings.audit_web_port)
    try:
        yield
    finally:
        await runner.cleanup()
