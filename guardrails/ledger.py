"""The evidence ledger: what the database verified during one turn, kept as typed facts by role.

Each evidence id (`product:001`, `promotion:P001`, `calc:001:2:regular`, `doc:returns#1`, `order:A1001`) keeps
the record it came from and the figures it vouches for, each with its role (the price of 001, the spend
threshold of P006, the total for 2 units…), the conditions it holds under and, for a calculation, the
quantity and first-purchase assumption it was computed for. Retrieval candidates never enter it.

guardrails imports nothing of ours: the records are read through the Protocols below, which the
database's frozen records (db/facts.py) satisfy.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from enum import StrEnum
from typing import Protocol

from guardrails.figures import find_mentions
from guardrails.roles import KIND_OF, Kind, Role


class _Cited(Protocol):
    @property
    def evidence_id(self) -> str: ...


class _OfProduct(_Cited, Protocol):
    @property
    def product_id(self) -> str: ...


class ProductFacts(_OfProduct, Protocol):
    @property
    def product_name(self) -> str: ...
    @property
    def brand(self) -> str: ...
    @property
    def price(self) -> Decimal | None: ...
    @property
    def stock_quantity(self) -> int | None: ...
    @property
    def description(self) -> str: ...
    @property
    def specifications(self) -> str: ...
    @property
    def usage(self) -> str: ...


class PromotionRule(_OfProduct, Protocol):
    @property
    def promotion_id(self) -> str: ...
    @property
    def promotion_text(self) -> str: ...
    @property
    def discount_type(self) -> str: ...
    @property
    def discount_value(self) -> Decimal | None: ...
    @property
    def minimum_quantity(self) -> int | None: ...
    @property
    def minimum_spend(self) -> Decimal | None: ...
    @property
    def first_purchase(self) -> bool: ...


class PriceQuote(_OfProduct, Protocol):
    @property
    def product_name(self) -> str: ...
    @property
    def quantity(self) -> int: ...
    @property
    def is_first_purchase(self) -> bool: ...
    @property
    def unit_price(self) -> Decimal: ...
    @property
    def subtotal(self) -> Decimal: ...
    @property
    def final_total(self) -> Decimal: ...
    @property
    def discount_amount(self) -> Decimal: ...
    @property
    def free_quantity(self) -> int: ...
    @property
    def total_units(self) -> int: ...
    @property
    def paid_per_unit(self) -> Decimal | None: ...
    @property
    def applied_promotion(self) -> PromotionRule | None: ...
    @property
    def benefits(self) -> Sequence[PromotionRule]: ...
    @property
    def free_shipping(self) -> bool: ...
    @property
    def promotions(self) -> Sequence[PromotionRule]: ...


class BasketQuote(_Cited, Protocol):
    @property
    def lines(self) -> Sequence[PriceQuote]: ...
    @property
    def is_first_purchase(self) -> bool: ...
    @property
    def subtotal(self) -> Decimal: ...
    @property
    def final_total(self) -> Decimal: ...
    @property
    def discount_amount(self) -> Decimal: ...


class ReceivePlanFacts(_OfProduct, Protocol):
    """The cheapest way to receive `wanted` units: the quote of the paid quantity chosen."""
    @property
    def wanted(self) -> int: ...
    @property
    def quote(self) -> PriceQuote: ...
    @property
    def promotions(self) -> Sequence[PromotionRule]: ...


class ShortfallFacts(Protocol):
    @property
    def from_quantity(self) -> int: ...
    @property
    def units_short(self) -> int: ...
    @property
    def amount_short(self) -> Decimal | None: ...


class ThresholdPlanFacts(_OfProduct, Protocol):
    """How to reach a promotion's threshold: the quotes at the current quantity, just below and at the target,
    and the gaps from the current quantity and from just below."""
    @property
    def current(self) -> PriceQuote | None: ...
    @property
    def below(self) -> PriceQuote | None: ...
    @property
    def target(self) -> PriceQuote: ...
    @property
    def shortfalls(self) -> Sequence[ShortfallFacts]: ...
    @property
    def promotions(self) -> Sequence[PromotionRule]: ...


class AmountFacts(Protocol):
    @property
    def evidence_id(self) -> str: ...
    @property
    def value(self) -> Decimal: ...
    @property
    def product_id(self) -> str | None: ...


class DifferenceFacts(_Cited, Protocol):
    """The difference of two verified amounts (≥ 0) and which is larger (None: equal)."""
    @property
    def first(self) -> AmountFacts: ...
    @property
    def second(self) -> AmountFacts: ...
    @property
    def difference(self) -> Decimal: ...
    @property
    def dearer(self) -> AmountFacts | None: ...
    @property
    def cheaper(self) -> AmountFacts | None: ...


class PolicyText(_Cited, Protocol):
    @property
    def title(self) -> str: ...
    @property
    def content(self) -> str: ...


class OrderLine(Protocol):
    @property
    def product_id(self) -> str: ...
    @property
    def product_name(self) -> str: ...
    @property
    def quantity(self) -> int: ...
    @property
    def paid_each(self) -> Decimal | None: ...


class OrderFacts(_Cited, Protocol):
    @property
    def total(self) -> Decimal: ...
    @property
    def items(self) -> Sequence[OrderLine]: ...


class AggregateLine(Protocol):
    @property
    def key(self) -> str: ...
    @property
    def value(self) -> Decimal: ...
    @property
    def orders(self) -> int: ...
    @property
    def share(self) -> Decimal | None: ...


class AggregateFacts(_Cited, Protocol):
    """An aggregate over orders: one metric, for a period, over groups (or the whole)."""
    @property
    def metric(self) -> str: ...
    @property
    def period(self) -> tuple[date | None, date | None]: ...
    @property
    def rows(self) -> Sequence[AggregateLine]: ...
    @property
    def whole(self) -> Decimal: ...
    @property
    def orders(self) -> int: ...
    @property
    def definition_key(self) -> str | None: ...     # the named metric ("total" 销售额, "placed" 下单额…), if any
    @property
    def stated_by(self) -> tuple[tuple[str, ...], ...]: ...   # how an answer may name the statuses it counted


# The role each metric's figures have (a sum of orders is an order total).
METRIC_ROLE = {"count": Role.ORDER_COUNT, "total": Role.ORDER_TOTAL, "average": Role.AVERAGE, "max": Role.LARGEST,
               "min": Role.SMALLEST, "units": Role.UNITS_SOLD}
WHOLE = "全部"


class EvidenceKind(StrEnum):
    PRODUCT = "product"
    PROMOTION = "promotion"
    CALC = "calc"
    DOC = "doc"
    ORDER = "order"
    AGGREGATE = "agg"


# Promotion types, as the catalog names them (DESIGN.md contract).
PERCENTAGE, FIXED_REDUCTION, BUY_X_GET_Y, GIFT, FREE_SHIPPING = (
    "percentage", "fixed_reduction", "buy_x_get_y", "gift", "free_shipping")


@dataclass(frozen=True)
class Conditions:
    """What must hold for a figure to apply; each must be stated next to it (or set by the customer)."""

    first_purchase: bool = False
    minimum_quantity: int | None = None
    minimum_spend: Decimal | None = None

    def __bool__(self) -> bool:
        return self.first_purchase or self.minimum_quantity is not None or self.minimum_spend is not None


NONE = Conditions()


def conditions_of(promo: PromotionRule | None) -> Conditions:
    if promo is None:
        return NONE
    return Conditions(promo.first_purchase, promo.minimum_quantity, promo.minimum_spend)


@dataclass(frozen=True)
class Figure:
    """One verified figure: its role, value, where it comes from and what it depends on."""

    role: Role
    kind: Kind
    value: Decimal
    evidence_id: str
    product_id: str | None = None
    conditions: Conditions = NONE
    quantity: int | None = None          # a calculation's paid units
    first_purchase: bool | None = None   # a calculation's first-purchase assumption
    source: str = ""                     # the promotion or document it belongs to, for messages
    basket: frozenset[str] = frozenset() # a basket figure: the products it sums over

    def describe(self, unit: str = "") -> str:
        """'the spend threshold of promotion P006', 'the total for 2 units (calc:001:2:regular)'."""
        if self.basket:
            return f"the {self.role} of the basket {self.evidence_id} ({', '.join(sorted(self.basket))})"
        if self.quantity is not None:
            first = ", first purchase" if self.first_purchase else ""
            return f"the {self.role} for {self.quantity}{unit} ({self.evidence_id}{first})"
        return f"the {self.role} of {self.source or self.evidence_id}"


def _figure(role: Role, value: object, evidence_id: str, product_id: str | None, **extra) -> list[Figure]:
    if value is None or isinstance(value, bool):
        return []
    return [Figure(role, KIND_OF[role], Decimal(str(value)), evidence_id, product_id, **extra)]


def _text_figures(text: str, evidence_id: str, product_id: str | None) -> list[Figure]:
    return [Figure(Role.TEXT, m.kind, m.value, evidence_id, product_id)
            for m in find_mentions(text) if m.value is not None]


def promotion_figures(promo: PromotionRule, evidence_id: str) -> list[Figure]:
    """The figures a promotion rule vouches for, by role, with the conditions its benefit needs."""
    pid, kind, cond = promo.product_id, promo.discount_type, conditions_of(promo)
    source = f"promotion {promo.promotion_id}"
    out = _figure(Role.THRESHOLD, promo.minimum_spend, evidence_id, pid, source=source)
    if kind == PERCENTAGE:
        out += _figure(Role.RATE, promo.discount_value, evidence_id, pid, conditions=cond, source=source)
        out += _figure(Role.MIN_QUANTITY, promo.minimum_quantity, evidence_id, pid, source=source)
    elif kind == FIXED_REDUCTION:
        out += _figure(Role.REDUCTION, promo.discount_value, evidence_id, pid, conditions=cond, source=source)
    elif kind == BUY_X_GET_Y:
        out += _figure(Role.PAID_UNITS, promo.minimum_quantity, evidence_id, pid, source=source)
        out += _figure(Role.MIN_QUANTITY, promo.minimum_quantity, evidence_id, pid, source=source)
        out += _figure(Role.FREE_UNITS, promo.discount_value, evidence_id, pid, conditions=cond, source=source)
    else:
        out += _figure(Role.MIN_QUANTITY, promo.minimum_quantity, evidence_id, pid, source=source)
    return out + _text_figures(promo.promotion_text, evidence_id, pid)


def quote_figures(quote: PriceQuote) -> list[Figure]:
    eid, pid, qty, first = quote.evidence_id, quote.product_id, quote.quantity, quote.is_first_purchase
    cond = conditions_of(quote.applied_promotion)
    per_quote = {"quantity": qty, "first_purchase": first}
    out = _figure(Role.PRICE, quote.unit_price, eid, pid, source=f"product {pid}")
    out += _figure(Role.SUBTOTAL, quote.subtotal, eid, pid, **per_quote)
    out += _figure(Role.TOTAL, quote.final_total, eid, pid, conditions=cond, **per_quote)
    if quote.discount_amount:
        out += _figure(Role.SAVING, quote.discount_amount, eid, pid, conditions=cond, **per_quote)
    out += _figure(Role.PAID_UNITS, qty, eid, pid, **per_quote)
    out += _figure(Role.PER_UNIT, quote.paid_per_unit, eid, pid, conditions=cond, **per_quote)
    if quote.free_quantity:
        out += _figure(Role.FREE_UNITS, quote.free_quantity, eid, pid, **per_quote)
        out += _figure(Role.TOTAL_UNITS, quote.total_units, eid, pid, **per_quote)
    for promo in quote.promotions:
        out += promotion_figures(promo, eid)
    return out


@dataclass
class Evidence:
    """One verified fact source: its record, the products it speaks for and the figures it vouches for."""

    evidence_id: str
    kind: EvidenceKind
    record: object
    product_ids: frozenset[str] = frozenset()
    figures: list[Figure] = field(default_factory=list)
    texts: tuple[str, ...] = ()   # a product's or a policy document's own words (gifts, policy clauses)

    def vouches_for(self, kind: Kind, value: Decimal) -> bool:
        """Today's check: the value is a figure of this kind (a stock figure is also a buyable quantity)."""
        return any(f.value == value and (f.kind == kind or (kind == Kind.QUANTITY and f.kind == Kind.STOCK))
                   for f in self.figures)


class EvidenceLedger:
    """Everything verified in one turn, by evidence id. `brands`: every brand word of the catalog."""

    def __init__(self, brands: Iterable[str] = ()) -> None:
        self.entries: dict[str, Evidence] = {}
        self.brands: set[str] = {b for b in brands if b}
        self.products: dict[str, ProductFacts] = {}
        self.promotions: dict[str, PromotionRule] = {}
        self.quotes: dict[str, PriceQuote] = {}
        self.names: dict[str, str] = {}       # verified product name → product id

    def __contains__(self, evidence_id: object) -> bool:
        return evidence_id in self.entries

    def __len__(self) -> int:
        return len(self.entries)

    @property
    def has_product_data(self) -> bool:
        """Verified product rows: product details, or a calculation made from them."""
        return bool(self.products or self.quotes)

    @property
    def verified_product_ids(self) -> set[str]:
        return set(self.products)

    def _add(self, evidence: Evidence) -> str:
        self.entries[evidence.evidence_id] = evidence
        return evidence.evidence_id

    def add_product(self, product: ProductFacts) -> str:
        pid = product.product_id
        self.products[pid] = product
        self.names[product.product_name] = pid
        if product.brand:
            self.brands.add(product.brand)
        eid = product.evidence_id
        figures = _figure(Role.PRICE, product.price, eid, pid, source=f"product {pid}")
        figures += _figure(Role.STOCK, product.stock_quantity, eid, pid, source=f"product {pid}")
        texts = (product.description, product.specifications, product.usage)
        for text in texts:
            figures += _text_figures(text, eid, pid)
        return self._add(Evidence(eid, EvidenceKind.PRODUCT, product, frozenset({pid}), figures, texts))

    def add_promotion(self, promo: PromotionRule) -> str:
        self.promotions[promo.promotion_id] = promo
        eid = promo.evidence_id
        return self._add(Evidence(eid, EvidenceKind.PROMOTION, promo, frozenset({promo.product_id}),
                                  promotion_figures(promo, eid)))

    def add_quote(self, quote: PriceQuote) -> str:
        self.quotes[quote.evidence_id] = quote
        self.names.setdefault(quote.product_name, quote.product_id)
        return self._add(Evidence(quote.evidence_id, EvidenceKind.CALC, quote, frozenset({quote.product_id}),
                                  quote_figures(quote)))

    def add_basket(self, basket: BasketQuote) -> list[str]:
        """Each line as its own calculation, and the basket's sums over all of them."""
        added = [self.add_quote(line) for line in basket.lines]
        eid, pids = basket.evidence_id, frozenset(line.product_id for line in basket.lines)
        cond = Conditions(first_purchase=any(conditions_of(line.applied_promotion).first_purchase
                                             for line in basket.lines))
        figures = _figure(Role.SUBTOTAL, basket.subtotal, eid, None, basket=pids)
        figures += _figure(Role.TOTAL, basket.final_total, eid, None, conditions=cond, basket=pids,
                           first_purchase=basket.is_first_purchase)
        if basket.discount_amount:
            figures += _figure(Role.SAVING, basket.discount_amount, eid, None, conditions=cond, basket=pids)
        for line in basket.lines:   # citing the basket vouches for its lines too
            figures += [dataclasses.replace(f, evidence_id=eid) for f in self.entries[line.evidence_id].figures]
        return added + [self._add(Evidence(eid, EvidenceKind.CALC, basket, pids, figures))]

    def _restated(self, evidence_ids: Iterable[str], eid: str) -> list[Figure]:
        """The figures of evidence already filed, vouched for again under `eid` (a plan cites its quotes)."""
        return [dataclasses.replace(f, evidence_id=eid) for i in dict.fromkeys(evidence_ids)
                for f in self.entries[i].figures]

    def add_receive_plan(self, plan: ReceivePlanFacts) -> list[str]:
        """The chosen quote as its own calculation, and the plan: the quote's figures plus the units wanted
        (想要N个 may differ from the units received: to receive 7 under 买三送一 one pays 6 and gets 8)."""
        quote_id = self.add_quote(plan.quote)
        eid, pid = plan.evidence_id, plan.product_id
        figures = self._restated([quote_id], eid)
        figures += _figure(Role.WANTED_UNITS, plan.wanted, eid, pid, source=f"the units wanted ({eid})")
        return [quote_id, self._add(Evidence(eid, EvidenceKind.CALC, plan, frozenset({pid}), figures))]

    def add_threshold_plan(self, plan: ThresholdPlanFacts) -> list[str]:
        """Each quote of the plan as its own calculation, and the plan: their figures plus, from each quantity
        measured (the current one, just below the threshold), the units and the amount still short — figures
        for that quantity only (还差4元 holds for 4个, not for 3)."""
        quotes = [q for q in (plan.current, plan.below, plan.target) if q is not None]
        added = list(dict.fromkeys(self.add_quote(q) for q in quotes))
        eid, pid = plan.evidence_id, plan.product_id
        figures = self._restated(added, eid)
        for gap in plan.shortfalls:
            if gap.from_quantity < 1:
                continue   # from nothing, the gap is the threshold itself: stated as 满N, not as 还差N
            at = {"quantity": gap.from_quantity, "source": f"the gap from {gap.from_quantity} units ({eid})"}
            if gap.units_short:
                figures += _figure(Role.UNITS_SHORT, gap.units_short, eid, pid, **at)
            if gap.amount_short:
                figures += _figure(Role.SHORTFALL, gap.amount_short, eid, pid, **at)
        return added + [self._add(Evidence(eid, EvidenceKind.CALC, plan, frozenset({pid}), figures))]

    def add_difference(self, diff: DifferenceFacts) -> str:
        """The difference of two amounts: neutral (相差), and by direction (A贵N元 / A便宜N元), each tied to the
        product of its side so that the validator can tell which one is dearer. The two amounts themselves stay
        with their own evidence, which the answer cites too."""
        eid = diff.evidence_id
        pids = frozenset(p for p in (diff.first.product_id, diff.second.product_id) if p)
        source = f"the difference {eid}"
        figures = _figure(Role.DIFFERENCE, diff.difference, eid, None, source=source)
        dearer, cheaper = diff.dearer, diff.cheaper
        if dearer is not None and cheaper is not None:
            distinct = dearer.product_id != cheaper.product_id
            figures += _figure(Role.DEARER_BY, diff.difference, eid, dearer.product_id if distinct else None,
                               source=source)
            figures += _figure(Role.CHEAPER_BY, diff.difference, eid, cheaper.product_id if distinct else None,
                               source=source)
        return self._add(Evidence(eid, EvidenceKind.CALC, diff, pids, figures))

    def add_document(self, doc: PolicyText) -> str:
        eid = doc.evidence_id
        return self._add(Evidence(eid, EvidenceKind.DOC, doc, frozenset(),
                                  _text_figures(doc.title + "。" + doc.content, eid, None), (doc.title, doc.content)))

    def add_order(self, order: OrderFacts) -> str:
        eid = order.evidence_id
        figures = _figure(Role.ORDER_TOTAL, order.total, eid, None, source=f"order {eid}")
        for item in order.items:
            figures += _figure(Role.ORDER_QUANTITY, item.quantity, eid, item.product_id, source=f"order {eid}")
            figures += _figure(Role.PER_UNIT, item.paid_each, eid, item.product_id, source=f"order {eid}")
            self.names.setdefault(item.product_name, item.product_id)
        return self._add(Evidence(eid, EvidenceKind.ORDER, order, frozenset(i.product_id for i in order.items),
                                  figures))

    def add_aggregate(self, agg: AggregateFacts) -> str:
        """Each group's figure in the metric's role, its number of orders and its share; the whole too.
        A figure's `source` is its group key, so a sentence naming a group can be checked against it."""
        eid, role = agg.evidence_id, METRIC_ROLE[agg.metric]
        figures = _figure(role, agg.whole, eid, None, source=WHOLE) + \
            _figure(Role.ORDER_COUNT, agg.orders, eid, None, source=WHOLE)
        for row in agg.rows:
            figures += _figure(role, row.value, eid, None, source=row.key)
            figures += _figure(Role.ORDER_COUNT, row.orders, eid, None, source=row.key)
            figures += _figure(Role.SHARE, row.share, eid, None, source=row.key)
        return self._add(Evidence(eid, EvidenceKind.AGGREGATE, agg, frozenset(), figures,
                                  tuple(row.key for row in agg.rows)))

    def cited(self, citation_ids: Iterable[str]) -> list[Evidence]:
        return [self.entries[c] for c in citation_ids if c in self.entries]

    # --- questions by product, over a pool of cited evidence ------------------------------------------

    def promotions_of(self, pool: Iterable[Evidence], product_ids: set[str]) -> list[PromotionRule]:
        """The promotion rules of these products that the pool holds (as promotions or inside a quote)."""
        found: dict[str, PromotionRule] = {}
        for e in pool:
            if e.kind == EvidenceKind.PROMOTION and e.product_ids & product_ids:
                rule: PromotionRule = e.record  # type: ignore[assignment]
                found[rule.promotion_id] = rule
            elif e.kind == EvidenceKind.CALC and e.product_ids & product_ids:
                for rule in getattr(e.record, "promotions", ()):   # a basket's lines are quotes of their own
                    found[rule.promotion_id] = rule
        return list(found.values())

    def price_of(self, product_id: str) -> Decimal | None:
        product = self.products.get(product_id)
        if product is not None:
            return product.price
        return next((q.unit_price for q in self.quotes.values() if q.product_id == product_id), None)

    def name_of(self, product_id: str) -> str:
        return next((n for n, p in self.names.items() if p == product_id), product_id)
