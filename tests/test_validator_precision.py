"""Validator precision (issue 19, item 6): truths that used to be blocked now pass, and for each one a
near-lie in the same words is still blocked.

(i) 原价/原价共/折前/折前共 before a quote's subtotal is that subtotal; (ii) a quoted command word or the
customer's own words quoted back (“转人工”) states nothing; (iii) quantities inside a cited product's own
name (运动袜（3双装）) are its name, in a shop answer and in an answer over orders (/ask)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from agent.tools import file_evidence
from db.aggregates import Aggregate, AggregateRow, Dimension, Metric, OrderQuery
from db.catalog import get_product_details, get_promotions
from db.knowledge import documents_by_id
from db.pricing import calculate_final_price
from guardrails import validator as v
from guardrails.ledger import EvidenceLedger
from guardrails.reports import check_report
from guardrails.validator import validate

D = Decimal


async def ledger_for(conn, ids, calcs=(), docs=()):
    ledger = EvidenceLedger()
    file_evidence(ledger, await get_product_details(conn, ids))
    file_evidence(ledger, await get_promotions(conn, ids))
    for pid, qty in calcs:
        file_evidence(ledger, await calculate_final_price(conn, pid, qty))
    file_evidence(ledger, await documents_by_id(conn, list(docs)))
    return ledger, list(ledger.entries)


# --- (i) 原价共 is the subtotal --------------------------------------------------------------------------------

@pytest.mark.parametrize("answer", [
    "羽毛球拍买两支原价共600元，折后480元。", "羽毛球拍买两支原价一共600元，折后480元。",
    "羽毛球拍买两支原价合计600元，打8折后共480元。", "羽毛球拍买两支折前共600元，折后480元。",
    "羽毛球拍买两支折前600元，折后480元。", "羽毛球拍买两支优惠前共600元，实付480元。",
    "羽毛球拍买两支原价600元，折后480元。",
])
async def test_the_subtotal_before_discount_passes(conn, answer):
    ledger, cites = await ledger_for(conn, ["003"], [("003", 2), ("003", 1)])
    verdict = validate("羽毛球拍买两支多少钱", answer, cites, ledger)
    assert verdict.ok, (answer, verdict.message)


@pytest.mark.parametrize(("answer", "code"), [
    ("羽毛球拍买两支原价共500元，折后480元。", v.UNVERIFIED_AMOUNT),      # no such figure
    ("羽毛球拍买两支原价共300元，折后480元。", v.WRONG_ROLE),             # the subtotal of one
    ("羽毛球拍买两支原价共480元，折后480元。", v.WRONG_ROLE),             # the total as the subtotal
    ("羽毛球拍买一支原价共600元。", v.WRONG_ROLE),                         # the subtotal of two, said for one
    ("羽毛球拍买两支折前共600元，折后500元。", v.UNVERIFIED_AMOUNT),
])
async def test_near_lies_about_the_subtotal_are_blocked(conn, answer, code):
    ledger, cites = await ledger_for(conn, ["003"], [("003", 2), ("003", 1)])
    verdict = validate("羽毛球拍多少钱", answer, cites, ledger)
    assert not verdict.ok and code in verdict.codes, (answer, verdict.codes)


# --- (ii) quoted commands and the customer's own words ------------------------------------------------------

@pytest.mark.parametrize("answer", [
    "如需人工客服，请发送“转人工”。", "您可以直接回复“转人工”，我帮您联系客服。", "请点“转人工”按钮。",
    "发送“退货”可以查看退货政策。", "回复“包邮”查看活动说明。", "您可以说“我要人工”或者“转人工”。",
])
async def test_quoted_commands_are_not_claims(conn, answer):
    ledger, cites = await ledger_for(conn, ["001"], docs=["service#1"])
    for citations in (cites, []):
        verdict = validate("转人工", answer, citations, ledger)
        assert verdict.ok, (answer, citations, verdict.message)


async def test_the_customers_words_quoted_back_are_not_claims(conn):
    ledger, cites = await ledger_for(conn, ["001"])
    assert validate("足球包邮吗", "您说的“包邮”，足球目前没有这项活动。", cites, ledger).ok
    assert validate("能送货上门吗", "您问的“送货上门”，我帮您查一下配送政策。", cites, ledger).ok


@pytest.mark.parametrize(("question", "answer", "code"), [
    ("转人工", "足球包邮，详情请回复“包邮”。", v.UNVERIFIED_SHIPPING),          # the claim is outside the quote
    ("转人工", "足球赠送球袋，发送“转人工”领取。", v.UNVERIFIED_GIFT),
    ("转人工", "足球赠送“转人工”服务。", v.UNVERIFIED_GIFT),                     # a gift, not a command
    ("足球包邮吗", "您说的“包邮”没错。", v.UNVERIFIED_SHIPPING),                  # the customer's words affirmed
    ("足球有赠品吗", "您说的“送球袋”是对的。", v.UNVERIFIED_GIFT),
    ("转人工", "请发送“足球5折”领取优惠。", v.UNVERIFIED_DISCOUNT),               # figures in quotes stay claims
    ("转人工", "回复“包邮”：足球全场包邮。", v.UNVERIFIED_SHIPPING),
])
async def test_near_lies_with_quotes_are_blocked(conn, question, answer, code):
    ledger, cites = await ledger_for(conn, ["001"])
    verdict = validate(question, answer, cites, ledger)
    assert not verdict.ok and code in verdict.codes, (answer, verdict.codes)


# --- (iii) a product's own name --------------------------------------------------------------------------------

@pytest.mark.parametrize("answer", [
    "运动袜（3双装）售价49元。", "乒乓球（10只装）售价35元，买三送一。", "网球（3只装）售价45元。",
    "运动袜（3双装）和网球（3只装）都有货。",
])
async def test_quantities_inside_a_cited_name_are_its_name(conn, answer):
    ledger, cites = await ledger_for(conn, ["047", "012", "014"])
    verdict = validate("请问", answer, cites, ledger)
    assert verdict.ok, (answer, verdict.message)


@pytest.mark.parametrize(("answer", "code"), [
    ("运动袜（3双装）买5双共245元。", v.UNVERIFIED_QUANTITY),       # a quantity never calculated
    ("运动袜（3双装）库存3双。", v.UNVERIFIED_STOCK),
    ("乒乓球（10只装）买10盒送1盒。", v.WRONG_ROLE),         # 10 is its pack size, not the rule
    ("网球（3只装）售价3元。", v.UNVERIFIED_AMOUNT),
])
async def test_near_lies_next_to_a_name_are_blocked(conn, answer, code):
    ledger, cites = await ledger_for(conn, ["047", "012", "014"])
    verdict = validate("请问", answer, cites, ledger)
    assert not verdict.ok and code in verdict.codes, (answer, verdict.codes)


def _units_by_product() -> tuple[EvidenceLedger, list[str]]:
    ledger = EvidenceLedger()
    agg = Aggregate(OrderQuery(Metric.UNITS, group_by=Dimension.PRODUCT),
                    (AggregateRow("运动袜（3双装）", D(12), 5, D("40.0")), AggregateRow("乒乓球（10只装）", D(18), 6,
                                                                                   D("60.0"))),
                    D(30), 11)
    return ledger, [ledger.add_aggregate(agg)]


def test_a_report_naming_a_pack_product_passes():
    ledger, cites = _units_by_product()
    for answer in ["运动袜（3双装）卖出12件，共5单，占40.0%。", "乒乓球（10只装）卖出18件。",
                   "销量最高的是乒乓球（10只装）：18件；运动袜（3双装）：12件。"]:
        verdict = check_report(answer, cites, ledger)
        assert verdict.ok, (answer, verdict.message)


@pytest.mark.parametrize(("answer", "code"), [
    ("运动袜（3双装）卖出13件。", "UNVERIFIED_QUANTITY"),
    ("运动袜（3双装）卖出18件。", "WRONG_ROLE"),            # the other product's figure
    ("运动袜3双卖出12件。", "UNVERIFIED_QUANTITY"),          # not the product's name: 3双 is a claim
])
def test_near_lies_in_a_report_are_blocked(answer, code):
    ledger, cites = _units_by_product()
    verdict = check_report(answer, cites, ledger)
    assert not verdict.ok and code in verdict.codes, (answer, verdict.codes)


# --- amounts are bound to the quantity written right before them ------------------------------------------

async def test_a_total_is_checked_against_its_own_quantity(conn):
    ledger, cites = await ledger_for(conn, ["037"], [("037", 4), ("037", 5)])
    assert validate("q", "运动水壶买5个共245元（4个共196元）。", cites, ledger).ok
    swapped = validate("q", "运动水壶买5个共196元（4个共245元）。", cites, ledger)
    assert swapped.codes == [v.WRONG_ROLE]
    shipping = validate("q", "运动水壶满200元包邮：买4个共196元即可包邮。", cites, ledger)
    assert shipping.codes == [v.UNVERIFIED_SHIPPING]
    assert validate("q", "运动水壶满200元包邮：买5个共245元即可包邮。", cites, ledger).ok


async def test_delivery_words_are_not_gifts(conn):
    ledger, cites = await ledger_for(conn, ["001"])
    for answer in ["足球可以配送到您家，详情见配送政策。", "足球的运送时间以快递为准。", "请发送您的地址。"]:
        assert validate("q", answer, cites, ledger).ok, answer
    assert v.UNVERIFIED_GIFT in validate("q", "足球免费送球袋。", cites, ledger).codes
    assert v.UNVERIFIED_GIFT in validate("q", "足球送一个打气筒。", cites, ledger).codes
