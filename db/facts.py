"""The typed facts the database gives: frozen records that tools return and the evidence ledger keeps.

They become JSON only at the model boundary (agent/tools.py). Each verified record names its evidence
id (`product:001`, `promotion:P001`, `calc:001:2:regular`, `doc:returns#1`, `order:A1001`)."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum

SOURCE = "catalog.sqlite"


class Status(StrEnum):
    """What a tool result is: only `verified` results enter the evidence ledger."""

    VERIFIED = "verified"
    NOT_FOUND = "not_found"
    INSUFFICIENT_STOCK = "insufficient_stock"
    INVALID_QUANTITY = "invalid_quantity"
    PRICE_UNAVAILABLE = "price_unavailable"
    NO_THRESHOLD = "no_threshold"        # the product has no promotion with a 满N threshold (or not the one named)
    UNREACHABLE = "unreachable"          # the threshold cannot be reached (first purchase only, no price, too many)
    NOT_AN_AMOUNT = "not_an_amount"      # a comparison named evidence that is not a verified amount of this turn


class DiscountType(StrEnum):
    PERCENTAGE = "percentage"            # discount_value is the multiplier (9折 = 0.9)
    FIXED_REDUCTION = "fixed_reduction"  # 满 minimum_spend 减 discount_value, once per order
    BUY_X_GET_Y = "buy_x_get_y"          # 买 minimum_quantity 送 discount_value, free units on top
    GIFT = "gift"                        # never lowers the price
    FREE_SHIPPING = "free_shipping"      # never changes the subtotal


PRICE_TYPES = (DiscountType.PERCENTAGE, DiscountType.FIXED_REDUCTION)
FIRST_PURCHASE = "first_purchase"


def product_evidence_id(product_id: str) -> str:
    return f"product:{product_id}"


def promotion_evidence_id(promotion_id: str) -> str:
    return f"promotion:{promotion_id}"


def calc_evidence_id(product_id: str, quantity: int, is_first_purchase: bool) -> str:
    return f"calc:{product_id}:{quantity}:{'first' if is_first_purchase else 'regular'}"


@dataclass(frozen=True)
class Product:
    product_id: str
    product_name: str
    brand: str = ""
    description: str = ""
    specifications: str = ""
    usage: str = ""
    price: Decimal | None = None
    stock_quantity: int | None = None
    category: str = ""
    aliases: tuple[str, ...] = ()   # other names customers use (English, short names), from the catalog

    @property
    def evidence_id(self) -> str:
        return product_evidence_id(self.product_id)

    @property
    def price_status(self) -> str:
        """Said to the model beside the price: a product imported with an empty price cell has none."""
        return "listed" if self.price is not None else "not_provided: 价格暂未提供，请如实告知顾客，不要给出任何价格"


@dataclass(frozen=True)
class Promotion:
    promotion_id: str
    product_id: str
    promotion_text: str
    discount_type: str
    discount_value: Decimal | None = None
    minimum_quantity: int | None = None
    minimum_spend: Decimal | None = None
    extra_condition: str | None = None

    @property
    def evidence_id(self) -> str:
        return promotion_evidence_id(self.promotion_id)

    @property
    def first_purchase(self) -> bool:
        return self.extra_condition == FIRST_PURCHASE

    @property
    def unconditional(self) -> bool:
        """Asks nothing of the order (9折): the price now, unlike 满500减100, 两支及以上8折 or a first purchase."""
        return not (self.minimum_quantity or self.minimum_spend or self.extra_condition)


@dataclass(frozen=True)
class PromotionOutcome:
    """One promotion of a quoted product: applied or not, and why not in the customer's words."""

    promotion: Promotion
    applied: bool
    reason: str | None = None


@dataclass(frozen=True)
class Quote:
    """A verified price calculation: `quantity` paid units of one product under its promotions."""

    product_id: str
    product_name: str
    unit: str
    quantity: int
    is_first_purchase: bool
    unit_price: Decimal
    subtotal: Decimal
    final_total: Decimal
    free_quantity: int
    outcomes: tuple[PromotionOutcome, ...]
    status: Status = Status.VERIFIED

    @property
    def evidence_id(self) -> str:
        return calc_evidence_id(self.product_id, self.quantity, self.is_first_purchase)

    @property
    def paid_quantity(self) -> int:
        return self.quantity

    @property
    def total_units(self) -> int:
        return self.quantity + self.free_quantity

    @property
    def paid_per_unit(self) -> Decimal | None:
        """What one unit received costs on average (the total over the units received), when that is a whole
        number of fen; None for a single unit or an average that would have to be rounded."""
        if self.total_units < 2:
            return None
        average = (self.final_total / self.total_units).quantize(Decimal("0.01"))
        return average if average * self.total_units == self.final_total else None

    @property
    def discount_amount(self) -> Decimal:
        return self.subtotal - self.final_total

    @property
    def promotions(self) -> tuple[Promotion, ...]:
        """Every promotion of the product, applied or not (their rules are verified facts too)."""
        return tuple(o.promotion for o in self.outcomes)

    @property
    def applied_promotion(self) -> Promotion | None:
        """The price promotion (percentage or fixed reduction) the total was computed with."""
        return next((o.promotion for o in self.outcomes if o.applied and o.promotion.discount_type in PRICE_TYPES),
                    None)

    @property
    def benefits(self) -> tuple[Promotion, ...]:
        """Applied promotions that do not change the total: free units, gifts, free shipping."""
        return tuple(o.promotion for o in self.outcomes if o.applied and o.promotion.discount_type not in PRICE_TYPES)

    @property
    def free_shipping(self) -> bool:
        return any(p.discount_type == DiscountType.FREE_SHIPPING for p in self.benefits)

    @property
    def sources(self) -> list[str]:
        used = [p for p in (self.applied_promotion, *self.benefits) if p is not None]
        return [product_evidence_id(self.product_id)] + [p.evidence_id for p in used]


def basket_evidence_id(items: list[tuple[str, int]], is_first_purchase: bool) -> str:
    lines = "+".join(f"{pid}x{qty}" for pid, qty in items)
    return f"calc:basket:{lines}:{'first' if is_first_purchase else 'regular'}"


@dataclass(frozen=True)
class Basket:
    """A verified calculation of several products at once: each line priced under its own promotions."""

    lines: tuple[Quote, ...]
    is_first_purchase: bool
    status: Status = Status.VERIFIED

    @property
    def evidence_id(self) -> str:
        return basket_evidence_id([(q.product_id, q.quantity) for q in self.lines], self.is_first_purchase)

    @property
    def product_ids(self) -> tuple[str, ...]:
        return tuple(q.product_id for q in self.lines)

    @property
    def subtotal(self) -> Decimal:
        return sum((q.subtotal for q in self.lines), Decimal(0))

    @property
    def final_total(self) -> Decimal:
        return sum((q.final_total for q in self.lines), Decimal(0))

    @property
    def discount_amount(self) -> Decimal:
        return self.subtotal - self.final_total

    @property
    def free_shipping(self) -> bool:
        """Whether the order ships free: some line meets its product's free-shipping promotion."""
        return any(q.free_shipping for q in self.lines)


@dataclass(frozen=True)
class QuoteRefusal:
    """A calculation that could not be made: unknown product, bad quantity, no price, not enough stock."""

    status: Status
    product_id: str
    quantity: object
    message: str
    product: Product | None = None
    requested_units: int | None = None
    available_stock: int | None = None
    source: str = SOURCE


@dataclass(frozen=True)
class ProductDetails:
    products: tuple[Product, ...]
    missing_product_ids: tuple[str, ...]
    source: str = SOURCE

    @property
    def status(self) -> Status:
        return Status.VERIFIED if self.products else Status.NOT_FOUND


@dataclass(frozen=True)
class PromotionList:
    product_ids: tuple[str, ...]          # the existing products asked about (a product may have none)
    promotions: tuple[Promotion, ...]
    missing_product_ids: tuple[str, ...]
    source: str = SOURCE

    @property
    def status(self) -> Status:
        return Status.VERIFIED if self.product_ids else Status.NOT_FOUND


@dataclass(frozen=True)
class Category:
    name: str
    products: int   # how many products the catalog files under it


@dataclass(frozen=True)
class CategoryList:
    """What the shop sells, by category, the fullest first: offered to a customer who has not said what they
    want (有什么推荐的, 你们都卖啥)."""

    categories: tuple[Category, ...]
    source: str = SOURCE

    @property
    def status(self) -> Status:
        return Status.VERIFIED if self.categories else Status.NOT_FOUND


@dataclass(frozen=True)
class PolicyDocument:
    doc_id: str
    title: str
    content: str

    @property
    def evidence_id(self) -> str:
        return f"doc:{self.doc_id}"


@dataclass(frozen=True)
class PolicyDocuments:
    documents: tuple[PolicyDocument, ...]
    source: str = SOURCE

    @property
    def status(self) -> Status:
        return Status.VERIFIED if self.documents else Status.NOT_FOUND


@dataclass(frozen=True)
class OrderItem:
    product_id: str
    product_name: str
    quantity: int
    paid: Decimal | None = None   # what the line cost the customer, promotions applied (the order's own record)

    @property
    def paid_each(self) -> Decimal | None:
        """The line's paid amount over its units, to the fen: what one unit cost after the order's promotions (a
        refund 按实际支付金额 of part of the line)."""
        if self.paid is None or self.quantity < 1:
            return None
        return (self.paid / self.quantity).quantize(Decimal("0.01"))


@dataclass(frozen=True)
class Order:
    order_id: str
    status: str
    created_at: str
    items: tuple[OrderItem, ...]
    total: Decimal

    @property
    def evidence_id(self) -> str:
        return f"order:{self.order_id}"


@dataclass(frozen=True)
class OrderList:
    orders: tuple[Order, ...]
    source: str = SOURCE

    @property
    def status(self) -> Status:
        return Status.VERIFIED if self.orders else Status.NOT_FOUND


# --- promotion plans (db/promotion_plans.py): what a shop assistant works out from the verified rules ---------

def _purchase(is_first_purchase: bool) -> str:
    return "first" if is_first_purchase else "regular"


@dataclass(frozen=True)
class ReceivePlan:
    """The cheapest way to *receive* `wanted` units of one product: the quote of the paid quantity whose paid
    plus free units (买X送Y) reach `wanted` for the lowest total. Without free units, paid = wanted."""

    wanted: int
    quote: Quote
    status: Status = Status.VERIFIED

    @property
    def evidence_id(self) -> str:
        return f"calc:receive:{self.quote.product_id}:{self.wanted}:{_purchase(self.quote.is_first_purchase)}"

    @property
    def product_id(self) -> str:
        return self.quote.product_id

    @property
    def product_name(self) -> str:
        return self.quote.product_name

    @property
    def unit(self) -> str:
        return self.quote.unit

    @property
    def is_first_purchase(self) -> bool:
        return self.quote.is_first_purchase

    @property
    def paid_quantity(self) -> int:
        return self.quote.quantity

    @property
    def free_quantity(self) -> int:
        return self.quote.free_quantity

    @property
    def total_units(self) -> int:
        return self.quote.total_units

    @property
    def final_total(self) -> Decimal:
        return self.quote.final_total

    @property
    def promotions(self) -> tuple[Promotion, ...]:
        return self.quote.promotions

    @property
    def free_units_promotion(self) -> Promotion | None:
        """The 买X送Y rule that gives the free units, when one does."""
        return next((p for p in self.quote.benefits if p.discount_type == DiscountType.BUY_X_GET_Y), None)

    @property
    def sources(self) -> list[str]:
        return [self.quote.evidence_id, *self.quote.sources]


@dataclass(frozen=True)
class Shortfall:
    """How far `from_quantity` units are from a threshold: units still to buy and, for a spend threshold,
    the amount still short of it (threshold − subtotal)."""

    from_quantity: int
    units_short: int
    amount_short: Decimal | None


@dataclass(frozen=True)
class ThresholdPlan:
    """How to reach a promotion's threshold (满N包邮, 满N减M, N件及以上…) from `current_quantity` units:
    `target` is the quote of the least quantity (≥ current, ≥ 1) at which every condition of the promotion
    holds; `current` the quote of the current quantity (none for 0); `below` the quote of the largest quantity
    still short of it (target − 1, when there is one); `shortfalls` the gaps from current and from below.
    `basis`: the calculation (quote or basket) the current quantity was read from, if any."""

    promotion: Promotion
    current_quantity: int
    target: Quote
    current: Quote | None
    below: Quote | None
    shortfalls: tuple[Shortfall, ...]
    basis: str | None = None
    status: Status = Status.VERIFIED

    @property
    def evidence_id(self) -> str:
        return (f"calc:reach:{self.target.product_id}:{self.promotion.promotion_id}:{self.current_quantity}:"
                f"{_purchase(self.target.is_first_purchase)}")

    @property
    def product_id(self) -> str:
        return self.target.product_id

    @property
    def product_name(self) -> str:
        return self.target.product_name

    @property
    def unit(self) -> str:
        return self.target.unit

    @property
    def reached(self) -> bool:
        """The current quantity already meets the threshold."""
        return self.current_quantity >= self.target.quantity

    @property
    def target_quantity(self) -> int:
        return self.target.quantity

    @property
    def units_short(self) -> int:
        return next((s.units_short for s in self.shortfalls if s.from_quantity == self.current_quantity), 0)

    @property
    def amount_short(self) -> Decimal | None:
        """The amount the current quantity is short of a spend threshold (None: not a spend threshold)."""
        return next((s.amount_short for s in self.shortfalls if s.from_quantity == self.current_quantity), None)

    @property
    def applies_at_target(self) -> bool:
        """The promotion is what the target's total was computed with (or a benefit it gets): a price
        promotion that lost to a better one still has its threshold met, but does not apply."""
        return any(o.applied and o.promotion.promotion_id == self.promotion.promotion_id for o in self.target.outcomes)

    @property
    def promotions(self) -> tuple[Promotion, ...]:
        return self.target.promotions

    @property
    def sources(self) -> list[str]:
        quotes = [q for q in (self.current, self.below, self.target) if q is not None]
        return list(dict.fromkeys([*(q.evidence_id for q in quotes), self.promotion.evidence_id]))


class AmountKind(StrEnum):
    PRICE = "price"    # a product's unit price
    TOTAL = "total"    # a calculation's final total, or an order's amount paid


@dataclass(frozen=True)
class VerifiedAmount:
    """One amount already verified in this turn, with what it is and what it is of."""

    evidence_id: str
    kind: AmountKind
    value: Decimal
    product_id: str | None = None    # the one product it is of; None for a basket or an order of several
    product_name: str = ""
    quantity: int | None = None      # a total's paid units (one product)
    unit: str = ""


@dataclass(frozen=True)
class AmountDifference:
    """The difference between two verified amounts (always ≥ 0) and which one is larger (None: equal)."""

    first: VerifiedAmount
    second: VerifiedAmount
    difference: Decimal
    larger: str | None              # "first", "second" or None
    status: Status = Status.VERIFIED

    @property
    def evidence_id(self) -> str:
        return (f"calc:diff:{self.first.kind}@{self.first.evidence_id}|"
                f"{self.second.kind}@{self.second.evidence_id}")

    @property
    def dearer(self) -> VerifiedAmount | None:
        return {"first": self.first, "second": self.second}.get(self.larger or "")

    @property
    def cheaper(self) -> VerifiedAmount | None:
        return {"first": self.second, "second": self.first}.get(self.larger or "")

    @property
    def sources(self) -> list[str]:
        return list(dict.fromkeys([self.first.evidence_id, self.second.evidence_id]))


@dataclass(frozen=True)
class ComparisonRefusal:
    """A comparison that could not be made: an id that is not verified evidence of this turn, or not an amount."""

    status: Status
    message: str
    evidence_ids: tuple[str, ...] = ()
    source: str = SOURCE
