"""The demo shop's order history: about 24,000 orders over the 13 months before `today`, from a
generator seeded by that day (the same day gives the same data). Seasons, weekends, 618 and 双十一,
regions, categories and statuses by age look like a real shop's; amounts are exact Decimals."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace
from datetime import date, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from itertools import accumulate

from db.facts import Product
from db.records import OrderRecord

DAILY_ORDERS = 55
REGION_WEIGHTS = {"华东": 32, "华南": 20, "华北": 17, "华中": 12, "西南": 9, "西北": 5, "东北": 5}
CATEGORY_WEIGHTS = {"跑步": 3.0, "健身": 2.2, "瑜伽": 2.0, "羽毛球": 1.8, "篮球": 1.6, "足球": 1.6, "服饰": 1.5,
                    "配件": 1.4, "户外": 1.3, "游泳": 1.0, "护具": 0.9}
HOUR_WEIGHTS = [1, 1, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 8, 7, 5, 5, 5, 6, 7, 8, 10, 11, 9, 4]
CUSTOMERS = 4000
CENT = Decimal("0.01")
_HOURS = list(accumulate(HOUR_WEIGHTS))
# The seed orders (the console chat's and the tests' own users) are dated as if built on this day;
# a demo built on another day moves them by the difference, so "this month" always has some.
SEED_DAY = date(2026, 11, 29)


def months_before(day: date, months: int) -> date:
    month = day.month - 1 - months
    year, month = day.year + month // 12, month % 12 + 1
    return date(year, month, min(day.day, 28))


def _day_weight(day: date) -> float:
    weight = 1.3 if day.weekday() >= 5 else 1.0
    if (day.month, day.day) == (11, 11):
        weight *= 6
    elif day.month == 11 and day.day < 11:
        weight *= 1.5
    elif (day.month, day.day) == (6, 18):
        weight *= 4
    elif day.month == 2:
        weight *= 0.7
    return weight


def _status(rng: random.Random, age_days: int) -> str:
    if age_days <= 1:
        table = {"待付款": 5, "待发货": 40, "运输中": 50, "已取消": 5}
    elif age_days <= 6:
        table = {"待发货": 5, "运输中": 40, "已签收": 50, "已取消": 5}
    else:
        table = {"已签收": 88, "已取消": 6, "已退款": 6}
    return rng.choices(list(table), weights=list(table.values()))[0]


def _cumulative(weights: Sequence[float]) -> list[float]:
    return list(accumulate(weights))


def _order(rng: random.Random, order_id: str, user: str, products: Sequence[Product], cum: Sequence[float],
           when: datetime, today: date) -> OrderRecord:
    product = rng.choices(products, cum_weights=cum)[0]
    quantity = rng.choices([1, 2, 3, 4, 5], weights=[70, 20, 7, 2, 1])[0]
    factor = rng.choices([Decimal(1), Decimal("0.9"), Decimal("0.8")], weights=[70, 20, 10])[0]
    total = (product.price * quantity * factor).quantize(CENT, ROUND_HALF_UP)
    region = rng.choices(list(REGION_WEIGHTS), weights=list(REGION_WEIGHTS.values()))[0]
    return OrderRecord(order_id, user, product.product_id, quantity, total, _status(rng, (today - when.date()).days),
                       region, when.isoformat(timespec="seconds"))


def _moment(rng: random.Random, day: date) -> datetime:
    hour = rng.choices(range(24), cum_weights=_HOURS)[0]
    return datetime(day.year, day.month, day.day, hour, rng.randrange(60), rng.randrange(60))


def generate_orders(products: Sequence[Product], today: date) -> list[OrderRecord]:
    """Orders from 13 months before `today` up to the day before; the same `today`, the same orders."""
    rng = random.Random(f"kefu-demo-orders-{today.isoformat()}")
    priced = [p for p in products if p.price is not None and p.price > 0]
    weights = _cumulative([CATEGORY_WEIGHTS.get(p.category, 1.0) / float(1 + p.price / 300) for p in priced])
    users = [f"u{n:05d}" for n in range(1, CUSTOMERS + 1)]
    user_weights = _cumulative([1 / (n ** 0.6) for n in range(1, CUSTOMERS + 1)])
    start = months_before(today, 13)
    orders: list[OrderRecord] = []
    day = start
    while day < today:
        growth = 1 + 0.01 * ((day - start).days / 30)
        count = int(rng.gauss(DAILY_ORDERS * growth * _day_weight(day), 6))
        moments = sorted(_moment(rng, day) for _ in range(max(count, 0)))
        for n, when in enumerate(moments, 1):
            user = rng.choices(users, cum_weights=user_weights)[0]
            orders.append(_order(rng, f"D{day:%Y%m%d}{n:04d}", user, priced, weights, when, today))
        day += timedelta(days=1)
    return orders


def shift_seed_orders(orders: Sequence[OrderRecord], today: date) -> list[OrderRecord]:
    """The seed file's orders, moved from SEED_DAY to `today` (same gaps, same times of day)."""
    delta = today - SEED_DAY
    return [replace(o, created_at=(datetime.fromisoformat(o.created_at) + delta).isoformat(timespec="seconds"))
            for o in orders]
