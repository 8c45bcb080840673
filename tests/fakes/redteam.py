"""A red-team corpus generated from a catalog: for every product, promotion and calculation, true
renderings of every role (which must pass the validator) and lies of every family (which must not).

Each case carries the typed tool results its ledger is built from, so a benchmark can rebuild the
ledger per answer. Shared by tests/test_grounding.py and bench/validator.py."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

import aiosqlite

from agent.tools import file_evidence
from db.catalog import catalog_words, fetch_products, fetch_promotions
from db.facts import (
    DiscountType,
    PolicyDocument,
    PolicyDocuments,
    Product,
    ProductDetails,
    Promotion,
    PromotionList,
    Quote,
)
from db.pricing import calculate_final_price, measure_word
from guardrails.ledger import EvidenceLedger
from tests.fakes.renderings import discount_forms, money_forms

QUESTION = "请问"   # says nothing: every condition must be stated by the answer itself

TRUE_ROLES = ("price", "price in any written form", "stock", "brand", "rule", "total", "long answer", "policy")
LIE_FAMILIES = ("invented amount", "threshold as price", "reduction and threshold swapped", "paid and free units swapped",
                "total as unit price", "total for another quantity", "first purchase dropped",
                "minimum quantity dropped", "minimum spend dropped", "brand", "gift", "shipping", "stock status",
                "policy terms")


@dataclass(frozen=True)
class Case:
    family: str
    lie: bool
    answer: str
    citations: tuple[str, ...]
    results: tuple[object, ...]
    brands: frozenset[str]
    question: str = QUESTION

    def ledger(self) -> EvidenceLedger:
        ledger = EvidenceLedger(self.brands)
        for result in self.results:
            file_evidence(ledger, result)
        return ledger


def _y(amount: Decimal) -> str:
    return f"{amount.normalize():f}元"


def _zhe(rate: Decimal) -> str:
    return discount_forms(rate)["zhe"]


def _condition(promo: Promotion, unit: str) -> str:
    if promo.first_purchase:
        return "首次购买"
    if promo.minimum_quantity is not None:
        return f"{promo.minimum_quantity}{unit}及以上"
    if promo.minimum_spend is not None:
        return f"单笔满{_y(promo.minimum_spend)}"
    return ""


def _gift(promo: Promotion) -> str:
    return promo.promotion_text.split("送")[-1]


async def _quotes(conn: aiosqlite.Connection, product: Product, promos: Sequence[Promotion]) -> list[Quote]:
    quantities = {1, 2, 3} | {p.minimum_quantity for p in promos if p.minimum_quantity}
    if product.price:
        quantities |= {math.ceil(p.minimum_spend / product.price) for p in promos if p.minimum_spend}
    firsts = [False] + ([True] if any(p.first_purchase for p in promos) else [])
    quotes = []
    for q in sorted(quantities):
        for first in firsts:
            quote = await calculate_final_price(conn, product.product_id, q, first)
            if isinstance(quote, Quote):
                quotes.append(quote)
    return quotes


def _product_cases(product: Product, promos: list[Promotion], quotes: list[Quote], brands: frozenset[str]) -> list[Case]:
    n, u, p, s, b = product.product_name, measure_word(product.product_name), product.price, \
        product.stock_quantity, product.brand
    results = (ProductDetails((product,), ()), PromotionList((product.product_id,), tuple(promos), ()), *quotes)
    cites = (product.evidence_id, *(x.evidence_id for x in promos), *(q.evidence_id for q in quotes))
    cases: list[Case] = []

    def case(family: str, lie: bool, answer: str, res: tuple[object, ...] = results) -> None:
        cases.append(Case(family, lie, answer, cites, res, brands))

    has_first_rule = any(x.first_purchase for x in promos)
    if p is not None:
        for text in (f"{n}售价{_y(p)}。", f"{n}单价¥{p.normalize():f}。", f"{n}的价格是{_y(p)}，以系统为准。"):
            case("price", False, text)
        for form in money_forms(p).values():
            case("price in any written form", False, f"{n}售价{form}。")
        for form in money_forms(p + 1).values():
            case("invented amount", True, f"{n}售价{form}。")
    if s:
        case("stock", False, f"{n}有货，库存{s}{u}。")
        case("stock status", True, f"{n}已经售罄。")
        case("stock status", True, f"{n}暂时缺货，请过几天再来。")
        sold_out = dataclasses.replace(product, stock_quantity=0)
        zero = (ProductDetails((sold_out,), ()), *results[1:])
        case("stock status", True, f"{n}有货，欢迎下单。", zero)
        case("stock status", True, f"{n}现货充足。", zero)
    if b:
        case("brand", False, f"{n}是{b}的。")
        for other in sorted(brands - {b})[:3]:
            case("brand", True, f"{n}是{other}的。")
    own_gifts = {_gift(x) for x in promos if x.discount_type == DiscountType.GIFT}
    for gift in ("运动水壶", "瑜伽砖"):
        if gift not in own_gifts:
            case("gift", True, f"{n}购买赠送{gift}。")
    shipping = [x for x in promos if x.discount_type == DiscountType.FREE_SHIPPING]
    if not shipping:
        case("shipping", True, f"{n}全国包邮。")

    for promo in promos:
        cond, v, m, spend = _condition(promo, u), promo.discount_value, promo.minimum_quantity, promo.minimum_spend
        kind = promo.discount_type
        if kind == DiscountType.PERCENTAGE:
            case("rule", False, f"{n}{cond}打{_zhe(v)}。")
            if cond:
                family = ("first purchase dropped" if promo.first_purchase else
                          "minimum quantity dropped" if m else "minimum spend dropped")
                case(family, True, f"{n}现在打{_zhe(v)}。")
                if not promo.first_purchase and (m or (p is not None and spend and p < spend)):
                    case(family, True, f"{n}买1{u}就打{_zhe(v)}。")
        elif kind == DiscountType.FIXED_REDUCTION:
            case("rule", False, f"{n}单笔满{_y(spend)}减{_y(v)}。")
            case("reduction and threshold swapped", True, f"{n}满{_y(v)}减{_y(spend)}。")
            case("minimum spend dropped", True, f"{n}下单立减{_y(v)}。")
        elif kind == DiscountType.BUY_X_GET_Y:
            case("rule", False, f"{n}买{m}{u}送{int(v)}{u}。")
            if m != int(v):
                case("paid and free units swapped", True, f"{n}买{int(v)}{u}送{m}{u}。")
        elif kind == DiscountType.GIFT:
            case("rule", False, f"{n}购买即赠送{_gift(promo)}。")
        elif kind == DiscountType.FREE_SHIPPING:
            case("rule", False, f"{n}单笔满{_y(spend)}包邮。")
            case("shipping", True, f"{n}包邮。")
            if p is not None and p < spend:
                case("shipping", True, f"{n}买1{u}就包邮。")
        if spend is not None and p is not None and spend != p:
            case("threshold as price", True, f"{n}售价{_y(spend)}。")

    totals = {(q.quantity, q.is_first_purchase): q.final_total for q in quotes}
    for q in quotes:
        first_word = "首次购买" if q.is_first_purchase and has_first_rule else "买"
        free = f"，另送{q.free_quantity}{u}，实得{q.total_units}{u}" if q.free_quantity else ""
        case("total", False, f"{n}{first_word}{q.quantity}{u}共{_y(q.final_total)}{free}。")
        rules = "；".join(x.promotion_text for x in promos)
        applied = "满足条件，" if q.applied_promotion else ""
        case("long answer", False, f"{n}售价{_y(q.unit_price)}{'，' + rules if rules else ''}；{first_word}{q.quantity}{u}"
                                   f"小计{_y(q.subtotal)}，{applied}实付{_y(q.final_total)}{free}。")
        if q.quantity >= 2 and q.final_total != q.unit_price:
            case("total as unit price", True, f"{n}售价{_y(q.final_total)}。")
            case("total as unit price", True, f"{n}一{u}{_y(q.final_total)}。")
        for (other_q, other_first), other_total in totals.items():
            if other_first == q.is_first_purchase and other_q != q.quantity and other_total != q.final_total \
                    and q.final_total not in {t for (k, f), t in totals.items() if k == other_q}:
                case("total for another quantity", True, f"{n}{first_word}{other_q}{u}共{_y(q.final_total)}。")
                break
        if q.is_first_purchase and has_first_rule and q.final_total != totals.get((q.quantity, False)):
            case("first purchase dropped", True, f"{n}买{q.quantity}{u}实付{_y(q.final_total)}。")
    return cases


POLICY_TRUTHS = [("returns#1", "签收后7天内支持无理由退货，15天内出现质量问题可以换货。"),
                 ("shipping#1", "付款后48小时内发货，江浙沪一般2到3天送达。"),
                 ("service#1", "人工客服服务时间为每天9:00到21:00。"),
                 ("service#1", "人工客服早上9点到晚上9点在线。"),
                 ("warranty#1", "球拍自签收起享受3个月质保。"),
                 ("payment#1", "支持微信支付、支付宝和银行卡支付，暂不支持货到付款。"),
                 ("returns#1", "定制商品不支持无理由退货。")]
POLICY_LIES = [("returns#1", "签收后15天内支持无理由退货。"), ("returns#1", "签收后30天内都可以换货。"),
               ("shipping#1", "付款后24小时内发货。"), ("shipping#1", "江浙沪一般1到2天送达。"),
               ("service#1", "人工客服服务时间为每天8:00到22:00。"), ("service#1", "人工客服晚上10点前都在。"),
               ("warranty#1", "球拍自签收起享受6个月质保。"), ("payment#1", "我们支持货到付款。"),
               ("returns#1", "定制商品也支持7天无理由退货。")]


async def catalog_brands(conn: aiosqlite.Connection) -> frozenset[str]:
    """Every brand word of the catalog: what a ledger reads brand claims by."""
    return frozenset(brand for _, _, brand, _ in await catalog_words(conn) if brand)


async def build_corpus(conn: aiosqlite.Connection) -> list[Case]:
    """Every true rendering and every lie for every product and promotion of the catalog behind `conn`."""
    brands = await catalog_brands(conn)
    async with conn.execute("SELECT product_id FROM products ORDER BY product_id") as cur:
        ids = [row[0] for row in await cur.fetchall()]
    products = await fetch_products(conn, ids)
    promotions = await fetch_promotions(conn, ids)
    corpus: list[Case] = []
    for pid in ids:
        promos = [x for x in promotions if x.product_id == pid]
        corpus += _product_cases(products[pid], promos, await _quotes(conn, products[pid], promos), brands)
    async with conn.execute("SELECT doc_id, title, content FROM knowledge_docs") as cur:
        docs = {row[0]: PolicyDocument(row[0], row[1], row[2]) for row in await cur.fetchall()}
    for family, lie, pairs in (("policy", False, POLICY_TRUTHS), ("policy terms", True, POLICY_LIES)):
        for doc_id, text in pairs:
            doc = docs[doc_id]
            corpus.append(Case(family, lie, text, (doc.evidence_id,), (PolicyDocuments((doc,)),), brands))
    basketball = [c for c in corpus if c.family == "long answer" and c.answer.startswith("篮球售价")][0]
    corpus.append(dataclasses.replace(basketball, answer="篮球售价200元，单笔满300元半价；买两个小计400元，满足条件，"
                                                         "半价后共200元"))
    return corpus
