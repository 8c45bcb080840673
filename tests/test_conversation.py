"""One pipeline for a message: `Conversation.handle` decides, Telegram and the console only render. The
same message sequence gets the same replies in both channels, over the same kind of stores (in this
process, and in a real Redis) — including 转人工, a too-long message, the rate limit and the offer of a
person after two unhelped turns."""

from __future__ import annotations

import html
import io
import time
from itertools import count

import pytest
from aiogram import Bot
from aiogram.types import Update

from agent.conversation import Answer, Conversation, Handoff, Incoming, Limits, Refusal, Silent
from agent.handoff import LocalHandoffStore, RedisHandoffStore
from agent.memory import InProcessMemory
from agent.memory_redis import RedisMemory
from agent.session import InProcessSessions
from agent.turn import Agent
from db.knowledge import contact_policy
from handlers import texts
from handlers.console import run_console
from handlers.delivery.guards import ChatSequencer, LocalGuards, RedisGuards
from handlers.handoff import Desk
from handlers.sessions import RedisSessions
from handlers.telegram import build_dispatcher
from handlers.voice import Voice
from tests.fakes.bot_session import RecordingSession

NOON = 1_000_000.0   # the rate window's clock, fixed: no window boundary can fall mid-test
RATE_LIMIT = 4
SEQUENCE = [
    "足球多少钱",            # answered (counts towards the rate limit)
    "那买两个呢",            # answered from the memory
    "转人工",                # a person: nobody answers here, the contact policy is told (not rate counted)
    "足球" * 40,             # too long (not rate counted)
    "宇航服多少钱",          # not sold: unhelped
    "火箭发动机有吗",        # not sold again: the second unhelped turn in a row offers a person
    "篮球多少钱",            # the fifth counted message: "slow down"
    "瑜伽垫多少钱",          # the sixth: dropped silently
]
_ids = count(9_100_000)


def conversation_over(kind: str, agent: Agent, redis):
    """A conversation on fresh stores of `kind` (in this process, or in Redis), its handoff store and guards."""
    if kind == "redis":
        handoffs = RedisHandoffStore(redis, redis.test_prefix)
        sessions = RedisSessions(redis, RedisMemory(redis, prefix=redis.test_prefix), handoffs)
        guards = RedisGuards(redis, redis.test_prefix, rate_limit=RATE_LIMIT, clock=lambda: NOON)
    else:
        handoffs = LocalHandoffStore()
        sessions = InProcessSessions(InProcessMemory(warn=False), handoffs)
        guards = LocalGuards(rate_limit=RATE_LIMIT, clock=lambda: NOON)
    return Conversation(agent, sessions, limits=Limits(max_message_chars=50), rate=guards.rate), handoffs, guards


async def through_telegram(parts, policy: str, chat_id: int) -> list[list[str]]:
    conversation, handoffs, guards = parts
    session = RecordingSession()
    bot = Bot("42:TEST", session=session)
    desk = Desk(bot, handoffs, conversation, contact_text=policy)   # no operators' group
    dispatcher = build_dispatcher(conversation=conversation, desk=desk, guards=guards,
                                  sequencer=ChatSequencer(), audit=None)
    said: list[list[str]] = []
    for text in SEQUENCE:
        before = len(session.texts(chat_id))
        await dispatcher.feed_update(bot, Update.model_validate({"update_id": next(_ids), "message": {
            "message_id": next(_ids), "date": int(time.time()), "text": text,
            "chat": {"id": chat_id, "type": "private"}, "from": {"id": chat_id, "is_bot": False, "first_name": "顾客"}}}))
        said.append([html.unescape(t) for t in session.texts(chat_id)[before:]])
    return said


async def through_console(parts, policy: str, chat_id: str) -> list[list[str]]:
    conversation, _, _ = parts
    out = io.StringIO()
    await run_console(conversation, Voice(contact_text=policy), chat_id=chat_id, user_id=chat_id,
                      stdin=io.StringIO("".join(f"{text}\n" for text in SEQUENCE)), stdout=out)
    turns = out.getvalue().split("\n您：")[1:len(SEQUENCE) + 1]   # what followed each prompt
    return [[part.strip() for part in turn.split("客服：")[1:]] for turn in turns]


@pytest.mark.parametrize("stores", ["in-process", "redis"])
async def test_console_and_telegram_give_the_same_replies(stores, conn, search, redis):
    policy = (await contact_policy(conn)).content
    agent = Agent(conn, search)
    telegram = await through_telegram(conversation_over(stores, agent, redis), policy, 5101)
    console = await through_console(conversation_over(stores, agent, redis), policy, "5102")
    assert console == telegram
    no_desk = texts.NO_HANDOFF_POLICY.format(policy=policy)
    assert "120元" in telegram[0][0] and "216元" in telegram[1][0]
    assert telegram[2] == [no_desk]                                    # 转人工
    assert telegram[3] == [texts.TOO_LONG.format(limit=50)]
    assert len(telegram[4]) == 1 and telegram[5][1:] == [no_desk]      # the second miss offers a person
    assert telegram[6] == [texts.SLOW_DOWN] and telegram[7] == []


class Session:
    """A session of the port, recording what the conversation commits."""

    def __init__(self, handoff=None, later=None, misses=0):
        from agent.handoff import HandoffState
        from agent.memory import ChatMemory

        self.chat_id, self.memory, self.handoff = "1", ChatMemory(), handoff or HandoffState()
        self.later, self.misses, self.committed, self.handed = later or self.handoff, misses, [], []

    async def recheck(self, helped):
        return self.later, 0 if helped else self.misses + 1

    async def hand_off(self, user_id, name, now):
        self.handed.append((user_id, name))
        return len(self.handed) == 1

    async def commit(self, outcome):
        self.committed.append(outcome)


async def test_each_decision_is_a_typed_reply_and_commits_what_changed(conn, search):
    from agent.handoff import HandoffState, Mode

    agent = Agent(conn, search)
    desk = Conversation(agent, InProcessSessions(InProcessMemory(warn=False), LocalHandoffStore()), desk=True)
    said = Incoming("1", "1", "足球多少钱", sent_at=time.time(), user_name="小明")

    session = Session()
    reply = await desk.handle(said, session)
    assert isinstance(reply, Answer) and "120元" in reply.result.answer and not reply.offer_person
    await desk.done(said, session, reply)
    (outcome,) = session.committed
    assert outcome.turn.user == "足球多少钱" and outcome.focus_product_ids == ["001"] and not outcome.misses_reset

    session = Session()
    person = Incoming("1", "1", "我要转人工", user_name="小明")
    assert await desk.handle(person, session) == Handoff("started") and session.handed == [("1", "小明")]
    assert await desk.handle(person, session) == Handoff("already")

    assert await desk.handle(said, Session(HandoffState(mode=Mode.WAITING, epoch=1))) == Silent("with_person")
    handed_back = HandoffState(epoch=2, since=time.time() + 60)      # the message was sent before the handback
    assert await desk.handle(said, Session(handed_back)) == Silent("sent_while_with_person")

    taken = Session(later=HandoffState(mode=Mode.WAITING, epoch=1))  # a person took the chat during the turn
    reply = await desk.handle(said, taken)
    assert isinstance(reply, Silent) and reply.reason == "taken_during_turn" and "120元" in reply.result.answer
    await desk.done(said, taken, reply)
    assert taken.committed[0].turn is None                           # never joins the memory

    missed = Session(misses=1)
    reply = await desk.handle(Incoming("1", "1", "宇航服多少钱"), missed)
    assert isinstance(reply, Answer) and reply.offer_person
    await desk.done(Incoming("1", "1", "宇航服多少钱"), missed, reply)
    assert missed.committed[0].misses_reset


async def test_a_failing_turn_is_a_polite_refusal_and_the_sessions_refuse_a_foreign_delivery(conn, search):
    class Broken(Agent):
        async def answer(self, text, **kwargs):
            raise RuntimeError("boom")

    sessions = InProcessSessions(InProcessMemory(warn=False), LocalHandoffStore())
    conversation = Conversation(Broken(conn, search), sessions)
    said = Incoming("1", "1", "足球多少钱")
    assert await conversation.handle(said, await sessions.open("1")) == Refusal("failed")
    assert Voice().render(Refusal("failed"))[0].text == texts.SORRY
    with pytest.raises(ValueError):
        await sessions.open("1", delivery=object())   # in-process sessions cannot acknowledge an inbox entry


async def test_another_shops_catalog_is_greeted_with_its_own_products_not_the_demos(tmp_path):
    """The console banner and Telegram's /start name the catalog served and suggest questions about its
    own products; the demo shop's examples appear only for the demo catalog."""
    from db.build import write_catalog
    from db.connection import open_readonly
    from db.overview import DEMO_EXAMPLES
    from db.records import read_catalog_csv
    from handlers.console import banner

    products = tmp_path / "p.csv"
    products.write_text("product_id,product_name,brand,price,stock_quantity,description,specifications,usage,category\n"
                        "B1,碳素羽毛球拍,李宁,399,12,,,,羽毛球拍\nB2,羽毛球训练筒,威克多,89,80,,,,羽毛球\n"
                        "B3,比赛用羽毛球,尤尼克斯,129,40,,,,羽毛球\n", encoding="utf-8")
    promotions = tmp_path / "x.csv"
    promotions.write_text("promotion_id,product_id,promotion_text,discount_type,discount_value,minimum_quantity,"
                          "minimum_spend,extra_condition\nX1,B1,9折,percentage,0.9,,,\n", encoding="utf-8")
    write_catalog(tmp_path / "shop.db", read_catalog_csv(products, promotions), source="import:p.csv")
    conn = await open_readonly(tmp_path / "shop.db")
    try:
        conversation = Conversation(Agent(conn, None, prepare=False), InProcessSessions(InProcessMemory(warn=False),
                                                                                        LocalHandoffStore()))
        overview = await conversation.overview()
        assert overview.products == 3 and not overview.demo and overview.path.endswith("shop.db")
        assert overview.examples == ("羽毛球训练筒多少钱？", "碳素羽毛球拍有优惠吗？", "你们有哪些羽毛球？")
        shown = await banner(conversation)
        greeting = Voice.greeting(overview.examples)
        for text in (shown, greeting):
            assert not any(example.rstrip("？") in text for example in DEMO_EXAMPLES)
        assert "商品库：" in shown and "3 件商品" in shown and "演示" not in shown and "碳素羽毛球拍有优惠吗" in shown
        assert "• 你们有哪些羽毛球？" in greeting
    finally:
        await conn.close()
