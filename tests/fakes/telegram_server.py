"""A fake Telegram Bot API server on 127.0.0.1 speaking the real HTTP shape: POST
/bot<token>/<method> with form-encoded (or multipart, or JSON) fields, `getUpdates` long polling,
`{"ok": ..., "result": ...}` answers, and scripted failures (429 flood control, 400 entity errors).
Also what operators need: forum topics in a supergroup, copyMessage(s), callback queries,
editMessageReplyMarkup, sendDocument, and customers who blocked the bot (403)."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.local_http import serve

BOT_USER = {"id": 4242, "is_bot": True, "first_name": "kefu", "username": "kefu_test_bot"}
BLOCKED = "Forbidden: bot was blocked by the user"
THREAD_GONE = "Bad Request: message thread not found"


@dataclass
class Sent:
    """One message the bot made appear: sent, copied or uploaded."""
    chat_id: int
    text: str
    parse_mode: str | None
    at: float
    message_id: int = 0
    thread_id: int | None = None
    reply_markup: dict[str, Any] | None = None
    kind: str = "text"                       # text | copy | document | photo
    source: tuple[int, int] | None = None    # a copy: (from_chat_id, message_id)
    document: bytes | None = None
    filename: str | None = None

    def buttons(self) -> list[dict[str, Any]]:
        rows = (self.reply_markup or {}).get("inline_keyboard") or []
        return [button for row in rows for button in row]


@dataclass
class Topic:
    chat_id: int
    name: str
    closed: bool = False
    deleted: bool = False


class ApiError(Exception):
    def __init__(self, code: int, description: str):
        super().__init__(description)
        self.code, self.description = code, description


@dataclass
class FakeTelegram:
    token: str = "123456:TEST-TOKEN"
    updates: list[dict[str, Any]] = field(default_factory=list)
    sent: list[Sent] = field(default_factory=list)
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    delivered: list[dict[str, Any]] = field(default_factory=list)   # every update handed out by getUpdates
    send_failures: list[str] = field(default_factory=list)   # "429", "500", "502" or "entities", per sendMessage
    topics: dict[int, Topic] = field(default_factory=dict)
    blocked: set[int] = field(default_factory=set)           # customers who blocked the bot
    callback_answers: list[dict[str, Any]] = field(default_factory=list)
    url: str = ""
    _next_update_id: int = 1000
    _confirmed: int = 0   # the highest getUpdates offset seen: updates below it are confirmed
    _next_message_id: int = 1
    _next_thread_id: int = 500
    _known: dict[tuple[int, int], dict[str, Any]] = field(default_factory=dict)   # messages copyable by id
    _by_chat: dict[int, list[Sent]] = field(default_factory=dict)   # `sent`, indexed: load tests ask per chat
    _arrived: dict[int, asyncio.Event] = field(default_factory=dict)   # set when a chat gets a message
    _runner: web.AppRunner | None = None
    _changed: asyncio.Condition | None = None
    _tick: asyncio.Event | None = None    # set (and replaced) whenever the bot calls the API or a test pushes

    async def start(self) -> FakeTelegram:
        self._changed = asyncio.Condition()
        self._tick = asyncio.Event()
        app = web.Application()
        app.router.add_post("/bot{token}/{method}", self._handle)
        self._runner, self.url = await serve(app)
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    # --- scripting ---------------------------------------------------------------------------------

    def _ticked(self) -> None:
        """Something changed here: wake whoever waits in wait_for / wait_handled."""
        if self._tick is not None:
            self._tick.set()
            self._tick = asyncio.Event()

    async def changed(self, within: float) -> None:
        """Return at the next change here (an API call answered, an update pushed), or after `within` s."""
        try:
            await asyncio.wait_for(self._tick.wait(), max(within, 0))
        except TimeoutError:
            pass

    @property
    def unconfirmed(self) -> list[dict[str, Any]]:
        """Updates not yet confirmed by a getUpdates offset past them: Telegram would hand them out
        (again). Empty once a polling bot has taken and confirmed everything pushed."""
        return [u for u in self.updates if u["update_id"] >= self._confirmed]

    async def push(self, update: dict[str, Any]) -> int:
        update = {"update_id": self._next_update_id, **update}
        self._next_update_id += 1
        message = update.get("message")
        if message:
            self._known[(message["chat"]["id"], message["message_id"])] = message
        self.updates.append(update)
        async with self._changed:
            self._changed.notify_all()
        self._ticked()
        return update["update_id"]

    def _new_message_id(self) -> int:
        self._next_message_id += 1
        return self._next_message_id

    def message(self, chat_id: int, text: str | None = None, user_id: int | None = None, **extra: Any) -> dict:
        msg = {"message_id": self._new_message_id(), "date": int(time.time()),
               "chat": {"id": chat_id, "type": "private", "first_name": "顾客"},
               "from": {"id": user_id or chat_id, "is_bot": False, "first_name": "顾客"}, **extra}
        if text is not None:
            msg["text"] = text
            if text.startswith("/"):
                msg["entities"] = [{"type": "bot_command", "offset": 0, "length": len(text.split()[0])}]
        return {"message": msg}

    def group_message(self, chat_id: int, thread_id: int | None, user_id: int, text: str | None = None,
                      **extra: Any) -> dict:
        """A message in a forum supergroup, in a topic when `thread_id` is given."""
        update = self.message(chat_id, text, user_id, **extra)
        msg = update["message"]
        msg["chat"] = {"id": chat_id, "type": "supergroup", "title": "客服组", "is_forum": True}
        msg["from"] = {"id": user_id, "is_bot": False, "first_name": f"店员{user_id}"}
        if thread_id is not None:
            msg["message_thread_id"], msg["is_topic_message"] = thread_id, True
        return update

    async def say(self, chat_id: int, text: str, user_id: int | None = None) -> int:
        return await self.push(self.message(chat_id, text, user_id))

    async def press(self, sent: Sent, data: str, user_id: int | None = None) -> int:
        """A user presses the inline button with callback `data` under the message `sent`."""
        message = {"message_id": sent.message_id, "date": int(time.time()), "from": BOT_USER,
                   "chat": {"id": sent.chat_id, "type": "private" if sent.chat_id > 0 else "supergroup"},
                   "text": sent.text}
        if sent.thread_id is not None:
            message["message_thread_id"] = sent.thread_id
        user = user_id or sent.chat_id
        return await self.push({"callback_query": {
            "id": f"cb{self._new_message_id()}", "chat_instance": str(sent.chat_id), "data": data,
            "from": {"id": user, "is_bot": False, "first_name": "顾客"}, "message": message}})

    def messages_to(self, chat_id: int) -> list[Sent]:
        """What the bot made appear in one chat, in order (each with the time it arrived)."""
        return list(self._by_chat.get(chat_id, ()))

    def replies(self, chat_id: int) -> list[str]:
        return [s.text for s in self._by_chat.get(chat_id, ())]

    def in_topic(self, chat_id: int, thread_id: int) -> list[Sent]:
        return [s for s in self._by_chat.get(chat_id, ()) if s.thread_id == thread_id]

    async def wait_for(self, condition, within: float = 60.0, what: str = "a condition", poll: float = 0.05):
        """Check `condition()` at every change here (each Bot API call the bot makes, each update pushed),
        and every `poll` seconds for what changes elsewhere, until it returns something truthy; that
        value is returned."""
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            value = condition()
            if value:
                return value
            await self.changed(min(poll, deadline - time.monotonic()))
        raise AssertionError(f"timed out waiting for {what}; sent: {[(s.chat_id, s.thread_id, s.text) for s in self.sent]}")

    async def wait_replies(self, chat_id: int, count: int, within: float = 60.0) -> list[str]:
        """Wait, woken by each message the chat gets (no polling: a load test waits in a thousand chats)."""
        deadline = time.monotonic() + within
        while len(self.replies(chat_id)) < count:
            arrived = self._arrived.setdefault(chat_id, asyncio.Event())
            try:
                await asyncio.wait_for(arrived.wait(), max(deadline - time.monotonic(), 0))
            except TimeoutError:
                break
            arrived.clear()
        if len(self.replies(chat_id)) >= count:
            return self.replies(chat_id)
        raise AssertionError(f"chat {chat_id}: expected {count} replies, got {self.replies(chat_id)}")

    def delete_topic(self, thread_id: int) -> None:
        self.topics[thread_id].deleted = True

    # --- the Bot API ---------------------------------------------------------------------------------

    async def _fields(self, request: web.Request) -> dict[str, Any]:
        if request.content_type == "application/json":
            return await request.json()
        form = await request.post()
        out: dict[str, Any] = {}
        for key, value in form.items():
            if not isinstance(value, str):   # an uploaded file
                out[key] = {"filename": value.filename, "content": value.file.read()}
                continue
            try:
                out[key] = json.loads(value)
            except (json.JSONDecodeError, TypeError):
                out[key] = value
        return out

    async def _handle(self, request: web.Request) -> web.Response:
        if request.match_info["token"] != self.token:
            return web.json_response({"ok": False, "error_code": 401, "description": "Unauthorized"}, status=401)
        method = request.match_info["method"]
        fields = await self._fields(request)
        self.calls.append((method, fields))
        handler = getattr(self, f"_m_{method}", None)
        try:
            if handler is None:
                return web.json_response({"ok": True, "result": True})
            return await handler(fields)
        except ApiError as exc:
            return web.json_response({"ok": False, "error_code": exc.code, "description": exc.description},
                                     status=exc.code)
        finally:
            self._ticked()

    @staticmethod
    def _ok(result: Any) -> web.Response:
        return web.json_response({"ok": True, "result": result})

    def _check_target(self, chat_id: int, thread_id: Any) -> int | None:
        if chat_id in self.blocked:
            raise ApiError(403, BLOCKED)
        if thread_id in (None, ""):
            return None
        topic = self.topics.get(int(thread_id))
        if topic is None or topic.deleted or topic.chat_id != chat_id:
            raise ApiError(400, THREAD_GONE)
        if topic.closed:
            raise ApiError(400, "Bad Request: TOPIC_CLOSED")
        return int(thread_id)

    def _record(self, sent: Sent) -> dict[str, Any]:
        sent.message_id = self._new_message_id()
        self.sent.append(sent)
        self._by_chat.setdefault(sent.chat_id, []).append(sent)
        if sent.chat_id in self._arrived:
            self._arrived[sent.chat_id].set()
        message = {"message_id": sent.message_id, "date": int(time.time()), "from": BOT_USER,
                   "chat": {"id": sent.chat_id, "type": "private" if sent.chat_id > 0 else "supergroup"},
                   "text": sent.text}
        if sent.thread_id is not None:
            message["message_thread_id"] = sent.thread_id
        if sent.reply_markup:
            message["reply_markup"] = sent.reply_markup
        self._known[(sent.chat_id, sent.message_id)] = message
        return message

    async def _m_getMe(self, fields) -> web.Response:
        return self._ok(BOT_USER)

    async def _m_getUpdates(self, fields) -> web.Response:
        offset = int(fields.get("offset") or 0)
        self._confirmed = max(self._confirmed, offset)
        timeout = min(float(fields.get("timeout") or 0), 2.0)
        deadline = time.monotonic() + timeout

        async with self._changed:
            while not [u for u in self.updates if u["update_id"] >= offset] and time.monotonic() < deadline:
                try:
                    await asyncio.wait_for(self._changed.wait(), max(deadline - time.monotonic(), 0.01))
                except TimeoutError:
                    break
        self.updates = [u for u in self.updates if u["update_id"] >= offset]   # confirmed ones are gone
        ready = list(self.updates)[:100]
        self.delivered.extend(ready)
        return self._ok(ready)

    async def _m_sendMessage(self, fields) -> web.Response:
        if self.send_failures:
            failure = self.send_failures.pop(0)
            if failure == "429":
                return web.json_response({"ok": False, "error_code": 429,
                                          "description": "Too Many Requests: retry after 1",
                                          "parameters": {"retry_after": 1}}, status=429)
            if failure == "entities":
                raise ApiError(400, "Bad Request: can't parse entities: unexpected end tag")
            if failure in ("500", "502"):
                raise ApiError(int(failure), "Internal Server Error" if failure == "500" else "Bad Gateway")
        chat_id = int(fields["chat_id"])
        thread_id = self._check_target(chat_id, fields.get("message_thread_id"))
        return self._ok(self._record(Sent(chat_id, str(fields["text"]), fields.get("parse_mode"), time.monotonic(),
                                          thread_id=thread_id, reply_markup=fields.get("reply_markup"))))

    def _copy(self, fields: dict[str, Any], message_id: int) -> dict[str, Any]:
        chat_id, source_chat = int(fields["chat_id"]), int(fields["from_chat_id"])
        thread_id = self._check_target(chat_id, fields.get("message_thread_id"))
        source = self._known.get((source_chat, int(message_id)))
        if source is None:
            raise ApiError(400, "Bad Request: message to copy not found")
        text = source.get("text") or source.get("caption") or next(
            (kind for kind in ("photo", "document", "voice", "sticker", "video") if kind in source), "message")
        message = self._record(Sent(chat_id, str(text), None, time.monotonic(), thread_id=thread_id, kind="copy",
                                    source=(source_chat, int(message_id))))
        return {"message_id": message["message_id"]}

    async def _m_copyMessage(self, fields) -> web.Response:
        return self._ok(self._copy(fields, int(fields["message_id"])))

    async def _m_copyMessages(self, fields) -> web.Response:
        return self._ok([self._copy(fields, int(m)) for m in sorted(fields["message_ids"])])

    async def _upload(self, fields: dict[str, Any], field_name: str) -> web.Response:
        chat_id = int(fields["chat_id"])
        thread_id = self._check_target(chat_id, fields.get("message_thread_id"))
        upload = fields[field_name]
        if isinstance(upload, str) and upload.startswith("attach://"):   # the file is in its own part
            upload = fields[upload.removeprefix("attach://")]
        return self._ok(self._record(Sent(chat_id, str(fields.get("caption") or ""), fields.get("parse_mode"),
                                          time.monotonic(), thread_id=thread_id, kind=field_name,
                                          document=upload["content"], filename=upload["filename"])))

    async def _m_sendDocument(self, fields) -> web.Response:
        return await self._upload(fields, "document")

    async def _m_sendPhoto(self, fields) -> web.Response:
        return await self._upload(fields, "photo")

    async def _m_createForumTopic(self, fields) -> web.Response:
        self._next_thread_id += 1
        chat_id = int(fields["chat_id"])
        self.topics[self._next_thread_id] = Topic(chat_id, str(fields["name"]))
        return self._ok({"message_thread_id": self._next_thread_id, "name": str(fields["name"]),
                         "icon_color": 7322096})

    def _topic(self, fields: dict[str, Any]) -> Topic:
        topic = self.topics.get(int(fields["message_thread_id"]))
        if topic is None or topic.deleted or topic.chat_id != int(fields["chat_id"]):
            raise ApiError(400, "Bad Request: TOPIC_ID_INVALID")
        return topic

    async def _m_closeForumTopic(self, fields) -> web.Response:
        topic = self._topic(fields)
        if topic.closed:
            raise ApiError(400, "Bad Request: TOPIC_NOT_MODIFIED")
        topic.closed = True
        return self._ok(True)

    async def _m_reopenForumTopic(self, fields) -> web.Response:
        topic = self._topic(fields)
        if not topic.closed:
            raise ApiError(400, "Bad Request: TOPIC_NOT_MODIFIED")
        topic.closed = False
        return self._ok(True)

    async def _m_answerCallbackQuery(self, fields) -> web.Response:
        self.callback_answers.append(fields)
        return self._ok(True)

    async def _m_editMessageReplyMarkup(self, fields) -> web.Response:
        chat_id, message_id = int(fields["chat_id"]), int(fields["message_id"])
        sent = next((s for s in self._by_chat.get(chat_id, ()) if s.message_id == message_id), None)
        if sent is None:
            raise ApiError(400, "Bad Request: message to edit not found")
        markup = fields.get("reply_markup") or None
        if markup == sent.reply_markup:
            raise ApiError(400, "Bad Request: message is not modified")
        sent.reply_markup = markup
        return self._ok(self._known[(chat_id, message_id)] | {"reply_markup": markup} if markup else
                        self._known[(chat_id, message_id)])
