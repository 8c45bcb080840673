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

from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import aiosqlite

from db.catalog import SOURCE, fetch_products, fetch_promotions, product_evidence_id, promotion_evidence_id

CENT = Decimal("0.01")
MAX_QUANTITY = 9999
PRICE_TYPES = ("percentage", "fixed_reduction")


def money(value: Decimal) -> Decimal:
    return value.quantize(CENT, rounding=ROUND_HALF_UP)


def measure_word(product_name: str) -> str:
    """The Chinese measure word a customer would use for this product (for condition notes)."""
    if "装）" in product_name or "装)" in product_name:
        return "盒"
    for suffix, word in (("拍", "支"), ("鞋", "双"), ("袜", "双"), ("垫", "张"), ("球", "个"), ("杖", "根")):
        if product_name.endswith(suffix):
            return word
    return "件"


def calc_evidence_id(product_id: str, quantity: int, is_first_purchase: bool) -> str:
    return f"calc:{product_id}:{quantity}:{'first' if is_first_purchase else 'regular'}"


def _unmet_condition(promo: dict[str, Any], quantity: int, subtotal: Decimal, first: bool, unit: str) -> str | None:
    """Why `promo` does not apply, in the customer's words; None when every condition holds."""
    min_qty = promo["minimum_quantity"]
    if min_qty is not None and quantity < min_qty:
        return f"需购买{min_qty}{unit}及以上"
    min_spend = promo["minimum_spend"]
    if min_spend is not None and subtotal < min_spend:
        return f"需单笔满{min_spend:f}元"
    if promo["extra_condition"] == "first_purchase" and not first:
        return "仅限首次购买"
    return None


def _total_after(promo: dict[str, Any], subtotal: Decimal) -> Decimal:
    if promo["discount_type"] == "percentage":
        return money(subtotal * promo["discount_value"])
    if promo["discount_type"] == "fixed_reduction":
        return money(max(subtotal - promo["discount_value"], Decimal(0)))
    return subtotal


def price_order(product: dict[str, Any], promotions: list[dict[str, Any]], quantity: int,
                is_first_purchase: bool = False) -> dict[str, Any]:
    """Price `quantity` paid units of `product` under its `promotions` (rows from db.catalog)."""
    product_id = product["product_id"]
    base = {"product_id": product_id, "product_name": product["product_name"], "quantity": quantity,
            "is_first_purchase": is_first_purchase, "source": SOURCE}
    if product["price"] is None:
        return {**base, "status": "price_unavailable", "message": "该商品暂无标价"}
    unit = measure_word(product["product_name"])
    unit_price = money(product["price"])
    subtotal = money(unit_price * quantity)

    notes, benefits, free_units = [], [], 0
    best: tuple[Decimal, dict[str, Any]] | None = None
    for promo in promotions:
        reason = _unmet_condition(promo, quantity, subtotal, is_first_purchase, unit)
        note = {"promotion_id": promo["promotion_id"], "promotion_text": promo["promotion_text"],
                "discount_type": promo["discount_type"], "applied": reason is None, "reason": reason}
        notes.append(note)
        if reason is not None:
            continue
        kind = promo["discount_type"]
        if kind in PRICE_TYPES:
            total = _total_after(promo, subtotal)
            if best is None or total < best[0]:
                best = (total, promo)
        elif kind == "buy_x_get_y":
            free_units += (quantity // promo["minimum_quantity"]) * int(promo["discount_value"])
            benefits.append(note)
        else:
            benefits.append(note)
    applied = best[1] if best else None
    for note in notes:  # a price promotion that lost to a better one is not "applied"
        if note["discount_type"] in PRICE_TYPES and note["applied"] and note["promotion_id"] != (
                applied or {}).get("promotion_id"):
            note["applied"], note["reason"] = False, "已按更优惠的活动计算，优惠不叠加"

    total_units = quantity + free_units
    stock = product["stock_quantity"]
    if stock is not None and total_units > stock:
        return {**base, "status": "insufficient_stock", "requested_units": total_units,
                "available_stock": stock, "evidence_id": product_evidence_id(product_id),
                "message": f"库存不足：需要{total_units}{unit}，当前库存{stock}{unit}"}

    final_total = best[0] if best else subtotal
    used = [p for p in promotions if p is applied or p["promotion_id"] in {b["promotion_id"] for b in benefits}]
    return {
        **base,
        "status": "verified",
        "evidence_id": calc_evidence_id(product_id, quantity, is_first_purchase),
        "unit": unit,
        "unit_price": unit_price,
        "paid_quantity": quantity,
        "free_quantity": free_units,
        "total_units": total_units,
        "subtotal": subtotal,
        "discount_amount": money(subtotal - final_total),
        "final_total": final_total,
        "applied_promotion": None if applied is None else {
            "promotion_id": applied["promotion_id"], "promotion_text": applied["promotion_text"],
            "discount_type": applied["discount_type"], "discount_value": applied["discount_value"]},
        "benefits": benefits,
        "promotion_notes": notes,
        "sources": [product_evidence_id(product_id)] + [promotion_evidence_id(p["promotion_id"]) for p in used],
    }


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
                                is_first_purchase: bool = False) -> dict[str, Any]:
    """Re-read the product and its promotions by id and price the order. No price parameter, ever."""
    pid = str(product_id).strip()
    problem = check_quantity(quantity)
    if problem:
        return {"status": "invalid_quantity", "product_id": pid, "quantity": quantity, "message": problem}
    products = await fetch_products(conn, [pid])
    if pid not in products:
        return {"status": "not_found", "product_id": pid, "missing_product_ids": [pid], "source": SOURCE}
    promotions = await fetch_promotions(conn, [pid])
    return price_order(products[pid], promotions, int(quantity), bool(is_first_purchase))  # type: ignore[arg-type]
