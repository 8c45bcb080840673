"""Handlers fed real `Update` objects through the dispatcher, with a recording bot session."""

from __future__ import annotations

import asyncio
import html
import time

import pytest
from aiogram import Bot
from aiogram.exceptions import TelegramBadRequest, TelegramRetryAfter
from aiogram.methods import SendChatAction
from aiogram.types import Update

from agent.conversation import Conversation, Limits
from agent.handoff import LocalHandoffStore
from agent.memory import InProcessMemory
from agent.session import InProcessSessions
from agent.turn import Agent
from handlers import texts
from handlers.delivery.guards import ChatSequencer, LocalGuards, RedisGuards
from handlers.handoff import Desk
from handlers.replies import TELEGRAM_LIMIT, send_answer, split_text
from handlers.telegram import TYPING, build_dispatcher
from tests.fakes.bot_session import RecordingSession

_ids = iter(range(1, 10**9))


def update(chat_id: int, text: str | None = None, update_id: int | None = None, **extra) -> Update:
    message = {"message_id": next(_ids), "date": int(time.time()), "chat": {"id": chat_id, "type": "private"},
               "from": {"id": chat_id, "is_bot": False, "first_name": "顾客"}, **extra}
    if text is not None:
        message["text"] = text
        if text.startswith("/"):
            message["entities"] = [{"type": "bot_command", "offset": 0, "length": len(text)}]
    return Update.model_validate({"update_id": update_id or next(_ids), "message": message})


class Harness:
    def __init__(self, agent, guards=None, limits=None, audit=None):
        self.session = RecordingSession()
        self.bot = Bot("42:TEST", session=self.session)
        self.memory = InProcessMemory(warn=False)
        guards = guards or LocalGuards()
        handoffs = LocalHandoffStore()
        conversation = Conversation(agent, InProcessSessions(self.memory, handoffs), audit, limits=limits or Limits(),
                                    rate=guards.rate)
        self.desk = Desk(self.bot, handoffs, conversation, audit=audit)
        self.dispatcher = build_dispatcher(conversation=conversation, desk=self.desk, guards=guards,
                                           sequencer=ChatSequencer(), audit=audit)

    async def feed(self, *updates: Update) -> None:
        for u in updates:
            await self.dispatcher.feed_update(self.bot, u)


@pytest.fixture
def harness(conn, search):
    return Harness(Agent(conn, search))


async def test_start_help_and_reset(harness):
    await harness.feed(update(1, "足球多少钱"), update(1, "/reset"), update(1, "那买两个呢"), update(1, "/start"),
                       update(1, "/help"))
    replies = harness.session.texts(1)
    assert "120元" in replies[0] and replies[1] == html.escape(texts.RESET, quote=False)
    assert "216" not in replies[2]   # memory was forgotten
    assert "足球多少钱" in replies[3] and "/reset" in replies[4]


async def test_a_question_is_answered_with_escaped_html_and_typing_only_when_slow(harness, monkeypatch):
    monkeypatch.setitem(TYPING, "initial_sleep", 3600)   # every turn faster than that
    await harness.feed(update(7, "足球多少钱"))
    (message,) = harness.session.messages
    assert message.parse_mode == "HTML" and "120元" in message.text and message.chat_id == 7
    assert not any(isinstance(r, SendChatAction) for r in harness.session.requests)   # fast: no extra request
    monkeypatch.setitem(TYPING, "initial_sleep", 0)     # every turn slower than that
    await harness.feed(update(8, "足球多少钱"))
    assert any(isinstance(r, SendChatAction) and r.action == "typing" and r.chat_id == 8
               for r in harness.session.requests)


async def test_the_seed_conversation_reaches_216(harness):
    await harness.feed(update(3, "足球多少钱"), update(3, "有优惠吗"), update(3, "那买两个呢"))
    assert "216元" in harness.session.texts(3)[2]


@pytest.mark.parametrize("extra", [
    {"photo": [{"file_id": "p", "file_unique_id": "p", "width": 1, "height": 1}]},
    {"sticker": {"file_id": "s", "file_unique_id": "s", "type": "regular", "width": 1, "height": 1,
                 "is_animated": False, "is_video": False}},
    {"voice": {"file_id": "v", "file_unique_id": "v", "duration": 1}},
])
async def test_non_text_gets_a_polite_note(harness, extra):
    await harness.feed(update(5, None, **extra))
    assert harness.session.texts(5) == [texts.ONLY_TEXT]


async def test_over_long_message_is_refused_politely(conn, search):
    harness = Harness(Agent(conn, search), limits=Limits(max_message_chars=50))
    await harness.feed(update(6, "足球" * 30))
    assert harness.session.texts(6) == [texts.TOO_LONG.format(limit=50)]


async def test_duplicate_update_is_answered_once(harness):
    await harness.feed(update(8, "足球多少钱", update_id=777), update(8, "足球多少钱", update_id=777))
    assert len(harness.session.texts(8)) == 1


async def test_duplicates_across_processes_with_redis(conn, search, redis):
    guards = RedisGuards(redis, prefix=redis.test_prefix)
    first, second = Harness(Agent(conn, search), guards), Harness(Agent(conn, search), guards)
    await first.feed(update(9, "足球多少钱", update_id=4242))
    await second.feed(update(9, "足球多少钱", update_id=4242))
    assert len(first.session.texts(9)) + len(second.session.texts(9)) == 1


async def test_a_flood_gets_one_polite_note(conn, search):
    harness = Harness(Agent(conn, search), guards=LocalGuards(rate_limit=2, clock=lambda: 1_000_000.0))
    await harness.feed(*(update(11, f"足球多少钱{i}") for i in range(5)))
    replies = harness.session.texts(11)
    assert len(replies) == 3 and replies[2] == texts.SLOW_DOWN


async def test_a_new_window_lets_a_customer_write_again():
    now = [1_000_000.0]
    guards = LocalGuards(rate_limit=1, window_seconds=60, clock=lambda: now[0])
    assert [await guards.rate("u") for _ in range(3)] == ["ok", "notify", "drop"]
    now[0] += 60
    assert await guards.rate("u") == "ok"


async def test_redis_rate_limit(conn, search, redis):
    harness = Harness(Agent(conn, search), guards=RedisGuards(redis, prefix=redis.test_prefix, rate_limit=1,
                                                              clock=lambda: 1_000_000.0))
    await harness.feed(*(update(12, "你好") for _ in range(3)))
    assert harness.session.texts(12)[1:] == [texts.SLOW_DOWN]


async def test_messages_of_one_chat_are_answered_in_order(conn, search):
    harness = Harness(Agent(conn, search))
    questions = ["足球多少钱", "篮球多少钱", "羽毛球拍多少钱", "跑步鞋多少钱", "瑜伽垫多少钱",
                 "网球拍多少钱", "排球多少钱", "哑铃多少钱", "跳绳多少钱", "泡沫轴多少钱"]
    await asyncio.gather(*(harness.dispatcher.feed_update(harness.bot, update(13, q)) for q in questions))
    names = ["足球", "篮球", "羽毛球拍", "跑步鞋", "瑜伽垫", "网球拍", "排球", "哑铃", "跳绳", "泡沫轴"]
    replies = harness.session.texts(13)
    assert len(replies) == 10
    assert all(name in reply for name, reply in zip(names, replies, strict=True)), replies


async def test_different_chats_run_concurrently(conn, search):
    harness = Harness(Agent(conn, search))
    await asyncio.gather(*(harness.dispatcher.feed_update(harness.bot, update(100 + i, "足球多少钱"))
                           for i in range(5)))
    assert all(len(harness.session.texts(100 + i)) == 1 for i in range(5))


async def test_a_failing_turn_never_shows_a_traceback(conn, search):
    class Broken(Agent):
        async def answer(self, *args, **kwargs):
            raise RuntimeError("database is on fire")

    harness = Harness(Broken(conn, search))
    await harness.feed(update(14, "足球多少钱"))
    assert harness.session.texts(14) == [texts.SORRY]


def test_split_text_respects_the_limit_and_boundaries():
    paragraph = "足球售价120元。" * 300
    pieces = split_text(f"{paragraph}\n\n{paragraph}")
    assert all(len(p) <= TELEGRAM_LIMIT for p in pieces) and len(pieces) >= 2
    assert "".join(pieces).replace("\n", "") == (paragraph * 2)
    assert split_text("短答案") == ["短答案"]
    assert all(len(p) <= 10 for p in split_text("x" * 35, limit=10))


async def test_retry_after_is_waited_out_and_entity_errors_resent_plain():
    session = RecordingSession()
    bot = Bot("42:TEST", session=session)
    session.failures = [lambda m: TelegramRetryAfter(m, "Too Many Requests", 0),
                        lambda m: TelegramBadRequest(m, "Bad Request: can't parse entities")]
    await send_answer(bot, 1, "a < b & c")
    (message,) = session.messages
    assert message.text == "a < b & c" and message.parse_mode is None


async def test_server_errors_are_retried_with_backoff_and_bounded(monkeypatch):
    from aiogram.exceptions import TelegramServerError

    from handlers import replies

    monkeypatch.setattr(replies, "SERVER_ERROR_BACKOFF", 0.001)
    session = RecordingSession()
    bot = Bot("42:TEST", session=session)
    session.failures = [lambda m: TelegramServerError(m, "Bad Gateway")] * 3
    await send_answer(bot, 1, "第一段")
    assert session.texts(1) == ["第一段"]                       # delivered after three 502s
    session.failures = [lambda m: TelegramServerError(m, "Internal Server Error")] * 4
    with pytest.raises(TelegramServerError):
        await send_answer(bot, 1, "第二段")
    assert session.texts(1) == ["第一段"]


async def test_retry_after_is_bounded():
    session = RecordingSession()
    bot = Bot("42:TEST", session=session)
    session.failures = [lambda m: TelegramRetryAfter(m, "Too Many Requests", 0)] * 10
    with pytest.raises(TelegramRetryAfter):
        await send_answer(bot, 1, "hello")


def test_every_filter_and_handler_runs_on_the_event_loop():
    """aiogram runs a filter or handler that is not a coroutine in a worker thread, a thread hop per
    update (magic filters such as F.text are such callables): every one here is checked on the loop."""
    from handlers.operators import Operators

    def routers(router):
        yield router
        for sub in router.sub_routers:
            yield from routers(sub)

    dispatcher = build_dispatcher(Operators(frozenset({1}), chat_id=-100))
    checks = []   # (where, callable object): each router's own filters, each handler and its filters
    for router in routers(dispatcher):
        for name, observer in router.observers.items():
            checks += [(f"{router.name}.{name}", f) for f in observer._handler.filters or []]
            for handler in observer.handlers:
                checks += [(f"{router.name}.{name}", c) for c in (handler, *(handler.filters or []))]
    assert len(checks) > 30
    assert [f"{where}: {c.callback!r}" for where, c in checks if not c.awaitable] == []
