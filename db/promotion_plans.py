"""Promotion plans: what a shop assistant works out from the verified rules, as typed facts.

- `plan_receive`: the cheapest way to *receive* N units (买三送一: to receive 4, pay for 3 and get 1 free).
- `plan_threshold` / `plan_threshold_from`: how many more units and how much more money until a promotion's
  threshold holds (满200包邮, 满500减100, 两支及以上8折), and the total at the least quantity that reaches it —
  from a quantity, or from a quote or basket already calculated.
- `amount_of` / `amount_difference`: the difference between two verified amounts (two prices, two totals).

Every amount for a quantity comes from `db.pricing.price_order`, which stays the only code that turns rows
into amounts; this module only chooses quantities, compares those quotes and subtracts amounts that are
already verified (a threshold and a subtotal, two totals). The caller never passes a price in.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

from db.facts import (
    PRICE_TYPES,
    AmountDifference,
    AmountKind,
    Basket,
    Order,
    Product,
    Promotion,
    Quote,
    QuoteRefusal,
    ReceivePlan,
    Shortfall,
    Status,
    ThresholdPlan,
    VerifiedAmount,
)
from db.pricing import check_quantity, least_quantity_for, measure_word, price_order, units_received

__all__ = ["amount_difference", "amount_of", "has_threshold", "plan_receive", "plan_threshold", "plan_threshold_from"]


def has_threshold(promo: Promotion) -> bool:
    """满N元 or N件及以上: a condition that more units can meet."""
    return promo.minimum_spend is not None or promo.minimum_quantity is not None


def _own(product: Product, promotions: Sequence[Promotion]) -> list[Promotion]:
    """The promotions of this product (rows of others are ignored, as db.pricing.quote_from does)."""
    return [p for p in promotions if p.product_id == product.product_id]


def _least_paid(product: Product, promotions: Sequence[Promotion], wanted: int, first: bool) -> int:
    """The least paid quantity whose paid plus free units reach `wanted` (units received only grow with the
    paid quantity, so a binary search over 1..wanted finds it; paying for `wanted` always reaches it)."""
    low, high = 1, wanted
    while low < high:
        middle = (low + high) // 2
        if units_received(product, promotions, middle, first) >= wanted:
            high = middle
        else:
            low = middle + 1
    return low


def plan_receive(product: Product, promotions: Sequence[Promotion], wanted: object,
                 is_first_purchase: bool = False) -> ReceivePlan | QuoteRefusal:
    """The cheapest paid quantity that receives at least `wanted` units of `product`.

    Candidates are the least paid quantity that receives enough, and each larger quantity (up to `wanted`)
    at which a price promotion starts to hold: between two such points a total only grows with the
    quantity, so no other quantity can be cheaper. On a tie the fewer paid units win."""
    problem = check_quantity(wanted)
    if problem:
        return QuoteRefusal(Status.INVALID_QUANTITY, product.product_id, wanted, problem)
    assert isinstance(wanted, int)
    first, promotions = bool(is_first_purchase), _own(product, promotions)
    least = _least_paid(product, promotions, wanted, first)
    starts = {least_quantity_for(product, p, first) for p in promotions if p.discount_type in PRICE_TYPES}
    candidates = sorted({least} | {q for q in starts if q is not None and least < q <= wanted})
    best: Quote | None = None
    for paid in candidates:
        quote = price_order(product, promotions, paid, first)
        if not isinstance(quote, Quote):
            if best is None:
                return quote   # no price, or not enough stock even for the least quantity
            break              # more paid units only need more stock
        if best is None or quote.final_total < best.final_total:
            best = quote
    assert best is not None
    return ReceivePlan(wanted, best)


def _threshold_promotion(promotions: Sequence[Promotion], promotion_id: str | None, product: Product,
                         current: int, first: bool) -> Promotion | QuoteRefusal:
    """The promotion asked about, or the product's first threshold promotion not yet met at `current`."""
    mine = [p for p in promotions if has_threshold(p)]
    if promotion_id is not None:
        chosen = next((p for p in mine if p.promotion_id == promotion_id.strip()), None)
        if chosen is None:
            return QuoteRefusal(Status.NO_THRESHOLD, product.product_id, current,
                                f"{product.product_name}没有满额或满件条件的活动 {promotion_id}", product)
        return chosen
    if not mine:
        return QuoteRefusal(Status.NO_THRESHOLD, product.product_id, current,
                            f"{product.product_name}没有满额或满件条件的活动", product)
    unmet = [p for p in mine if (least_quantity_for(product, p, first) or 0) > current]
    return (unmet or mine)[0]


def plan_threshold(product: Product, promotions: Sequence[Promotion], current_quantity: object = 0,
                   promotion_id: str | None = None, is_first_purchase: bool = False,
                   basis: str | None = None) -> ThresholdPlan | QuoteRefusal:
    """How to reach a promotion's threshold from `current_quantity` units (0: nothing chosen yet)."""
    pid = product.product_id
    if isinstance(current_quantity, bool) or not isinstance(current_quantity, int) or current_quantity < 0:
        return QuoteRefusal(Status.INVALID_QUANTITY, pid, current_quantity, "current quantity must be a whole number ≥ 0")
    current, first, promotions = current_quantity, bool(is_first_purchase), _own(product, promotions)
    if current and check_quantity(current):
        return QuoteRefusal(Status.INVALID_QUANTITY, pid, current, str(check_quantity(current)))
    promo = _threshold_promotion(promotions, promotion_id, product, current, first)
    if isinstance(promo, QuoteRefusal):
        return promo
    least = least_quantity_for(product, promo, first)
    if least is None:
        why = "仅限首次购买" if promo.first_purchase and not first else \
            "该商品暂无标价" if product.price is None else "所需数量超出可计算范围"
        return QuoteRefusal(Status.UNREACHABLE, pid, current, f"“{promo.promotion_text}”无法达到：{why}", product)

    quotes: dict[int, Quote] = {}
    for quantity in {max(least, current), current, max(least, current) - 1}:
        if quantity >= 1:
            quote = price_order(product, promotions, quantity, first)
            if not isinstance(quote, Quote):
                return quote   # no price, or not enough stock for the quantity that reaches the threshold
            quotes[quantity] = quote
    target = quotes[max(least, current)]
    below = quotes.get(target.quantity - 1) if target.quantity > current else None
    origins = ([current] if current else []) + ([below.quantity] if below and below.quantity != current else [])
    shortfalls = [_shortfall(promo, 0, None, target)] if not current else []
    shortfalls += [_shortfall(promo, q, quotes[q], target) for q in origins]
    return ThresholdPlan(promo, current, target, quotes.get(current), below, tuple(shortfalls), basis)


def _shortfall(promo: Promotion, quantity: int, quote: Quote | None, target: Quote) -> Shortfall:
    """Units still to buy from `quantity`, and (spend thresholds) the threshold minus its subtotal."""
    amount = None
    if promo.minimum_spend is not None:
        subtotal = quote.subtotal if quote is not None else Decimal(0)
        amount = max(promo.minimum_spend - subtotal, Decimal(0))
    return Shortfall(quantity, max(target.quantity - quantity, 0), amount)


def plan_threshold_from(calculation: Quote | Basket, products: dict[str, Product], promotions: Sequence[Promotion],
                        promotion_id: str | None = None) -> ThresholdPlan | QuoteRefusal:
    """The threshold plan measured from a quote or a basket already calculated. The shop's thresholds are
    per product line (db/pricing.py), so the current quantity is that of the promotion's product's line:
    the line of `promotion_id`, else the first line still short of one of its product's thresholds, else
    the first line that has a threshold at all."""
    lines = calculation.lines if isinstance(calculation, Basket) else (calculation,)
    named = next((p for p in promotions if p.promotion_id == (promotion_id or "").strip()), None)

    def short(line: Quote) -> bool:
        product = products[line.product_id]
        return any((least_quantity_for(product, p, line.is_first_purchase) or 0) > line.quantity
                   for p in promotions if p.product_id == line.product_id and has_threshold(p))

    usable = [line for line in lines if line.product_id in products
              and any(p.product_id == line.product_id and has_threshold(p) for p in promotions)]
    if named is not None:
        usable = [line for line in usable if line.product_id == named.product_id]
    elif promotion_id is not None:
        usable = []
    if not usable:
        first = lines[0]
        what = f"活动 {promotion_id}" if promotion_id else "满额或满件条件的活动"
        return QuoteRefusal(Status.NO_THRESHOLD, first.product_id, first.quantity, f"这笔计算中的商品没有{what}")
    line = next((line for line in usable if short(line)), usable[0])
    return plan_threshold(products[line.product_id], promotions, line.quantity, promotion_id,
                          line.is_first_purchase, basis=calculation.evidence_id)


def amount_of(record: object) -> VerifiedAmount | None:
    """The amount a verified record states: a product's price, a calculation's or plan's total, an order's
    amount paid. None for anything else (a promotion, a policy, a product without a price)."""
    match record:
        case Product(price=price) if price is not None:
            return VerifiedAmount(record.evidence_id, AmountKind.PRICE, price, record.product_id, record.product_name,
                                  None, measure_word(record.product_name, record.specifications))
        case Quote() | ReceivePlan():
            quote = record if isinstance(record, Quote) else record.quote
            return VerifiedAmount(record.evidence_id, AmountKind.TOTAL, quote.final_total, quote.product_id,
                                  quote.product_name, quote.quantity, quote.unit)
        case ThresholdPlan(target=quote):
            return VerifiedAmount(quote.evidence_id, AmountKind.TOTAL, quote.final_total, quote.product_id,
                                  quote.product_name, quote.quantity, quote.unit)
        case Basket():
            return VerifiedAmount(record.evidence_id, AmountKind.TOTAL, record.final_total)
        case Order(items=items):
            one = items[0] if len(items) == 1 else None
            return VerifiedAmount(record.evidence_id, AmountKind.TOTAL, record.total,
                                  one.product_id if one else None, one.product_name if one else "",
                                  one.quantity if one else None)
    return None


def amount_difference(first: VerifiedAmount, second: VerifiedAmount) -> AmountDifference:
    """|first − second| and which is larger (None when they are equal)."""
    larger = None if first.value == second.value else ("first" if first.value > second.value else "second")
    return AmountDifference(first, second, abs(first.value - second.value), larger)
