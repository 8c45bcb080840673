"""Natural Chinese answers written from verified tool results only (the offline model's voice).

Every figure in these answers is copied from a verified typed record, stated in its own role (售价,
原价/优惠/实付 for a stated quantity) with its conditions in the same sentence, and every sentence names
only the product whose evidence holds its figures — so the answers pass the same validator as any model's."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal

import jieba
from pypinyin import Style, lazy_pinyin

from agent.intent import Ask, Intent, noun_stem
from agent.sizes import sizes
from agent.tools import DetailsResult, SearchResult
from agent.vocabulary import Vocabulary, base_name
from db.facts import (
    PRICE_TYPES,
    AmountDifference,
    Basket,
    CategoryList,
    ComparisonRefusal,
    DiscountType,
    Order,
    OrderList,
    PolicyDocument,
    PolicyDocuments,
    Product,
    ProductDetails,
    Promotion,
    PromotionList,
    Quote,
    QuoteRefusal,
    ReceivePlan,
    Status,
    ThresholdPlan,
)
from db.pricing import measure_word, yuan
from guardrails.figures import NUM, find_mentions
from retrieval.bridge import pieces, qualifier_senses, reading, senses, tokens
from retrieval.shapes import components
from retrieval.text import fold, is_han, plain_words

REFUSE_CHANGE = ("抱歉，我只能查询商品信息，不能修改商品价格、库存或优惠活动。"
                 "商品数据以店铺系统为准，如需调整请联系店铺管理人员。")
GREETING = "您好！我是店铺客服助手，可以帮您查询商品的价格、库存、优惠活动，以及您的订单和售后政策。请问想了解什么？"
THANKS = "不客气！还有其他问题随时问我。"
NO_ORDERS = "抱歉，没有查到您账号下的相关订单。请确认订单号，或联系人工客服协助查询。"
NO_POLICY = "抱歉，我没有查到这方面的店铺政策说明。建议您联系人工客服确认，以免给您不准确的信息。"
# What a good shop assistant says to people rather than about products.
CLARIFY = "请问您想了解哪款商品呢？告诉我商品名称，我来帮您查价格、库存和优惠。"
# asked after the shop's categories, to a customer who named nothing (有什么推荐的): what narrows it down
BROWSE_QUESTION = "请问您想看哪一类？也可以告诉我是做什么运动、给谁用的，我来帮您挑。"
# goods for someone, with nothing told of them yet (想给我爸挑个礼物): what they like, asked
WHOM_QUESTION = "请问对方平时喜欢什么运动、多大年纪？告诉我这些，我来帮您挑合适的。"
REFUSE_INJECTION = ("抱歉，我不能按这样的要求回答。我只能根据店铺系统里的真实信息，为您查询商品、优惠、订单和售后政策。")
# the shop's premises (实体店, 门店地址): the catalog and the policies say nothing of any, so nothing is claimed
PREMISES = ("抱歉，店铺系统里没有线下门店的信息，我没法告诉您门店或地址。商品、价格、优惠、订单和售后的问题都可以直接问我；"
            "需要的话发送“转人工”联系人工客服。")
OFF_TOPIC = "抱歉，这个问题超出了我的服务范围。我是店铺客服助手，可以帮您查询商品、价格、库存、优惠、订单和售后政策。"
APOLOGY = "非常抱歉给您带来了不好的体验。如需人工客服为您处理，直接回复转人工即可。"
NO_BARGAIN = "抱歉，商品价格以店铺系统为准，客服无法议价或单独改价。"
NO_BARGAIN_WHICH = "抱歉，商品价格以店铺系统为准，客服无法议价。告诉我您想买哪款商品，我帮您看看它当前有哪些优惠活动。"
# replies that ask the customer which goods they mean: the next message answers them
WHICH_QUESTIONS = (CLARIFY, NO_BARGAIN_WHICH, BROWSE_QUESTION)
GREETING_PREFIX = "您好！"
# A product whose record has no price: said as a fact of the record (the validator checks it), never left out.
NO_PRICE = "价格暂未提供"


@dataclass
class Findings:
    """Everything verified in this turn, gathered from the typed tool results."""

    products: dict[str, Product] = field(default_factory=dict)
    promotions: dict[str, list[Promotion]] = field(default_factory=dict)
    calculation: Quote | QuoteRefusal | None = None
    basket: Basket | None = None
    searches: list[list[str]] = field(default_factory=list)   # candidate ids of each search, in order
    outside_filters: int = 0   # products the last search's words found that its filters left out
    orders: list[Order] | None = None
    candidates: list[str] = field(default_factory=list)
    searched_knowledge: bool = False   # the policy search ran (whether or not it found a passage)
    document_sets: list[list[PolicyDocument]] = field(default_factory=list)   # each policy search's chunks
    plans: list[object] = field(default_factory=list)   # promotion plans: ReceivePlan, ThresholdPlan,
    #                                                     AmountDifference, and their refusals
    categories: CategoryList | None = None   # what the shop sells, when the customer named nothing

    @classmethod
    def gather(cls, results: Iterable[object]) -> Findings:
        findings = cls()
        for result in results:
            findings.add(result)
        return findings

    def add(self, result: object) -> None:
        match result:
            case SearchResult(candidates=candidates, prepared_evidence=prepared, outside_filters=outside):
                self.candidates = [c.product_id for c in candidates]
                self.outside_filters = outside
                self.searches.append(self.candidates)
                if prepared:
                    for part in (prepared.product_details, prepared.promotions, prepared.calculation):
                        self.add(part)
            case DetailsResult(details=details, prepared_evidence=prepared):
                self.add(details)
                if prepared:
                    self.add(prepared.promotions)
                    self.add(prepared.calculation)
            case ProductDetails(products=products):
                for product in products:
                    self.products.setdefault(product.product_id, product)
            case PromotionList(product_ids=ids, promotions=promotions):
                for pid in ids:
                    self.promotions.setdefault(pid, [])
                for promo in promotions:
                    listed = self.promotions.setdefault(promo.product_id, [])
                    if promo.promotion_id not in {p.promotion_id for p in listed}:
                        listed.append(promo)
            case Quote():
                self.calculation = result
            case Basket():
                self.basket = result
            case ReceivePlan() | ThresholdPlan() | AmountDifference() | ComparisonRefusal():
                self.plans.append(result)
            case QuoteRefusal(status=Status.NO_THRESHOLD | Status.UNREACHABLE):
                self.plans.append(result)
            case QuoteRefusal(status=Status.INSUFFICIENT_STOCK | Status.PRICE_UNAVAILABLE):
                self.calculation = result
            case CategoryList():
                self.categories = result
            case PolicyDocuments(documents=documents):
                self.searched_knowledge = True
                if documents:
                    self.document_sets.append(list(documents))
            case OrderList(orders=orders):
                self.orders = list(orders)


def _label(product: Product) -> str:
    return f"{product.product_name}（{product.brand}）" if product.brand else product.product_name


def _promotion_sentence(product: Product, promos: list[Promotion]) -> tuple[str, list[str]]:
    if not promos:
        return f"{product.product_name}目前没有优惠活动。", []
    texts = "；".join(f"“{p.promotion_text}”" for p in promos)
    return f"{product.product_name}当前优惠：{texts}。", [p.evidence_id for p in promos]


def _calculation_sentence(product: Product, calc: Quote | QuoteRefusal,
                          per_unit: bool = False, budget: Decimal | None = None) -> tuple[str, list[str]]:
    name = product.product_name
    if isinstance(calc, QuoteRefusal) and calc.status == Status.PRICE_UNAVAILABLE:
        return f"因为{name}{NO_PRICE}，暂时无法为您计算总价，可以联系人工客服确认。", [product.evidence_id]
    if isinstance(calc, QuoteRefusal):
        unit = measure_word(name)
        return (f"抱歉，{name}当前库存{calc.available_stock}{unit}，不够您需要的数量，"
                "您可以减少数量后再下单。", [product.evidence_id])
    unit, qty = calc.unit, calc.quantity
    buy = "首次购买" if calc.is_first_purchase else "买"
    applied = calc.applied_promotion
    if calc.free_quantity:
        text = (f"{buy}{qty}{unit}{name}共{yuan(calc.final_total)}，另送{calc.free_quantity}{unit}，"
                f"实得{calc.total_units}{unit}。")
    elif applied:
        text = (f"{buy}{qty}{unit}{name}原价{yuan(calc.subtotal)}，按“{applied.promotion_text}”"
                f"优惠{yuan(calc.discount_amount)}，实付{yuan(calc.final_total)}。")
    else:
        text = f"{buy}{qty}{unit}{name}共{yuan(calc.final_total)}。"
    if per_unit and calc.paid_per_unit is not None:   # 平均一支多少钱: the total over the units received
        text += f"平均每{unit}{yuan(calc.paid_per_unit)}。"
    if budget is not None:   # the customer's budget for it all: Decimal against their figure, not restated
        text += "在您的预算之内。" if calc.final_total <= budget else "超出了您的预算。"
    for outcome in calc.outcomes:
        if not outcome.applied and outcome.reason:
            text += f"“{outcome.promotion.promotion_text}”{outcome.reason}，本单暂不适用。"
    for benefit in calc.benefits:
        if benefit.discount_type == DiscountType.GIFT:
            text += f"本单可享“{benefit.promotion_text}”。"
        elif benefit.discount_type == DiscountType.FREE_SHIPPING:
            text += f"本单满足“{benefit.promotion_text}”，可以包邮。"
    return text, [calc.evidence_id]


def product_answer(findings: Findings, *, wants_price: bool, wants_alternatives: bool,
                   claimed_other_figure: bool = False, per_unit: bool = False, subject: str = "",
                   budget: Decimal | None = None) -> tuple[str, list[str]]:
    """Describe the most likely verified product: facts, promotions and the prepared calculation.
    `claimed_other_figure`: the customer stated a figure of their own; say whose data this is. `per_unit`:
    the average asked for (平均一支多少钱), stated when the calculation's total divides evenly. `subject`: the
    kind of thing asked for; the alternatives offered are of that kind when the recommended one is. `budget`: the
    customer's budget for the whole quantity, the calculation says whether it is within it."""
    order = [pid for pid in findings.candidates if pid in findings.products] or list(findings.products)
    main = findings.products[order[0]]
    pid, unit = main.product_id, measure_word(main.product_name)
    cites = [main.evidence_id]
    facts = []
    facts.append(f"售价{yuan(main.price)}" if main.price is not None else NO_PRICE)
    if main.stock_quantity is not None:
        facts.append(f"库存{main.stock_quantity}{unit}" if main.stock_quantity > 0 else "目前缺货")
    parts = []
    if claimed_other_figure:
        parts.append("以店铺系统核实的数据为准：")
    if main.description and wants_alternatives:
        parts.append(f"推荐您看看{_label(main)}：{main.description}。")
        parts.append(f"{main.product_name}{'，'.join(facts)}。")
    else:
        parts.append(f"{_label(main)}{'，'.join(facts)}。")
    sentence, promo_cites = _promotion_sentence(main, findings.promotions.get(pid, []))
    parts.append(sentence)
    cites += promo_cites
    calc = findings.calculation
    refused = isinstance(calc, QuoteRefusal)
    if refused and calc.status == Status.PRICE_UNAVAILABLE and calc.quantity == 1:
        calc = None   # the price itself was asked: 价格暂未提供 above says it all
    if calc is not None and calc.product_id == pid and (
            wants_price or refused or calc.applied_promotion is not None):
        sentence, calc_cites = _calculation_sentence(main, calc, per_unit, budget)
        parts.append(sentence)
        cites += calc_cites
    if wants_alternatives:
        # of the kind asked and of the recommended one's sport or use (足球用的手套: not the ball, nor fitness gloves)
        kind = subject if subject and same_kind(subject, main.product_name) else ""
        others = [p for p in (findings.products[o] for o in order[1:])
                  if not kind or (same_kind(kind, p.product_name)
                                  and (not main.category or p.category == main.category))][:2]
        if others:
            lines = []
            for other in others:
                price = f"，售价{yuan(other.price)}" if other.price is not None else f"，{NO_PRICE}"
                lines.append(f"{_label(other)}{price}")
                cites.append(other.evidence_id)
            parts.append("\n也可以看看：" + "；".join(lines) + "。")
    return "".join(parts), list(dict.fromkeys(cites))


def no_listing(asked: Intent) -> str:
    """Nothing the filters allow: say so, suggesting to loosen only the conditions the customer set (no price
    range to widen for 跑步穿的紧身裤)."""
    loosen = [word for word, given in (("价格范围", asked.max_price is not None or asked.min_price is not None),
                                       ("品牌", bool(asked.brand)), ("类别", bool(asked.category))) if given]
    return "抱歉，没有找到符合这些条件的商品。" + (f"您可以放宽{'、'.join(loosen)}，或换个说法再问我。" if loosen
                                               else "您可以换个说法，或告诉我商品名称再问我。")


def over_budget_answer(products: list[Product]) -> tuple[str, list[str]]:
    """The products named, none within the customer's price range: each with its verified price (the
    customer's own figures are not restated)."""
    lines = [f"{_label(p)}售价{yuan(p.price)}" if p.price is not None else f"{_label(p)}{NO_PRICE}" for p in products]
    return "抱歉，您问的商品不在这个价格范围内：" + "；".join(lines) + "。", [p.evidence_id for p in products]


def listing_answer(findings: Findings, asked: Intent) -> tuple[str, list[str]]:
    """The products a filtered search found, each with its verified price (the budget is never restated:
    a customer's figure is not evidence)."""
    products = [findings.products[pid] for pid in findings.candidates
                if pid in findings.products and not ruled_out(findings.products[pid], asked)]
    if not products:
        return no_listing(asked), []
    # 便宜点的运动包: of what the search found, the products of the kind asked for (包) when there are any, not
    # every 运动… product the words matched
    kind = noun_stem(asked.subject)[-1:]   # 鞋子 → 鞋; one character names a kind too (包)
    products = [p for p in products if is_han(kind) and of_kind(kind, p)] \
        or [p for p in products if asked.superlative and asked.products and not asked.category
            and any(base_name(p.product_name).endswith(w) for w in asked.named)] \
        or products   # 最便宜的网球拍: of the products named by that word (网球拍), not the 网球 the search found too
    budget = "符合您预算的" if asked.max_price is not None or asked.min_price is not None else ""
    what = (f"比{asked.too_dear}便宜的" if asked.too_dear else budget) + (asked.brand or "") + (asked.category or "") + "商品"
    lines = [(f"{_label(p)}，售价{yuan(p.price)}{_now_text(_paid_now(findings.basket, p.product_id))}"
              if p.price is not None else f"{_label(p)}，{NO_PRICE}")
             + (_stock_text(p) if Ask.STOCK in asked.asks or asked.sort == "stock_desc" else "")
             for p in products]   # 护具有货吗: each one's stock
    if asked.superlative and (products[0].price is not None or asked.sort == "stock_desc"):
        # 最便宜的球拍是哪个, 护具哪款货最多: the one, not the whole order
        top = {"price_asc": "最便宜", "price_desc": "最贵", "stock_desc": "库存最多"}[asked.sort]
        return f"为您找到的{what}里，{top}的是{lines[0]}。", \
            _with_paid([products[0].evidence_id], products[:1], findings.basket)
    return f"为您找到这些{what}：\n" + "；\n".join(lines) + "。", \
        _with_paid([p.evidence_id for p in products], products, findings.basket)


def _stock_text(product: Product) -> str:
    """'，库存85件' (or that it is out of stock) for a line about a product; '' when the record has no stock."""
    if product.stock_quantity is None:
        return ""
    return f"，库存{product.stock_quantity}{measure_word(product.product_name)}" if product.stock_quantity > 0 \
        else "，目前缺货"


def compares_prices(asked: Intent) -> bool:
    """哪个便宜 / 哪个贵 / which is cheaper: a comparison by price, not by what the products are."""
    return bool(re.search("贵|便宜|价|cheap|expensive|pric|cost|dear", asked.text))


def price_promotions(promotions: Iterable[Promotion]) -> list[Promotion]:
    """Those of a product's promotions that change what is paid (a discount or a reduction)."""
    return [p for p in promotions if p.discount_type in PRICE_TYPES]


# A comparison by a figure each record states (哪个能装的水多, 哪个容量大, 哪个轻): the words asking it, the units it is
# stated in (as a multiple of the smallest), and what the larger figure is said to be
_MEASURED = ((re.compile("容量|装[得的]?(?:水)?多|能装.{0,2}多"), {"升": 1000, "毫升": 1}, "容量更大，能装得更多"),
             (re.compile("哪[个款双只件套]?(?:更|比较)?[轻重]|重量|多重"), {"公斤": 1000, "斤": 500}, "更重"))


def sized_record(product: Product) -> str:
    """Where a product's record states its sizes and measures: its name and specifications."""
    return f"{product.product_name} {product.specifications or ''}"


def measured_comparison(products: Sequence[Product], text: str) -> tuple[Product, Product, str] | None:
    """(the larger, the smaller, what the larger is) by a figure every product's record states in the unit asked
    (运动水壶 750毫升 vs 保温运动水杯 500毫升), or None when the message asks none or a record states none."""
    for pattern, units, larger in _MEASURED:
        if not pattern.search(text):
            continue
        values = {}
        for p in products:
            stated = sizes(sized_record(p))
            found = [high * units[u] for u in units for _, high in stated.get(u, ())]
            if len(found) != 1:
                return None
            values[p.product_id] = found[0]
        big = max(products, key=lambda p: values[p.product_id])
        small = min(products, key=lambda p: values[p.product_id])
        return (big, small, larger) if values[big.product_id] != values[small.product_id] else None
    return None


def compare_answer(products: list[Product], asked: Intent, paid: Basket | None = None,
                   fits: Sequence[str] | None = None,
                   measured: tuple[Product, Product, str] | None = None) -> tuple[str, list[str]]:
    """Each product's verified price (and what it is for when asked how they differ), then which is
    cheaper or dearer — a conclusion drawn from the figures just stated: with `paid` (one of each, priced
    under their promotions), from what is paid now, each discounted price stated beside its list price.
    Asked which one suits a need (哪个能放湿衣服; `fits` not None), the one the search found for it (in
    `fits`) comes first, said to match by its description, and no conclusion about price is drawn. `measured`: the
    caller's `measured_comparison` of these products (哪个能装的水多), when the message compares by a figure."""
    by_stock = Ask.STOCK in asked.asks and not compares_prices(asked)   # 哪个库存多 / 哪个剩的多: each one's stock
    differ = not compares_prices(asked) and not by_stock
    fit = next((p for p in products if p.product_id in (fits or ())), None) if not by_stock else None
    if fit is not None:
        products = [fit, *(p for p in products if p is not fit)]
    words = next((w for pattern, w in ATTRIBUTE_WORDS if pattern.search(asked.text)), None)

    def about(p: Product) -> str:
        if words is not None:   # 哪个重 / 哪个容量大: the attribute each record states
            found = [c for c in _clauses(p) if any(w in c for w in words)]
            if found:
                return "，" + "，".join(dict.fromkeys(found))
        return (f"，{p.description}" if differ and p.description else "") \
            + (f"，规格：{p.specifications}" if differ and p.specifications else "") \
            + (f"，适用：{p.usage}" if differ and p.usage else "")
    lines = [(f"{_label(p)}售价{yuan(p.price)}" if p.price is not None else f"{_label(p)}{NO_PRICE}")
             + _now_text(_paid_now(paid, p.product_id)) + (_stock_text(p) if by_stock else "") + about(p)
             for p in products]
    text = "；".join(lines) + "。"
    if by_stock:   # a stock question, not which one suits a need
        return text + _more_stock(products), _with_paid([p.evidence_id for p in products], products, paid)
    if measured is not None:   # 哪个能装的水多: by the figures stated
        big, small, larger = measured
        said = f"{small.product_name}更轻" if larger == "更重" and "轻" in asked.text else f"{big.product_name}{larger}"
        return text + said + "。", _with_paid([p.evidence_id for p in products], products, paid)
    if fits is not None:
        return (f"按商品介绍，{fit.product_name}更符合您说的需求。" if fit else "") + text, \
            _with_paid([p.evidence_id for p in products], products, paid)
    priced = [p for p in products if p.price is not None]
    if len(priced) < len(products) and not differ:
        unpriced = "、".join(p.product_name for p in products if p.price is None)
        text += f"因为{unpriced}{NO_PRICE}，暂时无法比较价格。"
    if len(priced) >= 2:
        def price(p: Product) -> Decimal:
            line = _paid_now(paid, p.product_id)
            return line.final_total if line is not None else p.price
        cheap, dear = min(priced, key=price), max(priced, key=price)
        after = "算上优惠，" if any(_paid_now(paid, p.product_id) for p in priced) else ""
        if price(cheap) == price(dear):
            text += f"{after}两者价格相同。"
        elif "贵" in asked.text:
            text += f"{after}{dear.product_name}更贵。"
        else:
            text += f"{after}{cheap.product_name}更便宜。"
    return text, _with_paid([p.evidence_id for p in products], products, paid)


def most_in_stock(products: Iterable[Product]) -> Product | None:
    """The product with the most in stock by its record (the first of a tie); None when no record states stock."""
    return max((p for p in products if p.stock_quantity is not None), key=lambda p: p.stock_quantity, default=None)


def _more_stock(products: list[Product]) -> str:
    """Which of the products compared has more in stock — drawn from the stock figures just stated."""
    stocked = [p for p in products if p.stock_quantity is not None]
    if len(stocked) < 2:
        return ""
    most = most_in_stock(stocked)
    if all(p.stock_quantity == most.stock_quantity for p in stocked):
        return "两者库存相同。" if len(stocked) == 2 else "库存相同。"
    return f"{most.product_name}库存更多。"


def _paid_now(paid: Basket | None, product_id: str) -> Quote | None:
    """The product's line of `paid` (one of each, priced under their promotions) when a promotion lowers
    what it costs now."""
    line = next((q for q in paid.lines if q.product_id == product_id), None) if paid is not None else None
    return line if line is not None and line.applied_promotion is not None and line.final_total < line.subtotal \
        else None


def _now_text(line: Quote | None) -> str:
    return f"，按“{line.applied_promotion.promotion_text}”实付{yuan(line.final_total)}" if line is not None else ""


def _with_paid(cites: list[str], products: list[Product], paid: Basket | None) -> list[str]:
    """The citations plus the calculations of the discounted prices stated."""
    lines = [_paid_now(paid, p.product_id) for p in products]
    return cites + [line.evidence_id for line in lines if line is not None]


def each_answer(products: list[Product], findings: Findings, question: str,
                asks: frozenset[Ask]) -> tuple[str, list[str]]:
    """Several products each asked about (滑板和泳镜各还剩多少, 手表有货吗？篮球鞋有啥活动): each one's own
    facts — the attribute asked, with the price, stock and promotions asked beside it; else its price, stock
    and promotions — and no total nobody asked for."""
    texts, cites = [], []
    for product in products:
        if Ask.SPEC in asks:
            text, found = spec_answer(product, question, with_price=Ask.PRICE in asks, with_stock=Ask.STOCK in asks)
            if Ask.PROMOTION in asks:   # …and its promotions, asked beside (乒乓球有啥活动吗 还有乒乓拍是横拍还是直拍)
                sentence, promo_cites = _promotion_sentence(product, findings.promotions.get(product.product_id, []))
                text, found = text + sentence, [*found, *promo_cites]
        else:
            alone = replace(findings, candidates=[product.product_id], calculation=None)
            text, found = product_answer(alone, wants_price=False, wants_alternatives=False)
        texts.append(text)
        cites += found
    return "\n".join(texts), list(dict.fromkeys(cites))


def unpriced_basket_answer(products: list[Product], refusal: QuoteRefusal) -> tuple[str, list[str]]:
    """Several products asked about together (a sum, a difference) when one has no price: each one's
    price or 价格暂未提供, and no amount computed."""
    lines = [f"{_label(p)}售价{yuan(p.price)}" if p.price is not None else f"{_label(p)}{NO_PRICE}" for p in products]
    name = next((p.product_name for p in products if p.product_id == refusal.product_id), "其中有商品")
    return ("；".join(lines) + f"。因为{name}{NO_PRICE}，暂时无法为您计算金额，可以联系人工客服确认。",
            [p.evidence_id for p in products])


def basket_answer(basket: Basket, stock: Mapping[str, Product] | None = None,
                  budget: Decimal | None = None) -> tuple[str, list[str]]:
    """Each line with its own promotion, then the sum; the sum is the basket calculation's own. `stock`: the
    products' records when their stock is asked too (网球拍多少钱，网球还有多少库存？想一起买): each line says it.
    `budget`: the customer's budget for it all (预算两千，一顶帐篷加两根登山杖，够不): whether the sum is within it."""
    lines, cites = [], []
    for line in basket.lines:
        buy = "首次购买" if line.is_first_purchase and line.applied_promotion and line.applied_promotion.first_purchase \
            else "买"
        # a promotion lowers what is paid: the list price first (足球跟篮球各多少钱: 120元, 9折 → 108元)
        listed = f"售价{yuan(line.unit_price)}，" if line.final_total < line.subtotal else ""
        text = f"{line.product_name}{listed}{buy}{line.quantity}{line.unit}实付{yuan(line.final_total)}"
        if line.applied_promotion:
            text += f"（按“{line.applied_promotion.promotion_text}”）"
        if line.free_quantity:
            text += f"，另送{line.free_quantity}{line.unit}"
        if line.free_shipping:   # said of the line whose promotion earns it, not of the whole basket
            text += "，可以包邮"
        if stock is not None and (product := stock.get(line.product_id)) is not None and _stock_text(product):
            text += _stock_text(product)
            cites.append(product.evidence_id)
        lines.append(text)
    within = "" if budget is None else "在您的预算之内。" if basket.final_total <= budget else "超出了您的预算。"
    return ("；".join(lines) + f"；合计{yuan(basket.final_total)}。{within}",
            [*(line.evidence_id for line in basket.lines), *cites, basket.evidence_id])


_SIZE_TOLD = re.compile(r"[0-9一二三四五六七八九十]码")   # 有没有四十三码的, 我穿42码: a size asked of the record
# What a customer's attribute question looks for in a product record, by attribute.
ATTRIBUTE_WORDS = (
    (re.compile("材质|面料|材料|什么做的|啥做的|什么料|material|made of"), ("材质", "面料", "外皮", "皮", "材料", "碳", "橡胶", "硅胶", "铸铁", "枫木", "不锈钢", "乳胶", "TPE", "EVA", "PU")),
    (re.compile("防水|防泼水|防雨|下雨|怕水|沾水|waterproof"), ("防水", "防泼水", "防雨", "防雾")),
    (re.compile("几个人|几人|多少人|人住|人用|how many people"), ("人用", "双人", "人")),
    (re.compile("几个|几只|多少个|多少只|装几|一盒|一筒|一罐|一套|单只|单个|还是[一两]?[只个双对副]"), ("每盒", "每筒", "每罐", "装", "条装", "只")),
    (re.compile("适合|适用|能用|可以用|给谁|谁用|什么人|孩子|小孩|儿童|新手|初学|体重|年纪|岁|suitable|kids"), ("适合", "适用", "孩子", "初学", "入门", "体重")),
    (re.compile("重量|分量|多重|多沉|沉不沉|哪个沉|更沉|几斤|几公斤|多少斤|多少公斤|几克|多少克|轻不轻|重不重|总重|哪个重|哪个轻|更重|更轻|heavy|weight"), ("重量", "公斤", "克", "轻量")),
    (re.compile("容量|几升|多少升|毫升|装多少|装[得的]多|装的水多|装水多|能装.{0,2}多|capacity"), ("容量", "升", "毫升")),
    (re.compile(f"尺码|码数|几码|多大码|{_SIZE_TOLD.pattern}|几号|多大号|尺寸|多大|多长|多宽|多厚|长度|厚不厚|厚度|薄不薄|长不长|宽不宽|size|how big|how long"), ("尺码", "码", "号", "厘米", "毫米", "寸", "长")),
    (re.compile("续航|电池|多久充"), ("续航",)),
    (re.compile("防滑|抓地"), ("防滑", "抓地")),
    (re.compile("透气|闷"), ("透气", "网面", "网布")),
)


def attribute_asked(question: str) -> str:
    """The parts of a message that ask an attribute the answers know (有多厚, 多重), joined; empty when none does."""
    return "，".join(p for p in re.split(r"[，,。？?！!；;\s]", question)
                    if any(asked.search(p) for asked, _ in ATTRIBUTE_WORDS))


def _clauses(product: Product) -> list[str]:
    fields = [product.description, product.specifications, product.usage]
    return [c.strip() for f in fields if f for c in re.split("[，,。；;]", f) if c.strip()]


# Characters of a question that ask rather than say what about (能装热水吗: 装, 热, 水 say it).
_ASKING_CHARS = frozenset("吗呢吧啊呀的了是不没有能可以会要用么什怎样多少几哪个这那请问你们我它还都也就很太")


def _sharing(question: str, product: Product) -> list[str]:
    """A question no attribute word names (能装热水吗): the record's clauses sharing most of its characters
    that are neither asking words nor the product's name (冷热都能装); none when nothing is shared."""
    wanted = {c for c in question if is_han(c)} - _ASKING_CHARS - set(product.product_name)
    if not wanted:
        return []
    shared = [(len(wanted & set(c)), c) for c in _clauses(product)]
    best = max((n for n, _ in shared), default=0)
    return [c for n, c in shared if n == best] if best else []


_HOW_MANY_OF = re.compile(r"(?:几|多少)\s*([\u4e00-\u9fff])")   # 几只, 多少磅: a unit the record may state


def counts_a_unit_of(product: Product, question: str) -> bool:
    """几速的 / 几节的 / 几层: a number the record states in that unit (77速, 三节) is asked — an attribute,
    whatever the router read; not a count bought (几个, 几双: the product's own measure word)."""
    record = "".join(_clauses(product))
    if _SIZE_TOLD.search(question) and "尺码" in record:
        return True   # (a size told: the sizes the record states)
    units = {m.group(1) for m in _HOW_MANY_OF.finditer(question)} - {measure_word(product.product_name), "个"}
    return any(re.search(f"{NUM}{re.escape(u)}", record) for u in units)


def spec_answer(product: Product, question: str = "", with_price: bool = True,
                with_stock: bool = False) -> tuple[str, list[str]]:
    """The attribute asked about, quoted from whichever field of the record states it (description,
    specifications or usage), then the record's specifications and use, then (if asked) the stock and the price
    (哑铃套装总共多重 还剩几套: the weight, then how many are left)."""
    found: list[str] = []
    for part in re.split("[，,。？?！!；;]", question):   # each question of the message, each its attribute
        known = [words for asked, words in ATTRIBUTE_WORDS if asked.search(part)]
        if known:
            found += [c for c in _clauses(product) if any(w in c for w in known[0])]
        elif part.strip():
            found += _sharing(part, product)
    lead = f"{_label(product)}：{'，'.join(dict.fromkeys(found))}。" if found else ""
    record = []
    if product.specifications:
        record.append(f"规格：{product.specifications}")
    if product.usage:
        record.append(f"适用：{product.usage}")
    if not lead:
        lead = f"{_label(product)}：{product.description}。" if product.description else f"{_label(product)}。"
    body = "；".join(record) + "。" if record else ""
    stock = "" if not with_stock or product.stock_quantity is None else \
        f"{product.product_name}库存{product.stock_quantity}{measure_word(product.product_name)}。" \
        if product.stock_quantity > 0 else f"{product.product_name}目前缺货。"
    price = "" if not with_price else f"{product.product_name}售价{yuan(product.price)}。" \
        if product.price is not None else f"{product.product_name}{NO_PRICE}。"
    return lead + body + stock + price, [product.evidence_id]


def brand_answer(product: Product) -> tuple[str, list[str]]:
    price = f"，售价{yuan(product.price)}" if product.price is not None else f"，{NO_PRICE}"
    return f"{product.product_name}是{product.brand or '店铺自有'}品牌的{price}。", [product.evidence_id]


def not_sold_line(subject: str) -> str:
    return f"抱歉，本店没有销售“{subject}”。"


def related_answer(subject: str, products: list[Product]) -> tuple[str, list[str]]:
    """A near miss: say first that the thing itself is not sold, then name related products (no prices:
    the customer did not ask about them)."""
    names = "、".join(_label(p) for p in products)
    return (f"{not_sold_line(subject)}相关的商品有：{names}，需要的话可以问我它们的详情。",
            [p.evidence_id for p in products])


def ruled_out(product: Product, asked: Intent) -> bool:
    """Whether the customer ruled the product out (除了耐克: its brand; 鞋子不要: its kind; 帐篷就不要了: itself)."""
    return asked.ruled_out.excludes(product.product_id, product.brand)


def of_kind(kind: str, product: Product) -> bool:
    """Whether the product's name (without its pack) ends with the character naming a kind (包, 鞋, 拍)."""
    return bool(kind) and (base_name(product.product_name) or product.product_name).endswith(kind)


def same_kind(subject: str, product_name: str) -> bool:
    """Whether a product is of the kind a word names by its head character, the thing a Chinese compound
    is (运动鞋, 球鞋 → 跑步鞋, 越野跑鞋: 鞋; 球袜 → 运动袜（3双装）: 袜) — a synonym or a hypernym of what is
    sold, not a different thing."""
    base = base_name(product_name) or product_name
    stem = noun_stem(subject)   # 鞋子 → 鞋
    return len(subject) >= 2 and "\u4e00" <= stem[-1] <= "\u9fff" and base.endswith(stem[-1])


def written_in_full(subject: str, product_name: str) -> bool:
    """Whether the product's name ends in a dictionary word made of one character of each of the subject's
    dictionary words, in order (游泳眼镜 → 泳镜 of 防雾泳镜; 腰带包 → 腰包 of 跑步腰包): the subject is what the
    product is, written in full — not a near miss. A subject the dictionary holds is a word of its own (滑雪板 is
    no 滑板); a short form written inside the subject is a part of it, not its abbreviation (篮球鞋 holds 球鞋 of
    足球鞋, 手表表带 holds 手表)."""
    if len(subject) < 3 or not all(map(is_han, subject)) or senses(subject):
        return False
    cut = pieces(subject)
    if len(cut) < 2:
        return False
    base = base_name(product_name) or product_name
    short = base[-len(cut):]   # what the product is: the end of its name
    return (len(base) >= len(cut) and short not in subject and bool(senses(short))
            and all(c in piece for c, piece in zip(short, cut, strict=True)))


def dictionary_synonym(subject: str, product: Product) -> bool:
    """Whether the dictionary gives the word one of the product's own English names as a sense (背囊 →
    backpack, 溜冰鞋 → roller skates), or, for a compound it does not hold that ends as the product's name
    does, gives its qualifier one (旱冰鞋 → 旱冰: roller skating; 成人轮滑鞋 is `roller skates`) or the qualifier
    and the head together (门将手套 → goalkeeper + glove: `goalkeeper gloves` of 守门员手套): another name for the
    same thing, not a near miss (retrieval/bridge.py links the search's evidence the same way); or, for one
    that ends otherwise, its qualifier with a sense of its last character (乒乓球板 → table tennis + bat:
    `table tennis bat` of 乒乓球拍)."""
    if not all(is_han(ch) for ch in subject):
        return False
    names = {frozenset(tokens(fold(a))) for a in product.aliases if a and not any(is_han(ch) for ch in a)}
    if not names:
        return False
    base = base_name(product.product_name) or product.product_name
    said = senses(subject)
    if not said and (qualifier := qualifier_senses(subject)):
        if base.endswith(subject[-1:]):
            # the qualifier's senses alone (旱冰鞋 → roller skating) and with the head's (门将手套 → goalkeeper gloves)
            said = (*qualifier, *reading(subject, {subject[-1]}))
        else:   # another head: the qualifier with each sense of it (乒乓球板 → table tennis + bat: 乒乓球拍)
            said = tuple(tuple(dict.fromkeys(q + h)) for q in qualifier for h in senses(subject[-1])
                         if not set(h) <= set(q))   # 乒乓球桌: table tennis + table says no more than 乒乓球
    return any(frozenset(sense) in names for sense in said)


def mistyped(subject: str, product_name: str) -> bool:
    """Whether a name is the product's own with one character mistyped (兵乓球拍 for 乒乓球拍, 壸铃 for 壶铃): as long,
    one differs and not the last (the head: 羽毛球鞋 is no 羽毛球拍), the character typed makes no word of the
    dictionary with those beside it (女士泳裤 is no typo of 男士泳裤), the name's own character does (乒乓), and the two
    rhyme, as keys typed by sound slip (bing / ping; 跑山鞋 is no typo of 跑步鞋) in a name of three characters or more,
    or look alike by a part few characters have (壸/壶: 士; retrieval/shapes.py), as a glance slips."""
    base = base_name(product_name) or product_name
    if len(subject) != len(base) or len(base) < 2 or not all(map(is_han, subject + base)):
        return False
    differ = [i for i, (a, b) in enumerate(zip(subject, base, strict=True)) if a != b]
    if len(differ) != 1 or differ[0] == len(base) - 1:
        return False
    typed, own = subject[differ[0]], base[differ[0]]
    rhymes = len(base) >= 3 and lazy_pinyin(typed, style=Style.FINALS) == lazy_pinyin(own, style=Style.FINALS)
    if not rhymes and not components(typed) & (components(own) | {own}):
        return False
    beside = [j for j in (differ[0] - 1, differ[0]) if 0 <= j <= len(base) - 2]
    jieba.dt.check_initialized()
    # (a slip of the eye needs no word of the name's own there: the dictionary has no 壶铃)
    return not any(jieba.dt.FREQ.get(subject[j:j + 2]) for j in beside) \
        and (not rhymes or any(jieba.dt.FREQ.get(base[j:j + 2]) for j in beside))


def described_by_record(subject: str, product: Product) -> bool:
    """Whether a name is the product's own, qualified as its record describes it: the same kind by the head,
    and what comes before the head written in the product's name or record (撸铁手套: 健身手套 is described for
    撸铁; 减震跑鞋: 缓震跑步鞋 for 减震; 平花鞋: 成人轮滑鞋 is 专业平花轮滑鞋) — not a near miss (拳击手套: no 拳击 in
    健身手套's record)."""
    if not same_kind(subject, product.product_name):
        return False
    words = plain_words(subject)
    # the words before the head word (撸铁 + 手套), or the characters before the head character (平花 + 鞋: jieba
    # cuts 平 / 花鞋)
    qualifiers = {subject[:-len(words[-1])] if len(words) > 1 else "", noun_stem(subject)[:-1]}
    record = record_text(product)
    return any(len(q) >= 2 and fold(q) in record for q in qualifiers)


def record_text(product: Product, *more: str) -> str:
    """What the product's record writes of it — its names, description, specifications and use, and `more` (its
    promotions' texts) — folded: where a word written beside its name is looked up (撸铁, 阻力, 半价)."""
    return fold(" ".join([product.product_name, *product.aliases, product.description, product.specifications,
                          product.usage, *more]))


def kind_answer(subject: str, products: list[Product]) -> tuple[str, list[str]]:
    """A word for a kind of thing the shop sells under other names (运动鞋): the products of that kind
    search found, each with its verified price — never "not sold"."""
    lines = [f"{_label(p)}，售价{yuan(p.price)}" if p.price is not None else f"{_label(p)}，{NO_PRICE}"
             for p in products]
    return (f"您问的“{subject}”，店里有这些：\n" + "；\n".join(lines) + "。需要的话可以问我它们的详情。",
            [p.evidence_id for p in products])


def not_sold_answer(subject: str, *others: str) -> str:
    """Nothing verified fits: say so, naming the thing asked about (the reader's goods phrase) when there
    is one, and the other goods listed with it; a described need that nothing fits is not called "not sold"."""
    if subject and not find_mentions(subject):
        named = "和".join(f"“{g}”" for g in (subject, *others) if not find_mentions(g))
        it = "它们" if others else "它"
        return (f"抱歉，本店没有销售{named}，不能为您提供{it}的价格或库存信息。"
                "您可以告诉我具体的用途，我帮您看看店里有没有合适的商品。")
    return ("抱歉，本店目前没有找到符合您描述的商品，不能为您提供价格或库存信息。"
            "您可以换个说法，或告诉我商品名称再问我。")


def readable(content: str) -> str:
    """A policy chunk as a chat message: a Markdown table becomes one line per row ("微信支付：…")."""
    lines, header = [], None
    for line in content.splitlines():
        if not line.lstrip().startswith("|"):
            lines.append(line)
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if all(set(c) <= set("-: ") for c in cells):
            continue   # the separator row
        if header is None:
            header = cells
            continue
        if len(cells) == 2:
            lines.append(f"{cells[0]}：{cells[1]}")
        else:
            rest = "，".join(f"{h} {c}" for h, c in zip(header[1:], cells[1:], strict=False))
            lines.append(f"{header[0]} {cells[0]}：{rest}")
    return "\n".join(lines)


def policy_answer(findings: Findings, whole_sets: bool = False) -> tuple[str, list[str]]:
    """The best chunk of each policy search; with `whole_sets` (searches by topic) every chunk it returned
    (the best one for the words, and the topic's overview)."""
    texts, cites = [], []
    for documents in findings.document_sets:
        for doc in documents if whole_sets else documents[:1]:
            if doc.evidence_id in cites:
                continue
            path = doc.title.split(" › ")
            title = f"{path[-1]}（{path[0]}）" if len(path) > 1 else path[0]   # 修改地址（发货与配送）
            texts.append(f"关于{title}：\n{readable(doc.content)}")
            cites.append(doc.evidence_id)
    return "\n".join(texts), cites


ORDERS_FOUND = "为您查到以下订单："
_ORDER_LINE = re.compile(r"^订单([A-Za-z0-9-]+)（", re.M)   # each order's line, as orders_answer writes it


def orders_listed(answer: str) -> list[str]:
    """The order ids one of our own answers listed (orders_answer), in the order it showed them; [] for any other."""
    return _ORDER_LINE.findall(answer) if ORDERS_FOUND in answer else []
_POLICY_HEADING = re.compile(r"^关于[^：\n]{1,40}：$", re.M)   # policy_answer's heading of each chunk it quotes


def quotes_policy(answer: str) -> bool:
    """Whether one of our answers quoted a store policy (its chunks, each under 关于…：)."""
    return bool(_POLICY_HEADING.search(answer))

_COUNT_PRICED = re.compile(r"(?<![再购])买(?P<n>\d{1,4})")   # (再买1个即可…, 需购买3个: a promotion's condition)


def counts_priced(answer: str, vocabulary: Vocabulary) -> dict[str, int]:
    """The count each product was priced for in one of our own answers, read back from the wording this module writes
    (买20根计数跳绳共780元 in a price answer, 羽毛球（12只装）买5筒实付490元 in a basket line): in each sentence or line, the
    first product named and the first count bought."""
    out: dict[str, int] = {}
    if vocabulary.pattern is None:
        return out
    for clause in re.split(r"[。；;\n]", fold(answer)):
        named = vocabulary.pattern.search(clause)
        count = _COUNT_PRICED.search(clause)
        if named is not None and count is not None and int(count.group("n")) >= 1:
            out.setdefault(vocabulary.product_of(named.group(0)), int(count.group("n")))
    return out




def orders_answer(findings: Findings, products: Sequence[str] = (), refund: bool = False) -> tuple[str, list[str]]:
    """The customer's orders; with `products` named (买足球那一单), the orders holding them when there are any. With
    `refund` (退我多少钱), what one unit of each line of several cost after its promotions: what a return of part of
    it refunds, 按实际支付金额 (the order's own record, divided by Decimal in db.facts)."""
    orders = list(findings.orders or [])
    holding = [o for o in orders if any(i.product_id in products for i in o.items)]
    lines, cites = [], []
    for order in holding or orders:
        items = "、".join(f"{i.product_name}{i.quantity}{measure_word(i.product_name)}" for i in order.items)
        lines.append(f"订单{order.order_id}（{order.created_at[:10]}下单）：{items}，金额{yuan(order.total)}，"
                     f"状态：{order.status}。")
        cites.append(order.evidence_id)
    each = [f"{i.product_name}折合每{measure_word(i.product_name)}{yuan(i.paid_each)}"
            for order in (holding or orders) for i in order.items if i.quantity > 1 and i.paid_each is not None]
    if refund and each:
        lines.append(f"退货按实际支付金额退款：{'，'.join(each)}。")
    return f"{ORDERS_FOUND}\n" + "\n".join(lines), cites


CATEGORIES_OFFERED = 16   # a longer category list is cut here, "等" after it


def browse_answer(categories: CategoryList | None, for_whom: bool = False) -> str:
    """What a shop assistant says to a customer who has not said what they want: what the shop sells, by
    category (the fullest first), and a question that narrows it — never a product picked at random."""
    names = [c.name for c in categories.categories] if categories else []
    if not names:
        return CLARIFY
    shown = "、".join(names[:CATEGORIES_OFFERED]) + ("等" if len(names) > CATEGORIES_OFFERED else "")
    return f"我们店里的运动用品有这些类别：{shown}。{WHOM_QUESTION if for_whom else BROWSE_QUESTION}"
