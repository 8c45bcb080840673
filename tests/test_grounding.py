"""Grounding v2: every claim is checked by role, condition and meaning — on the generated red-team
corpus, for each reason code, and through the real bot with a scripted model that lies."""

from __future__ import annotations

from collections import Counter

import pytest

from agent.tools import file_evidence
from db.catalog import get_product_details, get_promotions
from db.knowledge import documents_by_id
from db.pricing import calculate_final_price
from guardrails import validator as v
from guardrails.ledger import EvidenceLedger
from guardrails.validator import validate
from tests.fakes.openai_server import tool_call
from tests.fakes.redteam import LIE_FAMILIES, TRUE_ROLES, build_corpus, catalog_brands
from tests.fakes.remote_bot import remote_bot


@pytest.fixture
async def corpus(conn):
    return await build_corpus(conn)


async def test_every_lie_family_is_blocked_and_every_true_role_passes(corpus):
    wrong, seen = [], Counter()
    for case in corpus:
        verdict = validate(case.question, case.answer, case.citations, case.ledger())
        seen[case.family] += 1
        if verdict.ok == case.lie:
            wrong.append((case.family, case.answer, verdict.codes))
    assert not wrong, wrong[:10]
    assert set(seen) == set(LIE_FAMILIES) | set(TRUE_ROLES)
    assert sum(c.lie for c in corpus) >= 900 and sum(not c.lie for c in corpus) >= 600


async def ledger_for(conn, ids, calcs=(), docs=()):
    ledger = EvidenceLedger(await catalog_brands(conn))
    file_evidence(ledger, await get_product_details(conn, ids))
    file_evidence(ledger, await get_promotions(conn, ids))
    for pid, qty, first in calcs:
        file_evidence(ledger, await calculate_final_price(conn, pid, qty, first))
    file_evidence(ledger, await documents_by_id(conn, list(docs)))
    return ledger


# --- each new reason code, with the figure the message names ------------------------------------------

async def test_wrong_role_names_the_right_figure(conn):
    ledger = await ledger_for(conn, ["008"])
    verdict = validate("篮球鞋多少钱", "篮球鞋售价500元。", ["product:008", "promotion:P006"], ledger)
    assert verdict.codes == [v.WRONG_ROLE]
    assert "spend threshold of promotion P006" in verdict.message and "its price is 699元" in verdict.message


async def test_total_for_two_is_not_the_price_of_one(conn):
    ledger = await ledger_for(conn, ["001"], [("001", 2, False)])
    cites = ["product:001", "promotion:P001", "calc:001:2:regular"]
    verdict = validate("足球多少钱", "足球售价216元。", cites, ledger)
    assert verdict.codes == [v.WRONG_ROLE] and "total for 2" in verdict.message
    assert validate("那买两个呢", "足球买两个共216元。", cites, ledger).ok
    assert validate("那买两个呢", "足球9折后共216元。", cites, ledger).ok   # the customer set the quantity
    listed = "买两个足球：\n1. 原价：240元\n2. 9折优惠：-24元\n3. 实付：216元"   # a model's list, one item a line
    assert validate("那买两个呢", listed, cites, ledger).ok
    assert validate("足球多少钱", "足球原价：240元", cites, ledger).codes == [v.WRONG_ROLE]


async def test_missing_condition_first_purchase(conn):
    ledger = await ledger_for(conn, ["004"], [("004", 1, True)])
    cites = ["product:004", "promotion:P004", "calc:004:1:first"]
    for lie in ["跑步鞋打8折。", "跑步鞋买1双实付400元。"]:
        verdict = validate("跑步鞋多少钱", lie, cites, ledger)
        assert verdict.codes == [v.MISSING_CONDITION] and "首次购买" in verdict.message, lie
    assert validate("跑步鞋多少钱", "跑步鞋首次购买打8折，实付400元。", cites, ledger).ok
    assert validate("跑步鞋首次购买多少钱", "跑步鞋打8折，实付400元。", cites, ledger).ok


async def test_missing_condition_minimum_quantity_and_spend(conn):
    ledger = await ledger_for(conn, ["003", "002"])
    cites = ["product:003", "promotion:P003", "product:002", "promotion:P002"]
    assert validate("q", "羽毛球拍一支8折。", cites, ledger).codes == [v.MISSING_CONDITION]
    assert validate("q", "羽毛球拍两支及以上8折。", cites, ledger).ok
    assert validate("q", "篮球半价。", cites, ledger).codes == [v.MISSING_CONDITION]
    assert validate("q", "篮球单笔满300元半价。", cites, ledger).ok
    assert validate("篮球买两个呢", "篮球现在半价。", cites, ledger).ok   # 2 × 200 ≥ 300, set by the customer


async def test_unverified_brand(conn):
    ledger = await ledger_for(conn, ["053", "054"])
    verdict = validate("q", "足球鞋是阿迪达斯的。", ["product:053", "product:054"], ledger)
    assert verdict.codes == [v.UNVERIFIED_BRAND] and "足球鞋 is 耐克" in verdict.message
    assert validate("q", "足球鞋是耐克的，不是阿迪达斯的。", ["product:053"], ledger).ok


async def test_unverified_gift(conn):
    ledger = await ledger_for(conn, ["005", "048"])
    cites = ["product:005", "promotion:P005", "product:048", "promotion:P011"]
    assert validate("q", "瑜伽垫购买赠送瑜伽砖。", cites, ledger).codes == [v.UNVERIFIED_GIFT]
    assert validate("q", "瑜伽垫送替换表带一条。", cites, ledger).codes == [v.UNVERIFIED_GIFT]
    assert validate("q", "瑜伽垫购买赠送视频教程；GPS心率运动手表送一条替换表带。", cites, ledger).ok
    assert validate("q", "这款瑜伽垫150元，买就送教程视频哦～", cites, ledger).ok


async def test_unverified_shipping(conn):
    ledger = await ledger_for(conn, ["001", "037"], [("037", 5, False)])
    cites = ["product:001", "promotion:P001", "product:037", "promotion:P009", "calc:037:5:regular"]
    assert validate("q", "足球包邮。", cites, ledger).codes == [v.UNVERIFIED_SHIPPING]
    assert validate("q", "运动水壶包邮。", cites, ledger).codes == [v.UNVERIFIED_SHIPPING]
    assert validate("q", "运动水壶满200元包邮。", cites, ledger).ok
    assert validate("q", "运动水壶买5件共245元，可以包邮。", cites, ledger).ok
    assert validate("q", "足球不包邮。", cites, ledger).ok


async def test_stock_status_contradicts(conn):
    ledger = await ledger_for(conn, ["001"])
    for lie in ["足球已经售罄。", "足球暂时缺货。", "足球没货了。"]:
        assert validate("q", lie, ["product:001"], ledger).codes == [v.STOCK_STATUS_CONTRADICTS], lie
    assert validate("q", "足球有货，库存50个。", ["product:001"], ledger).ok


async def test_policy_contradicts(conn):
    ledger = await ledger_for(conn, [], docs=["returns#1", "payment#1"])
    cites = ["doc:returns#1", "doc:payment#1"]
    for lie in ["签收后15天内支持无理由退货。", "支持货到付款。", "定制商品也可以无理由退货。"]:
        assert validate("q", lie, cites, ledger).codes == [v.POLICY_CONTRADICTS], lie
    assert validate("q", "签收后7天内支持无理由退货，15天内质量问题可以换货。", cites, ledger).ok
    assert validate("q", "暂不支持货到付款。", cites, ledger).ok


async def test_unverified_duration_or_time(conn):
    ledger = await ledger_for(conn, ["048"], docs=["service#1"])
    assert validate("q", "GPS心率运动手表续航14天。", ["product:048"], ledger).ok
    assert validate("q", "GPS心率运动手表续航30天。", ["product:048"], ledger).codes == [v.UNVERIFIED_POLICY_FIGURE]
    late = validate("q", "人工客服晚上10点下班。", ["doc:service#1"], ledger)
    assert v.UNVERIFIED_POLICY_FIGURE in late.codes and "10点" in late.message


# --- through the real bot: a scripted model tells each kind of lie ------------------------------------

LIES = {   # customer message → (tool call, the lie submitted with real evidence ids, a true fact the customer gets)
    "篮球鞋多少钱": (("search_products", {"query": "篮球鞋"}), "篮球鞋售价500元。", ["product:008", "promotion:P006"],
                "699元"),
    "羽毛球拍买两支多少钱": (("search_products", {"query": "羽毛球拍"}), "羽毛球拍售价480元。",
                    ["product:003", "calc:003:2:regular"], "480元"),
    "跑步鞋有什么优惠": (("search_products", {"query": "跑步鞋"}), "跑步鞋现在打8折。", ["product:004", "promotion:P004"],
                  "首次购买8折"),
    "足球鞋是什么牌子的": (("search_products", {"query": "足球鞋"}), "足球鞋是阿迪达斯的。", ["product:053"], "耐克"),
    "瑜伽垫送什么": (("search_products", {"query": "瑜伽垫"}), "瑜伽垫购买赠送瑜伽砖。", ["product:005", "promotion:P005"],
                "教程视频"),
    "足球包邮吗": (("search_products", {"query": "足球"}), "足球全国包邮。", ["product:001", "promotion:P001"], "120元"),
    "跑步鞋还有货吗": (("search_products", {"query": "跑步鞋"}), "跑步鞋已经售罄。", ["product:004"], "库存20双"),
    "怎么退货": (("search_knowledge", {"query": "退货"}), "签收后15天内支持无理由退货。", ["doc:returns#1"], "7天"),
}


def lying_model(body):
    question = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
    (tool, args), lie, cites, _ = LIES[question]
    if not any(m["role"] == "tool" for m in body["messages"]):
        return {"tool_calls": [tool_call(tool, args)]}
    return {"tool_calls": [tool_call("submit_answer", {"answer": lie, "citation_ids": cites, "status": "grounded"},
                                     f"call_{len(body['messages'])}")]}


@pytest.mark.slow   # a real bot.py process
async def test_a_lying_model_never_reaches_the_customer_through_the_real_bot(tmp_path):
    async with remote_bot(tmp_path, lying_model, LLM_TIMEOUT_SECONDS="5", LLM_MAX_RETRIES="0") as world:
        for chat, question in enumerate(LIES, start=100):
            await world.telegram.say(chat, question)
        for chat, (question, (_, lie, _, truth)) in enumerate(LIES.items(), start=100):
            (reply,) = await world.telegram.wait_replies(chat, 1)
            assert lie.rstrip("。") not in reply and truth in reply, (question, reply)
    openai = world.openai
    records = world.audit()
    assert len(records) == len(LIES) and all(r["degraded"] for r in records)
    codes = {code for r in records for verdict in r["verdicts"] for code in verdict["codes"]}
    assert {v.WRONG_ROLE, v.MISSING_CONDITION, v.UNVERIFIED_BRAND, v.UNVERIFIED_GIFT, v.UNVERIFIED_SHIPPING,
            v.STOCK_STATUS_CONTRADICTS, v.POLICY_CONTRADICTS} <= codes
    assert len([c for c in openai.requests if c[0] == "chat"]) == 4 * len(LIES)   # a tool call and three lies each
