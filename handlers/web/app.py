"""The audit console: a read-only web page over the audit store, served by the bot's own aiohttp server.
A login form (AUDIT_WEB_TOKEN, constant-time comparison) sets an HttpOnly, SameSite=Strict session
cookie (Secure over HTTPS, or behind a trusted proxy that says X-Forwarded-Proto: https); wrong tokens
are limited per address and overall, with a growing delay; sessions end after 12 h, or 30 min idle.
Every POST carries a CSRF token; every page escapes what it shows (Jinja2 autoescape; the live feed's
script builds rows with textContent); every response, errors included, carries the security headers and
no-store. A bad request gets a 4xx, never a 500. Live updates by server-sent events."""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import math
import secrets
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import aiohttp_jinja2
import jinja2
from aiohttp import web

from agent.analytics.labels import (
    FLAG_LABELS,
    degraded_reason,
    flag_label,
    kind_label,
    mark_label,
    reason,
    status_label,
)
from agent.analytics.stats import combine, from_counts
from agent.audit import AuditFilter, AuditLog, TurnRecord
from agent.clock import SHANGHAI, now_shanghai, start_of_day
from agent.settings import Settings, StartupError

HERE = Path(__file__).resolve().parent
log = logging.getLogger(__name__)
SESSION_COOKIE, CSRF_COOKIE = "kefu_session", "kefu_login_csrf"
SESSION_SECONDS = 12 * 3600          # a session's whole life
IDLE_SECONDS = 30 * 60               # ... and how long it lasts without a request
PURGE_SECONDS = 60                   # how often ended sessions and old failed logins are dropped
MIN_TOKEN_CHARS, MIN_TOKEN_DISTINCT = 16, 8
PAGE_SIZE = 50
MAX_PAGE = 100_000
MAX_ID = 2**63 - 1                   # SQLite's largest integer (PostgreSQL's bigint too)
SSE_POLL_SECONDS = 0.3
CSP = ("default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; object-src 'none'; "
       "frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
SECURITY_HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff",
                    "Referrer-Policy": "same-origin", "X-Frame-Options": "DENY",
                    "Cross-Origin-Opener-Policy": "same-origin"}
# Peers whose X-Forwarded-Proto / X-Forwarded-For are believed: a reverse proxy on the same host.
TRUSTED_PROXIES = frozenset({"127.0.0.1", "::1"})
READER = web.AppKey("reader", object)
SESSIONS = web.AppKey("sessions", dict)
TOKEN = web.AppKey("token", str)
SESSION = web.RequestKey("session", dict)
CLOSING = web.AppKey("closing", asyncio.Event)
CLOCK = web.AppKey("clock", object)
SLEEP = web.AppKey("sleep", object)
GUARD = web.AppKey("guard", object)
PROXIES = web.AppKey("proxies", frozenset)
PURGED = web.AppKey("purged", list)


def token_problem(token: str | None) -> str | None:
    """Why a console token is too weak to start with (None: strong enough)."""
    if token is None or len(token) < MIN_TOKEN_CHARS or len(set(token)) < MIN_TOKEN_DISTINCT \
            or not token.strip():
        return (f"AUDIT_WEB_PORT needs AUDIT_WEB_TOKEN of at least {MIN_TOKEN_CHARS} characters, "
                f"{MIN_TOKEN_DISTINCT} of them different, for the login "
                "(python -c 'import secrets; print(secrets.token_urlsafe(24))' makes one)")
    return None


class LoginGuard:
    """Failed logins in a sliding window, per client address and overall. Past `free` failures an address
    waits a delay that doubles with each further failure (up to `max_delay`); at `per_address` failures
    that address, and at `overall` failures every address, is refused without its token being looked at
    until the oldest failure leaves the window. A good login clears its address (not the overall count)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, window: float = 900.0, per_address: int = 10,
                 overall: int = 100, free: int = 3, max_delay: float = 8.0):
        self.clock, self.window, self.per_address, self.overall = clock, window, per_address, overall
        self.free, self.max_delay = free, max_delay
        self.by_address: dict[str, deque[float]] = {}
        self.all: deque[float] = deque()

    def _prune(self, times: deque[float], now: float) -> deque[float]:
        while times and times[0] <= now - self.window:
            times.popleft()
        return times

    def purge(self) -> None:
        now = self.clock()
        self._prune(self.all, now)
        for address in [a for a, times in self.by_address.items() if not self._prune(times, now)]:
            del self.by_address[address]

    def retry_after(self, address: str) -> float:
        """Seconds until `address` may try again (0: now)."""
        now = self.clock()
        waits = []
        mine = self._prune(self.by_address.get(address, deque()), now)
        if len(mine) >= self.per_address:
            waits.append(mine[-self.per_address] + self.window - now)
        if len(self._prune(self.all, now)) >= self.overall:
            waits.append(self.all[-self.overall] + self.window - now)
        return max(waits, default=0.0)

    def failed(self, address: str) -> float:
        """Count a failure; returns the delay to wait before answering it."""
        now = self.clock()
        mine = self._prune(self.by_address.setdefault(address, deque()), now)
        mine.append(now)
        self._prune(self.all, now).append(now)
        extra = max(len(mine) - self.free, (len(self.all) - self.overall // 2) // 10)
        return 0.0 if extra <= 0 else min(self.max_delay, 0.5 * 2 ** (extra - 1))

    def succeeded(self, address: str) -> None:
        self.by_address.pop(address, None)


def _peer_trusted(request: web.Request) -> bool:
    return request.remote in request.app[PROXIES]


def _client(request: web.Request) -> str:
    """The client's address: the peer, or the last X-Forwarded-For hop when the peer is a trusted proxy."""
    forwarded = request.headers.get("X-Forwarded-For", "")
    if forwarded and _peer_trusted(request):
        return forwarded.rsplit(",", 1)[-1].strip()[:64] or str(request.remote)
    return str(request.remote)


def _secure(request: web.Request) -> bool:
    """Served over HTTPS: by this server, or by a trusted proxy that says so."""
    proto = request.headers.get("X-Forwarded-Proto", "")
    return request.secure or (_peer_trusted(request) and proto.rsplit(",", 1)[-1].strip().lower() == "https")


def _same(given: Any, expected: str) -> bool:
    """Constant-time equality of a form or cookie value with a secret (any text; a file field is not equal)."""
    return isinstance(given, str) and hmac.compare_digest(given.encode("utf-8", "surrogatepass"),
                                                          expected.encode("utf-8", "surrogatepass"))


async def _form(request: web.Request) -> Any:
    try:
        return await request.post()
    except ValueError:          # a malformed multipart body
        raise web.HTTPBadRequest(text="malformed form") from None


def local_time(iso: str | None) -> str:
    """UTC ISO → Asia/Shanghai "2026-11-29 14:20:05"."""
    if not iso:
        return ""
    try:
        return datetime.fromisoformat(iso).astimezone(SHANGHAI).strftime("%Y-%m-%d %H:%M:%S")
    except ValueError:
        return iso


VOTE = {"up": "👍", "down": "👎"}
DIRECTION = {"to_operators": "顾客 → 客服", "to_customer": "客服 → 顾客"}


def row_of(record: TurnRecord, vote: str | None = None) -> dict[str, Any]:
    """What the feed shows of a record (also sent by the live stream, and rendered there as text)."""
    return {"id": record.id, "time": local_time(record.time), "kind": record.kind,
            "chat_id": record.chat_id, "user_id": record.user_id,
            "message": record.message or record.text or "",
            "answer": record.answer or VOTE.get(record.value or "", record.value or "") or
            DIRECTION.get(record.direction or "", record.direction or ""),
            "status": status_label(record.status) if record.status else kind_label(record.kind),
            "latency_ms": record.latency_ms, "model_calls": record.model_calls,
            "flags": [*map(mark_label, record.marks), *map(flag_label, record.flags),
                      *([VOTE[vote]] if vote in VOTE else [])],
            "codes": list(record.blocked_codes), "reasons": [reason(c) for c in record.blocked_codes]}


def _parse_day(text: str | None, end: bool = False) -> datetime | None:
    """A day (or a moment) in Asia/Shanghai; unparsable or out of range: 400."""
    if not text:
        return None
    try:
        day = datetime.fromisoformat(text).replace(tzinfo=SHANGHAI)
        day = day + timedelta(days=1) if end and len(text) <= 10 else day
        day.astimezone(UTC)     # years 1 and 9999 overflow here, as in the store
    except (ValueError, OverflowError):
        raise web.HTTPBadRequest(text="since/until: a date such as 2026-11-29") from None
    return day


def filter_of(query: dict[str, str]) -> AuditFilter:
    """A filter from the URL (so a filtered view is a link to share)."""
    return AuditFilter(
        since=_parse_day(query.get("since")), until=_parse_day(query.get("until"), end=True),
        chat_id=query.get("chat") or None, user_id=query.get("user") or None, status=query.get("status") or None,
        kind=query.get("kind") or None, code=query.get("code") or None,
        blocked_only=query.get("flagged") == "1", text=query.get("q") or None,
        flag=query.get("sign") if query.get("sign") in FLAG_LABELS else None,
        misunderstood=query.get("misunderstood") == "1")


# --- sessions and protection --------------------------------------------------------------------------

def _alive(session: dict[str, Any], now: float) -> bool:
    return now < session["expires"] and now < session["seen"] + IDLE_SECONDS


def _purge(app: web.Application) -> None:
    """Drop ended sessions and old failed logins (at most once a PURGE_SECONDS)."""
    now = app[CLOCK]()
    if now - app[PURGED][0] < PURGE_SECONDS:
        return
    app[PURGED][0] = now
    sessions = app[SESSIONS]
    for sid in [sid for sid, session in sessions.items() if not _alive(session, now)]:
        del sessions[sid]
    app[GUARD].purge()


def _session(request: web.Request) -> dict[str, Any] | None:
    """The request's live session (its idle time restarts); an ended one is dropped."""
    _purge(request.app)
    sid = request.cookies.get(SESSION_COOKIE, "")
    session = request.app[SESSIONS].get(sid)
    now = request.app[CLOCK]()
    if session is None or not _alive(session, now):
        request.app[SESSIONS].pop(sid, None)
        return None
    session["seen"] = now
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
    if request.method == "POST" and not _same((await _form(request)).get("csrf", ""), session["csrf"]):
        raise web.HTTPForbidden(text="CSRF token missing or wrong")
    return await handler(request)


@web.middleware
async def no_tracebacks(request: web.Request, handler):
    """A 4xx stays a 4xx; anything else unexpected is a plain 500 (logged once here, with its traceback)."""
    try:
        return await handler(request)
    except web.HTTPException:
        raise
    except (asyncio.CancelledError, ConnectionResetError):
        raise
    except Exception:
        log.exception("audit console: %s %s failed", request.method, request.path)
        raise web.HTTPInternalServerError(text="internal error") from None


async def security_headers(request: web.Request, response: web.StreamResponse) -> None:
    """On every response as it is sent (pages, files, the event stream, 4xx and 500 alike)."""
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    if not request.path.startswith("/static/"):
        response.headers["Cache-Control"] = "no-store"


async def _login_page(request: web.Request, failed: bool = False, retry_after: float = 0) -> web.Response:
    """The login form. Its CSRF token is kept in a cookie for /login (reused while it lasts: a browser's
    own requests, such as the favicon, must not replace the token of the form on screen)."""
    cookie = request.cookies.get(CSRF_COOKIE, "")
    csrf = cookie if cookie.isascii() and cookie.replace("-", "").replace("_", "").isalnum() \
        else secrets.token_urlsafe(24)
    status = 429 if retry_after else 401 if failed or request.path != "/login" else 200
    response = aiohttp_jinja2.render_template("login.html", request, {
        "login_csrf": csrf, "failed": failed, "retry_minutes": math.ceil(retry_after / 60)}, status=status)
    if retry_after:
        response.headers["Retry-After"] = str(math.ceil(retry_after))
    if cookie != csrf:
        response.set_cookie(CSRF_COOKIE, csrf, httponly=True, samesite="Strict", path="/", max_age=3600,
                            secure=_secure(request))
    return response


async def login(request: web.Request) -> web.Response:
    if request.method == "GET":
        return await _login_page(request)
    guard, address = request.app[GUARD], _client(request)
    wait = guard.retry_after(address)
    if wait:
        log.warning("audit console: login from %s refused, too many failed logins (again in %d s)",
                    address, math.ceil(wait))
        return await _login_page(request, failed=True, retry_after=wait)
    form = await _form(request)
    cookie = request.cookies.get(CSRF_COOKIE, "")
    ok_csrf = bool(cookie) and _same(form.get("csrf", ""), cookie)
    ok_token = _same(form.get("token", ""), request.app[TOKEN])
    if not (ok_csrf and ok_token):
        delay = guard.failed(address)
        log.warning("audit console: failed login from %s (%s; %d from this address, %d overall in %d min)",
                    address, "wrong token" if ok_csrf else "missing or wrong CSRF token",
                    len(guard.by_address.get(address, ())), len(guard.all), guard.window // 60)
        await request.app[SLEEP](delay)
        return await _login_page(request, failed=True)
    guard.succeeded(address)
    _purge(request.app)
    sid, now = secrets.token_urlsafe(32), request.app[CLOCK]()
    request.app[SESSIONS][sid] = {"csrf": secrets.token_urlsafe(24), "expires": now + SESSION_SECONDS, "seen": now}
    log.info("audit console: login from %s", address)
    response = web.Response(status=303, headers={"Location": "/"})
    response.set_cookie(SESSION_COOKIE, sid, httponly=True, samesite="Strict", path="/", max_age=SESSION_SECONDS,
                        secure=_secure(request))
    return response


async def logout(request: web.Request) -> web.Response:
    request.app[SESSIONS].pop(request.cookies.get(SESSION_COOKIE, ""), None)
    response = web.Response(status=303, headers={"Location": "/login"})
    response.del_cookie(SESSION_COOKIE, path="/")
    return response


# --- views ------------------------------------------------------------------------------------------------

def _page(request: web.Request) -> int:
    text = request.query.get("page", "1")
    if not (text.isascii() and text.isdigit() and 1 <= int(text[:7]) <= MAX_PAGE):
        raise web.HTTPBadRequest(text=f"page: a number from 1 to {MAX_PAGE}")
    return int(text)


def _record_id(text: str) -> int | None:
    """A record id from the URL (None: not one, or beyond any id the store can hold)."""
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 19 and int(text) <= MAX_ID else None


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
    record_id = _record_id(request.match_info["record_id"])
    stored = None if record_id is None else await _read(request, "get", record_id)
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
    given = request.headers.get("Last-Event-ID") or request.query.get("after") or "0"
    last = _record_id(given)
    if last is None:
        raise web.HTTPBadRequest(text="after / Last-Event-ID: a record id")
    if not last:
        last = await _read(request, "latest_id")
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "X-Accel-Buffering": "no"})
    await response.prepare(request)
    await response.write(b": connected\n\n")
    closing, clock, sessions = request.app[CLOSING], request.app[CLOCK], request.app[SESSIONS]
    session, sid = request[SESSION], request.cookies.get(SESSION_COOKIE, "")
    try:   # the stream ends with its session (logout, idle, expiry); it does not keep the session alive
        while not closing.is_set() and request.transport is not None and not request.transport.is_closing() \
                and sessions.get(sid) is session and _alive(session, clock()):
            # by id above the last shown (ids become visible in order, from every host's writer, in either
            # store); rows come in time order, so the cursor is the largest id seen, not the last row's
            for record in await _records(request, where, 200, 0, False, last):
                last = max(last, record.id)
                data = json.dumps(row_of(record), ensure_ascii=False)
                await response.write(f"id: {last}\nevent: record\ndata: {data}\n\n".encode())
            try:   # wake at once on shutdown instead of holding the server open
                await asyncio.wait_for(closing.wait(), SSE_POLL_SECONDS)
            except TimeoutError:
                pass
    except ConnectionResetError:
        pass
    return response


def build_web_app(reader: Any, token: str, *, clock: Callable[[], float] = time.monotonic,
                  sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
                  trusted_proxies: frozenset[str] = TRUSTED_PROXIES, guard: LoginGuard | None = None) -> web.Application:
    """The console over an audit reader (AuditReader / AuditStore); `token` is AUDIT_WEB_TOKEN. `clock`
    (seconds) times sessions and failed logins, `sleep` waits out a failed login's delay (tests pass fakes)."""
    app = web.Application(middlewares=[no_tracebacks, require_login])
    app[READER], app[SESSIONS], app[TOKEN], app[CLOSING] = reader, {}, token, asyncio.Event()
    app[CLOCK], app[SLEEP], app[PROXIES] = clock, sleep, frozenset(trusted_proxies)
    app[GUARD], app[PURGED] = guard or LoginGuard(clock), [clock()]
    app.on_response_prepare.append(security_headers)

    async def stop_streams(app: web.Application) -> None:
        app[CLOSING].set()

    app.on_shutdown.append(stop_streams)
    env = aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(HERE / "templates"), autoescape=True)
    env.filters["pretty_json"] = lambda v: json.dumps(v, ensure_ascii=False, indent=1)
    env.filters.update(status_label=status_label, kind_label=kind_label, reason=reason, flag_label=flag_label,
                       degraded_reason=degraded_reason)
    env.globals["FLAG_LABELS"] = FLAG_LABELS
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
    problem = token_problem(settings.audit_web_token and settings.audit_web_token.get_secret_value())
    if problem:
        raise StartupError(problem)
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
