"""A fake Telegram Bot API server on 127.0.0.1 speaking the real HTTP shape: POST
/bot<token>/<method> with form-encoded (or multipart, or JSON) fields, `getUpdates` long polling,
`{"ok": ..., "result": ...}` answers, and scripted failures (429 flood control, 400 entity errors)."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.local_http import serve

BOT_USER = {"id": 4242, "is_bot": True, "first_name": "kefu", "username": "kefu_test_bot"}


@dataclass
class Sent:
    chat_id: int
    text: str
    parse_mode: str | None
    at: float


@dataclass
class FakeTelegram:
    token: str = "123456:TEST-TOKEN"
    updates: list[dict[str, Any]] = field(default_factory=list)
    sent: list[Sent] = field(default_factory=list)
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    send_failures: list[str] = field(default_factory=list)   # "429" or "entities", consumed per sendMessage
    url: str = ""
    _next_update_id: int = 1000
    _next_message_id: int = 1
    _runner: web.AppRunner | None = None
    _changed: asyncio.Condition | None = None

    async def start(self) -> FakeTelegram:
        self._changed = asyncio.Condition()
        app = web.Application()
        app.router.add_post("/bot{token}/{method}", self._handle)
        self._runner, self.url = await serve(app)
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    # --- scripting ---------------------------------------------------------------------------------

    async def push(self, update: dict[str, Any]) -> int:
        update = {"update_id": self._next_update_id, **update}
        self._next_update_id += 1
        self.updates.append(update)
        async with self._changed:
            self._changed.notify_all()
        return update["update_id"]

    def message(self, chat_id: int, text: str | None = None, user_id: int | None = None, **extra: Any) -> dict:
        self._next_message_id += 1
        msg = {"message_id": self._next_message_id, "date": int(time.time()),
               "chat": {"id": chat_id, "type": "private", "first_name": "顾客"},
               "from": {"id": user_id or chat_id, "is_bot": False, "first_name": "顾客"}, **extra}
        if text is not None:
            msg["text"] = text
            if text.startswith("/"):
                msg["entities"] = [{"type": "bot_command", "offset": 0, "length": len(text.split()[0])}]
        return {"message": msg}

    async def say(self, chat_id: int, text: str, user_id: int | None = None) -> int:
        return await self.push(self.message(chat_id, text, user_id))

    def replies(self, chat_id: int) -> list[str]:
        return [s.text for s in self.sent if s.chat_id == chat_id]

    async def wait_replies(self, chat_id: int, count: int, within: float = 60.0) -> list[str]:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            if len(self.replies(chat_id)) >= count:
                return self.replies(chat_id)
            await asyncio.sleep(0.05)
        raise AssertionError(f"chat {chat_id}: expected {count} replies, got {self.replies(chat_id)}")

    # --- the Bot API ---------------------------------------------------------------------------------

    async def _fields(self, request: web.Request) -> dict[str, Any]:
        if request.content_type == "application/json":
            return await request.json()
        form = await request.post()
        out: dict[str, Any] = {}
        for key, value in form.items():
            text = value if isinstance(value, str) else value.file.read().decode()
            try:
                out[key] = json.loads(text)
            except (json.JSONDecodeError, TypeError):
                out[key] = text
        return out

    async def _handle(self, request: web.Request) -> web.Response:
        if request.match_info["token"] != self.token:
            return web.json_response({"ok": False, "error_code": 401, "description": "Unauthorized"}, status=401)
        method = request.match_info["method"]
        fields = await self._fields(request)
        self.calls.append((method, fields))
        handler = getattr(self, f"_m_{method}", None)
        if handler is None:
            return web.json_response({"ok": True, "result": True})
        return await handler(fields)

    async def _m_getMe(self, fields) -> web.Response:
        return web.json_response({"ok": True, "result": BOT_USER})

    async def _m_getUpdates(self, fields) -> web.Response:
        offset = int(fields.get("offset") or 0)
        timeout = min(float(fields.get("timeout") or 0), 2.0)
        deadline = time.monotonic() + timeout

        async with self._changed:
            while not [u for u in self.updates if u["update_id"] >= offset] and time.monotonic() < deadline:
                try:
                    await asyncio.wait_for(self._changed.wait(), max(deadline - time.monotonic(), 0.01))
                except TimeoutError:
                    break
        self.updates = [u for u in self.updates if u["update_id"] >= offset]   # confirmed ones are gone
        ready = list(self.updates)
        return web.json_response({"ok": True, "result": ready[:100]})

    async def _m_sendMessage(self, fields) -> web.Response:
        if self.send_failures:
            failure = self.send_failures.pop(0)
            if failure == "429":
                return web.json_response({"ok": False, "error_code": 429,
                                          "description": "Too Many Requests: retry after 1",
                                          "parameters": {"retry_after": 1}}, status=429)
            if failure == "entities":
                return web.json_response({"ok": False, "error_code": 400,
                                          "description": "Bad Request: can't parse entities: unexpected end tag"},
                                         status=400)
        chat_id = int(fields["chat_id"])
        self.sent.append(Sent(chat_id, str(fields["text"]), fields.get("parse_mode"), time.monotonic()))
        self._next_message_id += 1
        return web.json_response({"ok": True, "result": {
            "message_id": self._next_message_id, "date": int(time.time()),
            "chat": {"id": chat_id, "type": "private"}, "from": BOT_USER, "text": str(fields["text"])}})
