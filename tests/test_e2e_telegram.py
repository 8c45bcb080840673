"""End to end: the real `python bot.py` process polls a fake Telegram Bot API server on 127.0.0.1
through TELEGRAM_API_BASE, with real Redis and the offline model."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

from handlers import texts
from tests.fakes.bot_process import wait_handled

ROOT = Path(__file__).resolve().parent.parent


async def test_conversations_through_the_real_bot_process(world):
    fake, bot, workdir = world
    process = bot(TURN_PROCESS="on")   # the turns in a second process, as on any machine with two cores
    await process.start()
    child = await process.turn_process()   # its first turns would be answered by the bot itself

    # the seed dialogue, across three messages
    for question in ["足球多少钱", "有优惠吗", "那买两个呢"]:
        await fake.say(1, question)
        await fake.wait_replies(1, len(fake.replies(1)) + 1)
    first, promo, two = fake.replies(1)
    assert "120元" in first and "9折" in promo and "216元" in two

    # /reset forgets the conversation
    await fake.say(1, "/reset")
    await fake.say(1, "那买两个呢")
    replies = await fake.wait_replies(1, 5)
    assert replies[3] == texts.RESET and "216" not in replies[4]

    # two chats interleaved keep their own memory
    await fake.say(2, "羽毛球拍多少钱")
    await fake.say(3, "篮球多少钱")
    await fake.wait_replies(2, 1)
    await fake.wait_replies(3, 1)
    await fake.say(3, "那买两个呢")
    await fake.say(2, "那买两个呢")
    assert "480元" in (await fake.wait_replies(2, 2))[1]
    assert "200元" in (await fake.wait_replies(3, 2))[1] and "半价" in fake.replies(3)[1]

    # a burst of ten messages from one chat is answered in order
    names = ["足球", "篮球", "羽毛球拍", "跑步鞋", "瑜伽垫", "网球拍", "排球", "哑铃", "跳绳", "泡沫轴"]
    for name in names:
        await fake.say(4, f"{name}多少钱")
    burst = await fake.wait_replies(4, 10)
    assert all(name in reply for name, reply in zip(names, burst, strict=True)), burst

    # non-text and over-long messages get polite notes
    await fake.push(fake.message(5, None, photo=[{"file_id": "p", "file_unique_id": "p", "width": 1, "height": 1}]))
    await fake.say(5, "我想问" * 100)
    assert await fake.wait_replies(5, 2) == [texts.ONLY_TEXT, texts.TOO_LONG.format(limit=200)]

    assert all(s.parse_mode == "HTML" for s in fake.sent if "售价" in s.text)
    code, output = await process.stop()
    assert code == 0, output
    assert fake.token not in output and "Traceback" not in output

    # the audit log has one record per answered turn, readable with `audit tail`
    records = [json.loads(line) for line in (workdir / "audit.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(records) == 3 + 1 + 4 + 10 + 0
    assert f"answered by the turn process: {len(records)}, by this process: 0" in output
    with pytest.raises(ProcessLookupError):   # stopped with the bot
        os.kill(child, 0)
    assert records[2]["message"] == "那买两个呢" and "calc:001:2:regular" in records[2]["citations"]
    assert all(fake.token not in json.dumps(r, ensure_ascii=False) for r in records)
    tail = await asyncio.create_subprocess_exec(sys.executable, str(ROOT / "bot.py"), "audit", "tail", "--chat", "1",
                                                "-n", "2", cwd=workdir, env=process.env,
                                                stdout=asyncio.subprocess.PIPE)
    shown = (await tail.stdout.read()).decode()
    assert "那买两个呢" in shown and "会话=1" in shown and "羽毛球拍" not in shown


async def test_restart_keeps_memory_and_flood_control_is_survived(world):
    fake, bot, _ = world
    first = bot()
    await first.start()
    await fake.say(21, "足球多少钱")
    await fake.wait_replies(21, 1)
    code, _ = await first.stop()
    assert code == 0

    second = bot()
    await second.start()
    fake.send_failures = ["429", "502", "500"]   # flood control, then two server errors, on the next reply
    await fake.say(21, "那买两个呢")
    replies = await fake.wait_replies(21, 2)
    assert "216元" in replies[1]         # memory survived the restart (Redis); 429 waited out, 5xx retried

    # graceful shutdown as soon as the update was taken from Telegram: either its turn finishes before the
    # process exits, or (not yet in the inbox, so not confirmed) Telegram gives it to the next process
    taken = await fake.say(22, "羽毛球拍买两支")
    await fake.wait_for(lambda: any(u["update_id"] == taken for u in fake.delivered), poll=0.005,
                        what="the update taken by the bot")
    code, output = await second.stop()
    assert code == 0, output
    third = bot()
    await third.start()
    (reply,) = await fake.wait_replies(22, 1)
    await wait_handled(fake, third)
    assert fake.replies(22) == [reply] and "480元" in reply     # answered once, by one of the two
    code, output = await third.stop()
    assert code == 0, output


@pytest.mark.parametrize("roles", [("run", "run"), ("receive", "receive", "work")],
                         ids=["two full replicas", "two webhook replicas and a worker"])
async def test_webhook_mode_with_two_replicas(world, roles):
    """Telegram's POSTs reach either replica; each appends to the durable inbox before answering 200."""
    import aiohttp

    fake, bot, _ = world
    env = {"BOT_MODE": "webhook", "WEBHOOK_SECRET": "s3cret-token", "WEBHOOK_URL": "https://shop.example/"}
    processes = [bot(role, **env) for role in roles]
    for process in processes:
        await process.start()
    first, second = processes[:2]
    registrations = [f for m, f in fake.calls if m == "setWebhook"]
    assert len(registrations) == 1   # one replica registers, not every one
    assert registrations[0]["url"] == "https://shop.example/telegram/webhook"
    assert registrations[0]["secret_token"] == "s3cret-token"

    async def post(process, payload, secret="s3cret-token"):
        async with aiohttp.ClientSession() as http:
            async with http.post(f"http://127.0.0.1:{process.port}/telegram/webhook", json=payload,
                                 headers={"X-Telegram-Bot-Api-Secret-Token": secret}) as response:
                return response.status

    question = {"update_id": 9001, **fake.message(31, "足球多少钱")}
    assert await post(first, question, secret="wrong") == 401
    assert await post(first, question) == 200
    assert "120元" in (await fake.wait_replies(31, 1))[0]
    assert await post(second, question) == 200          # Telegram re-sent it to another replica
    follow_up = {"update_id": 9002, **fake.message(31, "那买两个呢")}
    assert await post(second, follow_up) == 200        # the other replica shares the conversation
    replies = await fake.wait_replies(31, 2)
    assert len(replies) == 2 and "216元" in replies[1]
    assert await post(first, {"not": "an update"}) == 400
    for process in processes:
        code, output = await process.stop()
        assert code == 0, output
    assert len(fake.replies(31)) == 2                   # after both drained: still answered once


async def test_webhook_replicas_behind_the_shipped_caddyfile(world, tmp_path):
    """deploy/Caddyfile, run by a real Caddy (Debian's package) in front of a webhook replica: Telegram's
    POST reaches the replica and is answered once; the secret is still checked; other paths are 404."""
    import os
    import shutil

    import aiohttp

    from tests.fakes.bot_process import ROOT, free_port

    caddy = shutil.which("caddy")
    assert caddy, "this test needs Caddy (apt install caddy; .ci/run installs it)"
    fake, bot, _ = world
    env = {"BOT_MODE": "webhook", "WEBHOOK_SECRET": "s3cret-token", "WEBHOOK_URL": "https://shop.example/"}
    replica, worker = bot("receive", **env), bot("work", **env)
    await replica.start()
    await worker.start()
    port = free_port()
    proxy = await asyncio.create_subprocess_exec(
        caddy, "run", "--adapter", "caddyfile", "--config", str(ROOT / "deploy" / "Caddyfile"),
        env={**os.environ, "WEBHOOK_SITE": f"http://127.0.0.1:{port}", "RECEIVERS_HOST": "localhost",
             "RECEIVERS_PORT": str(replica.port), "XDG_DATA_HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path),
             "HOME": str(tmp_path)},
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    try:
        async def post(path: str, payload: dict, secret: str = "s3cret-token") -> int:
            async with aiohttp.ClientSession() as http, http.post(
                    f"http://127.0.0.1:{port}{path}", json=payload,
                    headers={"X-Telegram-Bot-Api-Secret-Token": secret}) as response:
                return response.status

        question = {"update_id": 9201, **fake.message(41, "足球多少钱")}
        for _ in range(100):   # Caddy listening
            try:
                status = await post("/telegram/webhook", question, secret="wrong")
                break
            except aiohttp.ClientConnectionError:
                await asyncio.sleep(0.1)
        assert status == 401
        assert await post("/telegram/webhook", question) == 200
        assert await post("/telegram/webhook", question) == 200     # Telegram's re-send: dropped
        assert await post("/healthz", {}) == 404                    # only the webhook path is public
        assert "120元" in (await fake.wait_replies(41, 1))[0]
        await wait_handled(fake, worker)
        assert len(fake.replies(41)) == 1
    finally:
        proxy.terminate()
        await proxy.wait()
    for process in (replica, worker):
        code, output = await process.stop()
        assert code == 0, output
