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
