"""A redis-server of a test's own, on a port of its own, with the append-only file on and fsynced at
every write: a fault test can crash it (SIGKILL), restart it on the same files, or freeze it (SIGSTOP)
without touching the Redis that the other tests share."""

from __future__ import annotations

import asyncio
import shutil
import signal
from pathlib import Path

from redis.asyncio import Redis

from tests.fakes.bot_process import free_port


class RedisServer:
    def __init__(self, workdir: Path):
        self.dir, self.port = workdir / "redis", free_port()
        self.dir.mkdir(exist_ok=True)
        self.process: asyncio.subprocess.Process | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self) -> Redis:
        return Redis.from_url(self.url, socket_timeout=5, socket_connect_timeout=5)

    async def start(self) -> RedisServer:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("these tests need redis-server on PATH (apt install redis-server)")
        self.process = await asyncio.create_subprocess_exec(
            binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.dir), "--appendonly", "yes",
            "--appendfsync", "always", "--save", "", "--daemonize", "no", "--logfile", str(self.dir / "log"),
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
        client = self.client()
        try:
            for _ in range(200):
                try:
                    if await client.ping():
                        return self
                except OSError:
                    pass
                except Exception:   # noqa: BLE001 - loading the AOF, or not listening yet
                    pass
                await asyncio.sleep(0.05)
        finally:
            await client.aclose()
        raise RuntimeError(f"redis-server on port {self.port} did not start: {(self.dir / 'log').read_text()}")

    async def crash(self) -> None:
        """SIGKILL: no shutdown, no final save; what survives is what the append-only file holds."""
        if self.process is not None and self.process.returncode is None:
            self.process.kill()
            await self.process.wait()

    def freeze(self) -> None:
        """SIGSTOP: connections stay open and nothing answers, as a network partition looks to a client."""
        self.process.send_signal(signal.SIGSTOP)

    def thaw(self) -> None:
        self.process.send_signal(signal.SIGCONT)

    async def stop(self) -> None:
        if self.process is not None and self.process.returncode is None:
            self.process.send_signal(signal.SIGCONT)
        await self.crash()
