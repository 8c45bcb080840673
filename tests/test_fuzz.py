"""Fuzzing (hypothesis): arbitrary Telegram updates through the real dispatcher never crash it and never
show a customer a traceback, an internal detail or unescaped HTML; arbitrary answers and ledgers
through the validators and the figure parser always get a verdict."""

from __future__ import annotations

import asyncio
import re
import time
from decimal import Decimal

import pytest
from aiogram import Bot
from aiogram.types import Update
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agent.conversation import Conversation, Limits
from agent.handoff import LocalHandoffStore
from agent.memory import InProcessMemory
from agent.session import InProcessSessions
from agent.turn import Agent
from db.aggregates import Metric, OrderQuery, query_orders
from db.facts import Product
from guardrails.figures import find_mentions
from guardrails.ledger import EvidenceLedger
from guardrails.reports import check_report
from guardrails.validator import validate
from handlers.delivery.guards import ChatSequencer, LocalGuards
from handlers.handoff import Desk
from handlers.operators import Operators
from handlers.telegram import build_dispatcher
from tests.fakes.bot_session import RecordingSession

# Text a customer could send: any Unicode (incl. NUL, zero-width, RTL marks, emoji sequences), Chinese
# shop words mixed in, sometimes very long.
WORDS = st.sampled_from(["足球", "多少钱", "买两个", "<script>", "</b>", "&amp;", "9折", "满300减50", "\u200b",
                         "\u202e", "👨‍👩‍👧", "\x00", "转人工", "/start", "/stats", "我的订单", "¥", "1e309", "NaN"])
TEXT = st.one_of(st.text(max_size=200), st.lists(st.one_of(WORDS, st.text(max_size=8)), max_size=30).map("".join),
                 st.integers(5000, 10_000).map(lambda n: "问" * n))
ENTITY = st.fixed_dictionaries({"type": st.sampled_from(["bold", "bot_command", "url", "mention", "pre"]),
                                "offset": st.integers(-5, 20_000), "length": st.integers(-5, 20_000)})
SHAPES = st.sampled_from(["message", "edited_message", "channel_post", "callback_query", "no_text", "no_from"])
_ids = iter(range(10**6, 10**9))


def update_for(shape: str, text: str, entities: list[dict], chat_id: int, data: str) -> dict:
    message = {"message_id": next(_ids), "date": int(time.time()), "chat": {"id": chat_id, "type": "private"},
               "from": {"id": chat_id, "is_bot": False, "first_name": "顾客"}, "text": text, "entities": entities}
    if shape == "no_text":
        message.pop("text")
        message.pop("entities")
        message["sticker"] = {"file_id": "s", "file_unique_id": "s", "type": "regular", "width": 1, "height": 1,
                              "is_animated": False, "is_video": False}
    if shape == "no_from":
        message.pop("from")
    if shape == "channel_post":
        message["chat"] = {"id": -100500, "type": "channel", "title": "频道"}
        message.pop("from")
        return {"update_id": next(_ids), "channel_post": message}
    if shape == "edited_message":
        message["edit_date"] = int(time.time())
        return {"update_id": next(_ids), "edited_message": message}
    if shape == "callback_query":
        return {"update_id": next(_ids), "callback_query": {
            "id": str(next(_ids)), "chat_instance": "x", "data": data,
            "from": {"id": chat_id, "is_bot": False, "first_name": "顾客"},
            "message": {"message_id": next(_ids), "date": int(time.time()), "chat": {"id": chat_id, "type": "private"},
                        "text": "之前的回答"}}}
    return {"update_id": next(_ids), "message": message}


@pytest.fixture(scope="module")
def world(demo_db, search):
    """One dispatcher (with the offline model on the demo catalog) for every example: the point is that
    it survives them all."""
    from db.connection import open_readonly

    loop = asyncio.new_event_loop()
    conn = loop.run_until_complete(open_readonly(demo_db))
    session = RecordingSession()
    bot = Bot("42:TEST", session=session)
    handoffs, guards = LocalHandoffStore(), LocalGuards(rate_limit=10**6)
    conversation = Conversation(Agent(conn, search), InProcessSessions(InProcessMemory(warn=False), handoffs),
                                limits=Limits(max_message_chars=1000), rate=guards.rate)
    desk = Desk(bot, handoffs, conversation)
    dispatcher = build_dispatcher(operators=Operators(frozenset({777}), None), conversation=conversation, desk=desk,
                                  guards=guards, sequencer=ChatSequencer(), audit=None)
    try:
        yield loop, dispatcher, bot, session
    finally:
        loop.run_until_complete(conn.close())
        loop.close()


INTERNAL = re.compile(r"Traceback|Exception|Error\b|File \"|/work/|\.py\b|sqlite|aiogram|NoneType|KeyError")


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(shape=SHAPES, text=TEXT, entities=st.lists(ENTITY, max_size=3), chat=st.integers(1, 50),
       data=st.one_of(st.text(max_size=64), st.sampled_from(["fb:up:1", "fb:down:x", "ho:ask", "ho:claim:1", "::::"])))
@example(shape="message", text="/start@0", entities=[], chat=1, data="")   # a command addressed to a bot: getMe
def test_any_update_gets_a_polite_reply_or_none(world, shape, text, entities, chat, data):
    loop, dispatcher, bot, session = world
    before = len(session.requests)
    try:
        update = Update.model_validate(update_for(shape, text, entities, chat, data))
    except ValueError:
        return   # Telegram would never send it: the Bot API library refuses it before any handler
    loop.run_until_complete(dispatcher.feed_update(bot, update))
    for request in session.requests[before:]:
        sent = getattr(request, "text", None)
        if sent is None:
            continue
        assert not INTERNAL.search(sent), sent
        if getattr(request, "parse_mode", None) == "HTML":
            assert "<" not in sent and ">" not in sent, sent   # every dynamic piece is escaped


ANSWER = st.lists(st.one_of(WORDS, st.sampled_from(["售价", "一共", "元", "120", "108", "个", "平均", "单", "%",
                                                     "2026-10-01", "至", "。", "，"]), st.text(max_size=6)),
                  max_size=40).map("".join)


@settings(max_examples=300, deadline=None)
@given(answer=ANSWER, citations=st.lists(st.sampled_from(["product:001", "promotion:P001", "calc:001:2:regular",
                                                         "doc:returns#1", "agg:x", "nope"]), max_size=4),
       status=st.sampled_from(["grounded", "insufficient_evidence", "bogus"]),
       price=st.decimals(min_value=0, max_value=10**7, places=2, allow_nan=False, allow_infinity=False))
def test_the_validator_always_gives_a_verdict(answer, citations, status, price):
    ledger = EvidenceLedger(["耐克"])
    ledger.add_product(Product("001", "足球", "耐克", "比赛用球", "5号", "训练", price, 50, "足球"))
    verdict = validate("足球多少钱", answer, citations, ledger, status)
    assert isinstance(verdict.ok, bool) and isinstance(verdict.message, str)
    report = check_report(answer, citations, ledger)
    assert isinstance(report.ok, bool)
    for mention in find_mentions(answer):
        assert mention.value is None or isinstance(mention.value, Decimal)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(answer=ANSWER)
def test_the_report_check_always_gives_a_verdict_on_real_aggregates(demo_db, answer):
    async def run():
        from db.connection import open_readonly

        conn = await open_readonly(demo_db)
        try:
            ledger = EvidenceLedger()
            agg = await query_orders(conn, OrderQuery(Metric.TOTAL))
            return check_report(answer, [ledger.add_aggregate(agg)], ledger)
        finally:
            await conn.close()

    assert isinstance(asyncio.run(run()).ok, bool)
