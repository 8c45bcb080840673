"""Answers for the promotion helpers: each verified plan as a natural Simplified-Chinese sentence plus the
evidence ids it rests on. Every figure is copied from the typed result and stated in its own role, so the
sentence passes guardrails.validator.validate against a ledger that holds the result (tests show it).

The tools (agent/tools.py; arguments are pydantic models, `additionalProperties: false`, bounded integers,
no price parameter ever; results are frozen records of db/facts.py, filed in the turn's EvidenceLedger by
`ToolRunner.run` / `file_evidence`):

- ``calculate_units_to_receive(product_id: str, units_wanted: int 1..9999, is_first_purchase: bool = False)``
  → ``ReceivePlan`` (evidence ``calc:receive:<pid>:<N>:regular|first``): the cheapest paid quantity whose
  paid + free units (买X送Y) reach N — ``wanted``, ``quote`` (the Quote of the paid quantity, filed as its
  own ``calc:<pid>:<paid>:…``), ``paid_quantity``, ``free_quantity``, ``total_units``, ``final_total``,
  ``free_units_promotion``. Without free units, paid = N. Refusals: ``QuoteRefusal`` (not_found,
  invalid_quantity, price_unavailable, insufficient_stock). Sentence: ``receive_answer(plan)``.
- ``calculate_threshold_gap(product_id: str | None, current_quantity: int 0..9999 = 0,
  calculation_id: str | None, promotion_id: str | None, is_first_purchase: bool = False)`` — give
  product_id (+ current_quantity), or calculation_id (a ``calc:`` quote or basket of this turn; the
  current quantity is its line of the promotion's product, as the shop's thresholds are per line)
  → ``ThresholdPlan`` (evidence ``calc:reach:<pid>:<promotion_id>:<current>:regular|first``):
  ``promotion``, ``current_quantity``, ``target`` (Quote of the least quantity that meets the threshold),
  ``current`` (Quote or None for 0), ``below`` (Quote of target − 1, or None), ``shortfalls``
  (``Shortfall(from_quantity, units_short, amount_short)`` from the current quantity and from just below),
  ``reached``, ``units_short``, ``amount_short``, ``applies_at_target``, ``basis``. Refusals:
  ``QuoteRefusal`` (no_threshold, unreachable, not_found, insufficient_stock…). Sentence:
  ``threshold_answer(plan)``; for a refusal, ``threshold_refusal_answer(refusal)``.
- ``compare_amounts(first_id: str, second_id: str)`` — two evidence ids already in this turn's ledger
  (``product:…`` → its price; ``calc:…`` quote/basket/plan → its total; ``order:…`` → amount paid)
  → ``AmountDifference`` (evidence ``calc:diff:<kind>@<id>|<kind>@<id>``): ``first``, ``second``
  (``VerifiedAmount(evidence_id, kind price|total, value, product_id, product_name, quantity, unit)``),
  ``difference`` (≥ 0), ``larger`` ("first" | "second" | None), ``dearer``, ``cheaper``. Refusal:
  ``ComparisonRefusal`` (not_found, not_an_amount). Sentence: ``difference_answer(diff)``.

Evidence roles the ledger files for them (guardrails/roles.py): the quotes' own figures, plus
``WANTED_UNITS`` (想要N个), ``SHORTFALL`` (还差N元) and ``UNITS_SHORT`` (再买N个 / 还差N个) — both for the
quantity they are measured from, which the sentence must state — and ``DIFFERENCE`` (相差N元 / 差价N元),
``DEARER_BY`` (A贵N元 / A比B贵N元) and ``CHEAPER_BY`` (A比B便宜N元), tied to the product of their side.
A model writing its own sentence must keep those words: a bare 便宜N元 is read as a reduction.
"""

from __future__ import annotations

from agent.answers import yuan
from db.facts import (
    AmountDifference,
    AmountKind,
    DiscountType,
    QuoteRefusal,
    ReceivePlan,
    Status,
    ThresholdPlan,
    VerifiedAmount,
)

__all__ = ["difference_answer", "receive_answer", "threshold_answer", "threshold_refusal_answer"]




def receive_answer(plan: ReceivePlan) -> tuple[str, list[str]]:
    """想要4盒乒乓球（10只装）的话，只需付3盒的钱：共105元，另送1盒，实得4盒。"""
    n, u, name = plan.wanted, plan.unit, plan.product_name
    if plan.free_quantity:
        text = (f"想要{n}{u}{name}的话，只需付{plan.paid_quantity}{u}的钱：共{yuan(plan.final_total)}，"
                f"另送{plan.free_quantity}{u}，实得{plan.total_units}{u}。")
    else:
        text = f"想要{n}{u}{name}的话，买{n}{u}共{yuan(plan.final_total)}。"
        rule = next((p for p in plan.promotions if p.discount_type == DiscountType.BUY_X_GET_Y), None)
        if rule is not None and rule.minimum_quantity:
            text += f"“{rule.promotion_text}”需购买{rule.minimum_quantity}{u}及以上。"
    return text, [plan.evidence_id]


def _rule(plan: ThresholdPlan) -> str:
    """The promotion in the shop's words: 满200元包邮, 满500元减100元, else its own text in quotes."""
    promo = plan.promotion
    if promo.discount_type == DiscountType.FREE_SHIPPING and promo.minimum_spend is not None:
        return f"满{yuan(promo.minimum_spend)}包邮"
    if promo.discount_type == DiscountType.FIXED_REDUCTION and promo.minimum_spend is not None \
            and promo.discount_value is not None:
        return f"满{yuan(promo.minimum_spend)}减{yuan(promo.discount_value)}"
    return f"“{promo.promotion_text}”"


def _benefit(plan: ThresholdPlan) -> str:
    promo = plan.promotion
    if not plan.applies_at_target:
        return "满足活动条件（本单已按更优惠的活动计算）"
    if promo.discount_type == DiscountType.FREE_SHIPPING:
        return "包邮"
    if promo.discount_type == DiscountType.FIXED_REDUCTION and promo.discount_value is not None:
        return f"减{yuan(promo.discount_value)}"
    return "享受该优惠"


def threshold_answer(plan: ThresholdPlan) -> tuple[str, list[str]]:
    """运动水壶满200元包邮：买5个共245元即可包邮（4个共196元，还差4元）。 — from nothing chosen yet;
    from a current quantity: 现在4个共196元，还差4元，再买1个即可包邮（5个共245元）。"""
    u, target, head = plan.unit, plan.target, f"{plan.product_name}{_rule(plan)}："
    benefit = _benefit(plan)
    if plan.reached:
        text = f"{head}{target.quantity}{u}共{yuan(target.final_total)}，已满足条件，可以{benefit}。"
    elif plan.current is None:
        text = f"{head}买{target.quantity}{u}共{yuan(target.final_total)}即可{benefit}"
        if plan.below is not None:
            gap = next((s for s in plan.shortfalls if s.from_quantity == plan.below.quantity), None)
            short = f"，还差{yuan(gap.amount_short)}" if gap and gap.amount_short else ""
            text += f"（{plan.below.quantity}{u}共{yuan(plan.below.final_total)}{short}）"
        text += "。"
    else:
        current = plan.current
        short = f"，还差{yuan(plan.amount_short)}" if plan.amount_short else ""
        text = (f"{head}现在{current.quantity}{u}共{yuan(current.final_total)}{short}，"
                f"再买{plan.units_short}{u}即可{benefit}（{target.quantity}{u}共{yuan(target.final_total)}）。")
    return text, [plan.evidence_id]


def threshold_refusal_answer(refusal: QuoteRefusal) -> str:
    """Why no threshold plan could be made, with no figure (nothing to cite)."""
    name = refusal.product.product_name if refusal.product is not None else "这款商品"
    if refusal.status == Status.NO_THRESHOLD:
        return f"{name}目前没有满额包邮、满减或满件优惠的活动。"
    if refusal.status == Status.UNREACHABLE:
        return f"{name}的这个活动本单无法满足（{refusal.message.split('：')[-1]}）。"
    if refusal.status == Status.INSUFFICIENT_STOCK:
        return f"抱歉，{name}当前库存不够达到活动所需的数量。"
    return "抱歉，暂时无法为您计算这个活动还差多少。"


def _side(amount: VerifiedAmount) -> str:
    """篮球鞋售价699元 / 篮球鞋买2双共1298元 / 合计1298元."""
    if amount.kind == AmountKind.PRICE:
        return f"{amount.product_name}售价{yuan(amount.value)}"
    if amount.product_name and amount.quantity is not None:
        return f"{amount.product_name}买{amount.quantity}{amount.unit}共{yuan(amount.value)}"
    return f"合计{yuan(amount.value)}"


def _who(amount: VerifiedAmount, other: VerifiedAmount, position: str) -> str:
    """How to name one side in the conclusion: its product, its quantity, or 前者/后者."""
    if amount.product_id and amount.product_id != other.product_id and amount.product_name:
        return amount.product_name
    if amount.quantity is not None and other.quantity is not None and amount.quantity != other.quantity:
        return f"买{amount.quantity}{amount.unit}"
    return position


def difference_answer(diff: AmountDifference) -> tuple[str, list[str]]:
    """篮球鞋售价699元，跑步鞋售价500元，篮球鞋贵199元。"""
    text = f"{_side(diff.first)}，{_side(diff.second)}，"
    dearer, cheaper = diff.dearer, diff.cheaper
    if dearer is None or cheaper is None:
        text += "两者一样。"
    else:
        who = _who(dearer, cheaper, "前者" if diff.larger == "first" else "后者")
        than = _who(cheaper, dearer, "后者" if diff.larger == "first" else "前者")
        compared = f"比{than}" if who.startswith("买") else ""   # 买4盒比买3盒贵35元: the same product
        text += f"{who}{compared}贵{yuan(diff.difference)}。"
    return text, [*diff.sources, diff.evidence_id]
