"""A poison update is parked, not retried for ever: a text holding a lone surrogate (no UTF-8 store can
hold it) goes to the dead letters while every other chat is answered; an operator lists it and replays it
once made storable. Through the real bot process, the fake Bot API and real Redis."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes.bot_process import wait_handled

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow


async def test_a_lone_surrogate_is_parked_while_other_chats_are_answered(world):
    fake, bot, workdir = world
    process = bot()
    await process.start()
    poison = await fake.push(fake.message(301, "足球\udc80多少钱"))
    await fake.say(302, "篮球多少钱")
    (reply,) = await fake.wait_replies(302, 1, within=60)   # the batch after the poison moved on
    assert "200元" in reply
    await wait_handled(fake, process, 30)
    assert fake.unconfirmed == []                            # confirmed: Telegram will not send it again

    def dead_letters(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(ROOT / "bot.py"), "inbox", "dead-letters", *args], cwd=workdir,
                              env=process.env, capture_output=True, text=True, timeout=60)

    listed = await asyncio.to_thread(dead_letters)
    assert listed.returncode == 0, listed.stderr
    (line,) = [row for row in listed.stdout.splitlines() if f"update {poison}" in row]
    assert "surrogates not allowed" in line and "1 dead letter(s)." in listed.stdout
    replayed = await asyncio.to_thread(dead_letters, "--replay", line.split()[0])
    assert replayed.returncode == 0, replayed.stderr
    (answer,) = await fake.wait_replies(301, 1, within=60)  # made storable (U+FFFD), answered once
    assert "120元" in answer
    assert "0 dead letter(s)." in (await asyncio.to_thread(dead_letters)).stdout
    code, output = await process.stop()
    assert code == 0, output
