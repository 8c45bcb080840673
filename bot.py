"""kefu-bot entry point and composition root: reads settings, builds the pieces, runs one mode.

    python bot.py                      run the bot (Telegram with BOT_TOKEN, else the console chat)
    python bot.py import-catalog ...   build the catalog (and its index) from a shop's own CSV files

The run modes are here; the maintenance commands are agent/commands.py, and what start-up opens from
the settings (catalog, index, model, audit) is agent/startup.py. `open_app` closes everything, once."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import socket
import sys
import traceback
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from agent.commands import add_commands
from agent.settings import Settings, StartupError, audit_target, load_settings
from handlers.delivery.dead_letters import add_inbox_commands
from handlers.process import leave, log_off_the_loop, run_serving, settle_heap

if TYPE_CHECKING:   # the run modes import aiogram, Redis and the agent when they run, not for `--help`
    from aiogram import Bot
    from redis.asyncio import Redis

    from agent.audit import AuditLog
    from agent.turn import Agent

__all__ = ["Settings", "StartupError", "load_settings", "main"]
log = logging.getLogger("kefu")


@dataclass(frozen=True)
class App:
    """What a run mode works with. Whatever a mode starts that must stop with it goes on `closing`."""
    agent: Agent
    audit: AuditLog
    redis: Redis | None
    bot: Bot | None
    closing: AsyncExitStack


@asynccontextmanager
async def open_app(settings: Settings, *, redis: bool = False, telegram: bool = False) -> AsyncIterator[App]:
    """The catalog path, Redis, the Telegram bot (its token), the agent over the catalog, the audit log and its
    web console: the quick checks first, then the rest; closed in reverse by one exit stack."""
    settings.check_catalog()   # a typo is told before anything loads
    from agent.startup import open_agent, open_audit
    from handlers.stores import redis_client
    from handlers.web.app import audit_console

    async with AsyncExitStack() as closing:
        client = await closing.enter_async_context(redis_client(settings)) if redis else None
        if telegram:   # aiogram loads only where Telegram is used (the console chat starts seconds sooner)
            from handlers.delivery.runners import TelegramOptions, open_bot
        bot = await closing.enter_async_context(await open_bot(TelegramOptions.of(settings))) if telegram else None
        audit_target(settings.audit_db)   # a bad URL is told before the catalog loads, like every quick check
        agent = await closing.enter_async_context(open_agent(settings))
        audit = await asyncio.to_thread(open_audit, settings)   # PostgreSQL: connects off the loop
        closing.callback(audit.close)
        settle_heap()   # what was loaded lives as long as the process: out of the collector's scans
        await closing.enter_async_context(audit_console(settings, audit))   # serving after the ~0.2 s above
        yield App(agent, audit, client, bot, closing)


async def run_telegram(settings: Settings, role: Literal["all", "work"] = "all") -> int:
    """`all`: take updates from Telegram and answer them in this process; `work`: answer what the durable
    inbox holds (another process receives)."""
    settings.check_webhook()
    async with open_app(settings, redis=True, telegram=True) as app:   # the quick checks before the imports
        from agent.conversation import Conversation, Limits
        from agent.handoff import ServiceHours
        from db.knowledge import contact_policy
        from handlers.delivery.guards import ChatSequencer
        from handlers.delivery.runners import TelegramOptions, run_polling, run_webhook, run_worker
        from handlers.handoff import Desk
        from handlers.operators import Operators
        from handlers.stores import chat_stores
        from handlers.telegram import build_dispatcher
        from handlers.turn_process import turn_process, wanted

        agent, conn, audit, redis, bot = app.agent, app.agent.conn, app.audit, app.redis, app.bot
        options = TelegramOptions.of(settings)
        # with Redis, even one process goes through the durable inbox (receive, then work)
        inbox_mode = role == "work" or redis is not None
        sessions, handoffs, guards = chat_stores(settings, redis, inbox_mode=inbox_mode)
        policy = await contact_policy(conn)
        hours = ServiceHours.parse(settings.service_hours) if settings.service_hours else \
            ServiceHours.from_policy(policy.content if policy else "")
        turns = await app.closing.enter_async_context(turn_process(settings, agent)) \
            if wanted(settings.turn_process) else None   # the turns' CPU on a second core
        conversation = Conversation(agent, sessions, audit, limits=Limits(settings.max_message_chars),
                                    rate=guards.rate, desk=settings.operator_chat_id is not None, turns=turns)
        desk = Desk(bot, handoffs, conversation, settings.operator_chat_id, hours,
                    settings.handoff_idle_minutes * 60, policy.content if policy else "", audit)
        if desk.enabled:
            app.closing.callback(asyncio.create_task(desk.run_sweeper()).cancel)
        elif settings.operator_ids:
            log.info("OPERATOR_CHAT_ID is not set: no handoff; operator commands work in a private chat")
        sequencer = ChatSequencer()
        from handlers.delivery.inbox import Inbox

        inbox = Inbox(redis, settings.redis_prefix, settings.inbox_partitions) if inbox_mode else None
        dispatcher = build_dispatcher(operators=Operators(frozenset(settings.operator_ids), settings.operator_chat_id),
                                      conversation=conversation, desk=desk, analyst=agent.analyst, guards=guards,
                                      sequencer=sequencer, audit=audit, inbox=inbox)
        dispatcher.shutdown.register(desk.finish)
        if inbox is not None:
            await run_worker(dispatcher, bot, sequencer, inbox, f"{socket.gethostname()}-{os.getpid()}", options,
                             settings.inbox_lease_ms, guards, receiving=role == "all",
                             concurrency=settings.inbox_concurrency)
        elif settings.bot_mode == "webhook":
            await run_webhook(dispatcher, bot, sequencer, guards, options)
        else:
            await run_polling(dispatcher, bot, sequencer, options)
        log.info("stopped")
        return 0


def cmd_console(args: argparse.Namespace, settings: Settings) -> int:
    """The console chat: the same conversation as Telegram (REDIS_URL, limits, 转人工) in a terminal."""
    async def run() -> int:
        async with open_app(settings, redis=True) as app:   # the quick checks before the imports
            from agent.conversation import Conversation, Limits
            from db.knowledge import contact_policy
            from handlers.console import run_console
            from handlers.stores import chat_stores
            from handlers.voice import Voice

            sessions, _, guards = chat_stores(settings, app.redis, warn=False)
            policy = await contact_policy(app.agent.conn)
            conversation = Conversation(app.agent, sessions, app.audit, limits=Limits(settings.max_message_chars),
                                        rate=guards.rate)
            return await run_console(conversation, Voice(contact_text=policy.content if policy else ""),
                                     show_trace=args.show_trace)

    return asyncio.run(run())


def cmd_receive(args: argparse.Namespace, settings: Settings) -> int:
    """Receive only: long-poll Telegram, or (BOT_MODE=webhook) take Telegram's POSTs as one of several
    replicas, and append every update to the durable inbox."""
    settings.check_inbox("receive")
    settings.check_webhook()
    from handlers.delivery.guards import RedisGuards
    from handlers.delivery.inbox import Inbox
    from handlers.delivery.runners import TelegramOptions, open_bot, run_receiver
    from handlers.stores import redis_client

    async def run() -> int:
        async with redis_client(settings) as redis:
            options = TelegramOptions.of(settings)
            await run_receiver(await open_bot(options), Inbox(redis, settings.redis_prefix, settings.inbox_partitions), options,
                               RedisGuards(redis, settings.redis_prefix))
            return 0

    return run_serving(run())


def cmd_work(args: argparse.Namespace, settings: Settings) -> int:
    """Work only: answer the updates the inbox holds, for the partitions this process leases."""
    settings.check_inbox("work")
    return run_serving(run_telegram(settings, role="work"))


def cmd_run(args: argparse.Namespace, settings: Settings) -> int:
    if settings.bot_token is None:
        return cmd_console(args, settings)
    return run_serving(run_telegram(settings))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python bot.py", description="kefu-bot: a grounded shop assistant.")
    parser.add_argument("--debug", action="store_true", help="log everything, and a start-up error's traceback")
    sub = parser.add_subparsers(dest="command")

    run = sub.add_parser("run", help="run the bot (Telegram with BOT_TOKEN, else the console chat); the default")
    run.add_argument("--show-trace", action="store_true", help="console: print each turn's trace")
    run.set_defaults(func=cmd_run)

    sub.add_parser("receive", help="take updates from Telegram into the durable inbox (Redis Streams)"
                   ).set_defaults(func=cmd_receive)
    sub.add_parser("work", help="answer the updates the durable inbox holds (run as many as you like)"
                   ).set_defaults(func=cmd_work)

    console = sub.add_parser("console", help="chat with the bot in this terminal (demo catalog by default)")
    console.add_argument("--show-trace", action="store_true", help="print each turn's trace")
    console.set_defaults(func=cmd_console)

    add_commands(sub)
    add_inbox_commands(sub)
    return parser


def log_level(args: argparse.Namespace, settings: Settings) -> int:
    """--debug or LOG_LEVEL first; the console chat shows warnings only (its terminal is the conversation:
    no audit line or web request between the turns); every other mode logs INFO."""
    if args.debug:
        return logging.DEBUG
    if settings.log_level:
        return logging.getLevelName(settings.log_level)
    chatting = args.command == "console" or (args.command == "run" and settings.bot_token is None)
    return logging.WARNING if chatting else logging.INFO


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        args = parser.parse_args([*(["--debug"] if args.debug else []), "run"])
    listener, debug = None, args.debug
    try:
        settings = load_settings()
        debug = debug or settings.log_level == "DEBUG"
        listener = log_off_the_loop(log_level(args, settings))
        return args.func(args, settings)
    except StartupError as exc:
        print(f"kefu-bot: {exc}", file=sys.stderr)
        if debug:   # what went wrong underneath (the line above says what to fix)
            traceback.print_exception(exc.__context__ or exc)
        return 2
    except KeyboardInterrupt:
        return 130
    finally:
        if listener is not None:
            listener.stop()


if __name__ == "__main__":
    leave(main())
