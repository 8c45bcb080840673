"""Natural Chinese answers written from verified tool results only (the offline model's voice).

Every figure in these answers is copied from a verified result and every sentence names only the
product whose evidence holds its figures, so the answers pass the same validator as any model's."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from db.pricing import measure_word
from guardrails.figures import find_mentions

REFUSE_CHANGE = ("抱歉，我只能查询商品信息，不能修改商品价格、库存或优惠活动。"
                 "商品数据以店铺系统为准，如需调整请联系店铺管理人员。")
GREETING = "您好！我是店铺客服助手，可以帮您查询商品的价格、库存、优惠活动，以及您的订单和售后政策。请问想了解什么？"
THANKS = "不客气！还有其他问题随时问我。"
NO_ORDERS = "抱歉，没有查到您账号下的相关订单。请确认订单号，或联系人工客服协助查询。"
NO_POLICY = "抱歉，我没有查到这方面的店铺政策说明。建议您联系人工客服确认，以免给您不准确的信息。"


def yuan(value: Any) -> str:
    """'120.00' → '120元', '28.5' → '28.50元': exact, from the database's Decimal text."""
    amount = Decimal(str(value))
    return f"{int(amount)}元" if amount == amount.to_integral_value() else f"{amount:.2f}元"


@dataclass
class Findings:
    """Everything verified in this turn, gathered from tool results (JSON-decoded)."""

    products: dict[str, dict[str, Any]] = field(default_factory=dict)
    promotions: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    calculation: dict[str, Any] | None = None
    documents: list[dict[str, Any]] = field(default_factory=list)
    orders: list[dict[str, Any]] | None = None
    candidates: list[str] = field(default_factory=list)

    def add(self, result: dict[str, Any]) -> None:
        if "candidates" in result:
            self.candidates = [c["product_id"] for c in result["candidates"]]
        for part in (result, *(result.get("prepared_evidence") or {}).values()):
            if not isinstance(part, dict):
                continue
            if part.get("status") == "verified":
                for product in part.get("products") or []:
                    self.products.setdefault(product["product_id"], product)
                for pid in part.get("product_ids") or []:
                    self.promotions.setdefault(pid, [])
                for promo in part.get("promotions") or []:
                    listed = self.promotions.setdefault(promo["product_id"], [])
                    if promo["promotion_id"] not in {p["promotion_id"] for p in listed}:
                        listed.append(promo)
                if "documents" in part:
                    self.documents = part["documents"]
                if "orders" in part:
                    self.orders = part["orders"]
            if str(part.get("evidence_id", "")).startswith("calc:") or part.get("status") == "insufficient_stock":
                self.calculation = part
            if "orders" in part and part.get("status") == "not_found":
                self.orders = []


def _label(product: dict[str, Any]) -> str:
    return f"{product['product_name']}（{product['brand']}）" if product.get("brand") else product["product_name"]


def _promotion_sentence(product: dict[str, Any], promos: list[dict[str, Any]]) -> tuple[str, list[str]]:
    if not promos:
        return f"{product['product_name']}目前没有优惠活动。", []
    texts = "；".join(f"“{p['promotion_text']}”" for p in promos)
    return f"{product['product_name']}当前优惠：{texts}。", [f"promotion:{p['promotion_id']}" for p in promos]


def _calculation_sentence(product: dict[str, Any], calc: dict[str, Any]) -> tuple[str, list[str]]:
    name, unit = product["product_name"], calc.get("unit") or measure_word(product["product_name"])
    if calc.get("status") == "insufficient_stock":
        return (f"抱歉，{name}当前库存{calc['available_stock']}{unit}，不够您需要的数量，"
                "您可以减少数量后再下单。", [f"product:{product['product_id']}"])
    qty = calc["paid_quantity"]
    buy = "首次购买" if calc.get("is_first_purchase") else "买"
    applied = calc.get("applied_promotion")
    if calc.get("free_quantity"):
        text = (f"{buy}{qty}{unit}{name}共{yuan(calc['final_total'])}，另送{calc['free_quantity']}{unit}，"
                f"实得{calc['total_units']}{unit}。")
    elif applied:
        text = (f"{buy}{qty}{unit}{name}原价{yuan(calc['subtotal'])}，按“{applied['promotion_text']}”"
                f"优惠{yuan(calc['discount_amount'])}，实付{yuan(calc['final_total'])}。")
    else:
        text = f"{buy}{qty}{unit}{name}共{yuan(calc['final_total'])}。"
    for note in calc.get("promotion_notes") or []:
        if not note["applied"] and note.get("reason"):
            text += f"“{note['promotion_text']}”{note['reason']}，本单暂不适用。"
    for benefit in calc.get("benefits") or []:
        if benefit["discount_type"] == "gift":
            text += f"本单可享“{benefit['promotion_text']}”。"
        elif benefit["discount_type"] == "free_shipping":
            text += f"本单满足“{benefit['promotion_text']}”，可以包邮。"
    return text, [calc["evidence_id"]]


def product_answer(findings: Findings, *, wants_price: bool, wants_alternatives: bool,
                   claimed_other_figure: bool = False) -> tuple[str, list[str]]:
    """Describe the most likely verified product: facts, promotions and the prepared calculation.
    `claimed_other_figure`: the customer stated a figure of their own; say whose data this is."""
    order = [pid for pid in findings.candidates if pid in findings.products] or list(findings.products)
    main = findings.products[order[0]]
    pid, unit = main["product_id"], measure_word(main["product_name"])
    cites = [f"product:{pid}"]
    facts = []
    if main.get("price") is not None:
        facts.append(f"售价{yuan(main['price'])}")
    stock = main.get("stock_quantity")
    if stock is not None:
        facts.append(f"库存{stock}{unit}" if stock > 0 else "目前缺货")
    parts = []
    if claimed_other_figure:
        parts.append("以店铺系统核实的数据为准：")
    if main.get("description") and wants_alternatives:
        parts.append(f"推荐您看看{_label(main)}：{main['description']}。")
        if facts:
            parts.append(f"{main['product_name']}{'，'.join(facts)}。")
    else:
        parts.append(f"{_label(main)}{'，'.join(facts)}。" if facts else f"{_label(main)}。")
    sentence, promo_cites = _promotion_sentence(main, findings.promotions.get(pid, []))
    parts.append(sentence)
    cites += promo_cites
    calc = findings.calculation
    if calc and calc.get("product_id") == pid and (wants_price or calc.get("applied_promotion")
                                                   or calc.get("status") == "insufficient_stock"):
        sentence, calc_cites = _calculation_sentence(main, calc)
        parts.append(sentence)
        cites += calc_cites
    if wants_alternatives:
        others = [findings.products[o] for o in order[1:3]]
        if others:
            lines = []
            for other in others:
                price = f"，售价{yuan(other['price'])}" if other.get("price") is not None else ""
                lines.append(f"{_label(other)}{price}")
                cites.append(f"product:{other['product_id']}")
            parts.append("\n也可以看看：" + "；".join(lines) + "。")
    return "".join(parts), list(dict.fromkeys(cites))


_ASKING = re.compile(r"^(请问)?(店里|你们|你们家|这里|贵店|本店)?(有没有|有|卖不卖|卖|是否有|能买到)?|(吗|呢|么|嘛)?$")


def not_sold_answer(question: str) -> str:
    subject = _ASKING.sub("", question.strip().rstrip("？?。!！ "))
    if find_mentions(subject) or len(subject) > 20 or not subject:
        subject = "您的描述"
    else:
        subject = f"“{subject}”"
    return (f"抱歉，本店目前没有找到与{subject}相符的商品，不能为您提供它的价格或库存信息。"
            "我们主要销售球类、球拍、跑鞋、健身器材、瑜伽用品和户外运动装备，您可以换个说法再问我。")


def policy_answer(findings: Findings) -> tuple[str, list[str]]:
    doc = findings.documents[0]
    return f"关于{doc['title']}：{doc['content']}", [doc["evidence_id"]]


def orders_answer(findings: Findings) -> tuple[str, list[str]]:
    lines, cites = [], []
    for order in findings.orders or []:
        items = "、".join(f"{i['product_name']}{i['quantity']}{measure_word(i['product_name'])}" for i in order["items"])
        lines.append(f"订单{order['order_id']}（{order['created_at']}）：{items}，金额{yuan(order['total'])}，"
                     f"状态：{order['status']}。")
        cites.append(order["evidence_id"])
    return "为您查到以下订单：\n" + "\n".join(lines), cites
