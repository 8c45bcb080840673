"""The promotion helpers as verified tools (issue 19, item 5): receive N under 买X送Y, the gap to a 满N
threshold, the difference of two verified amounts — Decimal results from db/, filed in the ledger with the
role of each figure, and sentences that pass the validator while their altered figures do not."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from agent.promotion_answers import (
    difference_answer,
    receive_answer,
    threshold_answer,
    threshold_refusal_answer,
)
from agent.tools import (
    CALLABLE_TOOLS,
    PROMOTION_TOOLS,
    ToolError,
    ToolRunner,
    parse_arguments,
    to_json,
    tool_schemas,
)
from db.catalog import fetch_products, fetch_promotions
from db.facts import AmountDifference, ComparisonRefusal, QuoteRefusal, ReceivePlan, Status, ThresholdPlan
from db.promotion_plans import plan_receive, plan_threshold
from guardrails import validator as v
from guardrails.ledger import EvidenceLedger
from guardrails.roles import Role
from guardrails.validator import validate

D = Decimal


async def rows(conn, *ids):
    products = await fetch_products(conn, list(ids))
    return products, await fetch_promotions(conn, list(ids))


class Turn:
    """One turn's ledger and tool runner, as the turn loop drives them (arguments parsed from JSON)."""

    def __init__(self, conn):
        self.ledger = EvidenceLedger()
        self.runner = ToolRunner(conn, None, self.ledger, "u1", prepare=False)   # type: ignore[arg-type]

    async def call(self, name: str, **arguments):
        return await self.runner.run(name, parse_arguments(name, json.dumps(arguments, ensure_ascii=False)))

    def check(self, answer: str, citations, question: str = "请问"):
        return validate(question, answer, citations, self.ledger)


# --- the pure Decimal functions ------------------------------------------------------------------------------

@pytest.mark.parametrize(("wanted", "paid", "free", "received", "total"), [
    (1, 1, 0, 1, "35.00"), (2, 2, 0, 2, "70.00"), (3, 3, 1, 4, "105.00"), (4, 3, 1, 4, "105.00"),
    (5, 4, 1, 5, "140.00"), (7, 6, 2, 8, "210.00"), (8, 6, 2, 8, "210.00"), (9, 7, 2, 9, "245.00"),
])
async def test_receive_n_under_buy_three_get_one(conn, wanted, paid, free, received, total):
    products, promotions = await rows(conn, "012")
    plan = plan_receive(products["012"], promotions, wanted)
    assert isinstance(plan, ReceivePlan)
    assert (plan.paid_quantity, plan.free_quantity, plan.total_units) == (paid, free, received)
    assert plan.final_total == D(total) and isinstance(plan.final_total, Decimal)
    assert plan.evidence_id == f"calc:receive:012:{wanted}:regular"


async def test_receive_n_without_free_units_pays_for_n(conn):
    products, promotions = await rows(conn, "001", "002")
    football = plan_receive(products["001"], promotions, 2)
    assert (football.paid_quantity, football.free_quantity, football.final_total) == (2, 0, D("216.00"))
    ball = plan_receive(products["002"], promotions, 1)   # 2 balls also cost 200 (半价 from 300): fewer paid wins
    assert (ball.paid_quantity, ball.final_total) == (1, D("200.00"))
    assert plan_receive(products["001"], promotions, 0).status == Status.INVALID_QUANTITY
    assert plan_receive(products["001"], promotions, 10_000).status == Status.INVALID_QUANTITY


async def test_receive_n_is_refused_beyond_stock(conn):
    products, promotions = await rows(conn, "012")
    stock = products["012"].stock_quantity
    refusal = plan_receive(products["012"], promotions, stock + 1)
    assert isinstance(refusal, QuoteRefusal) and refusal.status == Status.INSUFFICIENT_STOCK


async def test_threshold_gap_for_free_shipping(conn):
    products, promotions = await rows(conn, "037")
    bottle = products["037"]
    fresh = plan_threshold(bottle, promotions)            # nothing chosen yet
    assert (fresh.promotion.promotion_id, fresh.target_quantity, fresh.target.final_total) == ("P009", 5, D("245.00"))
    assert fresh.below.quantity == 4 and fresh.below.final_total == D("196.00")
    assert [(s.from_quantity, s.units_short, s.amount_short) for s in fresh.shortfalls] == [
        (0, 5, D(200)), (4, 1, D("4.00"))]
    four = plan_threshold(bottle, promotions, 4)
    assert (four.units_short, four.amount_short, four.reached, four.current.final_total) == (1, D("4.00"), False,
                                                                                           D("196.00"))
    six = plan_threshold(bottle, promotions, 6)
    assert six.reached and six.units_short == 0 and six.amount_short == 0 and six.target.quantity == 6


async def test_threshold_gap_for_reductions_and_quantities(conn):
    products, promotions = await rows(conn, "022", "003", "002", "012", "001", "004")
    dumbbells = plan_threshold(products["022"], promotions, 1)            # 满500减100, 299 each
    assert (dumbbells.target_quantity, dumbbells.target.final_total, dumbbells.amount_short) == (2, D("498.00"),
                                                                                                 D("201.00"))
    rackets = plan_threshold(products["003"], promotions, 1)              # 两支及以上8折: a quantity threshold
    assert (rackets.target_quantity, rackets.units_short, rackets.amount_short) == (2, 1, None)
    ball = plan_threshold(products["002"], promotions)                    # 单笔满300元半价, 200 each
    assert (ball.target_quantity, ball.target.final_total) == (2, D("200.00"))
    balls = plan_threshold(products["012"], promotions, 2)                # 买三送一 has a quantity threshold too
    assert (balls.promotion.promotion_id, balls.units_short, balls.target.free_quantity) == ("P008", 1, 1)
    none = plan_threshold(products["001"], promotions)                   # 9折 for everyone: nothing to reach
    assert isinstance(none, QuoteRefusal) and none.status == Status.NO_THRESHOLD
    first_only = plan_threshold(products["004"], promotions, 0, "P004")   # not a threshold promotion
    assert first_only.status == Status.NO_THRESHOLD


# --- the tools: strict schemas, no price parameter, results filed in the ledger ------------------------------

def test_promotion_tool_schemas_are_strict():
    schemas = {s["function"]["name"]: s["function"]["parameters"] for s in tool_schemas(CALLABLE_TOOLS)}
    assert set(PROMOTION_TOOLS) == {"calculate_units_to_receive", "calculate_threshold_gap", "compare_amounts"}
    for name in PROMOTION_TOOLS:
        params = schemas[name]
        assert params["additionalProperties"] is False
        assert not any("price" in key for key in params["properties"]), name
    assert schemas["calculate_units_to_receive"]["properties"]["units_wanted"]["maximum"] == 9999
    assert schemas["calculate_units_to_receive"]["properties"]["units_wanted"]["minimum"] == 1
    assert schemas["calculate_threshold_gap"]["properties"]["current_quantity"]["maximum"] == 9999
    for bad in ['{"product_id": "012", "units_wanted": 4, "price": 1}', '{"product_id": "012", "units_wanted": 0}',
                '{"product_id": "012", "units_wanted": 10000}']:
        with pytest.raises(ToolError):
            parse_arguments("calculate_units_to_receive", bad)
    for bad in ['{}', '{"product_id": "037", "calculation_id": "calc:037:4:regular"}',
                '{"calculation_id": "calc:037:4:regular", "current_quantity": 3}']:
        with pytest.raises(ToolError):
            parse_arguments("calculate_threshold_gap", bad)


async def test_results_are_filed_with_the_roles_of_their_figures(conn):
    turn = Turn(conn)
    plan = await turn.call("calculate_units_to_receive", product_id="012", units_wanted=4)
    assert {"calc:receive:012:4:regular", "calc:012:3:regular"} <= set(turn.ledger.entries)
    roles = {(f.role, f.value) for f in turn.ledger.entries[plan.evidence_id].figures}
    assert {(Role.WANTED_UNITS, 4), (Role.PAID_UNITS, 3), (Role.FREE_UNITS, 1), (Role.TOTAL_UNITS, 4),
            (Role.TOTAL, D("105.00"))} <= roles
    gap = await turn.call("calculate_threshold_gap", product_id="037", current_quantity=4)
    figures = turn.ledger.entries[gap.evidence_id].figures
    assert {(f.role, f.value, f.quantity) for f in figures if f.role in (Role.SHORTFALL, Role.UNITS_SHORT)} == {
        (Role.SHORTFALL, D("4.00"), 4), (Role.UNITS_SHORT, 1, 4)}
    data = json.loads(to_json(gap))
    assert data["status"] == "verified" and data["amount_short"] == "4.00" and data["target"]["final_total"] == "245.00"


async def test_refusals_are_never_evidence(conn):
    turn = Turn(conn)
    assert (await turn.call("calculate_units_to_receive", product_id="999", units_wanted=2)).status == Status.NOT_FOUND
    assert (await turn.call("calculate_threshold_gap", product_id="001")).status == Status.NO_THRESHOLD
    unknown = await turn.call("calculate_threshold_gap", calculation_id="calc:037:4:regular")   # never calculated
    assert unknown.status == Status.NOT_FOUND
    unverified = await turn.call("compare_amounts", first_id="product:008", second_id="product:004")
    assert isinstance(unverified, ComparisonRefusal) and unverified.status == Status.NOT_FOUND
    await turn.call("get_promotions", product_ids=["001"])
    not_amount = await turn.call("compare_amounts", first_id="promotion:P001", second_id="promotion:P001")
    assert not_amount.status == Status.NOT_AN_AMOUNT
    assert set(turn.ledger.entries) == {"promotion:P001"}
    assert threshold_refusal_answer(await turn.call("calculate_threshold_gap", product_id="001")) == \
        "足球目前没有满额包邮、满减或满件优惠的活动。"


# --- sentences: each passes the validator; the same sentence with a figure altered does not ------------------

async def test_receive_sentence_passes_and_its_lies_are_blocked(conn):
    turn = Turn(conn)
    plan = await turn.call("calculate_units_to_receive", product_id="012", units_wanted=4)
    text, cites = receive_answer(plan)
    assert text == "想要4盒乒乓球（10只装）的话，只需付3盒的钱：共105元，另送1盒，实得4盒。"
    assert cites == ["calc:receive:012:4:regular"]
    assert turn.check(text, cites, "乒乓球买4盒多少钱").ok, turn.check(text, cites).message
    lies = [("共105元", "共140元", v.UNVERIFIED_AMOUNT),     # 4 paid boxes: never calculated here
            ("共105元", "共35元", v.WRONG_ROLE),              # the unit price as the total
            ("另送1盒", "另送2盒", v.UNVERIFIED_QUANTITY), ("实得4盒", "实得5盒", v.UNVERIFIED_QUANTITY),
            ("付3盒的钱", "付4盒的钱", v.WRONG_ROLE)]        # 105元 is the total for 3 paid, not 4
    for right, lie, code in lies:
        assert right in text
        verdict = turn.check(text.replace(right, lie), cites)
        assert not verdict.ok and code in verdict.codes, (lie, verdict.codes)


@pytest.mark.parametrize(("wanted", "expected"), [
    (5, "想要5盒乒乓球（10只装）的话，只需付4盒的钱：共140元，另送1盒，实得5盒。"),
    (8, "想要8盒乒乓球（10只装）的话，只需付6盒的钱：共210元，另送2盒，实得8盒。"),
    (7, "想要7盒乒乓球（10只装）的话，只需付6盒的钱：共210元，另送2盒，实得8盒。"),
    (2, "想要2盒乒乓球（10只装）的话，买2盒共70元。“买三送一”需购买3盒及以上。"),
])
async def test_other_receive_sentences_pass(conn, wanted, expected):
    turn = Turn(conn)
    text, cites = receive_answer(await turn.call("calculate_units_to_receive", product_id="012", units_wanted=wanted))
    assert text == expected
    assert turn.check(text, cites).ok, turn.check(text, cites).message


async def test_threshold_sentence_from_nothing_passes_and_its_lies_are_blocked(conn):
    turn = Turn(conn)
    plan = await turn.call("calculate_threshold_gap", product_id="037")
    text, cites = threshold_answer(plan)
    assert text == "运动水壶满200元包邮：买5个共245元即可包邮（4个共196元，还差4元）。"
    assert turn.check(text, cites, "运动水壶买几个能包邮").ok, turn.check(text, cites).message
    lies = [("还差4元", "还差5元", v.UNVERIFIED_AMOUNT), ("还差4元", "还差49元", v.WRONG_ROLE),
            ("共245元", "共196元", v.WRONG_ROLE), ("买5个共245元", "买4个共196元", v.UNVERIFIED_SHIPPING),
            ("满200元", "满150元", v.UNVERIFIED_AMOUNT), ("4个共196元", "3个共196元", v.WRONG_ROLE)]
    for right, lie, code in lies:
        verdict = turn.check(text.replace(right, lie), cites)
        assert not verdict.ok and code in verdict.codes, (lie, verdict.codes)


async def test_threshold_sentence_from_a_quantity_passes_and_its_lies_are_blocked(conn):
    turn = Turn(conn)
    plan = await turn.call("calculate_threshold_gap", product_id="037", current_quantity=4)
    text, cites = threshold_answer(plan)
    assert text == "运动水壶满200元包邮：现在4个共196元，还差4元，再买1个即可包邮（5个共245元）。"
    assert turn.check(text, cites).ok, turn.check(text, cites).message
    for right, lie, code in [("再买1个", "再买2个", v.UNVERIFIED_QUANTITY), ("还差4元", "还差200元", v.WRONG_ROLE),
                             ("5个共245元", "5个共240元", v.UNVERIFIED_AMOUNT)]:
        verdict = turn.check(text.replace(right, lie), cites)
        assert not verdict.ok and code in verdict.codes, (lie, verdict.codes)
    three = Turn(conn)   # from 3 the gap is 2 more: "再买1个" is a lie even though 1 needs no evidence elsewhere
    three_text, three_cites = threshold_answer(await three.call("calculate_threshold_gap", product_id="037",
                                                                current_quantity=3))
    assert "再买2个" in three_text and three.check(three_text, three_cites).ok
    assert v.WRONG_ROLE in three.check(three_text.replace("再买2个", "再买1个"), three_cites).codes


@pytest.mark.parametrize(("pid", "current", "expected"), [
    ("022", 1, "可调节哑铃套装满500元减100元：现在1套共299元，还差201元，再买1套即可减100元（2套共498元）。"),
    ("003", 1, "羽毛球拍“两支及以上8折”：现在1支共300元，再买1支即可享受该优惠（2支共480元）。"),
    ("002", 0, "篮球“单笔满300元篮球半价”：买2个共200元即可享受该优惠（1个共200元，还差100元）。"),
    ("015", 0, "羽毛球（12只装）满200元包邮：买3筒共294元即可包邮（2筒共196元，还差4元）。"),
    ("037", 6, "运动水壶满200元包邮：6个共294元，已满足条件，可以包邮。"),
    ("008", 0, "篮球鞋满500元减100元：买1双共599元即可减100元。"),
])
async def test_other_threshold_sentences_pass(conn, pid, current, expected):
    turn = Turn(conn)
    text, cites = threshold_answer(await turn.call("calculate_threshold_gap", product_id=pid, current_quantity=current))
    assert text == expected
    assert turn.check(text, cites).ok, turn.check(text, cites).message


async def test_threshold_gap_from_a_basket_line(conn):
    turn = Turn(conn)
    basket = await turn.call("calculate_final_price", items=[{"product_id": "037", "quantity": 3},
                                                            {"product_id": "024", "quantity": 1}])
    plan = await turn.call("calculate_threshold_gap", calculation_id=basket.evidence_id)
    assert isinstance(plan, ThresholdPlan) and plan.basis == basket.evidence_id
    assert (plan.current_quantity, plan.units_short, plan.amount_short) == (3, 2, D("53.00"))
    text, cites = threshold_answer(plan)
    assert text == "运动水壶满200元包邮：现在3个共147元，还差53元，再买2个即可包邮（5个共245元）。"
    assert turn.check(text, cites).ok, turn.check(text, cites).message
    named = await turn.call("calculate_threshold_gap", calculation_id=basket.evidence_id, promotion_id="P001")
    assert named.status == Status.NO_THRESHOLD


async def test_every_result_is_json_for_the_model(conn):
    turn = Turn(conn)
    plan = await turn.call("calculate_units_to_receive", product_id="012", units_wanted=5)
    data = json.loads(to_json(plan))
    assert (data["paid_quantity"], data["free_quantity"], data["final_total"]) == (4, 1, "140.00")
    from_plan = await turn.call("calculate_threshold_gap", calculation_id=plan.evidence_id)   # 4 paid: 买三送一 met
    assert from_plan.reached and from_plan.promotion.promotion_id == "P008"
    await turn.call("get_product_details", product_ids=["008", "004"])
    diff = json.loads(to_json(await turn.call("compare_amounts", first_id="product:004", second_id="product:008")))
    assert (diff["difference"], diff["larger"], diff["dearer"]["product_id"]) == ("199", "second", "008")


async def test_difference_sentence_passes_and_its_lies_are_blocked(conn):
    turn = Turn(conn)
    await turn.call("get_product_details", product_ids=["008", "004"])
    diff = await turn.call("compare_amounts", first_id="product:008", second_id="product:004")
    assert isinstance(diff, AmountDifference) and (diff.difference, diff.larger) == (D(199), "first")
    text, cites = difference_answer(diff)
    assert text == "篮球鞋售价699元，跑步鞋售价500元，篮球鞋贵199元。"
    assert cites == ["product:008", "product:004", "calc:diff:price@product:008|price@product:004"]
    assert turn.check(text, cites, "篮球鞋比跑步鞋贵多少").ok, turn.check(text, cites).message
    assert turn.check("篮球鞋比跑步鞋贵199元。", cites).ok
    assert turn.check("跑步鞋比篮球鞋便宜199元。", cites).ok
    assert turn.check("两者相差199元。", cites).ok
    lies = [("篮球鞋贵199元", "篮球鞋贵200元", v.UNVERIFIED_AMOUNT),
            ("篮球鞋贵199元", "跑步鞋贵199元", v.WRONG_ROLE),           # the direction swapped
            ("篮球鞋贵199元", "篮球鞋贵699元", v.WRONG_ROLE),           # a price as the difference
            ("跑步鞋售价500元", "跑步鞋售价699元", v.UNVERIFIED_AMOUNT)]
    for right, lie, code in lies:
        verdict = turn.check(text.replace(right, lie), cites)
        assert not verdict.ok and code in verdict.codes, (lie, verdict.codes)
    assert v.WRONG_ROLE in turn.check("篮球鞋比跑步鞋便宜199元。", cites).codes


async def test_difference_of_two_totals(conn):
    turn = Turn(conn)
    four = await turn.call("calculate_final_price", product_id="012", quantity=4)
    three = await turn.call("calculate_final_price", product_id="012", quantity=3)
    diff = await turn.call("compare_amounts", first_id=four.evidence_id, second_id=three.evidence_id)
    text, cites = difference_answer(diff)
    assert text == "乒乓球（10只装）买4盒共140元，乒乓球（10只装）买3盒共105元，买4盒比买3盒贵35元。"
    assert turn.check(text, cites).ok, turn.check(text, cites).message
    assert v.UNVERIFIED_AMOUNT in turn.check(text.replace("贵35元", "贵40元"), cites).codes
    same = await turn.call("compare_amounts", first_id=four.evidence_id, second_id=four.evidence_id)
    assert same.larger is None and difference_answer(same)[0].endswith("两者一样。")
