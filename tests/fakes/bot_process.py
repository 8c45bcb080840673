"""The real `python bot.py` process, configured to poll a FakeTelegram server, for tests and benchmarks."""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import signal
import socket
import sys
import time
from pathlib import Path

from tests.fakes.redis_support import REDIS_TEST_URL
from tests.fakes.telegram_server import FakeTelegram

ROOT = Path(__file__).resolve().parent.parent.parent


_ports = random.Random(f"{os.getpid()}-{time.time_ns()}")   # each xdist worker draws its own sequence


def free_port() -> int:
    """A port nothing listens on now, drawn below the kernel's ephemeral range (32768 and up here): outgoing
    connections take their source ports from that range, so a port found free there can be taken by one
    before the process it was chosen for binds it (seen: a bot start failed with "address already in use").
    10000–19999: below the test clusters' node ports (20000–28999) and their bus ports (+10000) too."""
    for _ in range(100):
        port = _ports.randrange(10_000, 20_000)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class BotProcess:
    def __init__(self, fake: FakeTelegram, workdir: Path, prefix: str, *args: str, **env: str | None):
        """`args`: the subcommand (none: `python bot.py`, receiving and answering in one process)."""
        self.fake, self.workdir, self.args = fake, workdir, list(args)
        self.env = {k: v for k, v in os.environ.items()
                    if k not in {"OPENAI_API_KEY", "BOT_MODE", "WEBHOOK_URL", "WEBHOOK_SECRET"}}
        self.env.update({"BOT_TOKEN": fake.token, "TELEGRAM_API_BASE": fake.url, "REDIS_URL": REDIS_TEST_URL,
                         "REDIS_PREFIX": prefix, "DATABASE_PATH": str(workdir / "data" / "shop.db"),
                         "AUDIT_PATH": str(workdir / "audit.jsonl"), "WEBHOOK_PORT": str(free_port()),
                         "MAX_MESSAGE_CHARS": "200", "KEFU_TODAY": "2026-11-29",
                         # a turn process per bot would double every real-process test's start-up: the tests
                         # of handlers/turn_process.py turn it on (test_turn_process, test_e2e_telegram)
                         "TURN_PROCESS": "off", **env})
        self.env = {k: v for k, v in self.env.items() if v is not None}   # None: leave the setting unset
        self._own_port = "WEBHOOK_PORT" not in env
        self.process: asyncio.subprocess.Process | None = None
        self.output = bytearray()   # read all along: a full pipe would stall the bot's logging
        self._reader: asyncio.Task | None = None

    @property
    def port(self) -> int:
        return int(self.env["WEBHOOK_PORT"])

    async def _healthy(self) -> bool:
        """Whether /healthz on the process's port says this process is ready (False, not a hang, when what holds
        the port does not answer HTTP within 5 s)."""
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", self.port), 5)
        except (OSError, TimeoutError):
            return False
        try:
            writer.write(b"GET /healthz HTTP/1.0\r\nHost: x\r\n\r\n")
            answer = await asyncio.wait_for(reader.read(), 5)
        except (OSError, TimeoutError):
            return False
        finally:
            writer.close()
        head, _, body = answer.partition(b"\r\n\r\n")
        try:
            health = json.loads(body)
        except ValueError:
            return False
        # ready, and this process's own answer: another test's bot holding the port is not this one started
        return b" 200 " in head.split(b"\r\n")[0] + b" " and health.get("ready") is True \
            and self.process is not None and health.get("pid") == self.process.pid

    async def start(self) -> None:
        """Start the process; ready when /healthz says the dispatcher has started (signal handlers
        installed) — another process polling the same fake server cannot be mistaken for this one. A port
        of ours taken by another test's process in the meantime gets the start tried again on another one
        (twice at most); a port the test chose itself does not."""
        for attempt in range(3):
            self.process = await asyncio.create_subprocess_exec(
                sys.executable, str(ROOT / "bot.py"), *self.args, cwd=self.workdir, env=self.env,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
            self._reader = asyncio.create_task(self._read(self.process.stdout))
            deadline = time.monotonic() + 120
            while self.process.returncode is not None or not await self._healthy():
                if self.process.returncode is not None or time.monotonic() > deadline:
                    await asyncio.wait_for(self._reader, 10)
                    taken = b"WEBHOOK_PORT: cannot listen on port" in self.output
                    if taken and self._own_port and attempt < 2 and self.process.returncode is not None:
                        self.output.clear()
                        self.env["WEBHOOK_PORT"] = str(free_port())
                        break
                    raise AssertionError(f"the bot did not start:\n{self.output.decode(errors='replace')}")
                await asyncio.sleep(0.05)
            else:
                return

    async def turn_process(self, within: float = 120.0) -> int | None:
        """The pid of the bot's turn process (handlers/turn_process.py) once it answers — until then the bot
        answers its turns itself — or None when the bot runs without one."""
        from handlers.turn_process import wanted

        if not wanted(self.env.get("TURN_PROCESS", "auto")):
            return None
        deadline = time.monotonic() + within
        while not (ready := re.search(rb"turn process (\d+) answers the customer turns", self.output)):
            if time.monotonic() > deadline:
                raise AssertionError(f"the turn process did not start:\n{self.output.decode(errors='replace')}")
            await asyncio.sleep(0.1)
        return int(ready.group(1))

    async def _read(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(65536):
            self.output.extend(chunk)

    async def kill(self) -> None:
        """SIGKILL if still running (test clean-up, or a crash on purpose)."""
        if self.process is not None and self.process.returncode is None:
            self.process.kill()
            await self.process.wait()

    async def stop(self) -> tuple[int, str]:
        assert self.process is not None
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            code = await asyncio.wait_for(self.process.wait(), 60)
            await asyncio.wait_for(self._reader, 10)
        except TimeoutError:
            self.process.kill()
            raise
        return code, self.output.decode(errors="replace")




async def wait_handled(fake: FakeTelegram, process: BotProcess, within: float = 60.0) -> None:
    """Wait for the acknowledgements that say every update given to the bot has been handled, so an
    answer sent twice would have been sent by now: the fake Bot API has every update it holds confirmed
    by a later getUpdates offset (Telegram would not hand it out again), and the durable inbox under the
    process's Redis prefix has every entry read and acknowledged by a worker (XACK, which comes after
    the reply was sent and the memory written). Checked at each Bot API call, and every 50 ms."""
    from redis.asyncio import Redis

    from handlers.delivery.inbox import GROUP

    prefix = process.env["REDIS_PREFIX"]
    redis = Redis.from_url(process.env["REDIS_URL"], socket_timeout=5, socket_connect_timeout=5)

    async def left() -> list[str]:
        waiting = [f"update {u['update_id']} not confirmed" for u in fake.unconfirmed]
        async for key in redis.scan_iter(match=f"{prefix}inbox:*", _type="STREAM"):
            stream = (await redis.xinfo_stream(key))["last-generated-id"]
            groups = [g for g in await redis.xinfo_groups(key) if g["name"] in (GROUP, GROUP.encode())]
            if not groups:
                waiting.append(f"{key.decode()}: no workers' group yet")
            for group in groups:
                if group["pending"] or group["last-delivered-id"] != stream:
                    waiting.append(f"{key.decode()}: {group['pending']} pending, read up to "
                                   f"{group['last-delivered-id']} of {stream}")
        return waiting

    deadline = time.monotonic() + within
    try:
        while waiting := await left():
            if time.monotonic() > deadline:
                tail = process.output.decode(errors="replace")[-4000:]
                raise AssertionError(f"not everything was handled within {within} s: {waiting}\n"
                                     f"the bot's output (end):\n{tail}")
            await fake.changed(0.05)
    finally:
        await redis.aclose()
