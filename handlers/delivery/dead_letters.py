"""`python bot.py inbox dead-letters [--replay ID]`: the updates the receiver could not store (e.g. a text
holding a lone surrogate), parked instead of retried for ever, and putting one back once made storable.
Heavy imports (aiogram, Redis) happen when the command runs, not for `--help`."""

from __future__ import annotations

import argparse
import asyncio

from agent.settings import Settings, StartupError


def add_inbox_commands(sub: argparse._SubParsersAction) -> None:
    inbox = sub.add_parser("inbox", help="the durable inbox: updates parked as dead letters")
    commands = inbox.add_subparsers(dest="inbox_command", required=True)
    dead = commands.add_parser("dead-letters", help="list the updates that could not be stored; --replay one")
    dead.add_argument("--replay", metavar="ID", help="append this dead letter again (unstorable text replaced)")
    dead.set_defaults(func=cmd_dead_letters)


def cmd_dead_letters(args: argparse.Namespace, settings: Settings) -> int:
    if settings.redis_url is None:
        raise StartupError("`bot.py inbox` needs REDIS_URL: the inbox lives in Redis Streams")
    from handlers.delivery.inbox import Inbox
    from handlers.stores import redis_client

    async def run() -> int:
        async with redis_client(settings) as redis:
            inbox = Inbox(redis, settings.redis_prefix, settings.inbox_partitions)
            if args.replay:
                if not await inbox.replay(args.replay):
                    print(f"No dead letter {args.replay} (or its update was handled already).")
                    return 1
                print(f"Dead letter {args.replay} appended to the inbox again.")
                return 0
            parked = await inbox.list_dead()
            for entry_id, fields in parked:
                print(f"{entry_id}  update {fields.get('update_id')}  {fields.get('reason')}")
            print(f"{len(parked)} dead letter(s).")
            return 0

    return asyncio.run(run())
