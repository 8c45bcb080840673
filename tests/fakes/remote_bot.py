"""The real `python bot.py` process answering through a scripted OpenAI-compatible model: a fake Bot API
server, a FakeOpenAI server whose replies a function of the request computes, and real Redis."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.fakes import prebuilt
from tests.fakes.bot_process import BotProcess
from tests.fakes.openai_server import ChatScript, FakeOpenAI
from tests.fakes.redis_support import connect, drop_prefix, unique_prefix
from tests.fakes.telegram_server import FakeTelegram

API_KEY = "sk-test-key"


@dataclass
class RemoteBot:
    telegram: FakeTelegram
    openai: FakeOpenAI
    bot: BotProcess
    workdir: Path

    def audit(self) -> list[dict[str, Any]]:
        path = self.workdir / "audit.jsonl"
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@asynccontextmanager
async def remote_bot(workdir: Path, chat_function: ChatScript, **env: str) -> AsyncIterator[RemoteBot]:
    """Start everything; on exit stop the bot (asserting a clean exit and no key in its output) and clean up.
    `workdir` gets a copy of the demo catalog and index built once per run, unless it has a catalog."""
    if not (workdir / "data" / "shop.db").exists():
        await asyncio.to_thread(prebuilt.demo_data, workdir / "data")
    telegram, openai = await FakeTelegram().start(), await FakeOpenAI(chat_function=chat_function).start()
    redis, prefix = await connect(), unique_prefix()
    bot = BotProcess(telegram, workdir, prefix, OPENAI_API_KEY=API_KEY, OPENAI_BASE_URL=openai.url, **env)
    try:
        await bot.start()
        yield RemoteBot(telegram, openai, bot, workdir)
        code, output = await bot.stop()
        assert code == 0, output
        assert API_KEY not in output
    finally:
        await bot.kill()
        await drop_prefix(redis, prefix)
        await redis.aclose()
        await openai.stop()
        await telegram.stop()
