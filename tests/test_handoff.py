"""Handoff state, service hours, the "I want a person" words, operator statistics and the CSV export;
and the desk fed real `Update` objects through the dispatcher with a recording bot session."""

from __future__ import annotations

import csv
import io
import time
from datetime import datetime

import pytest
from aiogram import Bot
from aiogram.methods import CloseForumTopic, CopyMessage, CreateForumTopic, SendMessage
from aiogram.types import Update

from agent.analytics.stats import compute, to_csv
from agent.audit import read_since
from agent.clock import SHANGHAI
from agent.conversation import Conversation
from agent.handoff import (
    Claim,
    LocalHandoffStore,
    Mode,
    RedisHandoffStore,
    ServiceHours,
    asks_for_person,
)
from agent.memory import InProcessMemory
from agent.session import InProcessSessions
from agent.turn import Agent
from handlers import texts
from handlers.delivery.guards import ChatSequencer, LocalGuards
from handlers.handoff import Desk
from handlers.operators import Operators
from handlers.telegram import build_dispatcher
from tests.fakes.bot_session import RecordingSession

GROUP, OPERATOR = -100777, 777


@pytest.fixture(params=["local", "redis"])
async def store(request, redis):
    return LocalHandoffStore() if request.param == "local" else RedisHandoffStore(redis, redis.test_prefix)


async def test_the_state_machine_shared_by_both_stores(store):
    assert (await store.get("1")).mode is Mode.BOT
    assert await store.begin("1", "1", "张三", 100.0)
    assert not await store.begin("1", "1", "张三", 101.0)          # a second trigger does not restart it
    state = await store.get("1")
    assert state.mode is Mode.WAITING and state.muted and state.epoch == 1 and state.name == "张三"
    assert await store.claim("1", 7, 102.0) is Claim.CLAIMED
    assert await store.claim("1", 7, 103.0) is Claim.YOURS
    assert await store.claim("1", 8, 103.0) is Claim.TAKEN
    await store.touch("1", 150.0)
    assert await store.idle(before=140.0) == [] and await store.idle(before=151.0) == ["1"]
    assert not await store.end("1", 160.0, idle_before=140.0)        # written to since: not idle
    assert await store.end("1", 160.0)
    state = await store.get("1")
    assert state.mode is Mode.BOT and state.epoch == 2 and state.since == 160.0 and state.operator_id == 7
    assert not await store.end("1", 161.0) and await store.claim("1", 7, 162.0) is Claim.NOT_HANDED_OFF
    await store.set_topic("1", 501)
    assert await store.chat_of_topic(501) == "1" and (await store.get("1")).topic_id == 501
    assert [await store.misses("1", helped=False) for _ in range(2)] == [1, 2]
    assert await store.misses("1", helped=True) == 0
    state, misses = await store.after_turn("1", helped=False)          # one round trip after a turn
    assert (state.epoch, state.topic_id, misses) == (2, 501, 1)
    assert (await store.after_turn("1", helped=False))[1] == 2 and (await store.after_turn("1", helped=True))[1] == 0


async def test_redis_state_is_shared_by_two_processes(redis):
    first, second = RedisHandoffStore(redis, redis.test_prefix), RedisHandoffStore(redis, redis.test_prefix)
    assert await first.begin("9", "9", "顾客", time.time())
    assert not await second.begin("9", "9", "顾客", time.time())
    assert (await second.get("9")).muted
    assert await second.claim("9", 1, time.time()) is Claim.CLAIMED
    assert await first.claim("9", 2, time.time()) is Claim.TAKEN


@pytest.mark.parametrize("text", ["转人工", "我要人工客服", "找真人聊", "我要投诉！", "转 人工", "/human"])
def test_asking_for_a_person_is_recognised(text):
    assert asks_for_person(text)


@pytest.mark.parametrize("text", ["足球多少钱", "人工草坪用什么鞋", "有优惠吗", ""])
def test_ordinary_questions_are_not_a_handoff(text):
    assert not asks_for_person(text)


def test_service_hours():
    hours = ServiceHours.parse("09:00-21:00")
    at = lambda h, m=0: datetime(2026, 11, 29, h, m, tzinfo=SHANGHAI)  # noqa: E731
    assert hours.is_open(at(9)) and hours.is_open(at(20, 59)) and not hours.is_open(at(21)) and not hours.is_open(at(8))
    assert hours.next_opening(at(22)) == at(9).replace(day=30) and hours.next_opening(at(7)) == at(9)
    assert ServiceHours.parse("00:00-24:00").is_open(at(23, 59))
    assert str(ServiceHours.from_policy("人工客服服务时间为每天9:00到21:00，节假日照常服务。")) == "09:00-21:00"
    assert str(ServiceHours.from_policy("全天自动回复")) == "09:00-21:00"
    for bad in ("9-21", "21:00-09:00", "25:00-26:00", ""):
        with pytest.raises(ValueError):
            ServiceHours.parse(bad)


def test_stats_over_audit_records():
    turn = {"kind": "turn", "latency_ms": 100.0, "model_calls": 2, "delivered": True}
    records = [
        {**turn, "status": "grounded", "verdicts": [{"ok": False, "codes": ["WRONG_ROLE"]}, {"ok": True, "codes": []}]},
        {**turn, "status": "insufficient_evidence", "latency_ms": 300.0},
        {**turn, "status": "fallback", "fallback": True, "degraded": True, "model_calls": 6},
        {"status": "grounded", "latency_ms": 200.0, "model_calls": 1},                  # an old record: no kind
        {**turn, "status": "grounded", "delivered": False},
        {"kind": "handoff_start"}, {"kind": "relay"}, {"kind": "relay"},
        {"kind": "feedback", "value": "up"}, {"kind": "feedback", "value": "down"}, {"kind": "feedback", "value": "up"},
    ]
    stats = compute(records)
    assert (stats.turns, stats.grounded, stats.insufficient, stats.fallback, stats.degraded, stats.muted) == \
        (5, 3, 1, 1, 1, 1)
    assert stats.blocked_by_code == {"WRONG_ROLE": 1} and (stats.handoffs, stats.relayed) == (1, 2)
    assert (stats.thumbs_up, stats.thumbs_down) == (2, 1)
    assert stats.latency_p50_ms == 100.0 and stats.latency_p95_ms == pytest.approx(280.0)
    assert stats.model_calls_per_turn == pytest.approx(13 / 5)
    assert compute([]).share(0) == "—" and compute([]).latency_p50_ms is None


def test_csv_export_opens_in_excel_and_runs_no_formula():
    data = to_csv([{"time": "t", "kind": "turn", "message": "=HYPERLINK(\"x\")", "answer": "足球售价120元",
                    "verdicts": [{"ok": False, "codes": ["WRONG_ROLE"]}], "citations": ["product:001"]}])
    assert data.startswith("\ufeff".encode())
    rows = list(csv.DictReader(io.StringIO(data.decode("utf-8-sig"))))
    assert rows[0]["message"].startswith("'=") and rows[0]["answer"] == "足球售价120元"
    assert rows[0]["reason_codes"] == "WRONG_ROLE" and rows[0]["citations"] == '["product:001"]'


# --- the desk in-process: the dispatcher fed real updates ------------------------------------------

_ids = iter(range(10_000, 10**9))


def customer(chat_id: int, text: str | None = None, sent_at: float | None = None, **extra) -> Update:
    message = {"message_id": next(_ids), "date": int(sent_at or time.time()), "chat": {"id": chat_id, "type": "private"},
               "from": {"id": chat_id, "is_bot": False, "first_name": "小明"}, **extra}
    if text is not None:
        message["text"] = text
    return Update.model_validate({"update_id": next(_ids), "message": message})


def in_topic(thread: int, user_id: int, text: str) -> Update:
    message = {"message_id": next(_ids), "date": int(time.time()), "message_thread_id": thread,
               "is_topic_message": True, "text": text,
               "chat": {"id": GROUP, "type": "supergroup", "title": "客服组", "is_forum": True},
               "from": {"id": user_id, "is_bot": False, "first_name": "店员"}}
    if text.startswith("/"):
        message["entities"] = [{"type": "bot_command", "offset": 0, "length": len(text)}]
    return Update.model_validate({"update_id": next(_ids), "message": message})


class TopicSession(RecordingSession):
    """The recording session, answering createForumTopic and copyMessage as Telegram would."""

    async def make_request(self, bot, method, timeout=None):  # noqa: ASYNC109
        if isinstance(method, CreateForumTopic):
            self.requests.append(method)
            from aiogram.types import ForumTopic
            return ForumTopic(message_thread_id=600 + len(self.requests), name=method.name, icon_color=0)
        if isinstance(method, CopyMessage):
            self.requests.append(method)
            from aiogram.types import MessageId
            return MessageId(message_id=len(self.requests))
        return await super().make_request(bot, method, timeout)


class Desktop:
    def __init__(self, agent, clock=time.time, audit=None):
        self.session = TopicSession()
        self.bot = Bot("42:TEST", session=self.session)
        self.store = LocalHandoffStore()
        self.memory = InProcessMemory(warn=False)
        guards = LocalGuards()
        self.conversation = Conversation(agent, InProcessSessions(self.memory, self.store), audit, rate=guards.rate,
                                         desk=True, clock=clock)
        self.desk = Desk(self.bot, self.store, self.conversation, GROUP, ServiceHours.parse("09:00-21:00"),
                         audit=audit, clock=clock)
        self.dispatcher = build_dispatcher(operators=Operators(frozenset({OPERATOR}), GROUP),
                                           conversation=self.conversation, desk=self.desk, guards=guards,
                                           sequencer=ChatSequencer(), audit=audit)

    async def feed(self, *updates: Update) -> None:
        for u in updates:
            await self.dispatcher.feed_update(self.bot, u)

    def of(self, kind):
        return [r for r in self.session.requests if isinstance(r, kind)]


async def test_a_turn_in_flight_when_a_person_takes_over_is_not_sent(conn, search):
    class TakenOver(Agent):
        async def answer(self, text, **kwargs):
            result = await super().answer(text, **kwargs)
            await desktop.store.begin("5", "5", "小明", time.time())   # another process, mid-turn
            return result

    desktop = Desktop(TakenOver(conn, search))
    await desktop.feed(customer(5, "足球多少钱"))
    assert desktop.session.texts(5) == []
    assert (await desktop.memory.load("5")).turns == []   # the model will not see it later


async def test_outside_service_hours_the_customer_is_told_when_people_answer(conn, search):
    late = datetime(2026, 11, 29, 22, 30, tzinfo=SHANGHAI).timestamp()
    desktop = Desktop(Agent(conn, search), clock=lambda: late)
    await desktop.feed(customer(6, "转人工"))
    (told,) = desktop.session.texts(6)
    assert told == texts.HANDOFF_AFTER_HOURS.format(hours="09:00-21:00", opening="明天09:00")


async def test_only_allowlisted_operators_reach_the_customer(conn, search, tmp_path):
    from agent.audit import AuditLog

    audit = AuditLog(jsonl=tmp_path / "audit.jsonl")
    noon = datetime(2026, 11, 29, 12, 0, tzinfo=SHANGHAI).timestamp()
    desktop = Desktop(Agent(conn, search), audit=audit, clock=lambda: noon)
    await desktop.feed(customer(8, "足球多少钱"), customer(8, "人工客服"))
    (topic,) = desktop.of(CreateForumTopic)
    thread = 600 + desktop.session.requests.index(topic) + 1
    card = next(m for m in desktop.of(SendMessage) if m.chat_id == GROUP)
    assert "小明" in card.text and "足球多少钱" in card.text and card.message_thread_id == thread
    assert [b.text for b in card.reply_markup.inline_keyboard[0]] == [texts.CLAIM_BUTTON, texts.CLOSE_BUTTON]

    await desktop.feed(customer(8, "篮球多少钱"))                      # relayed, not answered
    assert desktop.session.texts(8)[-1] == texts.HANDOFF_WAIT
    await desktop.feed(in_topic(thread, 999, "我不是客服"), in_topic(thread, 999, "/close"))
    assert [c.chat_id for c in desktop.of(CopyMessage)] == [GROUP]    # only the customer's message, copied in
    assert (await desktop.store.get("8")).muted

    await desktop.feed(in_topic(thread, OPERATOR, "您好，我来帮您"))
    assert desktop.session.texts(8)[-1] == texts.HANDOFF_JOINED        # writing in the topic claims it
    assert desktop.of(CopyMessage)[-1].chat_id == 8
    await desktop.feed(in_topic(thread, OPERATOR, "/close"))
    assert desktop.session.texts(8)[-1] == texts.HANDOFF_ENDED and desktop.of(CloseForumTopic)
    await desktop.feed(customer(8, "足球多少钱"))
    assert "120元" in desktop.session.texts(8)[-1]
    audit.close()
    kinds = [r.get("kind") for r in read_since(tmp_path / "audit.jsonl")]
    assert kinds == ["turn", "handoff_start", "relay", "handoff_claim", "relay", "handoff_end", "turn"]


class AlbumSession(TopicSession):
    async def make_request(self, bot, method, timeout=None):  # noqa: ASYNC109
        from aiogram.methods import CopyMessages
        from aiogram.types import MessageId
        if isinstance(method, CopyMessages):
            self.requests.append(method)
            return [MessageId(message_id=n) for n in method.message_ids]
        return await super().make_request(bot, method, timeout)


async def test_an_album_is_copied_as_one_and_late_messages_are_not_answered(conn, search, tmp_path):
    from aiogram.methods import CopyMessages

    from agent.audit import AuditLog

    audit = AuditLog(jsonl=tmp_path / "audit.jsonl")
    desktop = Desktop(Agent(conn, search), audit=audit)
    desktop.session = AlbumSession()
    desktop.bot = desktop.desk.bot = Bot("42:TEST", session=desktop.session)
    await desktop.feed(customer(9, "转人工"))
    photo = [{"file_id": "p", "file_unique_id": "p", "width": 1, "height": 1}]
    album = [customer(9, None, photo=photo, media_group_id="g1") for _ in range(3)]
    await desktop.feed(*album)
    await desktop.desk.finish()                                   # the album's collection window ends
    (copied,) = desktop.of(CopyMessages)
    assert copied.message_ids == [u.message.message_id for u in album] and copied.chat_id == GROUP

    # back to the bot; a message written while muted but delivered only now is recorded, not answered
    assert await desktop.desk.close(9, OPERATOR, "operator")
    await desktop.feed(customer(9, "足球多少钱", sent_at=time.time() - 60))
    assert desktop.session.texts(9)[-1] == texts.HANDOFF_ENDED
    await desktop.feed(customer(9, "足球多少钱"))
    assert "120元" in desktop.session.texts(9)[-1]
    audit.close()
    assert [r["kind"] for r in read_since(tmp_path / "audit.jsonl")][-3:] == ["handoff_end", "unanswered", "turn"]


async def test_two_answers_without_help_offer_a_person(conn, search):
    desktop = Desktop(Agent(conn, search))
    await desktop.feed(customer(11, "火箭多少钱"), customer(11, "潜水艇多少钱"))
    offer = desktop.of(SendMessage)[-1]
    assert offer.text == texts.HANDOFF_OFFER and offer.reply_markup.inline_keyboard[0][0].text == texts.HANDOFF_BUTTON
    await desktop.feed(customer(11, "火箭多少钱"))                  # the count starts again after an offer
    assert desktop.session.texts(11)[-1] != texts.HANDOFF_OFFER


async def test_without_an_operators_group_the_customer_gets_the_contact_policy(conn, search):
    from db.knowledge import contact_policy

    desktop = Desktop(Agent(conn, search))
    desktop.desk.operator_chat_id = None
    desktop.conversation.desk = False   # no operators group: nobody to hand the chat to
    desktop.desk.contact_text = (await contact_policy(conn)).content
    await desktop.feed(customer(12, "转人工"))
    (told,) = desktop.session.texts(12)
    assert "9:00到21:00" in told and told.startswith("抱歉，目前无法在线为您转接人工客服")
    assert not (await desktop.store.get("12")).muted


def test_each_topic_of_the_operators_group_keeps_its_own_order():
    from handlers.telegram import order_key

    assert order_key(in_topic(601, OPERATOR, "好的"), GROUP) == f"{GROUP}:601"
    general = Update.model_validate({"update_id": 1, "message": {
        "message_id": 5, "date": 0, "message_thread_id": 3, "text": "回复",   # a reply in General: no topic
        "chat": {"id": GROUP, "type": "supergroup", "title": "客服组"}, "from": {"id": 1, "is_bot": False,
                                                                              "first_name": "x"}}})
    assert order_key(general, GROUP) == str(GROUP) and order_key(customer(3, "hi"), 3) == "3"


async def test_a_name_holding_another_id_and_invisible_padding_cannot_hide_the_real_id(conn, search):
    """A display name spoofing another customer's topic (their id, then blank braille, zero-width and bidi
    padding): the topic title and the card start with the real chat id, and the padding is gone."""
    spoof = "小红 · 424242" + "\u2800" * 60 + "\u200b\u200c\u200d\u2060\ufeff" * 8 + "\u202e\u2067" * 4
    desktop = Desktop(Agent(conn, search))
    await desktop.feed(customer(31, "转人工", **{"from": {"id": 31, "is_bot": False, "first_name": spoof}}))
    (topic,) = desktop.of(CreateForumTopic)
    assert topic.name.startswith("31 · ") and topic.name == "31 · 小红 · 424242"
    card = next(m for m in desktop.of(SendMessage) if m.chat_id == GROUP)
    first = card.text.splitlines()[0]
    assert "31" in first and "424242" not in first
    invisible = "\u2800\u200b\u200c\u200d\u2060\ufeff\u202e\u2067"
    assert not any(ch in topic.name or ch in card.text for ch in invisible)


async def test_a_long_name_is_clipped_and_the_id_is_kept(conn, search):
    desktop = Desktop(Agent(conn, search))
    await desktop.feed(customer(32, "转人工", **{"from": {"id": 32, "is_bot": False, "first_name": "名" * 64,
                                                          "last_name": "😀" * 64}}))
    (topic,) = desktop.of(CreateForumTopic)
    assert topic.name.startswith("32 · 名") and topic.name.endswith("…")
    assert len(topic.name.encode("utf-16-le")) // 2 <= 120       # Telegram's limit counts UTF-16 units
