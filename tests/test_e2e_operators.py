"""Operators end to end: the real `python bot.py` process, the fake Bot API server (forum topics,
copies, callback queries, documents) and real Redis. A customer is handed to a person and back; the
bot stays silent meanwhile, across restarts and with two processes; feedback; operator commands."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
from decimal import Decimal
from pathlib import Path

import pytest

from db.pricing import yuan
from handlers import texts
from tests.fakes.openai_server import tool_call
from tests.fakes.redis_support import connect
from tests.fakes.remote_bot import remote_bot

ROOT = Path(__file__).resolve().parent.parent
GROUP, OPERATOR, STRANGER = -1001234, 777, 888
ENV = {"OPERATOR_CHAT_ID": str(GROUP), "OPERATOR_IDS": f"{OPERATOR},555", "SERVICE_HOURS": "00:00-24:00"}


def button(sent, text: str) -> str:
    return next(b["callback_data"] for b in sent.buttons() if b["text"] == text)


def copies(fake, chat_id: int, thread: int | None = None):
    return [s for s in fake.sent if s.chat_id == chat_id and s.kind == "copy" and s.thread_id == thread]


def audit_records(workdir: Path) -> list[dict]:
    path = workdir / "audit.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []


async def wait_audit(workdir: Path, condition, what: str) -> list[dict]:
    for _ in range(400):
        records = audit_records(workdir)
        if condition(records):
            return records
        await asyncio.sleep(0.05)
    raise AssertionError(f"the audit log never showed {what}: {audit_records(workdir)}")


async def test_the_handoff_round_trip(world):
    fake, bot, workdir = world
    process = bot(**ENV)
    await process.start()

    # the bot answers, with 👍 / 👎 under the answer
    await fake.say(31, "足球多少钱")
    (answer,) = await fake.wait_replies(31, 1)
    assert "120元" in answer and [b["text"] for b in fake.sent[-1].buttons()] == ["👍", "👎"]

    # the customer asks for a person: a topic opens with a card, the customer is told
    await fake.say(31, "转人工")
    assert (await fake.wait_replies(31, 2))[1] == texts.HANDOFF_WAIT
    (thread,) = fake.topics
    assert fake.topics[thread].chat_id == GROUP and "31" in fake.topics[thread].name
    card = fake.in_topic(GROUP, thread)[0]
    assert "足球多少钱" in card.text and "120元" in card.text and "id 31" in card.text
    assert [b["text"] for b in card.buttons()] == [texts.CLAIM_BUTTON, texts.CLOSE_BUTTON]

    # what the customer writes now is copied into the topic; the bot does not answer a price question
    await fake.say(31, "篮球多少钱")
    await fake.push(fake.message(31, None, photo=[{"file_id": "p", "file_unique_id": "p", "width": 1, "height": 1}],
                                 caption="这个颜色有吗"))
    relayed = await fake.wait_for(lambda: len(copies(fake, GROUP, thread)) >= 2 and copies(fake, GROUP, thread))
    assert [c.text for c in relayed] == ["篮球多少钱", "这个颜色有吗"] and relayed[0].source[0] == 31

    # someone in the group who is not an operator is ignored; an operator claims and answers
    await fake.push(fake.group_message(GROUP, thread, STRANGER, "我来回复"))
    await fake.press(card, button(card, texts.CLAIM_BUTTON), user_id=OPERATOR)
    assert (await fake.wait_replies(31, 3))[2] == texts.HANDOFF_JOINED
    await fake.push(fake.group_message(GROUP, thread, OPERATOR, "您好，篮球有货，今天下单明天发"))
    await fake.wait_for(lambda: copies(fake, 31), what="the operator's reply")
    assert [c.text for c in copies(fake, 31)] == ["您好，篮球有货，今天下单明天发"]   # the stranger's never
    assert fake.replies(31)[1:] == [texts.HANDOFF_WAIT, texts.HANDOFF_JOINED, "您好，篮球有货，今天下单明天发"]

    # /close in the topic: the customer is told, the topic closed, the bot answers again
    await fake.push(fake.group_message(GROUP, thread, OPERATOR, "/close"))
    assert (await fake.wait_replies(31, 5))[4] == texts.HANDOFF_ENDED
    assert fake.topics[thread].closed
    await fake.say(31, "足球多少钱")
    assert "120元" in (await fake.wait_replies(31, 6))[5]

    # a later handoff reopens the same topic with a fresh card
    await fake.say(31, "人工客服")
    await fake.wait_replies(31, 7)
    assert list(fake.topics) == [thread] and not fake.topics[thread].closed
    assert sum(texts.CLAIM_BUTTON in [b["text"] for b in s.buttons()] for s in fake.in_topic(GROUP, thread)) == 2

    # the topic is deleted by someone: the next message opens a new one, card first
    fake.delete_topic(thread)
    await fake.say(31, "还在吗")
    new_thread = await fake.wait_for(lambda: [t for t in fake.topics if t != thread], what="a new topic")
    new_thread = new_thread[0]
    await fake.wait_for(lambda: copies(fake, GROUP, new_thread), what="the copy in the new topic")
    assert "转人工" in fake.in_topic(GROUP, new_thread)[0].text or fake.in_topic(GROUP, new_thread)[0].buttons()

    # the customer blocked the bot: the operator is told in the topic
    fake.blocked.add(31)
    await fake.push(fake.group_message(GROUP, new_thread, OPERATOR, "还需要帮忙吗？"))
    await fake.wait_for(lambda: any(s.text == texts.TOPIC_BLOCKED for s in fake.in_topic(GROUP, new_thread)),
                        what="the blocked note")

    code, output = await process.stop()
    assert code == 0, output
    assert "Traceback" not in output and fake.token not in output

    # the audit log has it all in order; `audit tail --chat` shows it
    kinds = [r.get("kind") for r in audit_records(workdir) if r["chat_id"] == "31"]
    assert kinds[:9] == ["turn", "handoff_start", "relay", "relay", "handoff_claim", "relay", "handoff_end", "turn",
                         "handoff_start"]
    claim = next(r for r in audit_records(workdir) if r.get("kind") == "handoff_claim")
    assert claim["operator_id"] == OPERATOR
    tail = await asyncio.create_subprocess_exec(sys.executable, str(ROOT / "bot.py"), "audit", "tail", "--chat", "31",
                                                "-n", "30", cwd=workdir, env=process.env, stdout=asyncio.subprocess.PIPE)
    shown = (await tail.stdout.read()).decode()
    assert shown.index("handoff_start") < shown.index("handoff_claim") < shown.index("handoff_end")


async def test_two_processes_and_a_restart_never_unmute(world):
    fake, bot, _ = world
    first, second = bot(**ENV), bot(**ENV)
    await first.start()
    await second.start()
    await fake.say(41, "转人工")
    await fake.say(41, "人工客服")                      # the chat is muted by then: relayed, not a second handoff
    assert await fake.wait_replies(41, 1) == [texts.HANDOFF_WAIT]
    (thread,) = await fake.wait_for(lambda: copies(fake, GROUP, next(iter(fake.topics), None)) and fake.topics,
                                    what="the second message relayed")
    assert len(fake.topics) == 1                       # two quick triggers, one topic

    code, _ = await first.stop()
    assert code == 0
    restarted = bot(**ENV)
    await restarted.start()
    for question in ["足球多少钱", "篮球多少钱", "羽毛球拍买两支多少钱"]:
        await fake.say(41, question)
    await fake.wait_for(lambda: len(copies(fake, GROUP, thread)) == 4, what="three more relayed questions")
    assert fake.replies(41) == [texts.HANDOFF_WAIT]    # no bot answer, from either process
    for process in (second, restarted):
        code, output = await process.stop()
        assert code == 0, output


async def test_an_idle_human_conversation_goes_back_to_the_bot(world):
    fake, bot, _ = world
    process = bot(**ENV, HANDOFF_IDLE_MINUTES="0.02")   # 1.2 s
    await process.start()
    await fake.say(61, "我要投诉")
    assert await fake.wait_replies(61, 2) == [texts.HANDOFF_WAIT, texts.HANDOFF_ENDED]
    (thread,) = fake.topics
    assert fake.topics[thread].closed and texts.TOPIC_CLOSED.split("（")[0] in fake.in_topic(GROUP, thread)[-1].text
    await fake.say(61, "足球多少钱")
    assert "120元" in (await fake.wait_replies(61, 3))[2]
    code, output = await process.stop()
    assert code == 0, output


async def test_feedback_once_and_operator_commands(world):
    fake, bot, workdir = world
    process = bot(**ENV)
    await process.start()
    await fake.say(51, "足球多少钱")
    await fake.wait_replies(51, 1)
    first = fake.sent[-1]
    await fake.press(first, button(first, "👍"))
    await fake.press(first, button(first, "👍"))
    await fake.wait_for(lambda: len(fake.callback_answers) == 2, what="two callback answers")
    assert [a.get("text") for a in fake.callback_answers] == [texts.FEEDBACK_THANKS, texts.FEEDBACK_ALREADY]
    assert first.reply_markup is None                                   # the buttons are gone

    await fake.say(51, "篮球多少钱")
    await fake.wait_replies(51, 2)
    second = fake.sent[-1]
    await fake.press(second, button(second, "👎"))
    await fake.wait_for(lambda: second.buttons() and second.buttons()[0]["text"] == texts.HANDOFF_BUTTON,
                        what="👎 offering a person")
    await fake.press(second, button(second, texts.HANDOFF_BUTTON))
    assert (await fake.wait_replies(51, 3))[2] == texts.HANDOFF_WAIT

    redis = await connect()
    try:
        counters = {}
        for key in await redis.keys(f"{process.env['REDIS_PREFIX']}counters:*"):
            counters.update({k.decode(): int(v) for k, v in (await redis.hgetall(key)).items()})
    finally:
        await redis.aclose()
    assert counters == {"feedback:up": 1, "feedback:down": 1}

    # the same, as Prometheus metrics on the health port
    import aiohttp

    async with aiohttp.ClientSession() as http, http.get(f"http://127.0.0.1:{process.port}/metrics") as response:
        metrics = await response.text()
    for line in ('kefu_turns_total{status="grounded"} 2.0', 'kefu_feedback_total{value="up"} 1.0',
                 'kefu_feedback_total{value="down"} 1.0', "kefu_handoffs_total 1.0", "kefu_updates_total 6.0"):
        assert line in metrics, line
    assert 'kefu_stage_seconds_count{stage="queue"}' in metrics and 'kefu_stage_seconds_count{stage="send"} 2.0' in metrics

    # a customer who types an operator command gets an ordinary answer; an operator gets the figures
    await fake.say(52, "/stats")
    (ordinary,) = await fake.wait_replies(52, 1)
    assert not ordinary.startswith("📊")
    await wait_audit(workdir, lambda rs: sum(r.get("kind") == "feedback" for r in rs) == 2 and
                     sum(r.get("kind", "turn") == "turn" for r in rs) == 3, "the feedback and three turns")
    await fake.push(fake.group_message(GROUP, None, STRANGER, "/stats"))   # not an operator: nothing
    await fake.say(OPERATOR, "/stats")
    (stats,) = await fake.wait_replies(OPERATOR, 1)
    assert stats.startswith("📊 客服统计：今天") and "对话轮次：3" in stats and "👍 1 · 👎 1" in stats
    assert "转人工：1" in stats and "p50" in stats
    await fake.say(OPERATOR, "/stats yesterday")
    assert (await fake.wait_replies(OPERATOR, 2))[1] == "用法：/stats [today|7d]（今天，或最近7天）"
    await fake.say(OPERATOR, "/chat 51")
    chat = (await fake.wait_replies(OPERATOR, 3))[2]
    assert "足球多少钱" in chat and "反馈（feedback） 👍" in chat and "转人工（handoff_start）" in chat
    await fake.say(OPERATOR, "/export 1")
    document = await fake.wait_for(lambda: [s for s in fake.sent if s.kind == "document"], what="the CSV")
    (document,) = document
    assert document.chat_id == OPERATOR and document.filename.endswith("-1d.csv")
    assert document.document.startswith("\ufeff".encode()) and "足球多少钱" in document.document.decode("utf-8-sig")
    assert not [s for s in fake.sent if s.chat_id == GROUP and s.thread_id is None]   # the stranger got nothing
    # asked in the group, a customer's records go to the operator alone; the group sees only a note
    private = len(fake.replies(OPERATOR))
    await fake.push(fake.group_message(GROUP, None, OPERATOR, "/chat 51"))
    note = await fake.wait_for(lambda: [s for s in fake.sent if s.chat_id == GROUP and s.thread_id is None],
                               what="the group's note")
    assert [s.text for s in note] == ["已私信发给您。"]
    assert "足球多少钱" in (await fake.wait_replies(OPERATOR, private + 1))[private]
    code, output = await process.stop()
    assert code == 0, output


async def test_operators_ask_and_a_customer_gets_only_their_own_figures(world):
    fake, bot, workdir = world
    process = bot(**ENV)
    await process.start()
    await fake.say(OPERATOR, "/ask 上个月已签收的订单一共多少单，多少钱")
    (answer,) = await fake.wait_replies(OPERATOR, 1)
    shop = sqlite3.connect(workdir / "data" / "shop.db")
    signed = [Decimal(t) for (t,) in shop.execute(
        "SELECT total FROM orders WHERE status = '已签收' AND created_at >= '2026-10-01' AND created_at < '2026-11-01'")]
    assert "2026-10-01 至 2026-10-31" in answer
    assert f"{len(signed)}单" in answer and f"{sum(signed, Decimal(0))}元" in answer

    await fake.say(OPERATOR, "/ask 最近7天各地区销售额，做成饼图")
    (photo,) = await fake.wait_for(lambda: [s for s in fake.sent if s.kind == "photo"], what="the chart")
    assert photo.document.startswith(b"\x89PNG") and photo.chat_id == OPERATOR
    by_region: dict[str, Decimal] = {}
    for region, total in shop.execute("SELECT region, total FROM orders WHERE created_at >= '2026-11-23' "
                                      "AND created_at < '2026-11-30' AND status IN ('待发货', '运输中', '已签收')"):
        by_region[region] = by_region.get(region, Decimal(0)) + Decimal(total)
    assert all(f"{region}：{total}元" in photo.text for region, total in by_region.items()), photo.text
    assert "按已付款订单（待发货、运输中、已签收）统计" in photo.text   # 销售额 counts paid orders, and says so

    # a customer: their own month's spending, computed by SQL; the shop's figures refused
    await fake.say(10001, "我这个月在店里花了多少钱")
    (mine,) = await fake.wait_replies(10001, 1)
    paid = [Decimal(t) for (t,) in shop.execute(
        "SELECT total FROM orders WHERE user_id = '10001' AND created_at >= '2026-11-01' "
        "AND status IN ('待发货', '运输中', '已签收')")]
    assert f"{len(paid)}笔" in mine and f"实付合计{yuan(sum(paid, Decimal(0)))}" in mine   # whole yuan, as every answer
    await fake.say(10001, "店里上个月卖了多少单")
    refused = (await fake.wait_replies(10001, 2))[1]
    assert "不能对外提供" in refused and not any(ch.isdigit() for ch in refused)
    await fake.say(10001, "/ask 上个月卖了多少钱")            # not an operator: no sign /ask exists
    other = (await fake.wait_replies(10001, 3))[2]
    assert "订单数" not in other and "销售额：" not in other
    assert not [s for s in fake.sent if s.kind == "photo" and s.chat_id == 10001]
    code, output = await process.stop()
    assert code == 0, output


def operator_model(body: dict) -> dict:
    """An honest model with the operator tools: one query, then an answer from its result."""
    names = {tool["function"]["name"] for tool in body.get("tools", [])}
    assert "query_orders" in names and "search_products" not in names   # the operator tool set, not the shop's
    results = [json.loads(m["content"]) for m in body["messages"] if m["role"] == "tool"]
    if not results:
        return {"tool_calls": [tool_call("query_orders", {"metric": "total", "start": "2026-10-01",
                                                          "end": "2026-10-31", "status": "已签收"})]}
    last = results[-1]
    return {"tool_calls": [tool_call("submit_answer", {
        "answer": f"2026-10-01 至 2026-10-31，已签收订单{last['orders']}单，销售额合计{last['whole']}元。",
        "citation_ids": [last["evidence_id"]], "status": "grounded"}, "call_2")]}


@pytest.mark.slow   # a real bot.py process
async def test_ask_through_a_remote_model_over_http(tmp_path):
    async with remote_bot(tmp_path, operator_model, **ENV) as world:
        await world.telegram.say(OPERATOR, "/ask 上个月已签收的订单卖了多少钱")
        (answer,) = await world.telegram.wait_replies(OPERATOR, 1)
    shop = sqlite3.connect(tmp_path / "data" / "shop.db")
    signed = [Decimal(t) for (t,) in shop.execute(
        "SELECT total FROM orders WHERE status = '已签收' AND created_at >= '2026-10-01' AND created_at < '2026-11-01'")]
    assert answer == f"2026-10-01 至 2026-10-31，已签收订单{len(signed)}单，销售额合计{sum(signed, Decimal(0))}元。"
    (record,) = [r for r in world.audit() if r.get("message", "").startswith("/ask")]
    assert record["status"] == "grounded" and not record["degraded"] and record["model_calls"] == 2
    assert record["tool_calls"][0]["name"] == "query_orders"
