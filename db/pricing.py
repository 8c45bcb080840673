"""The Decimal pricing rules: the only code that turns database rows into an amount to pay.

Rules (one order line, one product):
- subtotal = unit price × paid quantity.
- Price promotions (`percentage`, `fixed_reduction`) do not stack: of those whose conditions hold,
  the one giving the lowest total applies. 满X减Y is taken once per order.
- `buy_x_get_y` adds (quantity // X) × Y free units on top of the paid ones; the subtotal is unchanged.
- `gift` and `free_shipping` never change the total; they are reported as benefits when they apply.
- Conditions: minimum quantity, minimum spend (on the subtotal), first purchase.
- Every amount is rounded ROUND_HALF_UP to 0.01. The caller never passes a price in.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from decimal import ROUND_CEILING, ROUND_HALF_UP, Decimal

import aiosqlite

from db.catalog import fetch_products, fetch_promotions
from db.facts import (
    PRICE_TYPES,
    Basket,
    DiscountType,
    Product,
    Promotion,
    PromotionOutcome,
    Quote,
    QuoteRefusal,
    Status,
    calc_evidence_id,
)

__all__ = ["MAX_QUANTITY", "calc_evidence_id", "calculate_basket", "calculate_final_price", "least_quantity_for",
           "measure_word", "price_order", "unmet_condition", "units_received"]

CENT = Decimal("0.01")
MAX_QUANTITY = 9999


def money(value: Decimal) -> Decimal:
    return value.quantize(CENT, rounding=ROUND_HALF_UP)


def yuan(amount: Decimal) -> str:
    """120.00 → '120元', 28.5 → '28.50元': exact, from the database's Decimal (how every answer says money)."""
    return f"{int(amount)}元" if amount == amount.to_integral_value() else f"{amount:.2f}元"


_PACK = re.compile(r"每(盒|罐|筒|包|袋|箱|桶|套)\s*\d")


SINGLE_UNITS = frozenset("个根支件只条张把")   # goods counted one piece at a time: a pair (一对) of them is two


def measure_word(product_name: str, specifications: str = "") -> str:
    """The Chinese measure word a customer would use for this product (for condition notes). A pack is
    counted in the container its specifications name (每筒12只 → 筒, 每罐3只 → 罐), else in 盒."""
    if "装）" in product_name or "装)" in product_name:
        pack = _PACK.search(specifications)
        return pack.group(1) if pack else "盒"
    for suffix, word in (("拍", "支"), ("鞋", "双"), ("袜", "双"), ("垫", "张"), ("球", "个"), ("杖", "根"),
                         ("套装", "套"), ("手套", "副"), ("泳镜", "副"), ("绳", "根"), ("裤", "条"),
                         ("壶", "个"), ("杯", "个"), ("包", "个"), ("铃", "个"), ("轴", "个")):
        if product_name.endswith(suffix):
            return word
    return "件"


def unmet_condition(promo: Promotion, quantity: int, subtotal: Decimal, first: bool, unit: str) -> str | None:
    """Why `promo` does not apply, in the customer's words; None when every condition holds."""
    if promo.minimum_quantity is not None and quantity < promo.minimum_quantity:
        return f"需购买{promo.minimum_quantity}{unit}及以上"
    if promo.minimum_spend is not None and subtotal < promo.minimum_spend:
        return f"需单笔满{promo.minimum_spend:f}元"
    if promo.first_purchase and not first:
        return "仅限首次购买"
    return None


def _total_after(promo: Promotion, subtotal: Decimal) -> Decimal:
    assert promo.discount_value is not None  # guaranteed for price promotions by the import checks
    if promo.discount_type == DiscountType.PERCENTAGE:
        return money(subtotal * promo.discount_value)
    return money(max(subtotal - promo.discount_value, Decimal(0)))


def _free_units(eligible: Sequence[Promotion], quantity: int) -> int:
    """买X送Y: (quantity // X) × Y free units for each eligible rule."""
    return sum((quantity // p.minimum_quantity) * int(p.discount_value) for p in eligible
               if p.discount_type == DiscountType.BUY_X_GET_Y and p.minimum_quantity and p.discount_value)


def units_received(product: Product, promotions: Sequence[Promotion], quantity: int,
                   is_first_purchase: bool = False) -> int:
    """Paid plus free units for `quantity` paid units (stock is not checked here; price_order does)."""
    if product.price is None:
        return quantity
    subtotal, unit = money(money(product.price) * quantity), measure_word(product.product_name, product.specifications)
    eligible = [p for p in promotions if unmet_condition(p, quantity, subtotal, is_first_purchase, unit) is None]
    return quantity + _free_units(eligible, quantity)


def least_quantity_for(product: Product, promo: Promotion, is_first_purchase: bool = False) -> int | None:
    """The least paid quantity (1..MAX_QUANTITY) at which every condition of `promo` holds, or None when no
    quantity reaches it (first purchase only and this is not one, no price, or more than MAX_QUANTITY).
    Conditions only grow easier with quantity, so the least one is found directly, not by trying each."""
    if promo.first_purchase and not is_first_purchase:
        return None
    quantity = max(1, promo.minimum_quantity or 1)
    if promo.minimum_spend is not None:
        if product.price is None or (money(product.price) == 0 and promo.minimum_spend > 0):
            return None
        if money(product.price) > 0:
            quantity = max(quantity, int((promo.minimum_spend / money(product.price)).to_integral_value(ROUND_CEILING)))
    unit = measure_word(product.product_name, product.specifications)
    while quantity <= MAX_QUANTITY and product.price is not None and unmet_condition(
            promo, quantity, money(money(product.price) * quantity), is_first_purchase, unit) is not None:
        quantity += 1   # only if rounding of the subtotal left it a cent short
    return quantity if quantity <= MAX_QUANTITY else None


def price_order(product: Product, promotions: Sequence[Promotion], quantity: int,
                is_first_purchase: bool = False) -> Quote | QuoteRefusal:
    """Price `quantity` paid units of `product` under its `promotions` (rows from db.catalog)."""
    if product.price is None:
        return QuoteRefusal(Status.PRICE_UNAVAILABLE, product.product_id, quantity, "该商品暂无标价", product)
    unit = measure_word(product.product_name, product.specifications)
    unit_price = money(product.price)
    subtotal = money(unit_price * quantity)

    reasons = {p.promotion_id: unmet_condition(p, quantity, subtotal, is_first_purchase, unit) for p in promotions}
    eligible = [p for p in promotions if reasons[p.promotion_id] is None]
    priced = [(_total_after(p, subtotal), i, p) for i, p in enumerate(eligible) if p.discount_type in PRICE_TYPES]
    best = min(priced, default=None)   # the lowest total; on a tie the first listed
    free_units = _free_units(eligible, quantity)
    outcomes = []
    for promo in promotions:
        reason = reasons[promo.promotion_id]
        if reason is None and promo.discount_type in PRICE_TYPES and (best is None or promo is not best[2]):
            reason = "已按更优惠的活动计算，优惠不叠加"   # a price promotion that lost to a better one
        outcomes.append(PromotionOutcome(promo, reason is None, reason))

    stock = product.stock_quantity
    if stock is not None and quantity + free_units > stock:
        return QuoteRefusal(Status.INSUFFICIENT_STOCK, product.product_id, quantity,
                            f"库存不足：需要{quantity + free_units}{unit}，当前库存{stock}{unit}", product,
                            requested_units=quantity + free_units, available_stock=stock)
    return Quote(product_id=product.product_id, product_name=product.product_name, unit=unit, quantity=quantity,
                 is_first_purchase=is_first_purchase, unit_price=unit_price, subtotal=subtotal,
                 final_total=best[0] if best else subtotal, free_quantity=free_units, outcomes=tuple(outcomes))


def check_quantity(quantity: object) -> str | None:
    """Why `quantity` cannot be priced, or None when it is a whole number in 1..MAX_QUANTITY."""
    if isinstance(quantity, bool) or not isinstance(quantity, int):
        return "quantity must be a whole number"
    if quantity < 1:
        return "quantity must be at least 1"
    if quantity > MAX_QUANTITY:
        return f"quantity must be at most {MAX_QUANTITY}"
    return None


async def calculate_final_price(conn: aiosqlite.Connection, product_id: object, quantity: object,
                                is_first_purchase: bool = False) -> Quote | QuoteRefusal:
    """Re-read the product and its promotions by id and price the order. No price parameter, ever."""
    pid = str(product_id).strip()
    if check_quantity(quantity):
        return quote_from({}, [], pid, quantity, is_first_purchase)
    products = await fetch_products(conn, [pid])
    promotions = await fetch_promotions(conn, [pid]) if pid in products else []
    return quote_from(products, promotions, pid, quantity, is_first_purchase)


async def paid_now(conn: aiosqlite.Connection, products: list[Product]) -> dict[str, Decimal]:
    """product_id → what one unit costs now, for budget filters: its price under its unconditional promotions."""
    promotions = [p for p in await fetch_promotions(conn, [p.product_id for p in products]) if p.unconditional]
    rows = {p.product_id: p for p in products}
    quotes = (quote_from(rows, promotions, pid, 1) for pid in rows)
    return {q.product_id: q.final_total for q in quotes if isinstance(q, Quote)}


def quote_from(products: dict[str, Product], promotions: Sequence[Promotion], product_id: object, quantity: object,
               is_first_purchase: bool = False) -> Quote | QuoteRefusal:
    """The quote from product and promotion rows already read (those of other products are ignored)."""
    pid = str(product_id).strip()
    problem = check_quantity(quantity)
    if problem:
        return QuoteRefusal(Status.INVALID_QUANTITY, pid, quantity, problem)
    if pid not in products:
        return QuoteRefusal(Status.NOT_FOUND, pid, quantity, f"no product with id {pid}")
    return price_order(products[pid], [p for p in promotions if p.product_id == pid], int(quantity),  # type: ignore[arg-type]
                       bool(is_first_purchase))


async def calculate_basket(conn: aiosqlite.Connection, items: Sequence[tuple[object, object]],
                           is_first_purchase: bool = False) -> Basket | QuoteRefusal:
    """Price several products in one order: every line under its own promotions, then the sum.
    The first line that cannot be priced (unknown product, bad quantity, not enough stock) is returned."""
    lines = []
    for product_id, quantity in items:
        quote = await calculate_final_price(conn, product_id, quantity, is_first_purchase)
        if not isinstance(quote, Quote):
            return quote
        lines.append(quote)
    return Basket(tuple(lines), bool(is_first_purchase))
