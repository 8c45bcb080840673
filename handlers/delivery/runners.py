"""Running the Telegram bot: polling (default) or webhook, a /healthz endpoint, and a graceful shutdown
(stop taking updates, finish turns in flight, then the caller closes Redis, the database, the model)."""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import os
import signal
from dataclasses import dataclass
from typing import Any

import handlers.aiogram_import  # noqa: F401 - first: aiogram's schemas are then built where first used

# isort: split
from aiogram import Bot, Dispatcher
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.session.middlewares.base import BaseRequestMiddleware
from aiogram.client.telegram import TelegramAPIServer
from aiogram.exceptions import (
    TelegramAPIError,
    TelegramNetworkError,
    TelegramServerError,
    TelegramUnauthorizedError,
)
from aiogram.methods.base import Response
from aiogram.types import Update
from aiogram.utils.token import TokenValidationError
from aiogram.webhook.aiohttp_server import SimpleRequestHandler, setup_application
from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from agent.audit import writer_problems
from agent.settings import Settings, StartupError
from handlers.delivery.guards import ChatSequencer
from handlers.delivery.inbox import DeliveryMarker
from handlers.delivery.metrics import metrics_endpoint

log = logging.getLogger(__name__)


class QuietBadRequests(logging.Filter):
    """aiohttp answers a request its HTTP parser refuses (a stranger's bytes: a control character in a
    header, a broken request line) with a 400 and logs it as an error with a traceback; here it is one
    warning line. Errors of our own handlers stay errors."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, HttpProcessingError) and 400 <= (exc.code or 400) < 500:
            remote = record.args[0] if isinstance(record.args, tuple) and record.args else "?"
            record.levelno, record.levelname = logging.WARNING, "WARNING"
            record.msg, record.args = "a malformed HTTP request from %s was refused (%s)", (remote, type(exc).__name__)
            record.exc_info, record.exc_text = None, None
        return True


logging.getLogger("aiohttp.server").addFilter(QuietBadRequests())   # every listener of this process

WEBHOOK_PATH = "/telegram/webhook"
SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
DRAIN_SECONDS = 45.0
SEQUENCER = web.AppKey("sequencer", ChatSequencer)
READY = web.AppKey("ready", asyncio.Event)


@dataclass(frozen=True)
class TelegramOptions:
    token: str
    api_base: str | None = None
    mode: str = "polling"
    webhook_url: str | None = None
    webhook_secret: str | None = None
    port: int = 8080
    request_timeout: float = 30.0
    host: str = "127.0.0.1"   # where /healthz, /metrics (and, in webhook mode, the webhook) listen

    @classmethod
    def of(cls, settings: Settings) -> TelegramOptions:
        """In webhook mode the listener faces Telegram (all interfaces); otherwise /healthz and /metrics stay
        on HEALTH_HOST (this host only, unless widened for a scraper on another host)."""
        return cls(token=settings.bot_token.get_secret_value(),
                   api_base=str(settings.telegram_api_base) if settings.telegram_api_base else None,
                   mode=settings.bot_mode, webhook_url=str(settings.webhook_url) if settings.webhook_url else None,
                   webhook_secret=settings.webhook_secret.get_secret_value() if settings.webhook_secret else None,
                   port=settings.webhook_port,
                   host="0.0.0.0" if settings.bot_mode == "webhook" else settings.health_host)   # noqa: S104


class KeepResponseTypes(BaseRequestMiddleware):
    """Holds each `Response[T]` that aiogram builds to parse an answer: pydantic caches parametrized
    models only weakly, and under load it was rebuilding them (a schema build per request, ~7% of the
    event loop in the profile)."""

    def __init__(self) -> None:
        self._kept: dict[Any, Any] = {}

    async def __call__(self, make_request, bot, method):
        returning = method.__returning__
        if returning not in self._kept:
            self._kept[returning] = Response[returning]
        return await make_request(bot, method)


def make_bot(options: TelegramOptions) -> Bot:
    """A Bot with its own aiohttp session, pointed at a self-hosted Bot API server when configured."""
    api = TelegramAPIServer.from_base(options.api_base) if options.api_base else None
    session = AiohttpSession(api=api, timeout=options.request_timeout) if api else \
        AiohttpSession(timeout=options.request_timeout)
    session.middleware(KeepResponseTypes())
    session.middleware(DeliveryMarker())
    return Bot(options.token, session=session)


CHECK_SECONDS = 15.0   # how long start-up waits for the Bot API to say who the bot is


async def open_bot(options: TelegramOptions) -> Bot:
    """A bot whose token the Bot API accepts, checked before anything else starts: a bad token, a refused
    one or an unreachable Bot API is one `StartupError` line naming the setting and the fix."""
    try:
        bot = make_bot(options)
    except TokenValidationError:
        raise StartupError("BOT_TOKEN: this is not a Telegram bot token (one looks like 123456789:AAE…, "
                           "from @BotFather)") from None
    try:
        await bot.get_me(request_timeout=int(CHECK_SECONDS))
        return bot
    except (TelegramAPIError, OSError, TimeoutError) as exc:
        problem = _bot_problem(exc, options.api_base or "https://api.telegram.org")
    await bot.session.close()   # no "Unclosed client session" after the line
    raise StartupError(problem)


def _bot_problem(exc: BaseException, where: str) -> str:
    if isinstance(exc, TelegramUnauthorizedError):
        return "BOT_TOKEN: Telegram refused this token (mistyped or revoked); copy the current one from @BotFather"
    if isinstance(exc, TelegramNetworkError | TelegramServerError | OSError | TimeoutError):
        reason = getattr(exc, "message", "") or type(exc).__name__
        return (f"TELEGRAM_API_BASE: cannot reach the Bot API at {where} ({reason}); check the network or firewall, "
                "or set TELEGRAM_API_BASE to a Bot API server this machine can reach")
    return f"BOT_TOKEN: the Bot API at {where} refused the bot ({getattr(exc, 'message', exc)})"


async def _health(request: web.Request) -> web.Response:
    """Alive; `ready` once the dispatcher has started (signal handlers installed, updates taken). 503 when
    the audit writer of this process is dead or stuck: answers would go on while nothing is recorded. `pid`: which
    process answered (a supervisor, or a test, can tell its own process from another holding the port)."""
    problems = writer_problems()
    return web.json_response({"status": "audit_writer_down" if problems else "ok",
                              "ready": request.app[READY].is_set(), "pid": os.getpid(),
                              "in_flight": request.app[SEQUENCER].in_flight,
                              **({"problems": problems} if problems else {})},
                             status=503 if problems else 200)


def _health_app(sequencer: ChatSequencer) -> web.Application:
    """/healthz and /metrics; `ready` is set by whoever starts taking updates."""
    app = web.Application()
    app[SEQUENCER], app[READY] = sequencer, asyncio.Event()
    app.router.add_get("/healthz", _health)
    app.router.add_get("/metrics", metrics_endpoint)
    return app


def _app_with_health(dispatcher: Dispatcher, sequencer: ChatSequencer) -> web.Application:
    app = _health_app(sequencer)

    async def started() -> None:
        app[READY].set()

    dispatcher.startup.register(started)
    return app


async def _serve(app: web.Application, options: TelegramOptions) -> web.AppRunner:
    runner = web.AppRunner(app)
    await runner.setup()
    port = options.port
    try:
        await web.TCPSite(runner, options.host, port).start()
    except OSError as exc:
        await runner.cleanup()
        raise StartupError(f"WEBHOOK_PORT: cannot listen on port {port} ({exc.strerror}); another process may use "
                           "it — stop that one or choose another WEBHOOK_PORT") from None
    return runner


def _register_shutdown(dispatcher: Dispatcher, sequencer: ChatSequencer) -> None:
    async def finish_turns() -> None:
        if sequencer.in_flight:
            log.info("shutting down: waiting for %d turn(s) in flight", sequencer.in_flight)
        if not await sequencer.drain(DRAIN_SECONDS):
            log.warning("shutting down with %d turn(s) unfinished after %.0f s", sequencer.in_flight, DRAIN_SECONDS)

    dispatcher.shutdown.register(finish_turns)


async def run_polling(dispatcher: Dispatcher, bot: Bot, sequencer: ChatSequencer, options: TelegramOptions) -> None:
    _register_shutdown(dispatcher, sequencer)
    runner = await _serve(_app_with_health(dispatcher, sequencer), options)
    try:
        await bot.delete_webhook(drop_pending_updates=False)
        await dispatcher.start_polling(bot, handle_signals=True, polling_timeout=20, close_bot_session=True)
    finally:
        await runner.cleanup()


async def run_webhook(dispatcher: Dispatcher, bot: Bot, sequencer: ChatSequencer, guards, options: TelegramOptions,
                      ) -> None:
    """Serve Telegram's POSTs; the secret token is checked on each; one replica registers the webhook."""
    _register_shutdown(dispatcher, sequencer)
    app = _app_with_health(dispatcher, sequencer)
    CheckedRequestHandler(dispatcher=dispatcher, bot=bot, secret_token=options.webhook_secret).register(
        app, path=WEBHOOK_PATH)
    setup_application(app, dispatcher, bot=bot)
    runner = await _serve(app, options)
    await register_webhook(bot, guards, options)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    log.info("webhook mode: listening on port %d", options.port)
    try:
        await stop.wait()
    finally:
        await runner.cleanup()   # stops taking requests, runs the dispatcher's shutdown (drains turns)
        await bot.session.close()


def _stop_on_signals() -> asyncio.Event:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    return stop


def secret_matches(given: str, secret: str) -> bool:
    """The webhook's secret header against ours, in constant time, whatever bytes a stranger sent (aiohttp
    hands non-ASCII header bytes over as text, which `hmac.compare_digest` refuses with a TypeError)."""
    return hmac.compare_digest(given.encode("utf-8", "surrogateescape"), secret.encode("utf-8"))


class CheckedRequestHandler(SimpleRequestHandler):
    """aiogram's webhook handler (without Redis), answering what a stranger can send with a 4xx, never a 500
    with a traceback in the log: any secret header bytes, a body that is not a Telegram update."""

    def verify_secret(self, telegram_secret_token: str, bot: Bot) -> bool:
        return secret_matches(telegram_secret_token, self.secret_token) if self.secret_token else True

    async def handle(self, request: web.Request) -> web.Response:
        if not self.verify_secret(request.headers.get(SECRET_HEADER, ""), self.bot):
            return web.Response(status=401)
        try:
            Update.model_validate_json(await request.read())   # read once: aiohttp keeps the body for .json()
        except ValueError:
            log.warning("webhook: a request that is not a Telegram update was refused")
            return web.Response(status=400)
        return await super().handle(request)


def add_webhook_intake(app: web.Application, inbox, secret: str) -> None:
    """Telegram's POSTs go to the durable inbox: the secret token is checked, the update appended (once
    per update id), and only then answered 200; Redis trouble answers 503, so Telegram sends it again."""
    from handlers.delivery.inbox import TRANSIENT

    async def intake(request: web.Request) -> web.Response:
        if not secret_matches(request.headers.get(SECRET_HEADER, ""), secret):
            return web.Response(status=401)
        try:
            update = Update.model_validate_json(await request.read())
        except ValueError:
            log.warning("webhook: a request that is not a Telegram update was refused")
            return web.Response(status=400)
        try:
            await inbox.append(update)
        except TRANSIENT as exc:
            log.warning("webhook: the inbox could not take update %s (%s): Telegram will send it again",
                        update.update_id, type(exc).__name__)
            return web.Response(status=503)
        return web.Response()

    app.router.add_post(WEBHOOK_PATH, intake)


async def register_webhook(bot: Bot, guards, options: TelegramOptions) -> None:
    """One replica registers the webhook (with its secret); the others find it done."""
    if await guards.claim_once("set-webhook", 300):
        await bot.set_webhook(f"{options.webhook_url.rstrip('/')}{WEBHOOK_PATH}", secret_token=options.webhook_secret,
                              drop_pending_updates=False)
        log.info("webhook registered")


async def _start_receiving(bot: Bot, inbox, guards, options: TelegramOptions, stop: asyncio.Event,
                           ) -> asyncio.Task | None:
    """Webhook: register it (one replica does); the intake route is on the app. Polling: the long-poll
    task that appends to the inbox."""
    from handlers.delivery.inbox import receive

    await inbox.ensure_groups()
    if options.mode == "webhook":
        await register_webhook(bot, guards, options)
        return None
    await bot.delete_webhook(drop_pending_updates=False)
    return asyncio.create_task(receive(bot, inbox, stop))


async def _stop_receiving(task: asyncio.Task | None) -> None:
    if task is not None:
        task.cancel()   # safe anywhere: an append is one Lua call, and what was not confirmed comes again
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def run_receiver(bot: Bot, inbox, options: TelegramOptions, guards) -> None:
    """`bot.py receive`: long-poll Telegram into the durable inbox, or (BOT_MODE=webhook) be one of the
    webhook replicas that append what Telegram posts; /healthz and /metrics on the same port."""
    app = _health_app(ChatSequencer())
    if options.mode == "webhook":
        add_webhook_intake(app, inbox, options.webhook_secret)
    runner = await _serve(app, options)
    stop = _stop_on_signals()
    try:
        receiving = await _start_receiving(bot, inbox, guards, options, stop)
        app[READY].set()
        log.info("receiving (%s): updates go to the inbox before they are confirmed", options.mode)
        await stop.wait()
        await _stop_receiving(receiving)
    finally:
        await runner.cleanup()   # a webhook request being appended finishes first
        await bot.session.close()


async def run_worker(dispatcher: Dispatcher, bot: Bot, sequencer: ChatSequencer, inbox, name: str,
                     options: TelegramOptions, lease_ms: int, guards, receiving: bool = False,
                     concurrency: int = 32) -> None:
    """`bot.py work`: answer what the inbox holds for the partitions this worker leases; with `receiving`
    (plain `bot.py` with Redis) this process also takes the updates from Telegram into the inbox, by
    polling or as a webhook replica."""
    from handlers.delivery.workers import Worker

    _register_shutdown(dispatcher, sequencer)
    app = _app_with_health(dispatcher, sequencer)
    if receiving and options.mode == "webhook":
        add_webhook_intake(app, inbox, options.webhook_secret)
    runner = await _serve(app, options)
    stop = _stop_on_signals()
    receiver = None
    try:
        if receiving:
            receiver = await _start_receiving(bot, inbox, guards, options, stop)
        await dispatcher.emit_startup(bot=bot)
        log.info("working as %s%s", name, f" (and receiving: {options.mode})" if receiving else "")
        await Worker(inbox, dispatcher, bot, name, lease_ms=lease_ms, concurrency=concurrency).run(stop)
    finally:
        await _stop_receiving(receiver)
        await dispatcher.emit_shutdown(bot=bot)
        await runner.cleanup()
        await bot.session.close()
