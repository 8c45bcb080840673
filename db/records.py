"""Validated catalog records and the parsers that turn raw CSV/JSON rows into them.

Every problem is reported with where it was found ("products.csv line 7: ...") and all problems
are collected before anything is written, so a bad import never half-happens.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from importlib import resources
from operator import attrgetter
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from db.facts import Product, Promotion
from db.schema import DISCOUNT_TYPES, EXTRA_CONDITIONS, ORDER_STATUSES, REGIONS
from db.sheets import KNOWLEDGE, ORDERS, PRODUCTS, PROMOTIONS, CatalogError, Columns, Table, read_table

__all__ = ["Catalog", "CatalogError", "KnowledgeRecord", "OrderRecord", "demo_catalog", "read_catalog_csv",
           "read_catalog_json"]

log = logging.getLogger(__name__)

MAX_MONEY = Decimal("100000000")
SHANGHAI = ZoneInfo("Asia/Shanghai")   # the shop's zone, as agent/clock.py names it for the layers above db/
MAX_STOCK = 10_000_000


@dataclass(frozen=True)
class KnowledgeRecord:
    doc_id: str
    title: str
    content: str


@dataclass(frozen=True)
class OrderRecord:
    order_id: str
    user_id: str
    product_id: str
    quantity: int
    total: Decimal
    status: str
    region: str
    created_at: str   # ISO 8601 local time, seconds: 2026-11-02T14:20:00


@dataclass
class Catalog:
    products: list[Product]
    promotions: list[Promotion] = field(default_factory=list)
    knowledge: list[KnowledgeRecord] = field(default_factory=list)
    orders: list[OrderRecord] = field(default_factory=list)


# --- field parsers: each returns (value, problem-or-None) -------------------------------------------

def _text(raw: object) -> str:
    return "" if raw is None else str(raw).strip()


def _money(raw: object, name: str, *, required: bool) -> tuple[Decimal | None, str | None]:
    text = _text(raw)
    if not text:
        return None, (f"{name} is required" if required else None)
    try:
        value = Decimal(text)
    except InvalidOperation:
        return None, f"{name} must be a number, got {text!r}"
    if not value.is_finite():
        return None, f"{name} must be a finite number, got {text!r}"
    if value < 0:
        return None, f"{name} must not be negative, got {text!r}"
    if value > MAX_MONEY:
        return None, f"{name} is implausibly large: {text!r}"
    if value.as_tuple().exponent < -2:  # type: ignore[operator]
        return None, f"{name} has more than 2 decimal places: {text!r}"
    return value, None


def _count(raw: object, name: str, *, required: bool, minimum: int = 0) -> tuple[int | None, str | None]:
    text = _text(raw)
    if not text:
        return None, (f"{name} is required" if required else None)
    try:
        value = int(text)
    except ValueError:
        return None, f"{name} must be a whole number, got {text!r}"
    if value < minimum:
        return None, f"{name} must be at least {minimum}, got {text!r}"
    if value > MAX_STOCK:
        return None, f"{name} is implausibly large: {text!r}"
    return value, None


def split_aliases(raw: object) -> tuple[str, ...]:
    """The optional `aliases` column: other names separated by '|' ('yoga mat|瑜伽毯'), blanks dropped."""
    return tuple(dict.fromkeys(a.strip() for a in _text(raw).split("|") if a.strip()))


def parse_product(row: Mapping[str, object], where: str) -> tuple[Product | None, list[str]]:
    problems: list[str] = []
    product_id = _text(row.get("product_id"))
    name = _text(row.get("product_name"))
    if not product_id:
        problems.append("product_id is required")
    elif len(product_id) > 64:
        problems.append("product_id is longer than 64 characters")
    if not name:
        problems.append("product_name is required")
    price, p = _money(row.get("price"), "price", required=False)
    stock, s = _count(row.get("stock_quantity"), "stock_quantity", required=False)
    problems += [x for x in (p, s) if x]
    if problems:
        return None, [f"{where}: {x}" for x in problems]
    return Product(
        product_id=product_id,
        product_name=name,
        brand=_text(row.get("brand")),
        description=_text(row.get("description")),
        specifications=_text(row.get("specifications")),
        usage=_text(row.get("usage")),
        category=_text(row.get("category")),
        price=price,
        stock_quantity=stock,
        aliases=split_aliases(row.get("aliases")),
    ), []


def parse_promotion(row: Mapping[str, object], where: str) -> tuple[Promotion | None, list[str]]:
    problems: list[str] = []
    promotion_id = _text(row.get("promotion_id"))
    product_id = _text(row.get("product_id"))
    text = _text(row.get("promotion_text"))
    kind = _text(row.get("discount_type"))
    extra = _text(row.get("extra_condition")) or None
    for name, value in (("promotion_id", promotion_id), ("product_id", product_id), ("promotion_text", text)):
        if not value:
            problems.append(f"{name} is required")
    value, p1 = _money(row.get("discount_value"), "discount_value", required=False)
    min_qty, p2 = _count(row.get("minimum_quantity"), "minimum_quantity", required=False, minimum=1)
    min_spend, p3 = _money(row.get("minimum_spend"), "minimum_spend", required=False)
    problems += [x for x in (p1, p2, p3) if x]
    if kind not in DISCOUNT_TYPES:
        problems.append(f"discount_type must be one of {', '.join(DISCOUNT_TYPES)}, got {kind!r}")
    elif not (p1 or p2):
        if kind == "percentage" and not (value is not None and 0 < value < 1):
            problems.append("a percentage discount needs discount_value between 0 and 1 (9折 = 0.9)")
        elif kind == "fixed_reduction" and not (value is not None and value > 0):
            problems.append("a fixed_reduction needs a positive discount_value (满500减100 = 100)")
        elif kind == "buy_x_get_y":
            if min_qty is None:
                problems.append("buy_x_get_y needs minimum_quantity = the paid units X (买三送一 = 3)")
            if value is None or value != value.to_integral_value() or value < 1:
                problems.append("buy_x_get_y needs discount_value = the whole number of free units Y (买三送一 = 1)")
        elif kind in ("gift", "free_shipping") and value is not None:
            problems.append(f"a {kind} promotion takes no discount_value")
    if extra is not None and extra not in EXTRA_CONDITIONS:
        problems.append(f"extra_condition must be empty or one of {', '.join(EXTRA_CONDITIONS)}, got {extra!r}")
    if problems:
        return None, [f"{where}: {x}" for x in problems]
    return Promotion(promotion_id, product_id, text, kind, value, min_qty, min_spend, extra), []


def parse_knowledge(row: Mapping[str, object], where: str) -> tuple[KnowledgeRecord | None, list[str]]:
    doc = KnowledgeRecord(_text(row.get("doc_id")), _text(row.get("title")), _text(row.get("content")))
    missing = [f"{where}: {n} is required" for n in ("doc_id", "title", "content") if not getattr(doc, n)]
    return (None, missing) if missing else (doc, [])


def _local_time(raw: object) -> tuple[str | None, str | None]:
    """ISO 8601 local time to the second ("2026-11-02 14:20" → "2026-11-02T14:20:00"; a date → midnight)."""
    text = _text(raw)
    if not text:
        return None, "created_at is required"
    try:
        value = datetime.fromisoformat(text.replace(" ", "T", 1)) if len(text) > 10 else \
            datetime.fromisoformat(text + "T00:00:00")
    except ValueError:
        return None, f"created_at must be an ISO 8601 date or time, got {text!r}"
    if value.tzinfo is not None:   # stored as Asia/Shanghai local time
        value = value.astimezone(SHANGHAI).replace(tzinfo=None)
    return value.isoformat(timespec="seconds"), None


def parse_order(row: Mapping[str, object], where: str) -> tuple[OrderRecord | None, list[str]]:
    problems = [f"{n} is required" for n in ("order_id", "user_id", "product_id") if not _text(row.get(n))]
    qty, p1 = _count(row.get("quantity"), "quantity", required=True, minimum=1)
    total, p2 = _money(row.get("total"), "total", required=True)
    created, p3 = _local_time(row.get("created_at"))
    status, region = _text(row.get("status")), _text(row.get("region"))
    if status not in ORDER_STATUSES:
        problems.append(f"status must be one of {', '.join(ORDER_STATUSES)}, got {status!r}")
    if region not in REGIONS:
        problems.append(f"region must be one of {', '.join(REGIONS)}, got {region!r}")
    problems += [x for x in (p1, p2, p3) if x]
    if problems:
        return None, [f"{where}: {x}" for x in problems]
    return OrderRecord(_text(row["order_id"]), _text(row["user_id"]), _text(row["product_id"]),
                       qty, total, status, region, created), []  # type: ignore[arg-type]


# --- whole-source readers ------------------------------------------------------------------------------

_PRODUCT_ID = attrgetter("product_id")


def _collect(rows, parse, identity: Callable[[Any], object], what: str, problems: list[str],
             check: Callable[[Mapping[str, str], str], list[str]] | None = None) -> list:
    """Parse every row, collecting problems; `identity` names a record for the duplicate check, `check`
    adds the row's cross-file problems (an unknown product) in the same pass, at the same line."""
    records, seen = [], {}
    for where, row in rows:
        if row is None:
            problems.append(f"{where}: more fields than the header has columns")
            continue
        record, errs = parse(row, where)
        problems.extend(errs)
        if check is not None:
            problems.extend(check(row, where))
        if record is None:
            continue
        ident = identity(record)
        if ident in seen:
            problems.append(f"{where}: duplicate {what} {ident!r} (first at {seen[ident]})")
            continue
        seen[ident] = where
        records.append(record)
    return records


def _references(products: Table | None, what: str, key: str) -> Callable[[Mapping[str, str], str], list[str]] | None:
    """A check that a row's product_id is one the products file names (on any of its lines, even a bad one:
    that line's own problem is reported there). None when the products file could not be read."""
    if products is None or not any(row and "product_id" in row for _, row in products.rows):
        return None
    known = {_text(row.get("product_id")) for _, row in products.rows if row is not None}
    source = products.path.name

    def check(row: Mapping[str, str], where: str) -> list[str]:
        product_id = _text(row.get("product_id"))
        if not product_id or product_id in known:
            return []
        name = _text(row.get(key))
        return [f"{where}: {what} {name}: unknown product_id {product_id!r} (no product with this id in {source})"]
    return check


def _policies(folder: Path, problems: list[str]) -> list[KnowledgeRecord]:
    from db.policies import read_policies

    try:
        return read_policies(folder)
    except CatalogError as exc:
        problems.extend(exc.problems)
        return []


def read_catalog_csv(products: Path, promotions: Path | None = None, knowledge: Path | None = None,
                     orders: Path | None = None) -> Catalog:
    """Read and validate a shop's spreadsheets; raise CatalogError listing every problem — headers, bad
    lines, and lines naming a product the products file does not have — in one pass, file by file."""
    problems: list[str] = []

    def table(path: Path | None, columns: Columns) -> Table | None:
        return None if path is None else read_table(path, columns, problems)

    def section(rows: Table | None, parse, identity, what, check=None) -> list:
        if rows is None or not rows.parsable:
            return []
        return _collect(rows.rows, parse, identity, what, problems, check)

    product_rows = table(products, PRODUCTS)
    catalog = Catalog(products=section(product_rows, parse_product, _PRODUCT_ID, "product_id"))
    catalog.promotions = section(table(promotions, PROMOTIONS), parse_promotion, attrgetter("promotion_id"),
                                 "promotion_id", _references(product_rows, "promotion", "promotion_id"))
    if knowledge is not None and knowledge.is_dir():
        catalog.knowledge = _policies(knowledge, problems)
    else:
        catalog.knowledge = section(table(knowledge, KNOWLEDGE), parse_knowledge, attrgetter("doc_id"), "doc_id")
    catalog.orders = section(table(orders, ORDERS), parse_order, attrgetter("order_id"), "order_id",
                             _references(product_rows, "order", "order_id"))
    if product_rows is not None and product_rows.parsable and not product_rows.rows:
        problems.append(f"{products}: contains no products")
    if problems:
        raise CatalogError(problems)
    unpriced = [p.product_id for p in catalog.products if p.price is None]
    if unpriced:
        log.warning("%s: %d product(s) with an empty price (%s%s): the bot will say their price is not available",
                    products.name, len(unpriced), ", ".join(unpriced[:10]), ", …" if len(unpriced) > 10 else "")
    return catalog


def read_catalog_json(path: Path) -> Catalog:
    """Read the evaluation format: a JSON list of product records (price and stock optional)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise CatalogError([f"{path}: cannot be read ({exc.strerror})"]) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CatalogError([f"{path}: not valid JSON ({exc})"]) from None
    if not isinstance(data, list):
        raise CatalogError([f"{path}: expected a JSON list of product records"])
    problems: list[str] = []
    rows = []
    for i, item in enumerate(data):
        if isinstance(item, dict):
            rows.append((f"{path.name} record {i}", item))
        else:
            problems.append(f"{path.name} record {i}: expected an object")
    products = _collect(rows, parse_product, _PRODUCT_ID, "product_id", problems)
    if not products and not problems:
        problems.append(f"{path}: contains no products")
    if problems:
        raise CatalogError(problems)
    return Catalog(products=products)


def demo_catalog(today: date | None = None) -> Catalog:
    """The bundled demo catalog, read through the same validation as any import, with a generated
    order history of the 13 months before `today` (default: today in Asia/Shanghai)."""
    from db.demo_orders import generate_orders, shift_seed_orders

    seed = resources.files("db") / "seed"
    with resources.as_file(seed) as folder:
        catalog = read_catalog_csv(folder / "products.csv", folder / "promotions.csv",
                                   folder / "policies", folder / "orders.csv")
    today = today or datetime.now(SHANGHAI).date()
    catalog.orders = shift_seed_orders(catalog.orders, today) + generate_orders(catalog.products, today)
    return catalog
