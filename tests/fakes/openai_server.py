"""A scripted OpenAI-compatible HTTP server on 127.0.0.1, so the real openai client is exercised end
to end: /v1/embeddings and /v1/chat/completions, with scripted replies and misbehaviour."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from aiohttp import web

from tests.fakes.local_http import serve


def fake_vector(text: str, dimensions: int) -> list[float]:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    vector = np.random.default_rng(seed).standard_normal(dimensions)
    return [float(x) for x in vector / np.linalg.norm(vector)]


# A chat reply is either a dict (an OpenAI "message") or an int HTTP status, or "stall".
ChatReply = dict[str, Any] | int | str
ChatScript = Callable[[dict[str, Any]], ChatReply]


@dataclass
class FakeOpenAI:
    dimensions: int = 16
    embedding_faults: list[str] = field(default_factory=list)   # per request: "ok", "short", "ragged", "no_data", "500"
    chat_replies: list[ChatReply] = field(default_factory=list)  # consumed in order
    chat_function: ChatScript | None = None                      # or computed from the request
    requests: list[tuple[str, dict[str, Any], dict[str, str]]] = field(default_factory=list)
    stall_seconds: float = 30.0
    url: str = ""
    port: int = 0                                                # 0: a free port
    _runner: web.AppRunner | None = None
    _tick: asyncio.Event = field(default_factory=asyncio.Event)   # set (and replaced) at every request
    _stopping: asyncio.Event = field(default_factory=asyncio.Event)   # ends a stall: stop() waits for no sleeper

    async def start(self) -> FakeOpenAI:
        app = web.Application()
        app.router.add_post("/v1/embeddings", self._embeddings)
        app.router.add_post("/v1/chat/completions", self._chat)
        self._runner, base = await serve(app, self.port)
        self.url = f"{base}/v1"
        return self

    async def stop(self) -> None:
        """Stop serving. A request stalled on purpose is answered at once ("too late"): its client has
        given up or is being closed, and the server's shutdown would otherwise wait out the stall."""
        self._stopping.set()
        if self._runner is not None:
            await self._runner.cleanup()

    def _record(self, path: str, body: dict, request: web.Request) -> None:
        self.requests.append((path, body, {"authorization": request.headers.get("Authorization", "")}))
        self._tick.set()
        self._tick = asyncio.Event()

    async def wait_requests(self, path: str, count: int = 1, within: float = 60.0) -> list[dict[str, Any]]:
        """Wait, woken by each request, until `count` requests to `path` ("chat", "embeddings") have come;
        their bodies."""
        deadline = time.monotonic() + within
        while len(bodies := [body for p, body, _ in self.requests if p == path]) < count:
            if time.monotonic() >= deadline:
                raise AssertionError(f"expected {count} {path} requests within {within} s, got {len(bodies)}")
            try:
                await asyncio.wait_for(self._tick.wait(), deadline - time.monotonic())
            except TimeoutError:
                pass
        return bodies

    async def _embeddings(self, request: web.Request) -> web.Response:
        body = await request.json()
        self._record("embeddings", body, request)
        fault = self.embedding_faults.pop(0) if self.embedding_faults else "ok"
        if fault == "500":
            return web.json_response({"error": {"message": "boom", "type": "server_error"}}, status=500)
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        dims = body.get("dimensions") or self.dimensions
        data = [{"object": "embedding", "index": i, "embedding": fake_vector(t, dims)} for i, t in enumerate(texts)]
        if fault == "short":
            data = data[:-1]
        if fault == "ragged":   # vectors of two lengths
            data[-1]["embedding"] = data[-1]["embedding"][:-1]
        if fault == "no_data":
            return web.json_response({"object": "list", "model": body["model"]})
        return web.json_response({"object": "list", "data": data, "model": body["model"],
                                  "usage": {"prompt_tokens": 1, "total_tokens": 1}})

    async def _chat(self, request: web.Request) -> web.Response:
        body = await request.json()
        self._record("chat", body, request)
        if self.chat_function is not None:
            reply = self.chat_function(body)
        elif self.chat_replies:
            reply = self.chat_replies.pop(0)
        else:
            reply = {"role": "assistant", "content": "（脚本已用完）"}
        if reply == "stall":
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), self.stall_seconds)
            reply = {"role": "assistant", "content": "too late"}
        if isinstance(reply, int):
            return web.json_response({"error": {"message": "scripted failure", "type": "server_error"}},
                                     status=reply, headers={"retry-after-ms": "10"})
        message = dict(reply)
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        return web.json_response({
            "id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": body.get("model", "fake"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": None, **message},
                         "finish_reason": finish}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        })


def tool_call(name: str, arguments: dict[str, Any] | str, call_id: str = "call_1") -> dict[str, Any]:
    """One OpenAI tool call; `arguments` may be a raw string to script malformed JSON."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": raw}}


class HungEndpoint:
    """A listener on 127.0.0.1 that accepts connections and never answers (nor reads): an endpoint that
    hangs. Counts the connections, so a test can tell that none came while a circuit was open."""

    def __init__(self) -> None:
        self.connections = 0
        self.port = 0
        self._server: asyncio.Server | None = None
        self._held: list[asyncio.StreamWriter] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def start(self) -> HungEndpoint:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self._held.append(writer)   # held open, never written to

    async def stop(self) -> None:
        """Stop listening and drop the held connections (the port can then serve a FakeOpenAI)."""
        if self._server is not None:
            self._server.close()
            for writer in self._held:
                writer.close()
            self._held.clear()
            await self._server.wait_closed()


def refused_url() -> str:
    """A base URL on 127.0.0.1 where nothing listens: every connection is refused."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"
