"""The misunderstanding signal: a turn's own signs (a "not sold" for a product the shop has, the fallback),
and the customer's next move flagging the answer before (不对, the same question in other words, 👎, asking
for a person) — through the real conversation, the real audit store, /stats, the web console's filter and
`audit export --flagged` (dialogue-evaluation lines the evaluation loader reads)."""

from __future__ import annotations

import json
import re

import pytest

import bot
from agent.analytics import signals
from agent.analytics.stats import compute, format_stats, from_counts
from agent.audit import AuditLog
from agent.audit_record import TurnRecord
from agent.conversation import Answer, Conversation, Incoming
from agent.evaluation import _parse
from agent.handoff import LocalHandoffStore
from agent.memory import InProcessMemory
from agent.models import ModelReply, ScriptedModel, call
from agent.session import InProcessSessions
from agent.trace import TurnResult, TurnTrace
from agent.turn import Agent
from db.audit_store import AuditFilter, AuditStore


@pytest.mark.parametrize(("text", "negative"), [
    ("不对", True), ("不是这个", True), ("你听不懂吗", True), ("答非所问", True), ("不是！", True),
    ("不是我要的那款", True), ("是不是有货", False), ("不是很贵吧，多少钱", False), ("足球多少钱", False),
])
def test_negative_replies(text, negative):
    assert signals.is_negative(text) is negative


@pytest.mark.parametrize(("first", "second", "same"), [
    ("足球多少钱", "足球的价格是多少", True), ("有没有瑜伽垫", "瑜伽垫有卖吗", True), ("足球多少钱", "足球多少钱", True),
    ("足球多少钱", "篮球多少钱", False), ("篮球有什么优惠", "篮球多少钱", False), ("足球多少钱", "有优惠吗", False),
    ("羽毛球拍有货吗", "退货政策是什么", False),
])
async def test_the_rephrase_threshold_on_the_local_embedder(search, first, second, same):
    """REPHRASE_SIMILARITY against the shipped embedder: the same question in other words, not the next one."""
    flags = await signals.previous_flags(second, [first], search.query_vector)
    assert (flags == ("rephrased",)) is same, flags


def _submit(answer: str, status: str = "insufficient_evidence"):
    return ModelReply(tool_calls=[call("submit_answer", json.dumps(
        {"answer": answer, "citation_ids": [], "status": status}, ensure_ascii=False), "c1")])


class _World:
    def __init__(self, tmp_path, agent):
        self.store = AuditStore(tmp_path / "audit.db")
        self.audit = AuditLog(self.store)
        self.conversation = Conversation(agent, InProcessSessions(InProcessMemory(warn=False), LocalHandoffStore()),
                                         self.audit)
        self.update = 100

    async def say(self, text: str, chat: str = "1"):
        self.update += 1
        message = Incoming(chat, chat, text, update_id=self.update)
        session = await self.conversation.sessions.open(chat)
        reply = await self.conversation.handle(message, session)
        await self.conversation.done(message, session, reply)
        return reply

    def turns(self, **where) -> list[dict]:
        self.store.flush()
        return self.store.query(AuditFilter(kind="turn", **where), newest_first=False)


async def test_a_not_sold_answer_for_a_product_the_shop_has_is_flagged(tmp_path, conn, search):
    model = ScriptedModel([_submit("抱歉，本店没有销售足球。")] * 3)
    world = _World(tmp_path, Agent(conn, search, model, prepare=False))
    reply = await world.say("足球多少钱")
    assert isinstance(reply, Answer)
    (turn,) = world.turns()
    assert turn["flags"] == ["not_found_but_confident"], turn.get("answer")
    other = _World(tmp_path / "other", Agent(conn, search, ScriptedModel([_submit("抱歉，本店没有销售无人机。")] * 3),
                                             prepare=False))
    await other.say("无人机多少钱")                                     # truly not sold: no sign
    assert other.turns()[0].get("flags") == []
    world.audit.close()
    other.audit.close()


async def test_the_next_message_flags_the_answer_before(tmp_path, conn, search):
    world = _World(tmp_path, Agent(conn, search))
    await world.say("足球多少钱")
    await world.say("不对")                                             # flags the 足球 answer
    await world.say("篮球多少钱", chat="2")
    await world.say("篮球的价格是多少", chat="2")                       # the same question again, other words
    await world.say("跑步鞋有货吗", chat="3")
    await world.say("瑜伽垫多少钱", chat="3")                           # a new question: no sign
    one, two, three = (world.turns(chat_id=c) for c in ("1", "2", "3"))
    assert [t["flags"] for t in one] == [["negative_reply"], []]
    from agent.audit import summary_line
    from handlers.operators import format_chat

    assert "疑似没听懂：顾客说不对/听不懂（negative_reply）" in summary_line(one[0])
    assert "疑似没听懂：顾客说不对/听不懂" in format_chat("1", [TurnRecord.from_row(t) for t in one])
    assert [t["flags"] for t in two] == [["rephrased"], []]
    assert [t["flags"] for t in three] == [[], []]
    # a 👎 on the answer to an update, and a person asked for after an answer
    world.audit.event("feedback", "3", update_id=one[0]["update_id"] + 4, value="down")   # 跑步鞋's update
    world.audit.event("handoff_start", "2", user_id="2")
    world.store.flush()
    three, two = world.turns(chat_id="3"), world.turns(chat_id="2")
    assert three[0]["flags"] == ["thumbs_down"] and three[1]["flags"] == []
    assert two[1]["flags"] == ["human_after_answer"] and two[0]["flags"] == ["rephrased"]
    flagged = world.turns(misunderstood=True)
    assert [t["message"] for t in flagged] == ["足球多少钱", "篮球多少钱", "篮球的价格是多少", "跑步鞋有货吗"]
    assert [t["message"] for t in world.turns(flag="rephrased")] == ["篮球多少钱"]

    stats = compute(world.store.iterate())
    assert (stats.turns, stats.misunderstood) == (6, 4)
    text = format_stats(stats, "今天")
    assert "疑似没听懂：4（67%）" in text and "顾客换了说法重问 ×1" in text and "已核实" in text
    (day,) = world.store.daily(__import__("datetime").datetime(2000, 1, 1, tzinfo=__import__("datetime").UTC))
    assert from_counts(day).misunderstood == 4 and from_counts(day).flags["negative_reply"] == 1
    world.audit.close()


def test_a_sign_about_an_old_answer_is_not_attached(tmp_path):
    """Only the chat's latest turn within FLAG_WINDOW can be "the answer before"."""
    store = AuditStore(tmp_path / "audit.db", retention_days=3650)
    audit = AuditLog(store)
    result = TurnResult("足球120元。", "grounded", [], trace=TurnTrace(model="offline"))
    audit.record(chat_id="1", user_id="1", message="足球多少钱", result=result, time="2026-11-29T01:00:00.000+00:00")
    audit.record(chat_id="1", user_id="1", message="不对", result=result, time="2026-11-29T03:00:00.000+00:00",
                 previous_flags=("negative_reply",))
    store.flush()
    assert [r.get("flags") for r in store.query(newest_first=False)] == [[], []]
    audit.close()


async def test_the_console_filters_and_links_flagged_turns(tmp_path, conn, search):
    from handlers.web.app import build_web_app
    from tests.test_web import TOKEN, logged_in, serve

    world = _World(tmp_path, Agent(conn, search))
    await world.say("足球多少钱")
    await world.say("答非所问")
    await world.say("瑜伽垫多少钱", chat="2")
    world.store.flush()
    (flagged,) = world.turns(misunderstood=True)
    runner, url = await serve(build_web_app(world.store, TOKEN))
    try:
        session = await logged_in(url)
        async with session:
            page = await (await session.get(f"{url}/?misunderstood=1")).text()
            assert page.count('class="detail"') == 1 and f'href="/turn/{flagged["id"]}"' in page
            assert "顾客说不对/听不懂" in page
            assert (await (await session.get(f"{url}/?sign=negative_reply")).text()).count('class="detail"') == 1
            assert (await (await session.get(f"{url}/?sign=rephrased")).text()).count('class="detail"') == 0
            assert (await (await session.get(f"{url}/")).text()).count('class="detail"') == 3
            summary = await (await session.get(f"{url}/summary")).text()
            assert re.search(r"疑似没听懂 1（33%）", summary) and "已核实" in summary
    finally:
        await runner.cleanup()
        world.audit.close()


async def test_export_flagged_writes_dialogue_lines(tmp_path, conn, search, monkeypatch, capsysbinary):
    world = _World(tmp_path, Agent(conn, search))
    await world.say("足球多少钱")
    await world.say("有优惠吗")
    await world.say("听不懂")
    await world.say("瑜伽垫多少钱", chat="2")
    world.audit.close()
    monkeypatch.delenv("AUDIT_DB", raising=False)
    monkeypatch.chdir(tmp_path)
    assert bot.main(["audit", "export", "--flagged", "--format", "jsonl", "--db", str(tmp_path / "audit.db")]) == 0
    data = capsysbinary.readouterr().out.decode("utf-8")
    (line,) = [json.loads(x) for x in data.splitlines()]
    assert line["flags"] == ["negative_reply"] and line["time"].endswith("+08:00")
    assert [t["say"] for t in line["turns"]] == ["足球多少钱", "有优惠吗"]   # the context, then the flagged turn
    (dialogue,) = _parse(data, "export")                                   # what eval-dialogues reads
    assert dialogue.family == "flagged:negative_reply" and dialogue.split == "train" and len(dialogue.steps) == 2
    assert bot.main(["audit", "export", "--flagged", "--db", str(tmp_path / "audit.db")]) == 0
    rows = capsysbinary.readouterr().out.decode("utf-8-sig").splitlines()
    assert rows[0].startswith("family,variant,split,step,say,must,must_not") and len(rows) == 3
