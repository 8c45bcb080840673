"""The validator against a red-team corpus generated from true ledgers, and every reason code."""

from __future__ import annotations

from decimal import Decimal

import pytest

from agent.tools import file_evidence
from db.catalog import get_product_details, get_promotions
from db.pricing import calculate_final_price
from guardrails import validator as v
from guardrails.ledger import EvidenceLedger
from guardrails.validator import validate
from tests.fakes.renderings import discount_forms, money_forms

D = Decimal


async def ledger_for(conn, product_ids, calcs=()):
    ledger = EvidenceLedger()
    file_evidence(ledger, await get_product_details(conn, product_ids))
    file_evidence(ledger, await get_promotions(conn, product_ids))
    for pid, qty, *first in calcs:
        file_evidence(ledger, await calculate_final_price(conn, pid, qty, bool(first and first[0])))
    return ledger


# Scenario: name, products, calculations, citations, true answer templates ({m:…} amount slots).
SCENARIOS = {
    "football": (["001"], [("001", 2)], ["product:001", "promotion:P001", "calc:001:2:regular"]),
    "racket": (["003"], [("003", 2), ("003", 1)], ["product:003", "promotion:P003", "calc:003:2:regular",
                                                    "calc:003:1:regular"]),
    "yoga": (["005"], [("005", 1)], ["product:005", "promotion:P005", "calc:005:1:regular"]),
    "basketball": (["002"], [("002", 2)], ["product:002", "promotion:P002", "calc:002:2:regular"]),
    "pingpong": (["012"], [("012", 3)], ["product:012", "promotion:P008", "calc:012:3:regular"]),
}

TRUE_TEMPLATES = {
    "football": [("足球售价{a}，现在打{d}，买两个共{b}。", D(120), D("0.9"), D(216)),
                 ("足球单价{a}，2个合计{b}，库存50个。", D(120), None, D(216))],
    "racket": [("羽毛球拍单价{a}，两支及以上{d}，买两支共{b}。", D(300), D("0.8"), D(480)),
               ("羽毛球拍买一支是{a}，需购买2支及以上才打{d}。", D(300), D("0.8"), None)],
    "yoga": [("瑜伽垫售价{a}，购买赠送教程视频，一张共{b}。", D(150), None, D(150))],
    "basketball": [("篮球单价{a}，单笔满300元篮球{d}，两个共{b}。", D(200), D("0.5"), D(200))],
    "pingpong": [("乒乓球（10只装）每盒{a}，买三送一：付3盒共{b}，实得4盒。", D(35), None, D(105))],
}


def render_true(template, a, d, b):
    """Every combination of money forms (a and b rendered alike) and discount forms."""
    money = list(money_forms(a).keys())
    discounts = list(discount_forms(d).values()) if d is not None else [""]
    for form in money:
        for dtext in discounts:
            yield template.format(a=money_forms(a)[form],
                                  b=money_forms(b)[form] if b is not None and form in money_forms(b) else
                                  (money_forms(b)["digits"] if b is not None else ""),
                                  d=dtext)


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
async def test_true_answers_in_every_form_pass(conn, scenario):
    products, calcs, citations = SCENARIOS[scenario]
    ledger = await ledger_for(conn, products, calcs)
    count = 0
    for template, a, d, b in TRUE_TEMPLATES[scenario]:
        for answer in render_true(template, a, d, b):
            verdict = validate("请问价格？", answer, citations, ledger)
            assert verdict.ok, (answer, verdict.message)
            count += 1
    assert count >= 13


def lies_for(true_price: Decimal, other_price: Decimal, name: str):
    """Wrong amounts in every written form."""
    for wrong in {true_price + D("0.01"), true_price - D("0.01"), true_price + 1, true_price - 1, other_price}:
        for form, text in money_forms(wrong).items():
            yield f"{form}:{wrong}", f"{name}的售价是{text}。"


@pytest.mark.parametrize(("scenario", "name", "price", "other"), [
    ("football", "足球", D(120), D(999)), ("racket", "羽毛球拍", D(300), D(240)),
    ("yoga", "瑜伽垫", D(150), D(130)), ("basketball", "篮球", D(200), D(100)),
])
async def test_wrong_prices_in_every_form_are_blocked(conn, scenario, name, price, other):
    products, calcs, citations = SCENARIOS[scenario]
    ledger = await ledger_for(conn, products, calcs)
    lies = list(lies_for(price, other, name))
    assert len(lies) >= 60
    for label, answer in lies:
        verdict = validate("多少钱？", answer, citations, ledger)
        # a figure no evidence holds, or one it holds in another role (240元 is what each of two rackets
        # comes to under 两支及以上8折, not the racket's price)
        assert not verdict.ok and ({v.UNVERIFIED_AMOUNT, v.WRONG_ROLE} & set(verdict.codes)), (label, answer)


@pytest.mark.parametrize("wrong", [D("0.8"), D("0.5"), D("0.85"), D("0.95")])
async def test_wrong_discounts_in_every_form_are_blocked(conn, wrong):
    ledger = await ledger_for(conn, ["001"], [("001", 2)])
    for form, text in discount_forms(wrong).items():
        verdict = validate("有优惠吗", f"足球现在{text}。", ["product:001", "promotion:P001"], ledger)
        assert v.UNVERIFIED_DISCOUNT in verdict.codes, (form, text)


async def test_half_price_when_there_is_none_is_blocked(conn):
    ledger = await ledger_for(conn, ["003"])
    verdict = validate("有优惠吗", "羽毛球拍现在半价！", ["product:003", "promotion:P003"], ledger)
    assert verdict.codes == [v.UNVERIFIED_DISCOUNT]


async def test_the_average_a_unit_comes_to_is_the_calculations_total_over_its_units(conn):
    """平均每支240元: the total over the units received, from a calculation cited; the unit price, another
    amount or an average with no calculation behind it is blocked."""
    ledger = await ledger_for(conn, ["003"], [("003", 2), ("003", 1)])
    cites = ["product:003", "promotion:P003", "calc:003:2:regular"]
    assert validate("平均一支多少", "买2支共480元，平均每支240元。", cites, ledger).ok
    assert validate("平均一支多少", "两支折合一支240元。", cites, ledger).ok
    for lie in ("买2支共480元，平均每支300元。", "买2支共480元，平均每支250元。"):
        assert not validate("平均一支多少", lie, cites, ledger).ok, lie
    one = ["product:003", "promotion:P003", "calc:003:1:regular"]   # one racket: no average to state
    assert not validate("平均一支多少", "平均每支240元。", one, ledger).ok


async def test_gift_counted_as_a_price_cut_is_blocked(conn):
    ledger = await ledger_for(conn, ["005"], [("005", 1)])
    cites = ["product:005", "promotion:P005", "calc:005:1:regular"]
    for lie in ["瑜伽垫送教程视频，相当于优惠20元，只要130元。", "瑜伽垫赠送教程视频，到手价130元。",
                "瑜伽垫现在9折。"]:
        assert not validate("瑜伽垫有优惠吗", lie, cites, ledger).ok, lie


async def test_invented_and_swapped_product_ids_are_blocked(conn):
    ledger = await ledger_for(conn, ["001", "002"])
    cites = ["product:001", "product:002"]
    invented = validate("q", "足球（商品ID：999）售价120元。", cites, ledger)
    assert v.UNVERIFIED_PRODUCT_ID in invented.codes
    swapped_id = validate("q", "商品ID：002 售价120元。", cites, ledger)
    assert v.UNVERIFIED_AMOUNT in swapped_id.codes
    swapped_name = validate("q", "篮球售价120元。", cites, ledger)
    assert v.UNVERIFIED_AMOUNT in swapped_name.codes and "different product" in swapped_name.message
    both = validate("q", "足球售价120元；篮球售价200元。", cites, ledger)
    assert both.ok, both.message
    swapped_in_one_sentence = validate("q", "足球售价200元，篮球售价120元。", cites, ledger)
    assert swapped_in_one_sentence.codes == [v.UNVERIFIED_AMOUNT]
    assert validate("q", "足球售价120元，篮球售价200元。", cites, ledger).ok


@pytest.mark.parametrize("lie", ["足球库存51件。", "足球还剩100个。", "足球库存四十九个。", "足球现货5件。"])
async def test_invented_stock_is_blocked(conn, lie):
    ledger = await ledger_for(conn, ["001"])
    assert v.UNVERIFIED_STOCK in validate("有货吗", lie, ["product:001"], ledger).codes


async def test_total_for_a_quantity_never_calculated_is_blocked(conn):
    ledger = await ledger_for(conn, ["001"], [("001", 2)])
    cites = ["product:001", "promotion:P001", "calc:001:2:regular"]
    verdict = validate("买三个呢", "足球买三个共324元。", cites, ledger)
    assert set(verdict.codes) == {v.UNVERIFIED_AMOUNT, v.UNVERIFIED_QUANTITY}


async def test_customer_number_is_not_evidence(conn):
    ledger = await ledger_for(conn, ["001"])
    question = "足球售价999元吗？"
    repeated = validate(question, "足球售价不是999元，而是120元。", ["product:001"], ledger)
    assert repeated.codes == [v.UNVERIFIED_AMOUNT] and "customer" in repeated.message
    confirmed = validate(question, "是的，没问题。", ["product:001"], ledger)
    assert confirmed.codes == [v.CONFIRMS_CUSTOMER_CLAIM]
    corrected = validate(question, "足球的售价是120元，以系统数据为准。", ["product:001"], ledger)
    assert corrected.ok


# --- each reason code on its own -------------------------------------------------------------------

async def test_unknown_citation(conn):
    ledger = await ledger_for(conn, ["001"])
    assert validate("q", "足球售价120元", ["product:001", "calc:001:9:regular"], ledger).codes == [
        v.UNKNOWN_CITATION]


async def test_no_citation(conn):
    ledger = await ledger_for(conn, ["001"])
    assert v.NO_CITATION in validate("q", "足球售价120元", [], ledger).codes


async def test_needs_product_evidence_when_only_promotions_are_known(conn):
    ledger = EvidenceLedger()
    file_evidence(ledger, await get_promotions(conn, ["001"]))
    assert not ledger.has_product_data
    verdict = validate("q", "足球现在9折", ["promotion:P001"], ledger)
    assert verdict.codes == [v.NEEDS_PRODUCT_EVIDENCE]


async def test_insufficient_evidence_may_state_no_facts(conn):
    ledger = EvidenceLedger()
    ok = validate("无人机多少钱", "抱歉，本店没有销售无人机。", [], ledger, status=v.INSUFFICIENT)
    assert ok.ok
    bad = validate("无人机多少钱", "本店没有无人机，类似产品约两三百元。", [], ledger, status=v.INSUFFICIENT)
    assert bad.codes == [v.FACTS_WITHOUT_EVIDENCE]


async def test_unverified_quantity(conn):
    ledger = await ledger_for(conn, ["003"])
    assert validate("q", "羽毛球拍需购买3支以上", ["product:003", "promotion:P003"], ledger).codes == [
        v.UNVERIFIED_QUANTITY]
    assert validate("q", "羽毛球拍需购买2支及以上", ["product:003", "promotion:P003"], ledger).ok


async def test_vague_amount_is_blocked(conn):
    ledger = await ledger_for(conn, ["001"])
    verdict = validate("q", "足球大概两三百元", ["product:001"], ledger)
    assert verdict.codes == [v.UNVERIFIED_AMOUNT] and "vague" in verdict.message


def test_empty_answer_and_bad_status():
    ledger = EvidenceLedger()
    assert validate("q", "  ", [], ledger).codes == [v.EMPTY_ANSWER]
    assert validate("q", "您好", [], ledger, status="sure").codes == [v.BAD_STATUS]


async def test_unverified_results_never_enter_the_ledger(conn):
    ledger = EvidenceLedger()
    assert file_evidence(ledger, await get_product_details(conn, ["999"])) == []
    assert file_evidence(ledger, {"status": "verified", "candidates": [{"product_id": "001"}]}) == []
    assert file_evidence(ledger, await calculate_final_price(conn, "004", 99)) == []   # insufficient stock
    assert len(ledger) == 0 and not ledger.has_product_data


async def test_message_tells_the_model_what_to_fix(conn):
    ledger = await ledger_for(conn, ["001"])
    verdict = validate("q", "足球售价100元", ["product:001"], ledger)
    assert "UNVERIFIED_AMOUNT: amount '100元' is not in the cited evidence" in verdict.message
    assert "insufficient_evidence" in verdict.message
