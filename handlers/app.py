"""Running the Telegram bot: polling (default) or webhook, a /healthz endpoint, and a graceful shutdown
(stop taking updates, finish turns in flight, then the caller closes Redis, the database, the model)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from dataclasses import dataclass
from typing import Any

from aiogram import Bot, Dispatcher
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.session.middlewares.base import BaseRequestMiddleware
from aiogram.client.telegram import TelegramAPIServer
from aiogram.methods.base import Response
from aiogram.webhook.aiohttp_server import SimpleRequestHandler, setup_application
from aiohttp import web

from handlers.guards import ChatSequencer
from handlers.inbox import DeliveryMarker
from handlers.metrics import metrics_endpoint

log = logging.getLogger(__name__)

WEBHOOK_PATH = "/telegram/webhook"
DRAIN_SECONDS = 45.0


@dataclass(frozen=True)
class TelegramOptions:
    token: str
    api_base: str | None = None
    mode: str = "polling"
    webhook_url: str | None = None
    webhook_secret: str | None = None
    port: int = 8080
    request_timeout: float = 30.0


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


async def _health(request: web.Request) -> web.Response:
    """Alive; `ready` once the dispatcher has started (signal handlers installed, updates taken)."""
    return web.json_response({"status": "ok", "ready": request.app["ready"].is_set(),
                              "in_flight": request.app["sequencer"].in_flight})


def _app_with_health(dispatcher: Dispatcher, sequencer: ChatSequencer) -> web.Application:
    app = web.Application()
    app["sequencer"], app["ready"] = sequencer, asyncio.Event()

    async def started() -> None:
        app["ready"].set()

    dispatcher.startup.register(started)
    app.router.add_get("/healthz", _health)
    app.router.add_get("/metrics", metrics_endpoint)
    return app


async def _serve(app: web.Application, port: int) -> web.AppRunner:
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "0.0.0.0", port).start()   # noqa: S104 - health checks and Telegram reach it
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
    runner = await _serve(_app_with_health(dispatcher, sequencer), options.port)
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
    SimpleRequestHandler(dispatcher=dispatcher, bot=bot, secret_token=options.webhook_secret).register(
        app, path=WEBHOOK_PATH)
    setup_application(app, dispatcher, bot=bot)
    runner = await _serve(app, options.port)
    if await guards.claim_once("set-webhook", 300):
        await bot.set_webhook(f"{options.webhook_url.rstrip('/')}{WEBHOOK_PATH}", secret_token=options.webhook_secret,
                              drop_pending_updates=False)
        log.info("webhook registered")
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


async def run_receiver(bot: Bot, inbox, options: TelegramOptions) -> None:
    """`bot.py receive`: long-poll Telegram into the durable inbox; /healthz on the health port."""
    from handlers.inbox import receive

    app = web.Application()
    ready = asyncio.Event()
    app["sequencer"], app["ready"] = ChatSequencer(), ready
    app.router.add_get("/healthz", _health)
    app.router.add_get("/metrics", metrics_endpoint)
    runner = await _serve(app, options.port)
    stop = _stop_on_signals()
    try:
        await bot.delete_webhook(drop_pending_updates=False)
        ready.set()
        log.info("receiving: updates go to the inbox before they are confirmed")
        receiving = asyncio.create_task(receive(bot, inbox, stop))
        await stop.wait()
        receiving.cancel()   # safe anywhere: an append is one Lua call, and what was not confirmed comes again
        with contextlib.suppress(asyncio.CancelledError):
            await receiving
    finally:
        await runner.cleanup()
        await bot.session.close()


async def run_worker(dispatcher: Dispatcher, bot: Bot, sequencer: ChatSequencer, inbox, name: str,
                     options: TelegramOptions, lease_ms: int, receiving: bool = False) -> None:
    """`bot.py work`: answer what the inbox holds for the partitions this worker leases; with `receiving`
    (plain `bot.py` with Redis) this process also takes the updates from Telegram into the inbox."""
    from handlers.inbox import Worker, receive

    _register_shutdown(dispatcher, sequencer)
    runner = await _serve(_app_with_health(dispatcher, sequencer), options.port)
    stop = _stop_on_signals()
    receiver = None
    try:
        if receiving:
            await bot.delete_webhook(drop_pending_updates=False)
            receiver = asyncio.create_task(receive(bot, inbox, stop))
        await dispatcher.emit_startup(bot=bot)
        log.info("working as %s%s", name, " (and receiving)" if receiving else "")
        await Worker(inbox, dispatcher, bot, name, lease_ms=lease_ms).run(stop)
    finally:
        if receiver is not None:
            receiver.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await receiver
        await dispatcher.emit_shutdown(bot=bot)
        await runner.cleanup()
        await bot.session.close()
