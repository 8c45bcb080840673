"""The baseline every benchmark measures against in the same run: a bare aiogram bot with no turn, no
Redis and no database. It echoes each text back, or with --copy-to copies every message into a chat
(the least a relay can do). Run as its own process, pointed at a Bot API server:

    BOT_TOKEN=... TELEGRAM_API_BASE=http://127.0.0.1:PORT python bench/echo_bot.py [--copy-to CHAT_ID]"""

from __future__ import annotations

import argparse
import asyncio
import os

from aiogram import Bot, Dispatcher
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer
from aiogram.types import Message


async def main(copy_to: int | None) -> None:
    session = AiohttpSession(api=TelegramAPIServer.from_base(os.environ["TELEGRAM_API_BASE"]))
    bot = Bot(os.environ["BOT_TOKEN"], session=session)
    dispatcher = Dispatcher()

    @dispatcher.message()
    async def relay(message: Message) -> None:
        if copy_to is not None:
            await bot.copy_message(copy_to, message.chat.id, message.message_id)
        else:
            await bot.send_message(message.chat.id, message.text or "?")

    await dispatcher.start_polling(bot, handle_signals=True, polling_timeout=20, close_bot_session=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--copy-to", type=int, default=None)
    asyncio.run(main(parser.parse_args().copy_to))
