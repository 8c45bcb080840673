"""Customer turns in a second Python process, so that a Telegram bot uses both cores.

A turn is pure-Python CPU (the reader, the router, the search, the validator): in one process it shares
one interpreter lock with Telegram delivery (aiogram, the inbox, Redis), and under load the bot ran on one
core with the other idle (bench/README "Load"). `TurnProcess` starts a child (`python -m
handlers.turn_process FD`) that opens its own agent over the same catalog (read-only, the same settings)
and answers `answer` and `signs` calls sent over a private socket pair, many at once. The parent keeps
everything else: delivery, sessions, the audit, operators, handoff.

Anything that goes wrong with the child — not started yet, dead, slow past the turn budget — is answered
by the parent's own agent, the same code, so a turn is never lost; a child slow past the budget is killed
(not waited on turn after turn), and a dead child is started again after a pause that doubles up to a minute. Frames are a 4-byte length and a pickle; the socket pair is private to
the two processes (nothing else can write to it)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import pickle
import signal
import socket
import struct
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from agent.memory import ChatMemory
from agent.settings import Settings
from agent.trace import Signs, TurnResult
from agent.turn import Agent
from handlers.delivery.metrics import TURN_PLACES

log = logging.getLogger(__name__)

_LENGTH = struct.Struct(">I")
CALL_MARGIN_SECONDS = 10.0       # past the turn budget, a call to the child is given up and answered here
SIGNS_TIMEOUT_SECONDS = 10.0
START_TIMEOUT_SECONDS = 3600.0   # opening the agent: seconds for the demo, 6-20 minutes at a million products
RESTART_PAUSES = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 60.0)


class ChildUnavailable(Exception):
    """The child cannot take a call now (starting, stopped, gone, or too slow)."""


class TurnFailed(RuntimeError):
    """The child's agent raised while answering; the parent treats it as a failed turn."""


def wanted(setting: str) -> bool:
    """TURN_PROCESS: `on`, `off`, or `auto` — a child when this machine has a second core for it."""
    if setting == "auto":
        return (os.cpu_count() or 1) >= 2
    return setting == "on"


async def _write(writer: asyncio.StreamWriter, message: Any) -> None:
    """One frame, in one `write` (so frames from concurrent tasks never interleave), then backpressure."""
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    writer.write(_LENGTH.pack(len(data)) + data)
    await writer.drain()


async def _read(reader: asyncio.StreamReader) -> Any:
    """The next frame; EOFError when the other side closed."""
    try:
        head = await reader.readexactly(_LENGTH.size)
        return pickle.loads(await reader.readexactly(_LENGTH.unpack(head)[0]))   # noqa: S301 - our own child
    except asyncio.IncompleteReadError:
        raise EOFError from None


class TurnProcess:
    """The agent's `answer` and `signs`, run in the child when it is up, else by `local` (the parent's agent)."""

    def __init__(self, settings: Settings, local: Agent) -> None:
        self.settings, self.local = settings, local
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future] = {}
        self._writer: asyncio.StreamWriter | None = None
        self._process: asyncio.subprocess.Process | None = None
        self._supervisor: asyncio.Task | None = None
        self._closing = False
        self.ready = asyncio.Event()
        self.calls = {"child": 0, "local": 0}   # how turns were answered (tests and the log read it)

    # -- the agent's interface -------------------------------------------------------------------------
    async def answer(self, text: str, *, user_id: str, memory: ChatMemory | None = None) -> TurnResult:
        try:
            result = await self._call("answer", (text, str(user_id), memory),
                                      self.settings.turn_budget_seconds + CALL_MARGIN_SECONDS)
        except ChildUnavailable:
            self.calls["local"] += 1
            TURN_PLACES.labels("here").inc()
            return await self.local.answer(text, user_id=user_id, memory=memory)
        self.calls["child"] += 1
        TURN_PLACES.labels("child").inc()
        return result

    async def signs(self, text: str, result: TurnResult, earlier: list[str]) -> Signs:
        try:
            return await self._call("signs", (text, result.answer, bool(result.trace and result.trace.fallback),
                                              list(earlier)), SIGNS_TIMEOUT_SECONDS)
        except ChildUnavailable:
            return await self.local.signs(text, result, earlier)

    # -- the child -------------------------------------------------------------------------------------
    async def _call(self, kind: str, arguments: tuple, within: float) -> Any:
        writer = self._writer
        if writer is None or not self.ready.is_set():
            raise ChildUnavailable
        call_id = next(self._ids)
        future = asyncio.get_running_loop().create_future()
        self._pending[call_id] = future
        try:
            await _write(writer, (call_id, kind, arguments))
            status, value = await asyncio.wait_for(future, within)
        except (OSError, TimeoutError) as exc:
            log.warning("turn process: %s call not answered (%s): answering in this process",
                        kind, type(exc).__name__)
            if isinstance(exc, TimeoutError) and self._process is not None:
                self._process.kill()   # stuck: not waited on turn after turn; the supervisor starts another
            raise ChildUnavailable from None
        finally:
            self._pending.pop(call_id, None)
        if status == "error":
            raise TurnFailed(value)
        return value

    async def start(self) -> None:
        """Start the child and its supervisor; turns are answered here until the child says it is ready."""
        self._supervisor = asyncio.create_task(self._supervise(), name="turn-process")

    async def _supervise(self) -> None:
        failures = 0
        while not self._closing:
            started = time.monotonic()
            try:
                await self._run_child()
            except Exception:   # noqa: BLE001 - the supervisor outlives any one child
                log.exception("turn process failed")
            if self._closing:
                return
            failures = 0 if time.monotonic() - started > 600 else failures   # it ran for a while: start over
            pause = RESTART_PAUSES[min(failures, len(RESTART_PAUSES) - 1)]
            failures += 1
            log.warning("turn process stopped: turns are answered in this process; starting it again in %.0f s",
                        pause)
            await asyncio.sleep(pause)

    async def _run_child(self) -> None:
        ours, theirs = socket.socketpair()
        try:
            self._process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "handlers.turn_process", str(theirs.fileno()),
                pass_fds=(theirs.fileno(),), stdin=asyncio.subprocess.DEVNULL)
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        reader, writer = await asyncio.open_unix_connection(sock=ours)
        try:
            await _write(writer, self.settings)
            hello = await asyncio.wait_for(_read(reader), START_TIMEOUT_SECONDS)
            if hello != "ready":
                raise RuntimeError(f"the turn process did not start: {hello}")
            self._writer = writer
            self.ready.set()
            log.info("turn process %d answers the customer turns", self._process.pid)
            while True:
                call_id, status, value = await _read(reader)
                future = self._pending.get(call_id)
                if future is not None and not future.done():
                    future.set_result((status, value))
        except (EOFError, OSError, TimeoutError):
            pass
        finally:
            self.ready.clear()
            self._writer = None
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(ConnectionResetError("the turn process is gone"))
            writer.close()
            await self._stop_process()

    async def _stop_process(self) -> None:
        process, self._process = self._process, None
        if process is None or process.returncode is not None:
            return
        process.terminate()
        try:
            await asyncio.wait_for(process.wait(), 5)
        except TimeoutError:
            process.kill()
            await process.wait()

    async def close(self) -> None:
        log.info("customer turns answered by the turn process: %d, by this process: %d",
                 self.calls["child"], self.calls["local"])
        self._closing = True
        if self._writer is not None:
            self._writer.close()
        if self._supervisor is not None:
            self._supervisor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._supervisor
        await self._stop_process()


@asynccontextmanager
async def turn_process(settings: Settings, local: Agent) -> AsyncIterator[TurnProcess]:
    """A started `TurnProcess`, stopped (the child too) on leaving."""
    turns = TurnProcess(settings, local)
    await turns.start()
    try:
        yield turns
    finally:
        await turns.close()


# -- the child's side ------------------------------------------------------------------------------------
async def _serve(fd: int) -> int:
    from agent.startup import open_agent
    from handlers.process import settle_heap

    reader, writer = await asyncio.open_unix_connection(sock=socket.socket(fileno=fd))
    settings = await _read(reader)

    async def reply(call_id: int, status: str, value: Any) -> None:
        with contextlib.suppress(OSError):   # the parent is gone: the read loop ends at its EOF
            await _write(writer, (call_id, status, value))

    async def run(agent: Agent, call_id: int, kind: str, arguments: tuple) -> None:
        try:
            if kind == "answer":
                text, user_id, memory = arguments
                value = await agent.answer(text, user_id=user_id, memory=memory)
            else:
                text, answer, fallback, earlier = arguments
                value = await agent.signs_of(text, answer, fallback, earlier)
        except Exception as exc:   # noqa: BLE001 - told to the parent, which treats it as a failed turn
            log.exception("turn process: %s failed", kind)
            await reply(call_id, "error", type(exc).__name__)
            return
        await reply(call_id, "ok", value)

    async with open_agent(settings) as agent:
        await agent.vocabulary()   # built before the first turn, not during it
        settle_heap()
        await _write(writer, "ready")
        running: set[asyncio.Task] = set()
        while True:
            try:
                call_id, kind, arguments = await _read(reader)
            except EOFError:
                break
            task = asyncio.create_task(run(agent, call_id, kind, arguments))
            running.add(task)
            task.add_done_callback(running.discard)
        for task in running:
            task.cancel()
    return 0


def main() -> None:
    from handlers.process import leave, log_off_the_loop, run_serving

    signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl+C in a terminal stops the parent, which stops this
    listener = log_off_the_loop(logging.WARNING)
    try:
        code = run_serving(_serve(int(sys.argv[1])))
    finally:
        listener.stop()
    leave(code)


if __name__ == "__main__":
    main()
