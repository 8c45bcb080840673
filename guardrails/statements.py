"""Facts without numbers: brand, gift, free shipping, stock status, a price not given and store-policy terms.

Each check reads one clause of an answer and returns (reason code, detail) pairs; the validator turns
them into Problems. A word in a negation (不是阿迪达斯的, 不包邮, 暂不支持) states nothing and is skipped."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import lru_cache

from guardrails.claims import Clause
from guardrails.figures import MEASURE, NUM, find_mentions
from guardrails.ledger import (
    FREE_SHIPPING,
    GIFT,
    Conditions,
    Evidence,
    EvidenceKind,
    EvidenceLedger,
    PromotionRule,
)
from guardrails.roles import Kind, Role

UNVERIFIED_BRAND = "UNVERIFIED_BRAND"
UNVERIFIED_GIFT = "UNVERIFIED_GIFT"
UNVERIFIED_SHIPPING = "UNVERIFIED_SHIPPING"
STOCK_STATUS_CONTRADICTS = "STOCK_STATUS_CONTRADICTS"
PRICE_STATUS_CONTRADICTS = "PRICE_STATUS_CONTRADICTS"
POLICY_CONTRADICTS = "POLICY_CONTRADICTS"

Finding = tuple[str, str]

_NEGATED = re.compile(r"(?:不是|并非|不|没有|没|无|暂不|不能|未)\s*$")
_GIFT = re.compile(r"(?:赠送|附赠|赠品(?:是|为|:)?|免费送|加送|(?<![发传运输递寄护推配])送)(?!达|货|到|至|出|给|您)(?P<object>[^，。；！？、,.;:：!?\n)）”\"]{1,16})")
_QUANTITY_HEAD = re.compile(f"^\\s*{NUM}\\s*{MEASURE}?")
_SHIPPING = re.compile(r"包邮|免运费|免邮|免费配送|免配送费|免费送货")
_OUT_OF_STOCK = re.compile(r"售罄|缺货|没货|无货|没有货|断货|卖完|售完|没有库存|无库存|没有现货|暂无现货")
_NO_PRICE = re.compile(r"价格暂未提供|价格未提供|暂未提供价格|暂无价格|暂无标价|没有标价|未标价|暂未定价|价格待定|"
                       r"没有价格(?!优惠|差|区别|变化)")
_IN_STOCK = re.compile(r"有货|现货|有库存|库存充足|货源充足")
_POLICY_WORDS = re.compile(r"无理由退货|退货|退款|换货|退换|发货|送达|到货|配送|质保|保修|人工客服|客服|服务时间|营业|发票|开票")
_DOC_NEGATION = re.compile(r"暂不支持|不支持|不能|无法|不可以|不提供|不适用|不在")
_ANSWER_NEGATION = re.compile(r"不支持|不能|不可以?|无法|没有|不提供|暂不|不在|不包括|不适用")
_PIECES = re.compile(r"[，。；;,\n]")


def _negated(text: str, start: int) -> bool:
    return bool(_NEGATED.search(text[max(0, start - 3):start]))


def _in_name(clause: Clause, start: int, end: int) -> bool:
    return any(start < e and s < end for s, e in clause.name_spans)


def _subject_products(clause: Clause, pool: Sequence[Evidence]) -> set[str]:
    return clause.subject or {pid for e in pool for pid in e.product_ids}


@lru_cache(maxsize=64)
def _brand_pattern(brands: frozenset[str]) -> re.Pattern[str]:
    """One alternation of every brand word, longest first (the catalog's brands change rarely)."""
    words = sorted((b for b in brands if b), key=len, reverse=True)
    return re.compile("|".join(map(re.escape, words)) if words else "(?!)")


def brand_findings(clause: Clause, pool: Sequence[Evidence], ledger: EvidenceLedger) -> list[Finding]:
    """Any catalog brand named in a clause must be the brand of the product the clause is about."""
    out = []
    products = _subject_products(clause, pool)
    for m in _brand_pattern(frozenset(ledger.brands)).finditer(clause.stated):
        brand = m.group(0)
        if _in_name(clause, m.start(), m.end()) or _negated(clause.stated, m.start()):
            continue
        known = {pid: ledger.products[pid].brand for pid in products if pid in ledger.products}
        if brand in known.values():
            continue
        if known:
            actual = "; ".join(f"{ledger.name_of(p)} is {b or 'unbranded'}" for p, b in sorted(known.items()))
            out.append((UNVERIFIED_BRAND, f"'{brand}' is not the brand of the product named here ({actual})"))
        else:
            out.append((UNVERIFIED_BRAND, f"'{brand}': no verified product details name this brand; "
                                          "call get_product_details and cite it"))
    return out


def _gift_core(text: str) -> str:
    text = re.sub(r"[哦啊呀呢吧哈啦嘛喔~～…\s]+$", "", _QUANTITY_HEAD.sub("", text.strip()))
    return re.sub(f"{NUM}\\s*{MEASURE}$|的$", "", text).strip()


def _overlap(core: str, gift: str) -> bool:
    """视频教程 ~ 赠送教程视频: most of the claimed gift's characters are in the promotion's text."""
    chars = set(core)
    return len(chars & set(gift)) >= 0.75 * len(chars)


def gift_findings(clause: Clause, pool: Sequence[Evidence], ledger: EvidenceLedger) -> list[Finding]:
    """A gift must be one of the product's gift promotions (or written in its own verified text)."""
    out = []
    products = _subject_products(clause, pool)
    gifts = [p.promotion_text for p in ledger.promotions_of(pool, products) if p.discount_type == GIFT]
    own = [g.group(0) for e in pool if e.kind == EvidenceKind.PRODUCT and e.product_ids & products
           for t in e.texts for g in _GIFT.finditer(t)]   # 购买赠送教程视频 in the product's own description
    for m in _GIFT.finditer(clause.stated):
        core = _gift_core(m.group("object"))
        in_figure = any(c.mention.start <= m.start() < c.mention.end for c in clause.claims)
        if in_figure or _negated(clause.stated, m.start()) or len(core) < 2:
            continue   # 不送…, or 送1盒: free units, checked as a figure
        if any(_overlap(core, g) for g in gifts + own):
            continue
        what = "; ".join(f"“{g}”" for g in gifts) or "none"
        out.append((UNVERIFIED_GIFT, f"'{m.group(0)}' is not a gift of the product named here (its gift promotions: {what})"))
    return out


def shipping_findings(clause: Clause, pool: Sequence[Evidence], ledger: EvidenceLedger,
                      meets: Callable[[Conditions, str], bool]) -> list[Finding]:
    """包邮 needs a free-shipping promotion of the product, and its spend threshold when it has one."""
    out = []
    for m in _SHIPPING.finditer(clause.stated):
        if _negated(clause.stated, m.start()):
            continue
        if any(e.kind == EvidenceKind.DOC and m.group(0) in "".join(e.texts) for e in pool):
            continue
        products = _subject_products(clause, pool)
        rules = [p for p in ledger.promotions_of(pool, products) if p.discount_type == FREE_SHIPPING]
        if not rules:
            out.append((UNVERIFIED_SHIPPING, f"'{m.group(0)}': the product named here has no free-shipping promotion "
                                             "in the cited evidence"))
        elif not any(meets(Conditions(minimum_spend=p.minimum_spend), p.product_id) for p in rules):
            spend = min(p.minimum_spend for p in rules if p.minimum_spend is not None)
            out.append((UNVERIFIED_SHIPPING, f"'{m.group(0)}' holds only for orders of at least {spend:f}元: "
                                             f"say 满{spend:f}元包邮 in the same sentence"))
        elif not _rule_statement(clause, m.start()):
            out += _short_quantities(clause, m.group(0), rules, ledger)
    return out


def _rule_statement(clause: Clause, start: int) -> bool:
    """满200元包邮 / 200元以上包邮: the rule itself, right after its threshold, not a claim about an order."""
    return any(c.role == Role.THRESHOLD and 0 <= start - c.mention.end <= 2 for c in clause.claims)


def _short_quantities(clause: Clause, word: str, rules: Sequence[PromotionRule],
                      ledger: EvidenceLedger) -> list[Finding]:
    """买4个共196元即可包邮: the quantities this clause buys must reach a free-shipping threshold (by price ×
    quantity, or an amount of the clause at least the threshold), even when 满200元 is stated beside them."""
    quantities = [c.mention.value for c in clause.claims if c.mention.kind == Kind.QUANTITY
                  and c.role in (None, Role.PAID_UNITS) and c.mention.value is not None]
    amounts = [c.mention.value for c in clause.claims if c.mention.kind == Kind.MONEY
               and c.role in (None, Role.SUBTOTAL, Role.TOTAL) and c.mention.value is not None]
    if not quantities:
        return []
    for rule in rules:
        price = ledger.price_of(rule.product_id)
        spend = rule.minimum_spend
        if spend is None or price is None or any(q * price >= spend for q in quantities) \
                or any(a >= spend for a in amounts):
            return []
    spend = min(r.minimum_spend for r in rules if r.minimum_spend is not None)
    said = "、".join(f"{q:f}" for q in quantities)
    return [(UNVERIFIED_SHIPPING, f"'{word}' is stated for {said} units, which do not reach 满{spend:f}元")]


def stock_findings(clause: Clause, pool: Sequence[Evidence], ledger: EvidenceLedger) -> list[Finding]:
    """售罄/缺货 only for a product at 0; 有货/现货 only for one in stock."""
    out, taken = [], []
    products = _subject_products(clause, pool)
    stocks = {pid: ledger.products[pid].stock_quantity for pid in products if pid in ledger.products}
    for pattern, out_of_stock in ((_OUT_OF_STOCK, True), (_IN_STOCK, False)):
        for m in pattern.finditer(clause.stated):
            if any(m.start() < e and s < m.end() for s, e in taken):
                continue
            taken.append((m.start(), m.end()))
            if _negated(clause.stated, m.start()):
                out_of_stock_claim = not out_of_stock
            else:
                out_of_stock_claim = out_of_stock
            if not stocks:
                out.append((STOCK_STATUS_CONTRADICTS, f"'{m.group(0)}': no verified stock figure for the product "
                                                      "named here; call get_product_details and cite it"))
                continue
            wrong = [pid for pid, stock in stocks.items() if stock is not None
                     and (stock == 0) != out_of_stock_claim]
            if len(wrong) == len(stocks):
                facts = "; ".join(f"{ledger.name_of(p)} has {stocks[p]} in stock" for p in sorted(wrong))
                out.append((STOCK_STATUS_CONTRADICTS, f"'{m.group(0)}' contradicts the stock figure ({facts})"))
    return out


def price_status_findings(clause: Clause, pool: Sequence[Evidence], ledger: EvidenceLedger) -> list[Finding]:
    """价格暂未提供 only for a product whose verified record has no price (an empty price in the catalog)."""
    out: list[Finding] = []
    products = [pid for pid in _subject_products(clause, pool) if pid in ledger.products]
    for m in _NO_PRICE.finditer(clause.stated):
        if _in_name(clause, m.start(), m.end()):
            continue
        if not products:
            out.append((PRICE_STATUS_CONTRADICTS, f"'{m.group(0)}': no verified product details for the product "
                                                  "named here; call get_product_details and cite it"))
        elif all(ledger.products[pid].price is not None for pid in products):
            facts = "; ".join(f"{ledger.name_of(p)} is {ledger.products[p].price:f}元" for p in sorted(products))
            out.append((PRICE_STATUS_CONTRADICTS, f"'{m.group(0)}' contradicts the verified price ({facts})"))
    return out


def _doc_pieces(pool: Sequence[Evidence]) -> list[str]:
    return [piece for e in pool if e.kind == EvidenceKind.DOC for text in e.texts
            for piece in _PIECES.split(text) if piece]


def policy_findings(clause: Clause, pool: Sequence[Evidence]) -> list[Finding]:
    """Days, hours and times next to a policy word must be the cited document's; so must what it supports."""
    out: list[Finding] = []
    pieces = _doc_pieces(pool)
    words = set(_POLICY_WORDS.findall(clause.stated))
    if words:
        for m in find_mentions(clause.text):
            if m.kind not in (Kind.DURATION, Kind.CLOCK) or m.value is None:
                continue
            if not any(any(w in piece for w in words) and any(x.kind == m.kind and x.value == m.value
                                                              for x in find_mentions(piece)) for piece in pieces):
                said = "；".join(p for p in pieces if any(w in p for w in words)) or "nothing about it"
                out.append((POLICY_CONTRADICTS, f"'{m.text}' for {'/'.join(sorted(words))} is not what the cited "
                                                f"policy says ({said})"))
    if _ANSWER_NEGATION.search(clause.stated):
        return out
    for piece in pieces:
        neg = _DOC_NEGATION.search(piece)
        if not neg:
            continue
        subject, obj = piece[:neg.start()], re.sub(r"范围内?$", "", piece[neg.end():]).strip()
        items = [s for s in re.split(r"和|及|、|与", re.sub(r"^(?:但|而|其中|另外)", "", subject)) if len(s) >= 2]
        if len(obj) < 2 or obj not in clause.stated:
            continue
        if (items and any(i in clause.stated for i in items)) or not items:
            out.append((POLICY_CONTRADICTS, f"the cited policy says “{piece}”; the answer states the opposite"))
    return out
